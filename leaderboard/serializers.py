"""REST API representations (Django REST framework). Writes go through leaderboard.services."""

from django.core.validators import RegexValidator
from django.db import models
from django.urls import reverse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from evaluation.lib.metrics.ievalm import ACCEPT_AT
from evaluation.lib.metrics.preference import PCIR_EQ3, PCIR_VARIANTS
from evaluation.lib.simulators.simulators import DEFAULT_SHOWN_K, MAX_SHOWN_K
from evaluation.models import Arena, Benchmark, Submission, System


class BenchmarkSerializer(serializers.ModelSerializer):
    leaderboard = serializers.SerializerMethodField()
    public_bundle = serializers.SerializerMethodField()
    sample_submission = serializers.SerializerMethodField()

    class Meta:
        model = Benchmark
        fields = ("slug", "name", "version", "domain", "description", "license", "protocols",
                  "splits", "leaderboard", "public_bundle", "sample_submission")

    def get_leaderboard(self, obj) -> str:
        return reverse("leaderboard:api_leaderboard", args=[obj.slug])

    def get_public_bundle(self, obj) -> str:
        return reverse("leaderboard:api_benchmark_public", args=[obj.slug])

    def get_sample_submission(self, obj) -> str:
        return reverse("leaderboard:api_benchmark_sample", args=[obj.slug])


class StrictCharField(serializers.CharField):
    """Text only: DRF's CharField turns `{"name": 0}` into the name "0". Its pattern tells
    the schema what DRF refuses besides: NUL characters, and (where a value is needed) text
    that is only whitespace, which DRF trims to blank."""

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        # A blank value never reaches the validators (DRF returns it first), so the pattern of
        # a field that may be blank asks for one character: the schema's "or blank" is apart.
        if self.allow_blank:
            pattern, message = r"^[^\x00]+$", "expected text without NUL characters"
        else:
            pattern = r"^[^\x00]*[^\s\x00][^\x00]*$"
            message = "expected some text (not only spaces), without NUL characters"
        self.validators.append(RegexValidator(pattern, message))

    def to_internal_value(self, data):
        if not isinstance(data, str):
            self.fail("invalid")
        return super().to_internal_value(data)


class WebAddressField(serializers.URLField):
    """An http(s) address, text only. Its pattern (in the schema too) is a part of what
    Django's URLValidator accepts, so that every address the schema allows is accepted:
    host labels, a letters-only top-level domain, an optional port, then path, query and
    fragment in the characters of RFC 3986 (anything else percent-encoded)."""

    _CHAR = r"(?:[A-Za-z0-9\-._~!$&'()*+,;=:@]|%[0-9A-Fa-f]{2})"  # RFC 3986 pchar
    PATTERN = (r"^https?://(?:[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?\.)+[A-Za-z]{2,63}"
               rf"(?::[0-9]{{1,5}})?(?:/(?:{_CHAR}|/)*)?(?:\?(?:{_CHAR}|[/?])*)?"
               rf"(?:#(?:{_CHAR}|[/?])*)?$")

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.validators.append(RegexValidator(
            self.PATTERN, "expected an http(s) address such as https://example.org/paper"))

    def to_internal_value(self, data):
        if not isinstance(data, str):
            self.fail("invalid")
        return super().to_internal_value(data)


class SystemSerializer(serializers.ModelSerializer):
    serializer_field_mapping = {
        **serializers.ModelSerializer.serializer_field_mapping,
        models.CharField: StrictCharField, models.TextField: StrictCharField,
        models.URLField: WebAddressField,
    }
    owner = serializers.SlugRelatedField(
        slug_field="username", read_only=True, allow_null=True,
        help_text="the owner's username; null for a reference baseline")
    page = serializers.SerializerMethodField()

    class Meta:
        model = System
        fields = ("slug", "name", "description", "paper_url", "code_url", "team", "family",
                  "is_baseline", "owner", "created_at", "page")
        read_only_fields = ("slug", "is_baseline", "owner", "created_at", "page")

    def get_page(self, obj) -> str:
        return reverse("leaderboard:system_detail", args=[obj.slug])


