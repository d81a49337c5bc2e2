"""The LLM gateway's response cache and what LLM runs store beside their scores: CoRE's
debate turns, FACE's particles and its prompt optimisations.
"""

from django.conf import settings
from django.db import models
from django.db.models import Q

from evaluation.models.benchmarks import Benchmark
from evaluation.models.jobs import Job
from evaluation.models.systems import Run


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


class LLMBudgetAccount(models.Model):
    """The lock row of one spending account (`evaluation.services.spending`): "user:<id>" for a
    person, "operator" for the command line. Reservations of an account are checked and
    written under `select_for_update` of this row, so concurrent starts queue one behind the
    other (SQLite serialises writers anyway: its transactions begin IMMEDIATE)."""

    key = models.CharField(max_length=40, unique=True)

    def __str__(self) -> str:
        return self.key


class LLMSpend(models.Model):
    """One reservation in the LLM spending ledger: a job that spends LLM money (an LLM
    evaluator run, a simulation with an LLM user, a FACE optimisation), its estimate reserved
    against its account's daily budget when it was created, and what it actually spent once
    its job finished (`status` settled). `estimated_usd`/`spent_usd` null: the model has no
    known price (such runs count by tokens). `budgeted` false: started with the budget
    bypassed (the command line's --no-budget); still counted."""

    class Kind(models.TextChoices):
        RUN = "run", "LLM evaluator run"
        SIMULATION = "simulation", "simulation with an LLM user"
        FACE_OPTIMIZATION = "face_optimization", "FACE optimisation"

    class Status(models.TextChoices):
        RESERVED = "reserved"
        SETTLED = "settled"

    account = models.ForeignKey(LLMBudgetAccount, on_delete=models.CASCADE,
                                related_name="spends")
    user = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True,
                             on_delete=models.SET_NULL, related_name="+")
    kind = models.CharField(max_length=20, choices=Kind.choices)
    job = models.OneToOneField(Job, null=True, blank=True, on_delete=models.SET_NULL,
                               related_name="llm_spend")
    description = models.CharField(max_length=300)
    model = models.CharField(max_length=200)
    estimated_tokens = models.BigIntegerField()
    estimated_usd = models.FloatField(null=True, blank=True)
    spent_tokens = models.BigIntegerField(default=0)
    spent_usd = models.FloatField(null=True, blank=True, default=0.0)
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.RESERVED)
    budgeted = models.BooleanField(default=True)
    created_at = models.DateTimeField(auto_now_add=True)
    settled_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at", "-pk"]
        indexes = [models.Index(fields=["account", "created_at"])]
        constraints = [
            models.CheckConstraint(condition=Q(estimated_tokens__gte=0, spent_tokens__gte=0),
                                   name="llmspend_tokens_not_negative"),
            models.CheckConstraint(condition=Q(status__in=["reserved", "settled"]),
                                   name="llmspend_status"),
        ]

    def __str__(self) -> str:
        return f"{self.account_id} {self.kind} {self.estimated_tokens} tokens ({self.status})"
