"""Annotation studies (annotation.md): what is judged, by whom, in which order, and the labels.

Invariants live in the database: one annotation per item x annotator, one assignment per
member x item and per member x position, letters unique per study x dialogue, and check
constraints on every fixed scale range (CoRE 0-4 and 0-100, FACE as released, study settings).
Likert scales are configurable per study, so their ranges are checked by the server
(`taskforms.parse_post`) instead.
"""

from django.conf import settings
from django.db import models
from django.db.models import F, Q

from annotation.lib import taskforms
from evaluation.lib.stats.methods import interval_is_current, interval_version

VALIDATION_INTERVAL = "evaluator_correlation"


def validation_interval_version() -> int:
    """The current version of a stored metric–human correlation's interval."""
    return interval_version(VALIDATION_INTERVAL)


class HandoutPolicy(models.TextChoices):
    UNIFORM = "uniform", "uniform: every item, in random order (the default)"
    ACTIVE = "active", "active: a label budget, drawn where the evaluator is least trusted"


class Study(models.Model):
    class Stratify(models.TextChoices):
        NONE = "", "no stratification (paired: every system on the same turns)"
        DIFFICULTY = "difficulty", "by difficulty tier"
        SYSTEM = "system", "by system (a separate sample per system)"

    slug = models.SlugField(max_length=80, unique=True)
    title = models.CharField(max_length=200)
    benchmark = models.ForeignKey("evaluation.Benchmark", on_delete=models.PROTECT,
                                  related_name="studies")
    author = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT,
                               related_name="authored_studies")
    instructions = models.TextField(blank=True, help_text="Markdown, rendered sanitized")
    forms = models.JSONField(default=list, help_text="enabled task forms (taskforms.ALL_FORMS)")
    likert_scales = models.JSONField(default=list, blank=True)
    overlap_k = models.PositiveSmallIntegerField(default=3, help_text="labels wanted per item")
    gold_rate = models.FloatField(default=0.1, help_text="share of gold items mixed in")
    gold_pass_threshold = models.FloatField(default=0.7,
                                            help_text="gold accuracy below this is flagged")
    seconds_per_item = models.PositiveIntegerField(default=90, help_text="time estimate")
    invite_token = models.CharField(max_length=64, unique=True)
    tie_break_extra = models.BooleanField(
        default=True, help_text="one more label when a categorical field has no majority")
    assignment_timeout_minutes = models.PositiveIntegerField(default=30)
    seed = models.BigIntegerField(default=0)
    config = models.JSONField(default=dict, blank=True,
                              help_text="how the items were chosen (sources, sample, counts)")
    is_open = models.BooleanField(default=True, help_text="closed: members may only read")
    source = models.CharField(
        max_length=100, default="native",
        help_text="native (labelled here) or imported:<data set> (finished labels, no items)")
    is_public = models.BooleanField(
        default=False, help_text="its metric leaderboard is public (reports stay private)")
    # How items are handed out (statistics.md, "Label these next: active handout"): uniform
    # (every item to its overlap target) or active (a label budget drawn in waves with
    # inclusion probabilities from the evaluator metric's predicted error; HandoutWave).
    handout_policy = models.CharField(max_length=10, choices=HandoutPolicy.choices,
                                      default=HandoutPolicy.UNIFORM)
    handout_evaluator = models.CharField(max_length=100, blank=True,
                                         help_text="active: the evaluator whose scores drive it")
    handout_metric = models.CharField(max_length=100, blank=True)
    handout_aspect = models.CharField(max_length=100, blank=True,
                                      help_text="active: the human field its error is measured on")
    handout_budget = models.PositiveIntegerField(
        null=True, blank=True, help_text="active: the expected number of items labelled")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at"]
        verbose_name_plural = "studies"
        constraints = [
            models.CheckConstraint(condition=Q(overlap_k__gte=1, overlap_k__lte=50),
                                   name="study_overlap_1_to_50"),
            models.CheckConstraint(condition=Q(gold_rate__gte=0, gold_rate__lte=0.5),
                                   name="study_gold_rate_0_to_half"),
            models.CheckConstraint(
                condition=Q(gold_pass_threshold__gte=0, gold_pass_threshold__lte=1),
                name="study_gold_threshold_0_to_1"),
            models.CheckConstraint(condition=Q(seconds_per_item__gte=1),
                                   name="study_time_estimate_positive"),
            models.CheckConstraint(condition=Q(assignment_timeout_minutes__gte=1),
                                   name="study_timeout_positive"),
            models.CheckConstraint(condition=Q(source="native") | Q(source__startswith="imported:"),
                                   name="study_source_valid"),
            models.CheckConstraint(condition=Q(handout_policy__in=["uniform", "active"]),
                                   name="study_handout_policy_valid"),
            models.CheckConstraint(
                condition=Q(handout_policy="uniform") | (
                    ~Q(handout_evaluator="") & ~Q(handout_metric="") & ~Q(handout_aspect="")
                    & Q(handout_budget__gte=1)),
                name="study_active_handout_is_complete"),
        ]

    def __str__(self) -> str:
        return self.title

    @property
    def timeout_seconds(self) -> int:
        return self.assignment_timeout_minutes * 60

    @property
    def is_imported(self) -> bool:
        return self.source.startswith("imported:")

    @property
    def is_active_handout(self) -> bool:
        return self.handout_policy == HandoutPolicy.ACTIVE