class RunBriefSerializer(serializers.Serializer):
    id = serializers.IntegerField(source="pk")
    evaluator = serializers.CharField()
    evaluator_version = serializers.CharField()
    config_hash = serializers.CharField()
    status = serializers.CharField(source="job.status")
    progress = serializers.SerializerMethodField()
    url = serializers.SerializerMethodField()

    def get_progress(self, obj) -> dict:
        return {"stage": obj.job.stage, "done": obj.job.done, "total": obj.job.total,
                "error": obj.job.error or None}

    def get_url(self, obj) -> str:
        return reverse("leaderboard:api_run", args=[obj.pk])


class SubmissionSerializer(serializers.ModelSerializer):
    system = serializers.SlugRelatedField(slug_field="slug", read_only=True)
    benchmark = serializers.SlugRelatedField(slug_field="slug", read_only=True)
    runs = serializers.SerializerMethodField()

    class Meta:
        model = Submission
        fields = ("uuid", "system", "benchmark", "protocol", "line_count", "note", "is_public",
                  "created_at", "runs")
        read_only_fields = fields

    def get_runs(self, obj) -> list[dict]:
        runs = obj.runs.select_related("job").order_by("-created_at", "-pk")
        return RunBriefSerializer(runs, many=True).data


@extend_schema_field(OpenApiTypes.BINARY)
class UploadField(serializers.FileField):
    """A file part of a multipart upload (described as binary, not as a URL)."""


class SubmissionUploadSerializer(serializers.Serializer):
    system = serializers.SlugField(help_text="slug of one of your systems")
    benchmark = serializers.SlugField(help_text="slug of the benchmark the file answers")
    file = UploadField(help_text="submission.jsonl or, with protocol `log`, logs.jsonl "
                                 "(docs/formats.md §2)")
    note = serializers.CharField(max_length=300, required=False, allow_blank=True)
    protocol = serializers.ChoiceField(choices=["turn", "log"], default="turn",
                                       help_text="turn (the default) or log")


class RequiredBooleanField(serializers.BooleanField):
    """A boolean as the schema says: JSON true or false; in form data the text "true" or
    "false". DRF would also take 1, "yes", "on", … and an unknown value can publish."""

    # DRF reads a missing checkbox in form data as False; here a missing field is an error,
    # so an empty POST can never withdraw a submission by accident.
    default_empty_html = serializers.empty

    def to_internal_value(self, data):
        if isinstance(data, bool):
            return data
        request = self.context.get("request")
        form = request is not None and request.content_type != "application/json"
        if form and isinstance(data, str) and data.lower() in ("true", "false"):
            return data.lower() == "true"
        self.fail("invalid")


class PublishSerializer(serializers.Serializer):
    public = RequiredBooleanField(help_text="true publishes, false withdraws")


class FormatIssueSerializer(serializers.Serializer):
    file = serializers.CharField()
    line = serializers.IntegerField(allow_null=True)
    path = serializers.CharField()
    message = serializers.CharField()


class StagedUploadSerializer(serializers.Serializer):
    """A large upload that a worker checks (a Job of kind `submission_validation`). The view
    passes the submission it made, once it is made and the caller may see it, as
    context["submission"]."""

    id = serializers.IntegerField(source="pk")
    status = serializers.CharField(help_text="queued, running, succeeded (the file was valid "
                                             "and is stored) or failed (see `detail`)")
    progress = serializers.SerializerMethodField()
    detail = serializers.SerializerMethodField()
    errors = serializers.SerializerMethodField()
    submission = serializers.SerializerMethodField()
    created_at = serializers.DateTimeField()
    finished_at = serializers.DateTimeField(allow_null=True)
    url = serializers.SerializerMethodField()
    page = serializers.SerializerMethodField()

    def get_progress(self, obj) -> dict:
        return {"stage": obj.stage, "done": obj.done, "total": obj.total}

    def get_detail(self, obj) -> str | None:
        return obj.error or None

    @extend_schema_field(FormatIssueSerializer(many=True, allow_null=True))
    def get_errors(self, obj) -> list | None:
        return obj.result.get("errors")

    @extend_schema_field(SubmissionSerializer(allow_null=True))
    def get_submission(self, obj) -> dict | None:
        submission = self.context.get("submission")
        return SubmissionSerializer(submission).data if submission else None

    def get_url(self, obj) -> str:
        return reverse("leaderboard:api_staged_upload", args=[obj.pk])

    def get_page(self, obj) -> str:
        return reverse("leaderboard:submission_staged", args=[obj.pk])


class ErrorSerializer(serializers.Serializer):
    """Every 401, 403, 404, 405, 409, 429 and 503 of the API: what went wrong, in words."""

    detail = serializers.CharField()


