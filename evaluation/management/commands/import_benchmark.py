import sys

from django.core.management.base import BaseCommand

from evaluation.cli import ProgressBars, format_errors_as_command_error
from evaluation.services.benchmarks import benchmark_import


class Command(BaseCommand):
    help = "Validate a benchmark bundle (folder, .zip or .tar.gz) and import all of it, or nothing."

    def add_arguments(self, parser):
        parser.add_argument("path")
        parser.add_argument("--replace", action="store_true",
                            help="replace an existing benchmark with the same slug")
        parser.add_argument("--no-progress", action="store_true")

    def handle(self, path, replace, no_progress, **options):
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
