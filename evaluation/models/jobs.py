"""Background jobs: status, progress and heartbeats of every long piece of work.
"""

from datetime import timedelta

from django.conf import settings
from django.db import models
from django.db.models import F, Q
from django.utils import timezone


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

    # Not the broker (an unreachable broker refuses the job before it is stored: 503) and not
    # the system a job calls (its failures are the job's own message): the process running it.
    STALE_ERROR = ("The worker stopped reporting progress: the process running this job was "
                   "stopped, killed or cut off from the database. Retry the job or start it "
                   "again.")

    # A queued job whose task never reached the broker (its send failed after the commit): the
    # worker's sweep sends it again once the broker answers (evaluation.services.jobs).
    UNSENT_AFTER = timedelta(seconds=30)
    UNSENT_NOTE = ("Waiting for the task queue: the broker could not be reached when this job "
                   "was queued. It is sent again as soon as the broker answers; nothing is lost.")

    @property
    def waiting_note(self) -> str:
        """Why a queued job has not started, when Concord knows: its task never reached the
        broker (not the same as a worker that stopped reporting: STALE_ERROR)."""
        if (self.status == self.Status.QUEUED and self.task and self.enqueued_at is None
                and self.created_at and self.created_at < timezone.now() - self.UNSENT_AFTER):
            return self.UNSENT_NOTE
        return ""

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
