"""Benchmarks as in formats.md §1 (items, reviews, reference dialogues, turns and citations),
the systems evaluated on them and their submissions (formats.md §2), jobs, runs and scores.

External identifiers (`external_id`) are the strings of the bundle; they are unique per
benchmark, and every cross-reference is a foreign key checked by the database.
"""

from datetime import timedelta

from django.conf import settings
from django.core.validators import RegexValidator
from django.db import models
from django.db.models import F, Q
from django.utils import timezone

from evaluation.lib.stats.clustered import MEAN_METHOD
from evaluation.lib.stats.methods import interval_is_current, interval_version

# Fields stored as they come in the bundle (formats.md §1); absent optional values are NULL.
BENCHMARK_FIELDS = ("name", "version", "domain", "description", "license", "citation",
                    "protocols", "splits")
ITEM_FIELDS = ("name", "type", "city", "lat", "lon", "price_level", "stars", "categories",
               "attributes", "description")


class Benchmark(models.Model):
    slug = models.SlugField(max_length=100, unique=True)
    name = models.CharField(max_length=200)
    version = models.CharField(max_length=50)
    domain = models.CharField(max_length=50)
    description = models.TextField(blank=True)
    license = models.CharField(max_length=200, blank=True)
    citation = models.TextField(blank=True)
    protocols = models.JSONField(default=list)
    splits = models.JSONField(default=list)
    is_public = models.BooleanField(default=True)
    owner = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL,
        related_name="benchmarks",
    )
    created_at = models.DateTimeField(auto_now_add=True)
    # Until the owner ends the hidden phase, uploads are scored on the public splits only: a
    # score over hidden dialogues, even an aggregate, lets a submitter probe their gold by
    # resubmitting permuted rankings (as on Kaggle, private scores come when the phase ends).
    hidden_released_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return f"{self.name} ({self.version})"


class Item(models.Model):
    benchmark = models.ForeignKey(Benchmark, on_delete=models.CASCADE, related_name="items")
    external_id = models.CharField(max_length=200)
    name = models.CharField(max_length=300)
    type = models.CharField(max_length=50)
    # NULL means "absent from the bundle", which export must reproduce (not "").
    city = models.CharField(max_length=100, null=True, blank=True)  # noqa: DJ001
    lat = models.FloatField(null=True, blank=True)
    lon = models.FloatField(null=True, blank=True)
    price_level = models.PositiveSmallIntegerField(null=True, blank=True)
    stars = models.FloatField(null=True, blank=True)
    categories = models.JSONField(null=True, blank=True)
    attributes = models.JSONField(null=True, blank=True)
    description = models.TextField(null=True, blank=True)  # noqa: DJ001

    class Meta:
        ordering = ["benchmark", "external_id"]
        constraints = [
            models.UniqueConstraint(fields=["benchmark", "external_id"], name="item_unique_id"),
            models.CheckConstraint(
                condition=Q(price_level__isnull=True) | Q(price_level__gte=1, price_level__lte=4),
                name="item_price_level_1_to_4",
            ),
            models.CheckConstraint(
                condition=Q(stars__isnull=True) | Q(stars__gte=0, stars__lte=5),
                name="item_stars_0_to_5",
            ),
            models.CheckConstraint(
                condition=Q(lat__isnull=True) | Q(lat__gte=-90, lat__lte=90), name="item_lat_range"
            ),
            models.CheckConstraint(
                condition=Q(lon__isnull=True) | Q(lon__gte=-180, lon__lte=180),
                name="item_lon_range",
            ),
        ]
        indexes = [models.Index(fields=["benchmark", "city", "type"])]

    def __str__(self) -> str:
        return self.name

    @property
    def price_label(self) -> str:
        return "$" * self.price_level if self.price_level else ""


class Review(models.Model):
    benchmark = models.ForeignKey(Benchmark, on_delete=models.CASCADE, related_name="reviews")
    external_id = models.CharField(max_length=200)
    item = models.ForeignKey(Item, on_delete=models.CASCADE, related_name="reviews")
    text = models.TextField()
    stars = models.FloatField(null=True, blank=True)

    class Meta:
        ordering = ["item", "external_id"]
        constraints = [
            models.UniqueConstraint(fields=["benchmark", "external_id"], name="review_unique_id"),
            models.CheckConstraint(
                condition=Q(stars__isnull=True) | Q(stars__gte=0, stars__lte=5),
                name="review_stars_0_to_5",
            ),
        ]

    def __str__(self) -> str:
        return self.external_id


