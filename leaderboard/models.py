"""Systems and their submissions (formats.md §2). Runs and scores live in `evaluation`."""

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

    def __str__(self) -> str:
        return f"{self.system} on {self.benchmark_id} ({self.created_at:%Y-%m-%d})"
