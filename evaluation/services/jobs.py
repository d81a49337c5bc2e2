"""Job bookkeeping shared by every Celery task: enqueue, start, progress, finish, stale detection.

Services enqueue tasks by name (`task_enqueue`), never by importing a `tasks` module: the tasks
import the services, so the services importing the tasks back would be a cycle.

Failure modes (docs/operations.md, "Failure modes"):

- The broker is down when a job is created: `task_enqueue` checks it inside the caller's
  transaction and raises QueueUnavailable, so the transaction rolls back and nothing is stored
  (the user gets a 503 "evaluation queue unavailable, nothing was stored, try again").
- The broker dies between that check and the commit: the send fails after the job is stored;
  the job stays queued with `enqueued_at` empty, and the sweep (`jobs_sweep`, run by every
  worker on start and on its own timer) sends it again once the broker answers.
- A worker dies: the process running a job beats its `heartbeat_at` every few seconds;
  a running job whose heartbeat is older than STALE_AFTER reads as failed at once
  (`Job.from_db`), and the sweep writes that down. Its owner can retry it (`job_retry`).
"""

import logging
import threading
from contextlib import contextmanager

from celery import current_app
from celery.signals import task_postrun
from django.conf import settings
from django.db import OperationalError, close_old_connections, connection, transaction
from django.utils import timezone

from evaluation.models import Job
from evaluation.services.spending import spending_settle

FINISHED_STATUSES = (Job.Status.SUCCEEDED, Job.Status.FAILED, Job.Status.CANCELLED)

logger = logging.getLogger(__name__)


class ExpectedFailure(RuntimeError):
    """A job that failed for a reason its message says in full (an unreachable server, answers
    that never parsed): recorded without a traceback, which would only bury the reason."""


MAX_ATTEMPTS = 3
# A queued job whose task was never sent is sent again by the sweep after this long (the send
# failed after its transaction committed: the broker died in between).
RESEND_AFTER = Job.UNSENT_AFTER


class QueueUnavailable(Exception):
    """The Celery broker cannot be reached: the caller must store nothing and say so (503)."""

    message = "The evaluation queue is unavailable; nothing was stored. Try again in a minute."

    def __init__(self, detail: str = ""):
        self.detail = detail
        super().__init__(self.message)


def queue_check() -> None:
    """Raise QueueUnavailable unless the broker answers now (nothing to check when tasks run
    in-process, as in tests and `CELERY_TASK_ALWAYS_EAGER`)."""
    if current_app.conf.task_always_eager:
        return
    try:
        with current_app.connection_for_write() as conn:
            conn.ensure_connection(max_retries=1, interval_start=0, interval_step=0.2,
                                   timeout=settings.CELERY_BROKER_CHECK_TIMEOUT)
    except Exception as exc:  # noqa: BLE001 - kombu and redis raise several kinds
        logger.warning("Celery broker unreachable: %s", exc)
        raise QueueUnavailable(str(exc)) from exc


def _send(task: str, args: tuple, job_id: int | None, countdown: int = 0) -> bool:
    """Send TASK now (to run COUNTDOWN seconds later); record it on the job. False (logged)
    when the broker refuses."""
    try:
        if countdown:
            current_app.tasks[task].apply_async(args, countdown=countdown)
        else:
            current_app.tasks[task].delay(*args)
    except Exception:  # noqa: BLE001 - the sweep sends it again; the caller already committed
        logger.exception("could not send %s%r; the job sweep will send it again", task, args)
        return False
    if job_id is not None:
        Job.objects.filter(pk=job_id, enqueued_at=None).update(enqueued_at=timezone.now())
    return True


def task_enqueue(task: str, *args, job_id: int | None = None, countdown: int = 0) -> None:
    """Send the Celery task named TASK (e.g. "evaluation.tasks.evaluate_run_job") with ARGS
    once the surrounding transaction commits (at once outside a transaction).

    For a job (JOB_ID), the broker is checked first, inside the transaction: when it is down,
    QueueUnavailable rolls the caller's writes back. A send that still fails after the commit
    leaves the job queued and unsent, for the sweep to send again. Other tasks (a rank
    refresh) are sent without the check: losing one costs freshness, not data. COUNTDOWN
    delays the task (a debounced refresh).
    """
    if job_id is not None:
        queue_check()

    def send():
        _send(task, args, job_id, countdown)

    transaction.on_commit(send)


