"""Large submission uploads, validated by a worker (issue 18, item 3; docs/operations.md,
"Failure modes").

Validating a large file takes seconds (the benchmark's reference, then every line), so an
upload above CONCORD_INLINE_VALIDATION_BYTES is not validated in the web request:
`submission_stage` stores it under MEDIA_ROOT/staged/ and queues a job (kind
`submission_validation`), and the request answers at once. The job's task calls
`staged_upload_process`, which hands the staged file to `submission_submit`, the service the
web request calls for a small upload: the same validation, quota and hidden-split rules, and
the same all-or-nothing outcome (a rejected file leaves no submission, no run and no quota
use; its line-numbered problems are the job's result). The staged file is deleted once the
job has finished, whatever its outcome.

The submission's uuid is chosen at staging (`params["uuid"]`): a job redelivered after its
worker died past the commit finds the submission it made instead of making a second one.
"""

import logging
from dataclasses import asdict
from datetime import timedelta
from pathlib import Path
from uuid import UUID, uuid4

from django.conf import settings
from django.core.exceptions import ObjectDoesNotExist, PermissionDenied
from django.core.files import File
from django.core.files.storage import default_storage
from django.utils import timezone

from evaluation.lib.formats.errors import FormatError, FormatIssue
from evaluation.lib.formats.submission import DEFAULT_NAME, TURN
from evaluation.lib.metrics.suite import SUITE_NAME
from evaluation.models import Benchmark, Job, Submission, System
from evaluation.services.jobs import (
    QueueUnavailable,
    job_begin,
    job_create,
    job_finish,
    job_progress,
)
from evaluation.services.submissions import (
    QuotaExceeded,
    submission_quota_check,
    submission_submit,
    submission_submit_check,
)

logger = logging.getLogger(__name__)

STAGED_DIR = "staged"
TASK = "evaluation.tasks.validate_staged_upload_job"
REJECTED = "The file is not valid; nothing was stored."
#: A staged file younger than this is left alone by the sweep: its job may be being created.
SWEEP_GRACE = timedelta(minutes=10)


def submission_validates_inline(file) -> bool:
    """Whether an upload is small enough to validate in the web request."""
    size = getattr(file, "size", None)
    return not isinstance(size, int) or size <= settings.INLINE_VALIDATION_BYTES


def submission_stage(*, system: System, benchmark: Benchmark, file, user, note: str = "",
                     protocol: str = TURN) -> Job:
    """Store an upload for a worker to validate and queue its job; the caller answers at once.

    Refused at once, with nothing stored, for what needs no reading: not the system's owner,
    a protocol the benchmark does not take, a quota already used up today (checked again,
    under its lock, when the worker stores the submission). With the broker down, the job's
    enqueue raises QueueUnavailable (503) and the staged file is deleted again."""
    submission_submit_check(system=system, benchmark=benchmark, user=user, protocol=protocol)
    submission_quota_check(system)
    name = Path(str(getattr(file, "name", "") or DEFAULT_NAME[protocol])).name
    uuid = uuid4()
    stored = default_storage.save(f"{STAGED_DIR}/{uuid}.jsonl", file)
    try:
        return job_create(kind=Job.Kind.SUBMISSION_VALIDATION, user=user, task=TASK, params={
            "file": stored, "name": name, "uuid": str(uuid), "system": system.pk,
            "benchmark": benchmark.pk, "protocol": protocol, "note": note,
            "size": getattr(file, "size", 0)})
    except BaseException:
        default_storage.delete(stored)
        raise


def staged_upload_process(*, job_id: int) -> None:
    """The body of `validate_staged_upload_job`: validate and submit the staged file, record
    the outcome on the job (the submission and its run, or the problems), delete the file."""
    job = job_begin(job_id)
    if job is None:  # finished already (a duplicate delivery, or given up after dying)
        default_storage.delete(Job.objects.get(pk=job_id).params["file"])
        return
    try:
        result = _submit(job)
    except FormatError as exc:
        job_finish(job_id, error=REJECTED, result={"errors": [asdict(i) for i in exc.issues]})
    except QuotaExceeded as exc:
        job_finish(job_id, error=str(exc), result={"quota": True})
    except QueueUnavailable as exc:
        job_finish(job_id, error=exc.message)
    except (PermissionDenied, ValueError, ObjectDoesNotExist) as exc:
        job_finish(job_id, error=f"{exc} Nothing was stored.")
    except Exception:  # noqa: BLE001 - recorded on the job, the worker stays up
        logger.exception("staged upload %s failed", job_id)
        job_finish(job_id, error="The check failed unexpectedly; nothing was stored. Upload the "
                                 "file again.")
    else:
        job_finish(job_id, result=result)
    default_storage.delete(job.params["file"])  # kept until now: a redelivered job needs it


def _submit(job: Job) -> dict:
    params = job.params
    uuid = UUID(params["uuid"])
    done = Submission.objects.filter(uuid=uuid).first()
    if done is None:
        system = System.objects.get(pk=params["system"])
        benchmark = Benchmark.objects.get(pk=params["benchmark"])
        if not default_storage.exists(params["file"]):
            raise FormatError([FormatIssue(params["name"], None, "$", "the staged file is gone; "
                                           "upload it again")])
        with default_storage.open(params["file"], "rb") as handle:
            done, _run = submission_submit(
                system=system, benchmark=benchmark, file=File(handle, name=params["name"]),
                user=job.created_by, note=params["note"], protocol=params["protocol"],
                uuid=uuid, progress=lambda stage, n, total: job_progress(job.pk, stage, n, total))
    run = done.runs.filter(evaluator=SUITE_NAME).order_by("pk").first()
    return {"submission": str(done.uuid), "run": run.pk if run else None}


def staged_files_sweep(*, now=None) -> int:
    """Delete the staged files no queued or running job needs any more; return how many.

    A job deletes its own file when it finishes; this catches the rest: the file of a job whose
    worker died and that the job sweep then failed, or of a web process killed between saving
    the file and creating its job. Run by every worker beside `jobs_sweep`."""
    now = now or timezone.now()
    try:
        _, names = default_storage.listdir(STAGED_DIR)
    except FileNotFoundError:
        return 0
    needed = set(Job.objects.filter(kind=Job.Kind.SUBMISSION_VALIDATION,
                                    status__in=[Job.Status.QUEUED, Job.Status.RUNNING])
                 .values_list("params__file", flat=True))
    deleted = 0
    for name in names:
        path = f"{STAGED_DIR}/{name}"
        if path in needed or now - default_storage.get_modified_time(path) < SWEEP_GRACE:
            continue
        default_storage.delete(path)
        deleted += 1
    return deleted