class StudyMember(models.Model):
    """An annotator of a study; excluded annotators get no new items and leave the reports."""

    study = models.ForeignKey(Study, on_delete=models.CASCADE, related_name="members")
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE,
                             related_name="study_memberships")
    order_seed = models.BigIntegerField(help_text="this annotator's random item order")
    joined_at = models.DateTimeField(auto_now_add=True)
    excluded = models.BooleanField(default=False)
    exclusion_reason = models.CharField(max_length=300, blank=True)
    excluded_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["study", "joined_at"]
        constraints = [
            models.UniqueConstraint(fields=["study", "user"], name="studymember_once"),
            models.CheckConstraint(condition=Q(excluded=False) | ~Q(exclusion_reason=""),
                                   name="studymember_exclusion_has_reason"),
        ]

    def __str__(self) -> str:
        return f"{self.user} in {self.study}"


class BlindingEntry(models.Model):
    """The blinding map: per study x dialogue, a stored random permutation systems -> letters."""

    study = models.ForeignKey(Study, on_delete=models.CASCADE, related_name="blinding")
    dialogue = models.ForeignKey("evaluation.Dialogue", on_delete=models.CASCADE,
                                 related_name="+")
    source_key = models.CharField(max_length=60, help_text="'reference' or 'submission:<id>'")
    system = models.ForeignKey("evaluation.System", null=True, blank=True,
                               on_delete=models.CASCADE, related_name="+",
                               help_text="empty: the benchmark's reference response")
    letter = models.CharField(max_length=2)

    class Meta:
        ordering = ["study", "dialogue", "letter"]
        verbose_name_plural = "blinding entries"
        constraints = [
            models.UniqueConstraint(fields=["study", "dialogue", "source_key"],
                                    name="blinding_one_letter_per_source"),
            models.UniqueConstraint(fields=["study", "dialogue", "letter"],
                                    name="blinding_letter_once"),
            models.CheckConstraint(condition=Q(letter__regex=r"^[A-Z]{1,2}$"),
                                   name="blinding_letter_format"),
        ]

    def __str__(self) -> str:
        return f"System {self.letter}"


ITEM_MODES = ("response", "conversation", "recommend", "pairwise")