def job_create(*, kind: str, params: dict, user=None, task: str | None) -> Job:
    """Create a queued job; with TASK, enqueue that task with the job's id on commit (without,
    the caller runs the job in-process)."""
    with transaction.atomic():  # a refused enqueue takes the job row with it
        job = Job.objects.create(kind=kind, params=params, created_by=user, task=task or "")
        if task is not None:
            task_enqueue(task, job.pk, job_id=job.pk)
    return job


def job_begin(job_id: int) -> Job | None:
    """Claim a job for this worker; None when it already finished (a duplicate delivery).

    Reads the stored status (`values`), not the model's: a redelivered job whose worker died
    reads as failed through `Job.from_db`, but it is still the worker's to start again.
    """
    with transaction.atomic():
        stored = (Job.objects.select_for_update().filter(pk=job_id)
                  .values("status", "attempts").get())
        if stored["status"] in (Job.Status.SUCCEEDED, Job.Status.FAILED, Job.Status.CANCELLED):
            return None
        now = timezone.now()
        if stored["attempts"] >= MAX_ATTEMPTS:
            Job.objects.filter(pk=job_id).update(
                status=Job.Status.FAILED, finished_at=now,
                error=f"Gave up after {MAX_ATTEMPTS} attempts (the worker kept dying).")
            return None
        Job.objects.filter(pk=job_id).update(
            status=Job.Status.RUNNING, started_at=now, heartbeat_at=now,
            attempts=stored["attempts"] + 1, error="", enqueued_at=now)
    _Heartbeat.start(job_id)
    return Job.objects.get(pk=job_id)


def job_stopped(job_id: int, *, lock: bool = False) -> bool:
    """Whether the job's STORED status is final: what work in progress checks before it goes on.

    Not `Job.is_finished`: a job read through the ORM shows as failed once its heartbeat is stale,
    which is right for pages, but work that is running proves by running that its job is alive
    (a chunk that waited behind others in a busy queue; an in-process run on SQLite, where no
    heartbeat thread writes, whose last step took longer than JOB_STALE_SECONDS). Only a stored
    failure (the sweep's, another chunk's), a cancellation or a success stops it.
    With LOCK, the job's row is locked until the end of the caller's transaction."""
    rows = Job.objects.filter(pk=job_id)
    if lock:
        rows = rows.select_for_update()
    return rows.values_list("status", flat=True).get() in FINISHED_STATUSES


def job_progress(job_id: int, stage: str, done: int, total: int) -> None:
    Job.objects.filter(pk=job_id).update(stage=stage, done=min(done, total), total=total,
                                         heartbeat_at=timezone.now())


def job_finish(job_id: int, *, result: dict | None = None, error: str = "") -> None:
    _Heartbeat.stop(job_id)
    status = Job.Status.FAILED if error else Job.Status.SUCCEEDED
    Job.objects.filter(pk=job_id).update(status=status, result=result or {}, error=error,
                                         finished_at=timezone.now())
    spending_settle(job_id=job_id)  # its LLM reservation now counts what it spent


def job_cancel(job_id: int, *, reason: str, result: dict | None = None) -> bool:
    """Mark a queued or running job cancelled (its work checks `is_finished` and stops);
    False when it had already finished. The caller checks that the user may."""
    _Heartbeat.stop(job_id)
    changed = Job.objects.filter(pk=job_id, status__in=[Job.Status.QUEUED, Job.Status.RUNNING]
                                 ).update(status=Job.Status.CANCELLED, error=reason,
                                          result=result or {}, finished_at=timezone.now())
    if changed:
        spending_settle(job_id=job_id)
    return bool(changed)


def job_retry(*, job: Job) -> Job:
    """Queue a failed job again, same parameters, attempts reset (a retry after a dead worker
    or a fixed outage; it costs no quota: no new submission is made). The caller checks that
    the user may (evaluation.access.get_run_for_user(write=True) for a run)."""
    if not job.task:
        raise ValueError("This job runs from the command line; run the command again.")
    with transaction.atomic():
        stored = Job.objects.select_for_update().filter(pk=job.pk).values("status",
                                                                          "heartbeat_at").get()
        stale = (stored["status"] == Job.Status.RUNNING
                 and Job.is_stale_heartbeat(stored["heartbeat_at"]))
        if stored["status"] != Job.Status.FAILED and not stale:
            raise ValueError("Only a failed job can be retried.")
        Job.objects.filter(pk=job.pk).update(
            status=Job.Status.QUEUED, attempts=0, error="", stage="", done=0, total=0,
            result={}, started_at=None, finished_at=None, heartbeat_at=None, enqueued_at=None)
        task_enqueue(job.task, job.pk, job_id=job.pk)
    job.refresh_from_db()
    return job


