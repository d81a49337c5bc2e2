"""The arena: blind battles between live systems, their turns and the votes.
"""

from django.conf import settings
from django.db import models
from django.db.models import F, Q

from evaluation.models.benchmarks import Benchmark
from evaluation.models.systems import System


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
    identity_leaked = models.BooleanField(
        default=False, help_text="an answer named its system (evaluation/lib/arena_identity.py): "
                                 "its vote is not counted in the ratings")
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
    unique per arena. `excluded_reason` says why the ratings leave a vote out, decided when it
    is cast (docs/arena.md, "Which votes count"): its battle's answers named a system, or the
    voter owns one of the two systems; imported votes are always counted.
    """

    class Excluded(models.TextChoices):
        COUNTED = "", "counted"
        IDENTITY_LEAKED = "identity_leaked", "an answer named its system"
        OWNER = "owner", "cast by the owner of a system in the battle"

    class Satisfaction(models.TextChoices):
        SATISFIED = "satisfied", "Satisfied"
        FRUSTRATED = "frustrated", "Frustrated"

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
    excluded_reason = models.CharField(max_length=20, choices=Excluded.choices, blank=True,
                                       default=Excluded.COUNTED)
    # What a CRS arena records per side (docs/arena.md, "What a vote records"): the person's
    # verdict on that conversation and the item they accepted (an item card they chose), or ""
    # when not given; `reason` is the optional free-text feedback.
    satisfaction_a = models.CharField(max_length=10, choices=Satisfaction.choices, blank=True)
    satisfaction_b = models.CharField(max_length=10, choices=Satisfaction.choices, blank=True)
    accepted_item_a = models.CharField(max_length=200, blank=True,
                                       help_text="the item id accepted from System A's cards")
    accepted_item_b = models.CharField(max_length=200, blank=True)
    # What the ratings' style control and vote-quality flags read (docs/arena.md): each side's
    # style ({"length", "items", "citations"}: evaluation/lib/arena_signals.py), seconds from
    # the last answers shown to the vote, words in both final answers, and a hash of the
    # browser session (imported votes: the file's session id).
    style = models.JSONField(default=dict, blank=True)
    seconds_to_vote = models.FloatField(null=True, blank=True)
    words_shown = models.PositiveIntegerField(null=True, blank=True)
    session_ref = models.CharField(max_length=200, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["arena", "position"]
        constraints = [
            models.UniqueConstraint(fields=["arena", "position"], name="vote_position_per_arena"),
            models.CheckConstraint(condition=~Q(system_a=F("system_b")),
                                   name="vote_two_systems"),
            models.CheckConstraint(condition=Q(outcome__in=["a", "b", "tie", "both_bad"]),
                                   name="vote_outcome"),
            models.CheckConstraint(
                condition=Q(excluded_reason__in=["", "identity_leaked", "owner"]),
                name="vote_excluded_reason"),
            *(models.CheckConstraint(condition=Q(**{f"satisfaction_{side}__in": [
                "", "satisfied", "frustrated"]}), name=f"vote_satisfaction_{side}")
              for side in ("a", "b")),
        ]
        # The ratings read an arena's counted votes in cast order, and count the others by
        # reason, each by one range of this index.
        indexes = [models.Index(fields=["arena", "excluded_reason", "position"],
                                name="vote_arena_counted")]

    def __str__(self) -> str:
        return f"{self.system_a_id} vs {self.system_b_id}: {self.outcome}"

    def accepted_item(self, side: str) -> str:
        return getattr(self, f"accepted_item_{side}")

    def get_satisfaction_display_for(self, side: str) -> str:
        return getattr(self, f"get_satisfaction_{side}_display")()

class ArenaRequest(models.Model):
    """A researcher asking for their live system to battle in a benchmark's arena.

    With `CONCORD_ARENA_REQUIRE_APPROVAL` off the request is approved as it is made (the system
    joins at once); with it on the request waits for staff (approve or reject, with a note the
    researcher reads on their system's page). One waiting request per system and benchmark.
    """

    class Status(models.TextChoices):
        PENDING = "pending", "waiting for an operator"
        APPROVED = "approved", "approved"
        REJECTED = "rejected", "rejected"

    benchmark = models.ForeignKey(Benchmark, on_delete=models.CASCADE,
                                  related_name="arena_requests")
    system = models.ForeignKey(System, on_delete=models.CASCADE, related_name="arena_requests")
    requested_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True,
                                     on_delete=models.SET_NULL, related_name="+")
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.PENDING)
    decided_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True,
                                   on_delete=models.SET_NULL, related_name="+",
                                   help_text="the operator who decided (none: no approval "
                                             "was required)")
    note = models.CharField(max_length=500, blank=True, help_text="the operator's reason")
    created_at = models.DateTimeField(auto_now_add=True)
    decided_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at"]
        constraints = [
            models.CheckConstraint(condition=Q(status__in=["pending", "approved", "rejected"]),
                                   name="arenarequest_status"),
            models.UniqueConstraint(fields=["benchmark", "system"],
                                    condition=Q(status="pending"),
                                    name="arenarequest_one_pending"),
        ]

    def __str__(self) -> str:
        return f"{self.system_id} → arena of {self.benchmark_id} ({self.status})"