class StudyItem(models.Model):
    """A snapshot of one thing to judge, frozen when the study is created."""

    class Mode(models.TextChoices):
        RESPONSE = "response", "system response (citation check, checklist, Likert)"
        CONVERSATION = "conversation", "conversation (CoRE, FACE)"
        RECOMMEND = "recommend", "blind recommendation"
        PAIRWISE = "pairwise", "pairwise preference"

    class Kind(models.TextChoices):
        NORMAL = "normal"
        CALIBRATION = "calibration"
        GOLD = "gold"

    study = models.ForeignKey(Study, on_delete=models.CASCADE, related_name="items")
    position = models.PositiveIntegerField(help_text="creation order within the study")
    mode = models.CharField(max_length=20, choices=Mode.choices)
    kind = models.CharField(max_length=12, choices=Kind.choices, default=Kind.NORMAL)
    dialogue = models.ForeignKey("evaluation.Dialogue", on_delete=models.PROTECT,
                                 related_name="+")
    turn_index = models.PositiveIntegerField(null=True, blank=True,
                                             help_text="the judged turn / recommend point")
    context = models.JSONField(default=list, blank=True,
                               help_text="turns shown: [{index, role, text, action, rated}]")
    response_text = models.TextField(blank=True)
    citations = models.JSONField(default=list, blank=True,
                                 help_text="[{label, review_id, quote}] of the response")
    system = models.ForeignKey("evaluation.System", null=True, blank=True,
                               on_delete=models.PROTECT, related_name="+",
                               help_text="empty: the benchmark's reference response")
    submission = models.ForeignKey("evaluation.Submission", null=True, blank=True,
                                   on_delete=models.PROTECT, related_name="+")
    blind = models.ForeignKey(BlindingEntry, null=True, blank=True, on_delete=models.CASCADE,
                              related_name="+")
    # Pairwise items compare a second response to the same turn.
    response_b_text = models.TextField(blank=True)
    citations_b = models.JSONField(default=list, blank=True)
    system_b = models.ForeignKey("evaluation.System", null=True, blank=True,
                                 on_delete=models.PROTECT, related_name="+")
    submission_b = models.ForeignKey("evaluation.Submission", null=True, blank=True,
                                     on_delete=models.PROTECT, related_name="+")
    blind_b = models.ForeignKey(BlindingEntry, null=True, blank=True, on_delete=models.CASCADE,
                                related_name="+")
    expected = models.JSONField(default=dict, blank=True,
                                help_text="gold / calibration answers: flattened field -> value")
    reference = models.JSONField(default=dict, blank=True,
                                 help_text="facts for authors only (gold items, how built)")
    target_labels = models.PositiveSmallIntegerField(
        default=1, help_text="overlap k, or k + 1 after a categorical tie")

    class Meta:
        ordering = ["study", "position"]
        constraints = [
            models.UniqueConstraint(fields=["study", "position"], name="studyitem_position"),
            models.CheckConstraint(condition=Q(mode__in=ITEM_MODES), name="studyitem_mode_valid"),
            models.CheckConstraint(condition=Q(kind__in=["normal", "calibration", "gold"]),
                                   name="studyitem_kind_valid"),
            models.CheckConstraint(condition=Q(target_labels__gte=1),
                                   name="studyitem_target_positive"),
            models.CheckConstraint(
                condition=~Q(mode__in=["response", "pairwise", "recommend"])
                | Q(turn_index__isnull=False),
                name="studyitem_turn_items_have_a_turn"),
            models.CheckConstraint(
                condition=~Q(mode__in=["response", "pairwise"]) | ~Q(response_text=""),
                name="studyitem_response_present"),
            models.CheckConstraint(
                condition=~Q(mode="pairwise") | (~Q(response_b_text="") & Q(blind_b__isnull=False)),
                name="studyitem_pairwise_has_two_responses"),
            models.CheckConstraint(condition=~Q(kind="gold") | ~Q(expected={}),
                                   name="studyitem_gold_has_expected_answers"),
        ]
        indexes = [models.Index(fields=["study", "kind"])]

    def __str__(self) -> str:
        return f"{self.study_id}/{self.position} ({self.mode}, {self.kind})"


class Assignment(models.Model):
    """An item handed to an annotator, at a position in that annotator's randomized order."""

    class Status(models.TextChoices):
        ACTIVE = "active"
        SUBMITTED = "submitted"
        RELEASED = "released", "released (timed out; slot given back)"

    member = models.ForeignKey(StudyMember, on_delete=models.CASCADE, related_name="assignments")
    item = models.ForeignKey(StudyItem, on_delete=models.CASCADE, related_name="assignments")
    position = models.PositiveIntegerField(help_text="1-based, in this annotator's order")
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.ACTIVE)
    reason = models.CharField(max_length=20, blank=True, help_text="why it was handed out")
    handed_out_at = models.DateTimeField()
    last_active_at = models.DateTimeField()
    released_at = models.DateTimeField(null=True, blank=True)
    submitted_at = models.DateTimeField(null=True, blank=True)
    focused_ms = models.PositiveBigIntegerField(default=0, help_text="visible, focused time")
    swapped = models.BooleanField(default=False, help_text="pairwise: second response on the left")
    queue_total = models.PositiveIntegerField(default=0, help_text="item i of N, at hand-out")
    seconds_left = models.PositiveIntegerField(default=0, help_text="estimate at hand-out")

    class Meta:
        ordering = ["member", "position"]
        constraints = [
            models.UniqueConstraint(fields=["member", "item"], name="assignment_once_per_item"),
            models.UniqueConstraint(fields=["member", "position"], name="assignment_position"),
            models.CheckConstraint(condition=Q(status__in=["active", "submitted", "released"]),
                                   name="assignment_status_valid"),
            models.CheckConstraint(condition=Q(position__gte=1), name="assignment_position_1"),
            models.CheckConstraint(condition=Q(last_active_at__gte=F("handed_out_at")),
                                   name="assignment_activity_after_handout"),
        ]
        indexes = [models.Index(fields=["item", "status"])]

    def __str__(self) -> str:
        return f"{self.member} #{self.position}"


