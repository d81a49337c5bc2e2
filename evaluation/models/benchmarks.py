"""Benchmarks as in formats.md §1: items, reviews, reference dialogues, turns and citations.

External identifiers (`external_id`) are the strings of the bundle; they are unique per
benchmark, and every cross-reference is a foreign key checked by the database.
"""

from django.conf import settings
from django.db import models
from django.db.models import F, Q

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