class ValidationErrorsSerializer(serializers.Serializer):
    """A 400: documented by leaderboard.schema.ValidationErrorsExtension (each bad field with
    its messages; an invalid submission file adds `detail` and `errors`)."""


class TokenSerializer(serializers.Serializer):
    token = serializers.CharField(help_text="send it as `Authorization: Token <token>`")


class MetricValueSerializer(serializers.Serializer):
    value = serializers.FloatField(allow_null=True)
    ci_low = serializers.FloatField(allow_null=True)
    ci_high = serializers.FloatField(allow_null=True)
    n = serializers.IntegerField()
    rank = serializers.IntegerField(allow_null=True)
    run = serializers.IntegerField()
    rule = serializers.DictField(
        required=False, help_text="T2R only: the rule for dialogues without a hit (`rule`, "
        "`rule_text`) and how many of the run's dialogues it applies to (`dialogues` of `of`)")


class HumanAgreementSerializer(serializers.Serializer):
    correlation = serializers.CharField()
    value = serializers.FloatField()
    ci_low = serializers.FloatField()
    ci_high = serializers.FloatField()
    units = serializers.IntegerField()
    dialogues = serializers.IntegerField()
    study = serializers.CharField()
    study_title = serializers.CharField()
    aspect = serializers.CharField()
    measurements = serializers.IntegerField()
    url = serializers.CharField()


class LeaderboardColumnSerializer(serializers.Serializer):
    key = serializers.CharField()
    evaluator = serializers.CharField()
    metric = serializers.CharField()
    axis = serializers.CharField()
    direction = serializers.ChoiceField(choices=["higher", "lower"])
    human_agreement = HumanAgreementSerializer(
        allow_null=True, help_text="the metric's best measured agreement with human labels on "
        "this benchmark (the trust column); null: not validated")
    simulator_validity = serializers.DictField(
        allow_null=True, help_text="on a simulated-… board, the simulation column's simulator "
        "validity: Kendall tau_b and Spearman rho with CIs between its ranking and the arena's "
        "(`arena`) and each study's mean numeric label per system (`labels`, the headline "
        "first), or why not measured; null elsewhere (docs/statistics.md, \"Simulator "
        "validity\")")


class LeaderboardRowSerializer(serializers.Serializer):
    rank = serializers.IntegerField(allow_null=True)
    system = serializers.CharField()
    slug = serializers.CharField()
    family = serializers.CharField()
    team = serializers.CharField()
    baseline = serializers.BooleanField()
    public = serializers.BooleanField()
    splits = serializers.CharField(help_text="the splits this row was evaluated on (the same "
                                             "for every row of one leaderboard)")
    runs = serializers.DictField(child=serializers.IntegerField())
    metrics = serializers.DictField(child=MetricValueSerializer())


class CoverageSerializer(serializers.Serializer):
    splits = serializers.CharField()
    param = serializers.CharField(help_text="the value of ?splits= that selects it")
    systems = serializers.IntegerField()
    design = serializers.CharField(required=False,
                                   help_text="a simulated board's: the design, in words")


class DesignSerializer(serializers.Serializer):
    """The design every run of a simulated board shares (docs/simulation.md, "Designs")."""

    key = serializers.CharField(help_text="design-<hash>: the value of ?splits= selecting it")
    label = serializers.CharField(help_text="simulator and version, users × turns, seed, pool, "
                                            "top K shown, model")


class LeaderboardSerializer(serializers.Serializer):
    benchmark = serializers.CharField()
    protocol = serializers.CharField()
    splits = serializers.CharField(help_text="the split set every listed run was evaluated on, "
                                             "split names joined by '+' (e.g. test, dev+test)")
    other_splits = CoverageSerializer(many=True, help_text="split sets ranked separately")
    design = DesignSerializer(allow_null=True, help_text="on a simulated-… board, the design "
                                                         "of every listed run; null elsewhere")
    sort = serializers.CharField()
    rank_metric = serializers.CharField(allow_null=True)
    columns = LeaderboardColumnSerializer(many=True)
    human_agreement_rule = serializers.CharField()
    systems = LeaderboardRowSerializer(many=True)


