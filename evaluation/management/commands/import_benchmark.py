import sys
from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from evaluation.cli import ProgressBars, format_errors_as_command_error
from evaluation.models import Job
from evaluation.services.benchmarks import benchmark_import
from evaluation.services.jobs import job_create


class Command(BaseCommand):
    help = "Validate a benchmark bundle (folder, .zip or .tar.gz) and import all of it, or nothing."

    def add_arguments(self, parser):
        parser.add_argument("path")
        parser.add_argument("--replace", action="store_true",
                            help="replace an existing benchmark with the same slug")
        parser.add_argument("--no-progress", action="store_true")
        parser.add_argument("--background", action="store_true",
                            help="queue the import as a job for a worker (which must see PATH) "
                                 "and print the job's id instead of waiting")

    def handle(self, path, replace, no_progress, background=False, **options):
        if background:
            resolved = Path(path).resolve()
            if not resolved.exists():
                raise CommandError(f"{path}: no such file or folder.")
            job = job_create(kind=Job.Kind.IMPORT_BENCHMARK,
                             params={"path": str(resolved), "replace": replace},
                             task="evaluation.tasks.import_benchmark_job")
            self.stdout.write(f"Queued import job {job.pk}: follow it at /jobs/{job.pk}/.")
            return
        bars = ProgressBars(sys.stderr, enabled=not no_progress)
        with format_errors_as_command_error():
            try:
                benchmark = benchmark_import(path=path, replace=replace, progress=bars)
            finally:
                bars.close()
        counts = (benchmark.items.count(), benchmark.reviews.count(), benchmark.dialogues.count())
        self.stdout.write(self.style.SUCCESS(
            f"Imported {benchmark.slug}: {counts[0]} items, {counts[1]} reviews, "
            f"{counts[2]} dialogues."
        ))
