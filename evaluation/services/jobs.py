"""Job bookkeeping shared by every Celery task: enqueue, start, progress, finish, stale detection.

Services enqueue tasks by name (`task_enqueue`), never by importing a `tasks` module: the tasks
import the services, so the services importing the tasks back would be a cycle.
"""

from datetime import timedelta

from celery import current_app
from django.db import transaction
from django.utils import timezone

from evaluation.models import Job

STALE_AFTER = timedelta(minutes=10)


class ExpectedFailure(RuntimeError):
    """A job that failed for a reason its message says in full (an unreachable server, answers
    that never parsed): recorded without a traceback, which would only bury the reason."""

MAX_ATTEMPTS = 3


def task_enqueue(task: str, *args) -> None:
    """Send the Celery task named TASK (e.g. "evaluation.tasks.evaluate_run_job") with ARGS
    once the surrounding transaction commits (at once outside a transaction)."""
    transaction.on_commit(lambda: current_app.tasks[task].delay(*args))


def job_create(*, kind: str, params: dict, user=None, task: str | None) -> Job:
    """Create a queued job; with TASK, enqueue that task with the job's id on commit (without,
    the caller runs the job in-process)."""
    job = Job.objects.create(kind=kind, params=params, created_by=user)
    if task is not None:
        task_enqueue(task, job.pk)
    return job


def job_begin(job_id: int) -> Job | None:
    """Claim a job for this worker; None when it already finished (a duplicate delivery)."""
    with transaction.atomic():
        job = Job.objects.select_for_update().get(pk=job_id)
        if job.is_finished:
            return None
        if job.attempts >= MAX_ATTEMPTS:
            job.status, job.finished_at = Job.Status.FAILED, timezone.now()
            job.error = f"Gave up after {MAX_ATTEMPTS} attempts (the worker kept dying)."
            job.save(update_fields=["status", "finished_at", "error"])
            return None
        now = timezone.now()
        job.status, job.started_at, job.heartbeat_at = Job.Status.RUNNING, now, now
        job.attempts += 1
        job.error = ""
        job.save(update_fields=["status", "started_at", "heartbeat_at", "attempts", "error"])
    # Every job that starts also sweeps jobs whose worker died, so none stays "running" even
    # when nobody opens its page (this one's heartbeat is fresh, so it is not swept).
    jobs_fail_stale()
    return job


def job_progress(job_id: int, stage: str, done: int, total: int) -> None:
    Job.objects.filter(pk=job_id).update(stage=stage, done=min(done, total), total=total,
                                         heartbeat_at=timezone.now())


def job_finish(job_id: int, *, result: dict | None = None, error: str = "") -> None:
    status = Job.Status.FAILED if error else Job.Status.SUCCEEDED
    Job.objects.filter(pk=job_id).update(status=status, result=result or {}, error=error,
                                         finished_at=timezone.now())


def jobs_fail_stale(*, now=None) -> int:
    """Mark running jobs whose worker stopped reporting as failed; return how many."""
    now = now or timezone.now()
    return Job.objects.filter(status=Job.Status.RUNNING, heartbeat_at__lt=now - STALE_AFTER).update(
        status=Job.Status.FAILED, finished_at=now,
        error="The worker stopped reporting progress (it probably died); start the job again.",
    )
