"""python manage.py import_public NAME PATH [--benchmark SLUG] [--study SLUG] [--author USER]"""

from django.core.management.base import BaseCommand, CommandError

from annotation.imports import public_dataset_import
from evaluation.cli import format_errors_as_command_error
from evaluation.lib.formats.public import PUBLIC_IMPORTERS

from ._common import resolve_author


class Command(BaseCommand):
    help = ("Import a public human-labelled CRS data set (formats.md §4): a log benchmark, one "
            "log submission per system, and a study holding the human labels; all or nothing.")

    def add_arguments(self, parser):
        parser.add_argument("name", choices=sorted(PUBLIC_IMPORTERS))
        parser.add_argument("path", help="the data set's folder or file, as published")
        parser.add_argument("--benchmark", help="slug of the new benchmark (default: the data "
                                                "set's own, e.g. crs-arena-eval)")
        parser.add_argument("--study", help="slug of the new study (default: <benchmark>-labels)")
        parser.add_argument("--author", help="owner of the study (default: the first staff user)")

    def handle(self, name, path, benchmark=None, study=None, author=None, **options):
        user = resolve_author(author)
        with format_errors_as_command_error():
            try:
                bench, made, summary = public_dataset_import(
                    name=name, path=path, author=user, benchmark_slug=benchmark,
                    study_slug=study)
            except ValueError as exc:
                raise CommandError(str(exc)) from exc
        self.stdout.write(
            f"Benchmark {bench.slug}: {summary['dialogues']} dialogues, {summary['systems']} "
            f"systems ({summary['submissions']} log submissions)")
        self.stdout.write(
            f"Study {made.slug}: {summary['labels']} labels on {summary['fields']} fields from "
            f"{summary['annotators'] or 'no named'} annotators ({made.source}; author "
            f"{user.get_username()})")
        if summary["arena"]:
            self.stdout.write(f"Arena {summary['arena']}: {summary['votes']} votes in CRS "
                              "Arena's order (manage.py arena_ratings "
                              f"{summary['arena']} --method elo)")
        if summary["reference_free_runs"]:
            job = summary["embedding_job"]
            queued = (f"the embedding baseline is queued for a worker (job {job})" if job else
                      "the embedding baseline was not queued: the task queue is unavailable")
            self.stdout.write(f"Reference-free baselines: {summary['reference_free_runs']} runs "
                              f"of the lexical metrics; {queued}")
        for note in summary["notes"]:
            self.stdout.write(f"  - {note}")