class RunResultSerializer(serializers.Serializer):
    """evaluation.selectors.run_results plus the job's progress."""

    run = serializers.IntegerField()
    status = serializers.CharField()
    system = serializers.CharField()
    benchmark = serializers.CharField()
    evaluator = serializers.CharField()
    evaluator_version = serializers.CharField()
    config_hash = serializers.CharField()
    splits = serializers.ListField(child=serializers.CharField())
    metrics = serializers.DictField(child=serializers.DictField())
    unavailable = serializers.DictField(child=serializers.CharField())
    progress = serializers.DictField()
    submission = serializers.UUIDField()
    page = serializers.CharField()


# --- simulations (docs/simulation.md) --------------------------------------------------------


class SimulationStartSerializer(serializers.Serializer):
    """POST /api/simulations/: a simulator talks to one of your live systems."""

    system = serializers.SlugField(help_text="slug of one of your systems")
    benchmark = serializers.SlugField(help_text="slug of a benchmark with simulated users")
    simulator = serializers.ChoiceField(choices=["template", "pepper", "ievalm"],
                                        help_text="template needs no LLM; pepper and ievalm "
                                                  "use the server's configured model")
    users = serializers.IntegerField(min_value=1, max_value=5000)
    turns = serializers.IntegerField(min_value=1, max_value=50)
    seed = serializers.IntegerField(required=False, default=0, min_value=-2**31,
                                    max_value=2**31 - 1)
    pool = serializers.ChoiceField(choices=["catalogue", "dialogue"], required=False,
                                   default="catalogue")
    shown_k = serializers.IntegerField(
        required=False, default=DEFAULT_SHOWN_K, min_value=1, max_value=MAX_SHOWN_K,
        help_text=f"items the simulated user is shown per turn (PEPPER: {DEFAULT_SHOWN_K}); "
                  "part of the design")
    accept_at = serializers.IntegerField(
        required=False, default=ACCEPT_AT, min_value=1, max_value=MAX_SHOWN_K,
        help_text=f"ievalm: the user accepts a target in the system's top N (iEvaLM: "
                  f"{ACCEPT_AT})")
    pcir = serializers.ChoiceField(
        choices=list(PCIR_VARIANTS), required=False, default=PCIR_EQ3,
        help_text="PCIR_avg: eq3 (PC_T / T, the paper's Eq. 3; default) or tables "
                  "((PC_T − PC_1) / (T − 1), fits its Tables 3 and 5)")
    batch_size = serializers.IntegerField(required=False, default=10, min_value=1,
                                          max_value=1000, help_text="users per Celery task")
    failure_threshold = serializers.FloatField(
        required=False, default=0.5, min_value=0.001, max_value=1.0,
        help_text="the run stops once this share of its users' dialogues failed")
    endpoint = StrictCharField(required=False, allow_blank=True, max_length=500,
                               help_text="register (or change) the system's concord-live/1 "
                                         "endpoint first (docs/formats.md §4)")
    credential = StrictCharField(
        required=False, allow_blank=True, max_length=100,
        help_text="with `endpoint`: the name of a key the operator offers (CONCORD_CREDENTIALS), "
                  "sent to the endpoint as a Bearer token; empty: none")
    timeout_seconds = serializers.FloatField(required=False, min_value=0.1, max_value=600)

    def validate(self, attrs):
        if "api_key_env" in self.initial_data:
            raise serializers.ValidationError({"api_key_env": (
                "Concord never reads an environment variable you name: give `credential`, one "
                "of the names the operator offers (CONCORD_CREDENTIALS), or none")})
        if attrs.get("credential") and not attrs.get("endpoint"):
            raise serializers.ValidationError({"credential": (
                "a credential is registered with the endpoint: give `endpoint` too")})
        return attrs


