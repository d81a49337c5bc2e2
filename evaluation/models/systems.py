"""The systems evaluated on benchmarks, their submissions (formats.md §2), runs and scores.
"""

from django.conf import settings
from django.db import models
from django.db.models import Q

from evaluation.lib.stats.clustered import MEAN_METHOD
from evaluation.lib.stats.methods import interval_is_current, interval_version
from evaluation.models.jobs import Job


class LiveKind(models.TextChoices):
    HTTP = "http", "HTTP endpoint"
    INPROCESS = "inprocess", "in-process baseline"


class System(models.Model):
    """A conversational recommender a researcher (or Concord, for baselines) evaluates."""

    LiveKind = LiveKind

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
    # A live system answers turn by turn (docs/formats.md §4): an HTTP endpoint, or one of
    # Concord's baselines run in-process. The API key is never stored, only the NAME of one of
    # the operator's credentials (CONCORD_CREDENTIALS), checked against that list at every call.
    live_kind = models.CharField(max_length=10, choices=LiveKind.choices, blank=True,
                                 help_text="empty: not live")
    live_endpoint = models.URLField(max_length=500, blank=True)
    live_adapter = models.CharField(max_length=50, blank=True,
                                    help_text="the in-process baseline, e.g. tfidf")
    live_credential = models.CharField(
        max_length=100, blank=True,
        help_text="the operator's credential sent as a Bearer token (a name in "
                  "CONCORD_CREDENTIALS); empty: none")
    live_timeout_seconds = models.FloatField(default=30.0)
    live_max_retries = models.PositiveSmallIntegerField(default=2)
    live_backoff_seconds = models.FloatField(default=0.5)
    live_max_concurrency = models.PositiveSmallIntegerField(default=4)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["name"]
        constraints = [
            models.CheckConstraint(condition=Q(live_kind__in=["", "http", "inprocess"]),
                                   name="system_live_kind"),
            models.CheckConstraint(
                condition=~Q(live_kind="http") | ~Q(live_endpoint=""),
                name="system_live_http_has_endpoint"),
            models.CheckConstraint(
                condition=~Q(live_kind="inprocess") | ~Q(live_adapter=""),
                name="system_live_inprocess_has_adapter"),
            models.CheckConstraint(
                condition=Q(live_timeout_seconds__gt=0, live_timeout_seconds__lte=600,
                            live_backoff_seconds__gte=0, live_backoff_seconds__lte=60,
                            live_max_retries__lte=10, live_max_concurrency__gte=1,
                            live_max_concurrency__lte=64),
                name="system_live_call_settings"),
        ]

    def __str__(self) -> str:
        return self.name

    @property
    def is_live(self) -> bool:
        return bool(self.live_kind)


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


class RunQuerySet(models.QuerySet):
    def publishable(self) -> "RunQuerySet":
        """Runs whose numbers may be published: not smoke tests of a model the operator does
        not hold to be evaluation-grade (docs/llm.md, "Smoke tests"). The one filter of every
        leaderboard, its counts, and the metric leaderboards behind the trust column."""
        return self.filter(evaluation_grade=True)


class Run(models.Model):
    """One evaluator applied to one submission; its job carries status and progress.

    Every stored value links back here, hence to the evaluator name, version and the hash of
    its configuration: each leaderboard number says exactly how it was made.
    """

    submission = models.ForeignKey("Submission", on_delete=models.CASCADE,
                                   related_name="runs")
    evaluator = models.CharField(max_length=100)
    evaluator_version = models.CharField(max_length=50)
    config = models.JSONField(default=dict)
    config_hash = models.CharField(max_length=64)
    job = models.OneToOneField(Job, on_delete=models.PROTECT, related_name="run")
    unavailable = models.JSONField(default=dict, blank=True,
                                   help_text="metric -> reason it could not be computed")
    usage = models.JSONField(default=dict, blank=True,
                             help_text="LLM tokens and cost (cost null when unknown)")
    evaluation_grade = models.BooleanField(
        default=True, help_text="false: a smoke test of a model the operator does not hold to "
                                "be evaluation-grade; never published (docs/llm.md)")
    smoke_test_reason = models.CharField(max_length=300, blank=True,
                                         help_text="why the run is a smoke test, as shown")
    created_at = models.DateTimeField(auto_now_add=True)

    objects = RunQuerySet.as_manager()

    class Meta:
        ordering = ["-created_at"]
        indexes = [models.Index(fields=["submission", "evaluator"])]

    def __str__(self) -> str:
        return f"{self.evaluator} {self.evaluator_version} on submission {self.submission_id}"


