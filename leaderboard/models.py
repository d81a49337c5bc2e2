"""Leaderboard caches. Systems, submissions, runs and scores live in `evaluation`.

Two derived tables make leaderboards cheap to render: `RunClusterStats` (a finished run's
per-dialogue sums, all the bootstrap needs) and `RankSnapshot` (which system is significantly
better than which, per metric, for the runs a leaderboard can show). Both are computed from the
stored unit values by `leaderboard.services` (the refresh task, the `refresh_ranks` command),
never by a page and never by hand.
"""

from django.db import models

from evaluation.lib.stats.clustered import RANK_METHOD
from evaluation.lib.stats.methods import interval_is_current, interval_version


def rank_method_version() -> int:
    """The current version of the ranks' test (the default of new snapshots)."""
    return interval_version(RANK_METHOD)


class RunClusterStats(models.Model):
    """Per-dialogue sums and counts of a finished run's unit values, one row per run.

    A cluster bootstrap needs nothing else, so ranking a leaderboard reads these small arrays
    instead of every unit value. `sums` and `counts` are float64 arrays of shape
    (len(metrics), len(clusters)) in C order.
    """

    run = models.OneToOneField("evaluation.Run", on_delete=models.CASCADE, related_name="+")
    metrics = models.JSONField(default=list)
    clusters = models.JSONField(default=list, help_text="dialogue ids")
    sums = models.BinaryField()
    counts = models.BinaryField()
    created_at = models.DateTimeField(auto_now_add=True)

    def __str__(self) -> str:
        return f"cluster stats of run {self.run_id}"


class RankSnapshot(models.Model):
    """Pairwise significance on one leaderboard (benchmark × protocol × evaluator × coverage:
    the split set its runs were evaluated on, e.g. "test" or "dev+test"; runs of different
    coverages are never ranked together).

    `run_ids` are the runs the leaderboard may show to anyone (each system's latest public run
    and its latest run). `better` packs, per metric, a boolean matrix whose [i, j] is True when
    run j is significantly better than run i; a viewer's rank on a metric is 1 + the number of
    the rows they see that beat theirs. The snapshot is stale as soon as the set of runs changes.
    """

    benchmark = models.ForeignKey("evaluation.Benchmark", on_delete=models.CASCADE,
                                  related_name="+")
    protocol = models.CharField(max_length=40)  # turn, log, simulated-<simulator>
    evaluator = models.CharField(max_length=100)
    splits = models.CharField(max_length=200, default="",
                              help_text="the coverage: split names joined by '+'")
    run_ids = models.JSONField(default=list)
    metrics = models.JSONField(default=list)
    better = models.BinaryField(help_text="numpy.packbits of a (metrics, runs, runs) bool array")
    bootstrap = models.JSONField(default=dict)
    seconds = models.FloatField(default=0.0, help_text="how long the computation took")
    computed_at = models.DateTimeField(auto_now=True)
    # The test's procedure and its version (methods.INTERVAL_VERSIONS): a snapshot of another
    # version is stale, like one of other runs ("" and 0: stored before they were recorded).
    method = models.CharField(max_length=60, default=RANK_METHOD)
    method_version = models.PositiveSmallIntegerField(default=rank_method_version)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["benchmark", "protocol", "evaluator", "splits"],
                                    name="ranksnapshot_once_per_coverage"),
        ]

    def __str__(self) -> str:
        return (f"ranks of {self.evaluator} on {self.benchmark_id}/{self.protocol} "
                f"({self.splits or 'all'})")

    @property
    def is_current(self) -> bool:
        return interval_is_current(self.method, self.method_version)