class HandoutWave(models.Model):
    """One wave of a study's active handout: a share of its pool (items of the metric's unit
    type, split into waves at random per system), each item drawn with its own inclusion
    probability (HandoutDraw). Every wave follows the evaluator's predicted error: from the
    labels already in, or in wave 1 from the judge's reported uncertainty (uniform when it
    reports none; statistics.md, "Label these next: active handout")."""

    class Rule(models.TextChoices):
        UNIFORM = "uniform"
        ACTIVE = "active"

    study = models.ForeignKey(Study, on_delete=models.CASCADE, related_name="handout_waves")
    number = models.PositiveSmallIntegerField(help_text="1, 2, … in the order drawn")
    of = models.PositiveSmallIntegerField(help_text="the number of waves planned")
    rule = models.CharField(max_length=10, choices=Rule.choices)
    evaluator = models.CharField(max_length=100)
    metric = models.CharField(max_length=100)
    aspect = models.CharField(max_length=100)
    budget = models.FloatField(help_text="the expected labels of this wave (the sum of its π)")
    units = models.PositiveIntegerField(help_text="items of the pool in this wave")
    drawn = models.PositiveIntegerField(help_text="items drawn (handed out)")
    labels_used = models.PositiveIntegerField(
        default=0, help_text="labelled pool items the error model was fitted on")
    seed = models.BigIntegerField()
    created_at = models.DateTimeField()

    class Meta:
        ordering = ["study", "number"]
        constraints = [
            models.UniqueConstraint(fields=["study", "number"], name="handoutwave_once"),
            models.CheckConstraint(condition=Q(number__gte=1) & Q(number__lte=F("of")),
                                   name="handoutwave_number_in_plan"),
            models.CheckConstraint(condition=Q(rule__in=["uniform", "active"]),
                                   name="handoutwave_rule_valid"),
            models.CheckConstraint(condition=Q(drawn__lte=F("units")),
                                   name="handoutwave_drawn_at_most_units"),
        ]

    def __str__(self) -> str:
        return f"{self.study_id} wave {self.number} of {self.of} ({self.rule})"


class HandoutDraw(models.Model):
    """An item of an active study's pool in its wave: its inclusion probability π and whether it
    was drawn (Poisson sampling: drawn with probability π, independently). Only drawn items are
    handed out; the report weights their labels by 1/π."""

    wave = models.ForeignKey(HandoutWave, on_delete=models.CASCADE, related_name="draws")
    item = models.OneToOneField(StudyItem, on_delete=models.CASCADE, related_name="handout_draw")
    pi = models.FloatField(help_text="the inclusion probability")
    drawn = models.BooleanField()
    score = models.FloatField(null=True, blank=True,
                              help_text="the evaluator's score that drove π (none: unscored)")
    predicted_error = models.FloatField(null=True, blank=True)

    class Meta:
        ordering = ["wave", "item"]
        constraints = [
            models.CheckConstraint(condition=Q(pi__gt=0) & Q(pi__lte=1),
                                   name="handoutdraw_pi_in_0_1"),
        ]
        indexes = [models.Index(fields=["wave", "drawn"])]

    def __str__(self) -> str:
        return f"item {self.item_id}: π = {self.pi:.3f}{' drawn' if self.drawn else ''}"


def _in_range(path: str, low: int, high: int) -> Q:
    return Q(**{f"{path}__isnull": True}) | Q(**{f"{path}__gte": low, f"{path}__lte": high})


def _scale_checks() -> list[models.CheckConstraint]:
    core = Q()
    for factor in taskforms.CORE_FACTORS:
        core &= _in_range(f"values__core__{factor.key}", taskforms.CORE_MIN, taskforms.CORE_MAX)
    core &= _in_range("values__core__overall", taskforms.CORE_OVERALL_MIN,
                      taskforms.CORE_OVERALL_MAX)
    face = Q()
    for aspect in taskforms.FACE_DIALOGUE_ASPECTS:
        face &= _in_range(f"values__face__{aspect.key}", aspect.low, aspect.high)
    return [
        models.CheckConstraint(condition=core, name="annotation_core_scale_ranges"),
        models.CheckConstraint(condition=face, name="annotation_face_scale_ranges"),
    ]