class RunChunk(models.Model):
    """A slice of a Trace run's dialogues, scored by one Celery task (docs/operations.md,
    "Runs over several workers").

    The run's first task plans the chunks; each chunk task upserts its unit values, stores them
    reduced per metric and dialogue (`cluster_sums`) and sets `finished_at`; the task that finds
    every chunk finished queues the run's final task (summaries and CIs from the chunks'
    reductions, ranks). The run's progress bar counts finished chunks.
    """

    run = models.ForeignKey(Run, on_delete=models.CASCADE, related_name="chunks")
    index = models.PositiveIntegerField()
    dialogue_ids = models.JSONField(default=list, help_text="Dialogue primary keys, in order")
    line_ranges = models.JSONField(
        default=list, help_text="[start, end) byte ranges of the submission's lines for them")
    answered_turns = models.PositiveIntegerField(default=0)
    values = models.PositiveIntegerField(default=0, help_text="unit values stored")
    missing_turns = models.PositiveIntegerField(default=0)
    unavailable = models.JSONField(default=dict, blank=True)
    cluster_sums = models.JSONField(
        null=True, blank=True,
        help_text="its values reduced per metric and dialogue (evaluation.lib.stats."
                  "cluster_sums); null for chunks finished before it was stored")
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["run", "index"]
        constraints = [
            models.UniqueConstraint(fields=["run", "index"], name="runchunk_once_per_index"),
        ]

    def __str__(self) -> str:
        return f"run {self.run_id} chunk {self.index}"


class UnitScore(models.Model):
    """A metric's value on one unit (a system turn `dlg#3`, or a dialogue/log `dlg`)."""

    class UnitType(models.TextChoices):
        TURN = "turn"
        DIALOGUE = "dialogue"

    # No index of its own: the unique constraint's (run, metric, …) serves every query by run
    # (or run and metric), and each index costs PostgreSQL time on every one of the ~50,000
    # values a chunk stores (docs/performance-history.md, "Runs at scale").
    run = models.ForeignKey(Run, on_delete=models.CASCADE, related_name="unit_scores",
                            db_index=False)
    metric = models.CharField(max_length=100)
    unit_type = models.CharField(max_length=10, choices=UnitType.choices)
    unit_id = models.CharField(max_length=250)
    dialogue_id = models.CharField(max_length=200, help_text="the cluster for the bootstrap")
    value = models.FloatField(null=True, blank=True, help_text="null: undefined on this unit")
    detail = models.JSONField(default=dict, blank=True,
                              help_text="e.g. a judge's rationale, per-quote verdicts")

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["run", "metric", "unit_type", "unit_id"],
                                    name="unitscore_once_per_run_metric_unit"),
            models.CheckConstraint(condition=Q(unit_type__in=["turn", "dialogue"]),
                                   name="unitscore_unit_type"),
        ]
        # (run, dialogue): the per-turn drill-down reads one dialogue's values of a run that
        # may hold a million (docs/performance-history.md, "Runs at scale").
        indexes = [models.Index(fields=["run", "dialogue_id"], name="unitscore_run_dialogue")]

    def __str__(self) -> str:
        return f"{self.metric}[{self.unit_id}]={self.value}"


def mean_interval_version() -> int:
    """The current version of a run summary's interval (the default of new rows)."""
    return interval_version(MEAN_METHOD)


class MetricSummary(models.Model):
    """A system-level value of a run: mean, 95% cluster-bootstrap CI, n, direction."""

    class Direction(models.TextChoices):
        HIGHER = "higher"
        LOWER = "lower"

    run = models.ForeignKey(Run, on_delete=models.CASCADE, related_name="summaries")
    metric = models.CharField(max_length=100)
    axis = models.CharField(max_length=40)
    direction = models.CharField(max_length=6, choices=Direction.choices)
    value = models.FloatField(null=True, blank=True)
    ci_low = models.FloatField(null=True, blank=True)
    ci_high = models.FloatField(null=True, blank=True)
    std = models.FloatField(null=True, blank=True)
    n = models.PositiveIntegerField(default=0)
    undefined_reason = models.CharField(max_length=300, blank=True)
    # The interval's procedure and its version (methods.INTERVAL_VERSIONS); rows stored before
    # they were recorded have "" and 0, and `recompute_intervals` recomputes them.
    ci_method = models.CharField(max_length=60, default=MEAN_METHOD)
    ci_version = models.PositiveSmallIntegerField(default=mean_interval_version)

    class Meta:
        ordering = ["axis", "metric"]
        constraints = [
            models.UniqueConstraint(fields=["run", "metric"], name="metricsummary_once"),
            models.CheckConstraint(condition=Q(direction__in=["higher", "lower"]),
                                   name="metricsummary_direction"),
        ]

    def __str__(self) -> str:
        return f"{self.metric}={self.value}"

    @property
    def ci_is_current(self) -> bool:
        return interval_is_current(self.ci_method, self.ci_version)