class SimulationSerializer(serializers.Serializer):
    """A simulation: its configuration, progress and, once it succeeded, its preference
    coverage (PEPPER §3.3.1): pc@K, pcir@K and recall@K as lists over turns 1..T, and the
    summaries pc@K (at T), pcir_avg@K and recall@K with their 95% CIs."""

    id = serializers.IntegerField(source="pk")
    system = serializers.CharField(source="system.slug")
    benchmark = serializers.CharField(source="benchmark.slug")
    simulator = serializers.CharField()
    simulator_version = serializers.CharField()
    config = serializers.DictField()
    config_hash = serializers.CharField()
    users = serializers.IntegerField()
    turns = serializers.IntegerField()
    seed = serializers.IntegerField()
    created_at = serializers.DateTimeField()
    status = serializers.CharField(source="job.status",
                                   help_text="queued, running, succeeded, failed or cancelled")
    progress = serializers.SerializerMethodField()
    run = serializers.IntegerField(source="run_id", allow_null=True)
    submission = serializers.SerializerMethodField()
    failed = serializers.SerializerMethodField()
    failures_by_kind = serializers.SerializerMethodField()
    metrics = serializers.SerializerMethodField()
    summaries = serializers.SerializerMethodField()
    overhead_ms_per_turn = serializers.SerializerMethodField()
    url = serializers.SerializerMethodField()
    page = serializers.SerializerMethodField()

    def get_progress(self, obj) -> dict:
        return {"stage": obj.job.stage, "done": obj.job.done, "total": obj.job.total,
                "error": obj.job.error or None}

    def get_submission(self, obj) -> str | None:
        return str(obj.submission.uuid) if obj.submission_id else None

    def get_failed(self, obj) -> int | None:
        return (obj.report or obj.job.result or {}).get("failed")

    def get_failures_by_kind(self, obj) -> dict:
        return (obj.report or obj.job.result or {}).get("failures_by_kind", {})

    @extend_schema_field(serializers.DictField(child=serializers.ListField(
        child=serializers.FloatField())))
    def get_metrics(self, obj) -> dict:
        report = obj.report or {}
        return {key: values for key, values in report.items()
                if key.split("@")[0] in ("pc", "pcir", "recall") and isinstance(values, list)}

    @extend_schema_field(serializers.DictField(child=serializers.DictField()))
    def get_summaries(self, obj) -> dict:
        return (obj.report or {}).get("summaries", {})

    def get_overhead_ms_per_turn(self, obj) -> float | None:
        return (obj.report or {}).get("overhead_ms_per_turn")

    def get_url(self, obj) -> str:
        return reverse("leaderboard:api_simulation", args=[obj.pk])

    def get_page(self, obj) -> str:
        return (reverse("run_detail", args=[obj.run_id]) if obj.run_id
                else reverse("job_detail", args=[obj.job_id]))


class ArenaSerializer(serializers.ModelSerializer):
    benchmark = serializers.SlugRelatedField(slug_field="slug", read_only=True)
    votes = serializers.IntegerField(source="vote_count", read_only=True)
    ratings = serializers.SerializerMethodField()

    class Meta:
        model = Arena
        fields = ("slug", "name", "benchmark", "votes", "ratings")

    def get_ratings(self, obj) -> str:
        return reverse("leaderboard:api_arena_ratings", args=[obj.slug])


class ArenaRatingRowSerializer(serializers.Serializer):
    rank = serializers.IntegerField(allow_null=True)
    rank_low = serializers.IntegerField(allow_null=True)
    rank_high = serializers.IntegerField(allow_null=True)
    system = serializers.CharField()
    slug = serializers.CharField()
    rating = serializers.FloatField(allow_null=True)
    ci_low = serializers.FloatField(allow_null=True)
    ci_high = serializers.FloatField(allow_null=True)
    votes = serializers.IntegerField()
    wins = serializers.IntegerField()
    losses = serializers.IntegerField()
    ties = serializers.IntegerField()


class ArenaWinRateSerializer(serializers.Serializer):
    system = serializers.CharField()
    opponent = serializers.CharField()
    win_rate = serializers.FloatField()


class ArenaExcludedSerializer(serializers.Serializer):
    identity_leaked = serializers.IntegerField(
        help_text="battles left out: an answer named its system (docs/arena.md)")
    owner = serializers.IntegerField(
        help_text="votes left out: cast by the owner of a system in the battle")


class ArenaRatingsSerializer(serializers.Serializer):
    arena = serializers.CharField()
    name = serializers.CharField()
    benchmark = serializers.CharField(allow_null=True)
    method = serializers.ChoiceField(choices=["elo", "bt"])
    method_label = serializers.CharField()
    filters = serializers.DictField()
    votes = serializers.IntegerField(help_text="the votes counted")
    excluded = ArenaExcludedSerializer()
    params = serializers.DictField()
    valid_resamples = serializers.IntegerField()
    undefined_reason = serializers.CharField(allow_null=True)
    ci = serializers.CharField()
    rank = serializers.CharField()
    systems = ArenaRatingRowSerializer(many=True)
    win_rates = ArenaWinRateSerializer(many=True)
