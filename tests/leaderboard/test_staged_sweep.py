"""Staged uploads' files that no job needs any more are deleted by the workers' sweep: the file
of a job failed because its worker died, and a file no job names (its web process was killed
before the job was created), once older than the grace period; never a queued or running job's
file, nor one just saved."""

import os
import time

import pytest
from django.core.files.base import ContentFile
from django.core.files.storage import default_storage

from evaluation.models import Job
from evaluation.services.staged_uploads import (
    STAGED_DIR,
    SWEEP_GRACE,
    staged_files_sweep,
)

pytestmark = pytest.mark.django_db


def _staged(name, *, age, status=None):
    path = default_storage.save(f"{STAGED_DIR}/{name}.jsonl", ContentFile(b"{}\n"))
    then = time.time() - age.total_seconds()
    os.utime(default_storage.path(path), (then, then))
    if status is not None:
        Job.objects.create(kind=Job.Kind.SUBMISSION_VALIDATION, status=status,
                           params={"file": path})
    return path


def test_the_sweep_deletes_only_files_no_job_needs(media_root):
    old = SWEEP_GRACE * 2
    dead = _staged("dead", age=old, status=Job.Status.FAILED)
    orphan = _staged("orphan", age=old)
    queued = _staged("queued", age=old, status=Job.Status.QUEUED)
    running = _staged("running", age=old, status=Job.Status.RUNNING)
    fresh = _staged("fresh", age=SWEEP_GRACE / 10)
    assert staged_files_sweep() == 2
    assert [default_storage.exists(p) for p in (dead, orphan, queued, running, fresh)] == \
        [False, False, True, True, True]
    assert staged_files_sweep() == 0


def test_no_staged_folder_is_nothing_to_sweep(media_root):
    assert staged_files_sweep() == 0