class Split(models.TextChoices):
    TRAIN = "train"
    DEV = "dev"
    TEST = "test"
    HIDDEN = "hidden", "hidden (gold never shown publicly)"


class Dialogue(models.Model):
    benchmark = models.ForeignKey(Benchmark, on_delete=models.CASCADE, related_name="dialogues")
    external_id = models.CharField(max_length=200)
    split = models.CharField(max_length=10, choices=Split.choices)
    scenario = models.JSONField(default=dict)
    # Denormalised from scenario for filtering and the difficulty mix; null when absent.
    difficulty = models.CharField(max_length=30, null=True, blank=True)  # noqa: DJ001

    class Meta:
        ordering = ["benchmark", "external_id"]
        constraints = [
            models.UniqueConstraint(fields=["benchmark", "external_id"], name="dialogue_unique_id"),
            models.CheckConstraint(
                condition=Q(split__in=[s.value for s in Split]), name="dialogue_split_valid"
            ),
        ]
        indexes = [models.Index(fields=["benchmark", "split"])]

    def __str__(self) -> str:
        return self.external_id

    @property
    def is_hidden(self) -> bool:
        return self.split == Split.HIDDEN


class DialogueItem(models.Model):
    """An item in a dialogue's candidate pool, target set (PEPPER) or seen set, in order."""

    class Role(models.TextChoices):
        CANDIDATE = "candidate"
        TARGET = "target"
        SEEN = "seen"

    dialogue = models.ForeignKey(Dialogue, on_delete=models.CASCADE, related_name="item_links")
    item = models.ForeignKey(Item, on_delete=models.CASCADE, related_name="+")
    role = models.CharField(max_length=10, choices=Role.choices)
    position = models.PositiveIntegerField()

    class Meta:
        ordering = ["dialogue", "role", "position"]
        constraints = [
            models.UniqueConstraint(fields=["dialogue", "role", "item"], name="dialogueitem_once"),
            models.UniqueConstraint(
                fields=["dialogue", "role", "position"], name="dialogueitem_position_once"
            ),
            models.CheckConstraint(
                condition=Q(role__in=["candidate", "target", "seen"]), name="dialogueitem_role"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.dialogue_id}/{self.role}/{self.item_id}"


class Action(models.TextChoices):
    GREET_AND_SEEK = "greet_and_seek", "Greet and seek"
    ASK_PREFERENCE = "ask_preference", "Ask preference"
    PROVIDE_PREFERENCE = "provide_preference", "Provide preference"
    RECOMMEND = "recommend", "Recommend"
    COMPARE = "compare", "Compare"
    ACCEPT = "accept", "Accept"
    REJECT_AND_REFINE = "reject_and_refine", "Reject and refine"
    ASK_DETAIL = "ask_detail", "Ask detail"
    ANSWER_DETAIL = "answer_detail", "Answer detail"
    FAREWELL = "farewell", "Farewell"
    OTHER = "other", "Other"


EVALUATED_ACTIONS = (Action.RECOMMEND, Action.COMPARE)


class Turn(models.Model):
    class Role(models.TextChoices):
        USER = "user"
        SYSTEM = "system"

    dialogue = models.ForeignKey(Dialogue, on_delete=models.CASCADE, related_name="turns")
    index = models.PositiveIntegerField()
    role = models.CharField(max_length=10, choices=Role.choices)
    text = models.TextField()
    action = models.CharField(max_length=30, choices=Action.choices)

    class Meta:
        ordering = ["dialogue", "index"]
        constraints = [
            models.UniqueConstraint(fields=["dialogue", "index"], name="turn_unique_index"),
            models.CheckConstraint(condition=Q(role__in=["user", "system"]), name="turn_role"),
            models.CheckConstraint(
                condition=Q(action__in=[a.value for a in Action]), name="turn_action_valid"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.dialogue_id}#{self.index}"

    @property
    def is_evaluated(self) -> bool:
        return self.role == self.Role.SYSTEM and self.action in EVALUATED_ACTIONS


class TurnItem(models.Model):
    """An item a turn references, or its gold / alternative answer (system recommend/compare)."""

    class Role(models.TextChoices):
        REFERENCED = "referenced"
        GOLD = "gold"
        ALTERNATIVE = "alternative"

    turn = models.ForeignKey(Turn, on_delete=models.CASCADE, related_name="item_links")
    item = models.ForeignKey(Item, on_delete=models.CASCADE, related_name="+")
    role = models.CharField(max_length=12, choices=Role.choices)
    position = models.PositiveIntegerField()

    class Meta:
        ordering = ["turn", "role", "position"]
        constraints = [
            models.UniqueConstraint(fields=["turn", "role", "item"], name="turnitem_once"),
            models.UniqueConstraint(fields=["turn", "role", "position"], name="turnitem_position"),
            models.CheckConstraint(
                condition=Q(role__in=["referenced", "gold", "alternative"]), name="turnitem_role"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.turn_id}/{self.role}/{self.item_id}"


class Citation(models.Model):
    """A quoted review span in a turn: `"quote" [label]`; review.text[start:end] == quote."""

    turn = models.ForeignKey(Turn, on_delete=models.CASCADE, related_name="citations")
    position = models.PositiveIntegerField()
    label = models.CharField(max_length=50)
    review = models.ForeignKey(Review, on_delete=models.CASCADE, related_name="+")
    quote = models.TextField()
    start = models.PositiveIntegerField()
    end = models.PositiveIntegerField()

    class Meta:
        ordering = ["turn", "position"]
        constraints = [
            models.UniqueConstraint(fields=["turn", "position"], name="citation_position"),
            models.CheckConstraint(condition=Q(end__gt=F("start")), name="citation_span_nonempty"),
        ]

    def __str__(self) -> str:
        return f"[{self.label}] {self.quote[:40]}"


class LiveKind(models.TextChoices):
    HTTP = "http", "HTTP endpoint"
    INPROCESS = "inprocess", "in-process baseline"


ENV_NAME_VALIDATOR = RegexValidator(r"^[A-Z_][A-Z0-9_]*$",
                                    "an environment variable name such as MY_CRS_KEY")


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
    # Concord's baselines run in-process. The API key is never stored, only the NAME of the
    # environment variable holding it on the machines that call the system.
    live_kind = models.CharField(max_length=10, choices=LiveKind.choices, blank=True,
                                 help_text="empty: not live")
    live_endpoint = models.URLField(max_length=500, blank=True)
    live_adapter = models.CharField(max_length=50, blank=True,
                                    help_text="the in-process baseline, e.g. tfidf")
    live_api_key_env = models.CharField(
        max_length=100, blank=True, validators=[ENV_NAME_VALIDATOR],
        help_text="name of the environment variable with the key (sent as a Bearer token)")
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


class Job(models.Model):
    """A long piece of work done by a Celery worker, with progress the browser and CLI show.

    The process running a job beats `heartbeat_at` every few seconds (JOB_HEARTBEAT_SECONDS);
    a running job whose heartbeat is older than JOB_STALE_SECONDS (its worker died) reads as
    failed as soon as it is loaded (`from_db`, so every page and API answer says so at once),
    and the workers' sweep (`jobs_fail_stale`) writes that down. Never left running forever.
    """

    class Kind(models.TextChoices):
        IMPORT_BENCHMARK = "import_benchmark", "benchmark import"
        EVALUATION = "evaluation", "evaluation run"
        STUDY_EXPORT = "study_export", "study export"
        SIMULATION = "simulation", "user simulation"
        FACE_OPTIMIZATION = "face_optimization", "FACE instruction optimization"
        # a large upload checked by a worker before it becomes a submission (its staged file:
        # params["file"]; evaluation.services.staged_uploads)
        SUBMISSION_VALIDATION = "submission_validation", "submission validation"

    class Status(models.TextChoices):
        QUEUED = "queued"
        RUNNING = "running"
        SUCCEEDED = "succeeded"
        FAILED = "failed"
        CANCELLED = "cancelled"  # stopped by a person (a simulation's Cancel button)

    kind = models.CharField(max_length=40, choices=Kind.choices)
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.QUEUED)
    params = models.JSONField(default=dict)
    result = models.JSONField(default=dict, blank=True)
    stage = models.CharField(max_length=100, blank=True)
    done = models.PositiveIntegerField(default=0)
    total = models.PositiveIntegerField(default=0)
    error = models.TextField(blank=True)
    attempts = models.PositiveSmallIntegerField(default=0)
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True,
                                   on_delete=models.SET_NULL, related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    heartbeat_at = models.DateTimeField(null=True, blank=True)
    # The Celery task that runs the job ("" for jobs run in-process by a command) and when it
    # reached the broker: a queued job with no `enqueued_at` is sent again by the sweep.
    task = models.CharField(max_length=200, blank=True, default="")
    enqueued_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at"]
        constraints = [
            models.CheckConstraint(condition=Q(done__lte=F("total")) | Q(total=0),
                                   name="job_done_within_total"),
        ]

    def __str__(self) -> str:
        return f"{self.get_kind_display()} #{self.pk} ({self.status})"

    STALE_ERROR = ("The worker stopped reporting progress (it probably died); retry the job "
                   "or start it again.")

    @staticmethod
    def heartbeat_interval() -> timedelta:
        return timedelta(seconds=settings.JOB_HEARTBEAT_SECONDS)

    @staticmethod
    def stale_after() -> timedelta:
        return timedelta(seconds=settings.JOB_STALE_SECONDS)

    @classmethod
    def is_stale_heartbeat(cls, heartbeat_at, now=None) -> bool:
        """Never beaten (None) is not stale: `job_begin` beats as it claims a job."""
        return heartbeat_at is not None and \
            heartbeat_at < (now or timezone.now()) - cls.stale_after()

    @classmethod
    def from_db(cls, db, field_names, values):
        """A running job whose worker stopped beating is shown as failed when read (the stored
        row is corrected by the sweep, which no GET request runs)."""
        job = super().from_db(db, field_names, values)
        fields = job.__dict__
        if (fields.get("status") == cls.Status.RUNNING and "heartbeat_at" in fields
                and cls.is_stale_heartbeat(fields["heartbeat_at"])):
            job.status, job.error = cls.Status.FAILED, cls.STALE_ERROR
            if "finished_at" in fields:
                job.finished_at = job.heartbeat_at
        return job

    @property
    def percent(self) -> int:
        return round(100 * self.done / self.total) if self.total else 0

    @property
    def is_finished(self) -> bool:
        return self.status in (self.Status.SUCCEEDED, self.Status.FAILED,
                               self.Status.CANCELLED)


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
    created_at = models.DateTimeField(auto_now_add=True)

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
    # values a chunk stores (docs/performance.md, "Runs at scale").
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
        # may hold a million (docs/performance.md, "Runs at scale").
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


class LLMCacheEntry(models.Model):
    """One LLM answer, keyed by sha256 of (model, messages, generation parameters).

    The gateway's persistent response cache (`evaluation.llm_cache.DatabaseResponseCache`):
    every process and worker sharing the database shares it, so re-running an evaluation makes
    no LLM call and gets the same answers. `response` is the gateway's cached form (text,
    token counts, cost or null, logprobs).
    """

    key = models.CharField(max_length=64, unique=True)
    model = models.CharField(max_length=200)
    response = models.JSONField()
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        verbose_name = "LLM cache entry"
        verbose_name_plural = "LLM cache entries"
        constraints = [
            models.CheckConstraint(condition=Q(key__regex=r"^[0-9a-f]{64}$"),
                                   name="llmcacheentry_key_is_sha256"),
        ]
        indexes = [models.Index(fields=["model", "created_at"])]

    def __str__(self) -> str:
        return f"{self.model} {self.key[:12]}"


class DebateTurn(models.Model):
    """One role's statement and 0–100 score in one round of a CoRE debate on one log.

    CoRE (§4.2): every round is kept, including a role whose answer was unusable
    (`failure`; `carried_over` when its previous score stood in), so the transcript, the final
    score and the agreement-over-rounds chart never hide a failed turn.
    """

    run = models.ForeignKey(Run, on_delete=models.CASCADE, related_name="debate_turns")
    unit_id = models.CharField(max_length=250, help_text="the log")
    dialogue_id = models.CharField(max_length=200, help_text="the cluster for the bootstrap")
    round = models.PositiveSmallIntegerField()
    role = models.CharField(max_length=40)
    position = models.PositiveSmallIntegerField(help_text="the role's place in the debate")
    score = models.FloatField(null=True, blank=True, help_text="null: no usable score")
    statement = models.TextField(blank=True)
    failure = models.TextField(blank=True)
    carried_over = models.BooleanField(default=False)
    attempts = models.PositiveSmallIntegerField(default=1)

    class Meta:
        ordering = ["run", "unit_id", "round", "position"]
        constraints = [
            models.UniqueConstraint(fields=["run", "unit_id", "round", "role"],
                                    name="debateturn_once_per_round_and_role"),
            models.CheckConstraint(condition=Q(round__gte=1), name="debateturn_round_from_1"),
            models.CheckConstraint(
                condition=Q(score__isnull=True) | Q(score__gte=0, score__lte=100),
                name="debateturn_score_0_to_100"),
        ]

    def __str__(self) -> str:
        return f"{self.unit_id} round {self.round} {self.role}: {self.score}"


class Simulation(models.Model):
    """A user simulator talking to a live system for N users and T turns (docs/simulation.md).

    Its job carries progress; its dialogues are stored one row per simulated user as each
    finishes (idempotent: a batch redelivered after a worker died skips the users it already
    stored). When every user is done, the successful dialogues become a `log` submission of the
    system and their preference coverage a `Run` (`evaluator` "simulation.<simulator>").
    """

    job = models.OneToOneField(Job, on_delete=models.PROTECT, related_name="simulation")
    benchmark = models.ForeignKey(Benchmark, on_delete=models.CASCADE, related_name="+")
    system = models.ForeignKey(System, on_delete=models.CASCADE, related_name="simulations")
    simulator = models.CharField(max_length=30)
    simulator_version = models.CharField(max_length=20)
    config = models.JSONField(default=dict)
    config_hash = models.CharField(max_length=64)
    users = models.PositiveIntegerField()
    turns = models.PositiveSmallIntegerField()
    seed = models.IntegerField(default=0)
    batch_size = models.PositiveSmallIntegerField(default=10)
    failure_threshold = models.FloatField(
        default=0.5, help_text="the run stops once this share of its users' dialogues failed")
    submission = models.ForeignKey(Submission, null=True, blank=True, on_delete=models.SET_NULL,
                                   related_name="+")
    run = models.OneToOneField(Run, null=True, blank=True, on_delete=models.SET_NULL,
                               related_name="simulation")
    report = models.JSONField(default=dict, blank=True)
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True,
                                   on_delete=models.SET_NULL, related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at"]
        constraints = [
            models.CheckConstraint(condition=Q(users__gte=1, turns__gte=1, batch_size__gte=1),
                                   name="simulation_sizes_positive"),
            models.CheckConstraint(condition=Q(failure_threshold__gt=0,
                                               failure_threshold__lte=1),
                                   name="simulation_threshold_share"),
        ]

    def __str__(self) -> str:
        return f"{self.simulator} × {self.system} on {self.benchmark_id} ({self.users} users)"

    @property
    def batches(self) -> int:
        return -(-self.users // self.batch_size)


class SimulatedDialogue(models.Model):
    """One simulated user's whole dialogue, or its failure (then no turn is kept)."""

    class Status(models.TextChoices):
        OK = "ok"
        FAILED = "failed"

    simulation = models.ForeignKey(Simulation, on_delete=models.CASCADE,
                                   related_name="dialogues")
    position = models.PositiveIntegerField(help_text="the user's place in the run's order")
    user_id = models.CharField(max_length=200, help_text="the benchmark dialogue it simulates")
    status = models.CharField(max_length=10, choices=Status.choices)
    turns = models.JSONField(default=list, blank=True)
    target_item_ids = models.JSONField(default=list)
    hidden = models.JSONField(default=dict, blank=True,
                              help_text="the simulator's preferences and reflections")
    error_kind = models.CharField(max_length=20, blank=True)
    error = models.TextField(blank=True)
    system_seconds = models.FloatField(default=0)
    llm_seconds = models.FloatField(default=0)
    total_seconds = models.FloatField(default=0)

    class Meta:
        ordering = ["simulation", "position"]
        constraints = [
            models.UniqueConstraint(fields=["simulation", "user_id"],
                                    name="simulateddialogue_once_per_user"),
            models.CheckConstraint(condition=Q(status__in=["ok", "failed"]),
                                   name="simulateddialogue_status"),
            models.CheckConstraint(condition=Q(status="ok") | Q(turns=[]),
                                   name="simulateddialogue_failed_keeps_no_turn"),
        ]

    def __str__(self) -> str:
        return f"{self.simulation_id}/{self.user_id} ({self.status})"


class FaceTurn(models.Model):
    """One system turn of a FACE run's log: its conversation particles (FACE §2.1), each with its
    scores per aspect (Eq. 1, per instruction), or why the model could not decompose it."""

    run = models.ForeignKey(Run, on_delete=models.CASCADE, related_name="face_turns")
    unit_id = models.CharField(max_length=250, help_text="the log")
    dialogue_id = models.CharField(max_length=200)
    turn_index = models.PositiveIntegerField()
    text = models.TextField(blank=True, help_text="the system response decomposed")
    reply = models.TextField(blank=True, help_text="the user's next turn, if any")
    particles = models.JSONField(default=list, blank=True,
                                 help_text="[{act, mention, feedback, scores: {aspect: …}}]")
    failure = models.TextField(blank=True, help_text="why the turn has no particles")
    answer = models.TextField(blank=True, help_text="the decomposer's last answer on a failure")
    attempts = models.PositiveSmallIntegerField(default=0)

    class Meta:
        ordering = ["run", "unit_id", "turn_index"]
        constraints = [
            models.UniqueConstraint(fields=["run", "unit_id", "turn_index"],
                                    name="faceturn_once_per_run_turn"),
        ]

    def __str__(self) -> str:
        return f"{self.unit_id}#{self.turn_index}: {len(self.particles)} particles"


class FaceOptimization(models.Model):
    """FACE instruction optimization (FACE §2.3, Algorithm 1) of one aspect against a human
    study; the selected instructions are evaluator configuration `<aspect>-v<version>`.

    The study is named by slug (`evaluation` cannot refer to `annotation`'s tables); its labels
    arrive through `evaluation.ports.face_study_labels`. `iterations_done` and the stored
    instructions make the optimization resumable: a restarted job continues after the last
    finished iteration, and the gateway's cache replays the calls of an unfinished one.
    """

    benchmark = models.ForeignKey(Benchmark, on_delete=models.CASCADE,
                                  related_name="face_optimizations")
    study_slug = models.SlugField(max_length=80)
    aspect = models.CharField(max_length=30)
    version = models.PositiveIntegerField()
    label_field = models.CharField(max_length=100, help_text="the study field of the aspect")
    params = models.JSONField(default=dict, help_text="K, b, b', α, seed, UCB and split settings")
    model = models.JSONField(default=dict, help_text="the run-configuration entry of the model")
    train_dialogues = models.JSONField(default=list)
    dev_dialogues = models.JSONField(default=list)
    job = models.OneToOneField(Job, null=True, blank=True, on_delete=models.SET_NULL,
                               related_name="face_optimization")
    iterations_done = models.PositiveSmallIntegerField(default=0)
    beams = models.JSONField(default=dict, blank=True,
                             help_text="iteration -> instruction ids of its beam")
    usage = models.JSONField(default=list, blank=True,
                             help_text="per iteration: tokens and cost (cost null when unknown)")
    train_correlation = models.FloatField(null=True, blank=True,
                                          help_text="of the selected set, training dialogues")
    dev_correlation = models.FloatField(null=True, blank=True,
                                        help_text="of the selected set, dev dialogues")
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True,
                                   on_delete=models.SET_NULL, related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["aspect", "-version"]
        constraints = [
            models.UniqueConstraint(fields=["aspect", "version"],
                                    name="faceoptimization_version_per_aspect"),
        ]

    def __str__(self) -> str:
        return f"FACE {self.name} on study {self.study_slug}"

    @property
    def name(self) -> str:
        return f"{self.aspect}-v{self.version}"


class FaceInstruction(models.Model):
    """One instruction version of a FACE optimization: the seed (iteration 0) or a rewrite made
    in an iteration from its parent and a textual gradient (FACE §2.3)."""

    optimization = models.ForeignKey(FaceOptimization, on_delete=models.CASCADE,
                                     related_name="instructions")
    parent = models.ForeignKey("self", null=True, blank=True, on_delete=models.CASCADE,
                               related_name="children")
    iteration = models.PositiveSmallIntegerField(help_text="0: the initial instruction")
    text = models.TextField()
    gradient = models.TextField(blank=True, help_text="the textual gradient it was rewritten by")
    ucb_estimate = models.FloatField(null=True, blank=True, help_text="Q_T of Algorithm 2")
    ucb_pulls = models.PositiveIntegerField(default=0, help_text="N_T of Algorithm 2 (particles)")
    in_pool = models.BooleanField(default=False, help_text="a UCB candidate (the pool)")
    train_correlation = models.FloatField(null=True, blank=True)
    dev_correlation = models.FloatField(null=True, blank=True)
    selected = models.BooleanField(default=False, help_text="in the final set I*")

    class Meta:
        ordering = ["optimization", "iteration", "pk"]

    def __str__(self) -> str:
        return f"{self.optimization.name} iteration {self.iteration} #{self.pk}"


class Arena(models.Model):
    """Blind pairwise battles between live systems and the votes they end in (docs/arena.md).

    Battles draw two of `systems` (live systems only); imported votes (CRS Arena's files) need no
    battle and may name systems that are not live.
    """

    slug = models.SlugField(max_length=100, unique=True)
    name = models.CharField(max_length=200)
    benchmark = models.ForeignKey(Benchmark, null=True, blank=True, on_delete=models.CASCADE,
                                  related_name="arenas")
    systems = models.ManyToManyField(System, blank=True, related_name="arenas",
                                     help_text="the live systems battles draw from")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name


class Battle(models.Model):
    """One person talking to two systems at once, shown as "System A" and "System B".

    `uuid` is the only handle pages and URLs use: the primary key, the systems' ids and the
    order of creation never reach a page before the vote. Every turn is a `BattleTurn` row
    written as it happens, so a battle survives a restart of the web process.
    """

    class Status(models.TextChoices):
        OPEN = "open"
        VOTED = "voted"
        ABANDONED = "abandoned"

    uuid = models.UUIDField(unique=True, editable=False)
    arena = models.ForeignKey(Arena, on_delete=models.CASCADE, related_name="battles")
    system_a = models.ForeignKey(System, on_delete=models.PROTECT, related_name="+")
    system_b = models.ForeignKey(System, on_delete=models.PROTECT, related_name="+")
    session_key = models.CharField(max_length=64, help_text="the browser session that owns it")
    user = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True,
                             on_delete=models.SET_NULL, related_name="+")
    address_hash = models.CharField(max_length=64, blank=True,
                                    help_text="SHA-256 of the client address (never the address)")
    scenario = models.JSONField(default=dict, blank=True,
                                help_text="the benchmark scenario shown, or {} for an own request")
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.OPEN)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["-created_at"]
        constraints = [
            models.CheckConstraint(condition=~Q(system_a=F("system_b")),
                                   name="battle_two_systems"),
            models.CheckConstraint(condition=Q(status__in=["open", "voted", "abandoned"]),
                                   name="battle_status"),
        ]
        indexes = [models.Index(fields=["arena", "status"], name="battle_arena_status")]

    def __str__(self) -> str:
        return f"battle {self.uuid} ({self.status})"


class BattleTurn(models.Model):
    """One utterance of a battle: the person's (`side` user) or one system's answer to it.

    Turn `index` counts the person's messages (0, 1, …); each index has one row per side. A
    system's row is written `pending` with the person's message and settled (`ok` or `error`)
    when its answer arrives, so one system timing out never touches the other's row.
    """

    class Side(models.TextChoices):
        USER = "user"
        A = "a"
        B = "b"

    class State(models.TextChoices):
        PENDING = "pending"
        OK = "ok"
        ERROR = "error"

    battle = models.ForeignKey(Battle, on_delete=models.CASCADE, related_name="turns")
    index = models.PositiveIntegerField()
    side = models.CharField(max_length=4, choices=Side.choices)
    state = models.CharField(max_length=8, choices=State.choices, default=State.OK)
    text = models.TextField(blank=True)
    ranked_item_ids = models.JSONField(default=list, blank=True)
    citations = models.JSONField(default=list, blank=True)
    error_kind = models.CharField(max_length=20, blank=True)
    error = models.TextField(blank=True)
    latency_ms = models.PositiveIntegerField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    settled_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["battle", "index", "side"]
        constraints = [
            models.UniqueConstraint(fields=["battle", "index", "side"],
                                    name="battleturn_once_per_side"),
            models.CheckConstraint(condition=Q(side__in=["user", "a", "b"]),
                                   name="battleturn_side"),
            models.CheckConstraint(condition=Q(state__in=["pending", "ok", "error"]),
                                   name="battleturn_state"),
            models.CheckConstraint(condition=~Q(side="user") | Q(state="ok"),
                                   name="battleturn_user_turn_is_ok"),
        ]

    def __str__(self) -> str:
        return f"{self.battle_id}#{self.index}{self.side} ({self.state})"


class Vote(models.Model):
    """A person's verdict on two systems: from a battle, or imported (then `battle` is null).

    `position` is the order votes were cast in (online Elo applies them in this order); it is
    unique per arena.
    """

    class Outcome(models.TextChoices):
        A = "a", "A is better"
        B = "b", "B is better"
        TIE = "tie", "Tie"
        BOTH_BAD = "both_bad", "Both are bad"

    arena = models.ForeignKey(Arena, on_delete=models.CASCADE, related_name="votes")
    battle = models.OneToOneField(Battle, null=True, blank=True, on_delete=models.CASCADE,
                                  related_name="vote")
    system_a = models.ForeignKey(System, on_delete=models.PROTECT, related_name="+")
    system_b = models.ForeignKey(System, on_delete=models.PROTECT, related_name="+")
    outcome = models.CharField(max_length=10, choices=Outcome.choices)
    reason = models.TextField(blank=True)
    position = models.PositiveIntegerField()
    voter_ref = models.CharField(max_length=200, blank=True,
                                 help_text="who voted: a user id, or the imported file's user_id")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["arena", "position"]
        constraints = [
            models.UniqueConstraint(fields=["arena", "position"], name="vote_position_per_arena"),
            models.CheckConstraint(condition=~Q(system_a=F("system_b")),
                                   name="vote_two_systems"),
            models.CheckConstraint(condition=Q(outcome__in=["a", "b", "tie", "both_bad"]),
                                   name="vote_outcome"),
        ]

    def __str__(self) -> str:
        return f"{self.system_a_id} vs {self.system_b_id}: {self.outcome}"


class AutoEvaluator(models.Model):
    """An LLM evaluator a leaderboard's operator runs on every new upload to a benchmark (its
    protocol is the evaluator's: CoRE, the PEPPER judge and FACE read `log` files, the Trace
    judge `turn` ones), with a model and cost budgets in USD (empty: no limit). A run whose
    estimate would go over a budget waits for staff approval (`AutoEvaluation`)."""

    benchmark = models.ForeignKey(Benchmark, on_delete=models.CASCADE,
                                  related_name="auto_evaluators")
    evaluator = models.CharField(max_length=30)
    model = models.CharField(max_length=200, help_text="a litellm model name")
    instructions = models.CharField(max_length=100, blank=True,
                                    help_text="FACE only: an instruction version, e.g. "
                                              "relevance-v1 (empty: the initial instructions)")
    max_cost_per_submission = models.FloatField(null=True, blank=True)
    max_cost_per_day = models.FloatField(null=True, blank=True, help_text="UTC day")
    enabled = models.BooleanField(default=True)
    updated_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True,
                                   on_delete=models.SET_NULL, related_name="+")
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["benchmark", "evaluator"]
        constraints = [
            models.UniqueConstraint(fields=["benchmark", "evaluator"],
                                    name="autoevaluator_one_per_evaluator"),
            models.CheckConstraint(condition=Q(max_cost_per_submission__gte=0) |
                                   Q(max_cost_per_submission__isnull=True),
                                   name="autoevaluator_submission_budget"),
            models.CheckConstraint(condition=Q(max_cost_per_day__gte=0) |
                                   Q(max_cost_per_day__isnull=True),
                                   name="autoevaluator_day_budget"),
        ]

    def __str__(self) -> str:
        return f"{self.evaluator} with {self.model} on {self.benchmark_id}"


