"""Systems and their submissions (formats.md §2). Runs and scores live in `evaluation`.

Two derived tables make leaderboards cheap to render: `RunClusterStats` (a finished run's
per-dialogue sums, all the bootstrap needs) and `RankSnapshot` (which system is significantly
better than which, per metric, for the runs a leaderboard can show). Both are recomputed from
the stored unit values whenever they are missing or stale, never edited by hand.
"""

from django.conf import settings
from django.db import models
from django.db.models import Q


class System(models.Model):
    """A conversational recommender a researcher (or Concord, for baselines) evaluates."""

    slug = models.SlugField(max_length=100, unique=True)
    name = models.CharField(max_length=200)
    owner = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True,
                              on_delete=models.SET_NULL, related_name="systems")
    description = models.TextField(blank=True)
    paper_url = models.URLField(blank=True)
    code_url = models.URLField(blank=True)
    team = models.CharField(max_length=200, blank=True)
    family = models.CharField(max_length=50, blank=True,
                              help_text="e.g. retrieval, dense, LLM, planning, hybrid")
    is_baseline = models.BooleanField(default=False,
                                      help_text="a reference baseline shipped with Concord")
    daily_quota = models.PositiveIntegerField(
        null=True, blank=True,
        help_text="accepted uploads per UTC day; empty: the site default "
                  "(CONCORD_DAILY_SUBMISSION_QUOTA)")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name


def submission_upload_path(instance, filename: str) -> str:
    # Never the user's file name: uploads are stored, not served, and names are ours.
    return f"submissions/{instance.system_id}/{instance.benchmark_id}/{instance.uuid}.jsonl"


class Submission(models.Model):
    """One validated upload of a system's outputs for a benchmark (stored only when valid)."""

    class Protocol(models.TextChoices):
        TURN = "turn"
        LOG = "log"

    uuid = models.UUIDField(unique=True, editable=False)
    system = models.ForeignKey(System, on_delete=models.CASCADE, related_name="submissions")
    benchmark = models.ForeignKey("evaluation.Benchmark", on_delete=models.CASCADE,
                                  related_name="submissions")
    protocol = models.CharField(max_length=10, choices=Protocol.choices)
    file = models.FileField(upload_to=submission_upload_path)
    line_count = models.PositiveIntegerField(default=0)
    note = models.CharField(max_length=300, blank=True)
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True,
                                   on_delete=models.SET_NULL, related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)
    is_public = models.BooleanField(default=False, help_text="published by the system's owner")

    class Meta:
        ordering = ["-created_at"]
        constraints = [
            models.CheckConstraint(condition=Q(protocol__in=["turn", "log"]),
                                   name="submission_protocol"),
        ]
        indexes = [models.Index(fields=["system", "created_at"], name="submission_quota_idx")]

    def __str__(self) -> str:
        return f"{self.system} on {self.benchmark_id} ({self.created_at:%Y-%m-%d})"


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
    """Pairwise significance on one leaderboard (benchmark × protocol × evaluator).

    `run_ids` are the runs the leaderboard may show to anyone (each system's latest public run
    and its latest run). `better` packs, per metric, a boolean matrix whose [i, j] is True when
    run j is significantly better than run i; a viewer's rank on a metric is 1 + the number of
    the rows they see that beat theirs. The snapshot is stale as soon as the set of runs changes.
    """

    benchmark = models.ForeignKey("evaluation.Benchmark", on_delete=models.CASCADE,
                                  related_name="+")
    protocol = models.CharField(max_length=10)
    evaluator = models.CharField(max_length=100)
    run_ids = models.JSONField(default=list)
    metrics = models.JSONField(default=list)
    better = models.BinaryField(help_text="numpy.packbits of a (metrics, runs, runs) bool array")
    bootstrap = models.JSONField(default=dict)
    seconds = models.FloatField(default=0.0, help_text="how long the computation took")
    computed_at = models.DateTimeField(auto_now=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["benchmark", "protocol", "evaluator"],
                                    name="ranksnapshot_once"),
        ]

    def __str__(self) -> str:
        return f"ranks of {self.evaluator} on {self.benchmark_id}/{self.protocol}"
