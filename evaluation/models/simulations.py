"""Simulated users talking to live systems: a simulation and its dialogues.
"""

import secrets

from django.conf import settings
from django.db import models
from django.db.models import Q

from evaluation.models.benchmarks import Benchmark
from evaluation.models.jobs import Job
from evaluation.models.systems import Run, Submission, System


def new_simulation_secret() -> str:
    return secrets.token_hex(16)


class Simulation(models.Model):
    """A user simulator talking to a live system for N users and T turns (docs/simulation.md).

    Its job carries progress; its dialogues are stored one row per simulated user as each
    finishes (idempotent: a batch redelivered after a worker died skips the users it already
    stored). When every user is done, the successful dialogues become a `log` submission of the
    system and their preference coverage a `Run` (`evaluator` "simulation.<simulator>"); every
    dialogue is audited for leakage and the leak-free ones scored again as `sanitised_run`.

    Its `secret` keys the opaque ids its users are known by outside Concord
    (`lib/simulators/users.opaque_user_id`); it is never shown.
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
    secret = models.CharField(max_length=64, default=new_simulation_secret, editable=False,
                              help_text="keys the users' opaque ids; never shown")
    batch_size = models.PositiveSmallIntegerField(default=10)
    failure_threshold = models.FloatField(
        default=0.5, help_text="the run stops once this share of its users' dialogues failed")
    submission = models.ForeignKey(Submission, null=True, blank=True, on_delete=models.SET_NULL,
                                   related_name="+")
    run = models.OneToOneField(Run, null=True, blank=True, on_delete=models.SET_NULL,
                               related_name="simulation")
    sanitised_run = models.OneToOneField(
        Run, null=True, blank=True, on_delete=models.SET_NULL, related_name="sanitised_simulation",
        help_text="the same scores without the leaked dialogues (Zhu et al.'s -Both setting; "
                  "lib/simulators/leakage.py)")
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
    user_id = models.CharField(max_length=200,
                               help_text="the user's opaque id, what the live system saw")
    source_dialogue_id = models.CharField(
        max_length=200, blank=True,
        help_text="the benchmark dialogue it simulates: staff only, never sent or exported")
    status = models.CharField(max_length=10, choices=Status.choices)
    turns = models.JSONField(default=list, blank=True)
    target_item_ids = models.JSONField(default=list)
    hidden = models.JSONField(default=dict, blank=True,
                              help_text="the simulator's preferences and reflections")
    leakage = models.JSONField(default=dict, blank=True,
                               help_text="the leakage audit's flags (lib/simulators/leakage.py); "
                                         "{} until audited")
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


class SimulatedUserProfile(models.Model):
    """A simulated user's general preferences, derived ONCE by the simulator's preparation step
    before any dialogue (PEPPER §3.2.1; its `3_generate_gp.py` writes them before `chat_*.py`
    runs) and reused by every simulation with the same preparation (`key`: the simulator, its
    version and model), so that every system of a design talks with the same users."""

    benchmark = models.ForeignKey(Benchmark, on_delete=models.CASCADE, related_name="+")
    source_dialogue_id = models.CharField(
        max_length=200, help_text="the benchmark dialogue the user comes from: staff only")
    key = models.CharField(max_length=64, help_text="hash of the preparation's configuration")
    preparation = models.JSONField(default=dict,
                                   help_text="simulator, version, model, temperature")
    profile = models.JSONField(default=dict, help_text="likes, dislikes, narrative")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["benchmark", "source_dialogue_id", "key"],
                                    name="simulateduserprofile_once"),
        ]

    def __str__(self) -> str:
        return f"{self.preparation.get('simulator', '?')} profile of {self.source_dialogue_id}"