def jobs_fail_stale(*, now=None) -> int:
    """Mark running jobs whose worker stopped beating as failed; return how many."""
    now = now or timezone.now()
    stale = Job.objects.filter(status=Job.Status.RUNNING, heartbeat_at__lt=now - Job.stale_after())
    ids = list(stale.values_list("pk", flat=True))
    failed = stale.filter(pk__in=ids).update(
        status=Job.Status.FAILED, finished_at=now, error=Job.STALE_ERROR,
    )
    for job_id in ids:
        spending_settle(job_id=job_id)  # what a dead worker spent, counted
    return failed


def jobs_resend_unsent(*, now=None) -> int:
    """Send again the tasks of queued jobs whose send failed after their commit; return how
    many were sent."""
    now = now or timezone.now()
    unsent = (Job.objects.filter(status=Job.Status.QUEUED, enqueued_at=None,
                                 created_at__lt=now - RESEND_AFTER)
              .exclude(task="").values_list("pk", "task"))
    return sum(_send(task, (pk,), pk) for pk, task in unsent)


def jobs_sweep() -> dict:
    """What a worker does on start and on its timer: fail the jobs of dead workers, resend
    the jobs whose task never reached the broker."""
    return {"failed": jobs_fail_stale(), "resent": jobs_resend_unsent()}


# --- heartbeats -----------------------------------------------------------------------------


@contextmanager
def job_heartbeat(job_id: int):
    """Beat JOB_ID's heartbeat while the block runs: for a task that works on a job it did
    not claim (a chunk of a fanned-out run, its final step)."""
    _Heartbeat.start(job_id)
    try:
        yield
    finally:
        _Heartbeat.stop(job_id)


class _Heartbeat(threading.Thread):
    """Beats one job's `heartbeat_at` every JOB_HEARTBEAT_SECONDS from the process running it,
    whatever the job is doing (a long NLI batch reports no progress for minutes). When the
    process dies the beats stop, and the job reads as failed STALE_AFTER later."""

    running: dict[int, "_Heartbeat"] = {}
    lock = threading.Lock()

    def __init__(self, job_id: int):
        super().__init__(name=f"job-{job_id}-heartbeat", daemon=True)
        self.job_id = job_id
        self.owner = threading.get_ident()  # the thread running the job's task
        self.stopped = threading.Event()

    @classmethod
    def start(cls, job_id: int, *, on_sqlite: bool = False) -> None:
        if (connection.vendor == "sqlite" and not on_sqlite) or current_app.conf.task_always_eager:
            # SQLite allows one writer; in-process (eager) jobs die with their caller anyway
            return
        with cls.lock:
            if job_id in cls.running:
                return
            beat = cls.running[job_id] = cls(job_id)
        threading.Thread.start(beat)

    @classmethod
    def stop(cls, job_id: int | None = None) -> None:
        """Stop JOB_ID's beats, or (None) those of the jobs this thread started."""
        me = threading.get_ident()
        with cls.lock:
            beats = [b for b in cls.running.values()
                     if b.job_id == job_id or (job_id is None and b.owner == me)]
            for beat in beats:
                cls.running.pop(beat.job_id, None)
                beat.stopped.set()

    def run(self) -> None:
        try:
            while not self.stopped.wait(Job.heartbeat_interval().total_seconds()):
                try:
                    Job.objects.filter(pk=self.job_id, status=Job.Status.RUNNING).update(
                        heartbeat_at=timezone.now())
                except OperationalError as exc:  # SQLite busy past its timeout: beat again
                    logger.warning("heartbeat of job %s skipped: %s", self.job_id, exc)
        except Exception:  # noqa: BLE001 - a lost beat makes the job stale, which is reported
            logger.exception("heartbeat of job %s stopped", self.job_id)
        finally:
            close_old_connections()
            connection.close()


def job_beat_on_sqlite(job_id: int) -> None:
    """Beat JOB_ID's heartbeat from a thread on SQLite too (PostgreSQL jobs always beat), for a
    job whose steps are silent for longer than JOB_STALE_SECONDS on a busy machine (the
    reference baselines: building a benchmark's turn contexts, embedding every text). One
    small UPDATE every JOB_HEARTBEAT_SECONDS waits, like any writer, within SQLite's timeout."""
    _Heartbeat.start(job_id, on_sqlite=True)


@task_postrun.connect
def _stop_heartbeats(**kwargs) -> None:
    """A task that ended without finishing its job (it raised) beats no more: the job then
    reads as failed once its heartbeat is stale, instead of running forever."""
    _Heartbeat.stop()