class Annotation(models.Model):
    """The submitted labels of one annotator on one item (exactly one: a database constraint)."""

    assignment = models.OneToOneField(Assignment, on_delete=models.CASCADE,
                                      related_name="annotation")
    item = models.ForeignKey(StudyItem, on_delete=models.CASCADE, related_name="annotations")
    annotator = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE,
                                  related_name="annotations")
    values = models.JSONField(help_text="validated per form by taskforms.parse_post")
    submitted_at = models.DateTimeField()
    updated_at = models.DateTimeField()
    time_spent_ms = models.PositiveBigIntegerField(default=0)
    revision_count = models.PositiveIntegerField(default=1)

    class Meta:
        ordering = ["item", "submitted_at"]
        constraints = [
            models.UniqueConstraint(fields=["item", "annotator"],
                                    name="annotation_once_per_item_and_annotator"),
            models.CheckConstraint(condition=Q(updated_at__gte=F("submitted_at")),
                                   name="annotation_updated_after_submitted"),
            *_scale_checks(),
        ]

    def __str__(self) -> str:
        return f"annotation of {self.item} by {self.annotator}"


class AnnotationRevision(models.Model):
    """Every submitted version of an annotation, so edits keep their history."""

    annotation = models.ForeignKey(Annotation, on_delete=models.CASCADE,
                                   related_name="revisions")
    number = models.PositiveIntegerField()
    values = models.JSONField()
    time_spent_ms = models.PositiveBigIntegerField(default=0)
    created_at = models.DateTimeField()

    class Meta:
        ordering = ["annotation", "number"]
        constraints = [
            models.UniqueConstraint(fields=["annotation", "number"], name="revision_number_once"),
        ]

    def __str__(self) -> str:
        return f"{self.annotation_id} v{self.number}"


class Draft(models.Model):
    """The autosaved, possibly incomplete form of an assignment (at most one)."""

    assignment = models.OneToOneField(Assignment, on_delete=models.CASCADE, related_name="draft")
    values = models.JSONField(default=dict)
    saved_at = models.DateTimeField()

    def __str__(self) -> str:
        return f"draft of {self.assignment}"


# --- imported human labels (annotation.md: "A study can also be created by importing finished
# human labels", formats.md §4–5) -----------------------------------------------------------

UNIT_TYPES = ("turn", "dialogue", "item")
FIELD_LEVELS = ("nominal", "ordinal", "interval", "ratio", "set")


class ImportedField(models.Model):
    """A labelled field of an imported study: its unit type, scale and level of measurement."""

    class Level(models.TextChoices):
        NOMINAL = "nominal"
        ORDINAL = "ordinal"
        INTERVAL = "interval"
        RATIO = "ratio"
        SET = "set", "set (labels joined by |; MASI distance)"

    study = models.ForeignKey(Study, on_delete=models.CASCADE, related_name="imported_fields")
    name = models.CharField(max_length=100)
    unit_type = models.CharField(max_length=10)
    scale_min = models.FloatField(null=True, blank=True)
    scale_max = models.FloatField(null=True, blank=True)
    level = models.CharField(max_length=10, choices=Level.choices)
    description = models.TextField(blank=True)

    class Meta:
        ordering = ["study", "pk"]
        constraints = [
            models.UniqueConstraint(fields=["study", "name"], name="importedfield_once"),
            models.CheckConstraint(condition=Q(unit_type__in=UNIT_TYPES),
                                   name="importedfield_unit_type"),
            models.CheckConstraint(condition=Q(level__in=FIELD_LEVELS),
                                   name="importedfield_level"),
            models.CheckConstraint(
                condition=Q(scale_min__isnull=True) | Q(scale_max__isnull=True)
                | Q(scale_min__lte=F("scale_max")),
                name="importedfield_scale_ordered"),
        ]

    def __str__(self) -> str:
        return f"{self.name} ({self.level}, {self.unit_type})"


