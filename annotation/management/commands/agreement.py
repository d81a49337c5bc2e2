"""python manage.py agreement STUDY --format json|csv|latex [--table NAME] [--output FILE]"""

from django.core.management.base import BaseCommand, CommandError

from annotation.lib import exports
from annotation.report_selectors import study_agreement

from ._common import get_study, write_output


class Command(BaseCommand):
    help = ("Inter-annotator agreement of a study, exactly as its report page shows it: alpha "
            "per field with 95% CIs (jackknife-t; test inversion for nominal fields, profile "
            "likelihood for yes/no fields rated twice), annotator pairs, leave-one-out, "
            "worst pairs, per-annotator diagnostics, citation precision, blind "
            "recommendation.")

    def add_arguments(self, parser):
        parser.add_argument("study", help="the study's slug")
        parser.add_argument("--format", choices=exports.FORMATS, default="json")
        parser.add_argument("--table", default="all",
                            help="csv/latex: one table (agreement, annotator_pairs, "
                                 "leave_one_out, worst_pairs, annotators, citation_precision, "
                                 "blind_recommendation) or all")
        parser.add_argument("--output", help="write to this file instead of stdout")

    def handle(self, study, format, table, output=None, **options):
        report = study_agreement(study=get_study(study))
        tables = exports.agreement_tables(report)
        if table != "all":
            tables = [t for t in tables if t.name == table]
            if not tables:
                raise CommandError(f"no table {table!r} in this report (it has: "
                                   + ", ".join(t.name for t in exports.agreement_tables(report))
                                   + ")")
        write_output(self, exports.render(report, tables, format), output)
