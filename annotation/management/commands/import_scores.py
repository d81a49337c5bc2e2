"""python manage.py import_scores FILE --evaluator NAME --benchmark SLUG [--direction lower]"""

from django.core.management.base import BaseCommand, CommandError

from annotation.imports import scores_import
from evaluation.cli import format_errors_as_command_error

from ._common import get_benchmark


class Command(BaseCommand):
    help = ("Import a metric's unit scores (JSON Lines or CSV, formats.md §5) as finished runs "
            "of the evaluator external:NAME, one per system, so they take part in correlation "
            "reports and the metric leaderboard.")

    def add_arguments(self, parser):
        parser.add_argument("file")
        parser.add_argument("--evaluator", required=True,
                            help="e.g. face (stored as external:face)")
        parser.add_argument("--benchmark", required=True)
        parser.add_argument("--direction", choices=["higher", "lower"], default="higher",
                            help="which way is better for the system-level summaries")

    def handle(self, file, evaluator, benchmark, direction="higher", **options):
        bench = get_benchmark(benchmark)
        with format_errors_as_command_error():
            try:
                runs = scores_import(path=file, benchmark=bench, evaluator=evaluator,
                                     direction=direction)
            except ValueError as exc:
                raise CommandError(str(exc)) from exc
        for run in runs:
            self.stdout.write(f"Run {run.pk}: {run.evaluator} on {run.submission.system.name} "
                              f"({run.job.result['values']} values, metrics "
                              f"{', '.join(run.config['metrics'])})")
