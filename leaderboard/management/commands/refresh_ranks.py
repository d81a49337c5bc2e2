"""Store fresh rank snapshots of every leaderboard (or of one benchmark), and the studies'
metric-human correlations behind the leaderboards' trust column.

Pages never store ranks: the `refresh_ranks_job` task does it when a run finishes or a
submission is published or withdrawn. Run this after loading data by other means (a restored
database, runs imported in bulk) so that the first visitors do not pay for the computation.
"""

from django.core.management.base import BaseCommand, CommandError

from annotation.services.validation import benchmark_validations_refresh
from evaluation.models import Benchmark
from leaderboard.services import rank_snapshots_refresh


class Command(BaseCommand):
    help = "Recompute and store the rank snapshots that are missing or stale."

    def add_arguments(self, parser):
        parser.add_argument("--benchmark", help="a benchmark slug (default: every benchmark)")

    def handle(self, *args, benchmark=None, **options):
        benchmarks = Benchmark.objects.order_by("slug")
        if benchmark:
            benchmarks = benchmarks.filter(slug=benchmark)
            if not benchmarks.exists():
                raise CommandError(f"No benchmark {benchmark!r}.")
        for item in benchmarks:
            for protocol in item.protocols or ["turn"]:
                snapshots = rank_snapshots_refresh(benchmark=item, protocol=protocol)
                self.stdout.write(f"{item.slug}/{protocol}: {len(snapshots)} evaluator(s) "
                                  "ranked")
            stored = benchmark_validations_refresh(benchmark_id=item.pk)
            self.stdout.write(f"{item.slug}: {stored} metric-human correlation(s) stored "
                              "for the trust column")
