"""python manage.py correlate --study STUDY --evaluator NAME [--by FIELD] --format json|csv|latex"""

from django.core.management.base import BaseCommand, CommandError

from annotation.lib import exports
from annotation.report_selectors import resolve_evaluator, resolve_grouping, study_correlation

from ._common import get_study, write_output


class Command(BaseCommand):
    help = ("Correlation of an evaluator's unit scores with a study's human labels, exactly as "
            "the report page shows it: item level per aspect (Pearson, Spearman, Kendall tau-b "
            "with p and n), pooled, per subset with --by, and system level.")

    def add_arguments(self, parser):
        parser.add_argument("--study", required=True, help="the study's slug")
        parser.add_argument("--evaluator", required=True,
                            help="an evaluator with runs on the study's benchmark, e.g. "
                                 "external:face or trace")
        parser.add_argument("--by", default="",
                            help="split by `system` or a dialogue scenario key (e.g. "
                                 "source_dataset; `dataset` works too)")
        parser.add_argument("--format", choices=exports.FORMATS, default="json")
        parser.add_argument("--output", help="write to this file instead of stdout")

    def handle(self, study, evaluator, by, format, output=None, **options):
        study = get_study(study)
        try:
            evaluator = resolve_evaluator(benchmark=study.benchmark, name=evaluator)
            by = resolve_grouping(benchmark=study.benchmark, by=by)
        except ValueError as exc:
            raise CommandError(str(exc)) from exc
        report = study_correlation(study=study, evaluator=evaluator, by=by)
        write_output(self, exports.render(report, exports.correlation_tables(report), format),
                     output)
