"""The LLM evaluators an operator runs on new uploads, and their runs.
"""

from django.conf import settings
from django.db import models
from django.db.models import Q

from evaluation.models.benchmarks import Benchmark
from evaluation.models.systems import Run, Submission


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