class AutoEvaluation(models.Model):
    """One automatic LLM run of a new submission: started at once (within its budgets),
    waiting for staff approval (its estimate would exceed one, or its cost is unknown under a
    budget), or rejected. `estimate` is `RunEstimate.to_dict()`; `options` the run's
    `llm_run_create` choices as they were when the submission arrived."""

    class Status(models.TextChoices):
        STARTED = "started", "Started"
        WAITING = "waiting", "Waiting for approval"
        REJECTED = "rejected", "Rejected"

    auto_evaluator = models.ForeignKey(AutoEvaluator, null=True, blank=True,
                                       on_delete=models.SET_NULL, related_name="evaluations")
    submission = models.ForeignKey(Submission, on_delete=models.CASCADE,
                                   related_name="auto_evaluations")
    evaluator = models.CharField(max_length=30)
    options = models.JSONField(default=dict)
    estimate = models.JSONField(default=dict)
    cost_usd = models.FloatField(null=True, blank=True, help_text="estimated; null: unknown")
    status = models.CharField(max_length=10, choices=Status.choices)
    reason = models.TextField(blank=True, help_text="why it waits")
    run = models.OneToOneField(Run, null=True, blank=True, on_delete=models.SET_NULL,
                               related_name="auto_evaluation")
    decided_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True,
                                   on_delete=models.SET_NULL, related_name="+")
    decided_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at", "-pk"]
        indexes = [models.Index(fields=["auto_evaluator", "status", "created_at"])]
        constraints = [
            models.CheckConstraint(condition=Q(status__in=["started", "waiting", "rejected"]),
                                   name="autoevaluation_status"),
        ]

    def __str__(self) -> str:
        return f"{self.evaluator} on submission {self.submission_id}: {self.status}"
