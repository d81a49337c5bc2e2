"""python manage.py import_judgments FILE --study NAME --benchmark SLUG [--author U] [--public]"""

from django.core.management.base import BaseCommand, CommandError

from annotation.imports import judgments_import
from evaluation.cli import format_errors_as_command_error

from ._common import get_benchmark, resolve_author


class Command(BaseCommand):
    help = ("Import human judgments (CSV or JSON Lines, formats.md §5; per annotator or "
            "aggregated) as a study of finished labels on a benchmark.")

    def add_arguments(self, parser):
        parser.add_argument("file")
        parser.add_argument("--study", required=True, help="name of the new study")
        parser.add_argument("--benchmark", required=True, help="slug of the labelled benchmark")
        parser.add_argument("--author", help="owner of the study (default: the first staff user)")
        parser.add_argument("--public", action="store_true",
                            help="make the study's metric leaderboard public")
        parser.add_argument("--level", action="append", default=[], metavar="FIELD=LEVEL",
                            help="level of measurement of a field (nominal, ordinal, interval, "
                                 "ratio, set); default: numbers interval, text nominal")

    def handle(self, file, study, benchmark, author=None, public=False, level=(), **options):
        bench = get_benchmark(benchmark)
        user = resolve_author(author)
        levels = {}
        for entry in level:
            name, _, value = entry.partition("=")
            if not name or not value:
                raise CommandError(f"--level wants FIELD=LEVEL, got {entry!r}")
            levels[name] = value
        with format_errors_as_command_error():
            try:
                made = judgments_import(path=file, benchmark=bench, name=study, author=user,
                                        public=public, levels=levels)
            except ValueError as exc:
                raise CommandError(str(exc)) from exc
        labels = made.imported_labels.count()
        annotators = made.imported_labels.exclude(annotator="").values("annotator").distinct()
        self.stdout.write(f"Study {made.slug} on {bench.slug}: {labels} labels on "
                          f"{made.imported_fields.count()} fields from {annotators.count()} "
                          "named annotators")