class ImportedLabel(models.Model):
    """One imported human label: a unit, who gave it ("" = an aggregate), a field, a value."""

    study = models.ForeignKey(Study, on_delete=models.CASCADE, related_name="imported_labels")
    unit_type = models.CharField(max_length=10)
    unit_id = models.CharField(max_length=300)
    dialogue_id = models.CharField(max_length=200, help_text="the benchmark dialogue's id")
    system = models.CharField(max_length=200, blank=True, help_text="blank when unknown")
    annotator = models.CharField(max_length=200, blank=True,
                                 help_text="blank: a label aggregated over annotators")
    field = models.CharField(max_length=100)
    value_num = models.FloatField(null=True, blank=True)
    value_text = models.CharField(max_length=500, blank=True)

    class Meta:
        ordering = ["study", "pk"]
        constraints = [
            models.UniqueConstraint(fields=["study", "unit_type", "unit_id", "annotator", "field"],
                                    name="importedlabel_once"),
            models.CheckConstraint(condition=Q(unit_type__in=UNIT_TYPES),
                                   name="importedlabel_unit_type"),
            models.CheckConstraint(condition=Q(value_num__isnull=False) | ~Q(value_text=""),
                                   name="importedlabel_has_a_value"),
        ]
        indexes = [models.Index(fields=["study", "field"])]

    def __str__(self) -> str:
        return f"{self.field}[{self.unit_id}] by {self.annotator or 'aggregate'}"


class MetricValidation(models.Model):
    """One row of a study's metric leaderboard, kept for the leaderboards' trust column: how
    well an evaluator's metric agrees with the study's human labels of one aspect (Spearman ρ
    with its dialogue-jackknife CI, n). Derived data: stored only by
    `annotation.services.validation` (after labels or runs change), never by a page.

    `scope` says which runs the row was computed from, as the metric leaderboard does it:
    `public` = runs on published submissions (what everyone's metric leaderboard shows), `all`
    = every run (what the study's author and staff see). Trained-on units (`<evaluator>:train`)
    are never stored.
    """

    class Scope(models.TextChoices):
        PUBLIC = "public"
        ALL = "all"

    study = models.ForeignKey(Study, on_delete=models.CASCADE, related_name="metric_validations")
    benchmark = models.ForeignKey("evaluation.Benchmark", on_delete=models.CASCADE,
                                  related_name="+")
    scope = models.CharField(max_length=6, choices=Scope.choices)
    evaluator = models.CharField(max_length=100)
    metric = models.CharField(max_length=100)
    aspect = models.CharField(max_length=100)
    aspect_label = models.CharField(max_length=200, blank=True)
    method = models.CharField(max_length=20, default="spearman")
    value = models.FloatField()
    ci_low = models.FloatField()
    ci_high = models.FloatField()
    units = models.PositiveIntegerField()
    clusters = models.PositiveIntegerField(help_text="dialogues behind the interval")
    rank = models.PositiveIntegerField(null=True, blank=True)
    computed_at = models.DateTimeField()
    # The interval's (and rank's) procedure and its version (methods.INTERVAL_VERSIONS): ""
    # and 0 before they were recorded; `recompute_intervals` refreshes such a study.
    ci_method = models.CharField(max_length=60, default=VALIDATION_INTERVAL)
    ci_version = models.PositiveSmallIntegerField(default=validation_interval_version)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["study", "scope", "evaluator", "metric", "aspect"],
                                    name="metricvalidation_once"),
            models.CheckConstraint(condition=Q(scope__in=["public", "all"]),
                                   name="metricvalidation_scope"),
            models.CheckConstraint(condition=Q(ci_low__lte=F("ci_high")),
                                   name="metricvalidation_ci_ordered"),
        ]
        indexes = [models.Index(fields=["benchmark", "metric"])]

    def __str__(self) -> str:
        return f"{self.evaluator} · {self.metric} vs {self.aspect} ({self.study_id}, {self.scope})"

    @property
    def ci_is_current(self) -> bool:
        return interval_is_current(self.ci_method, self.ci_version)


class StudyValidationState(models.Model):
    """What a study's `MetricValidation` rows were computed from (labels and runs), so a refresh
    with nothing new to read does nothing."""

    study = models.OneToOneField(Study, on_delete=models.CASCADE, related_name="validation_state")
    fingerprint = models.CharField(max_length=64)
    computed_at = models.DateTimeField()

    def __str__(self) -> str:
        return f"validation of study {self.study_id} at {self.computed_at:%Y-%m-%d %H:%M}"
