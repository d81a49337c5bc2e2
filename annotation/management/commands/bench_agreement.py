"""python manage.py bench_agreement [--units N] [--annotators N] [--repeats N] [--levels ...]

Runs `python -m evaluation.lib.stats.timing` (docs/performance-history.md, "Statistics"):
Krippendorff's
alpha on 100,000 units × 10 annotators, next to the `krippendorff` package where it fits.
"""

from django.core.management.base import BaseCommand

from evaluation.lib.stats import timing


class Command(BaseCommand):
    help = "Time Krippendorff's alpha at study scale (target: 100,000 × 10 interval < 2 s)."

    def add_arguments(self, parser):
        parser.add_argument("--units", type=int, default=100_000)
        parser.add_argument("--annotators", type=int, default=10)
        parser.add_argument("--repeats", type=int, default=3)
        parser.add_argument("--levels", default="interval,ordinal,nominal")

    def handle(self, units, annotators, repeats, levels, **options):
        timing.main(["--units", str(units), "--annotators", str(annotators),
                        "--repeats", str(repeats), "--levels", levels])
