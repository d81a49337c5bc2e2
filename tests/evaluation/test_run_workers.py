"""A Trace run spread over real Celery workers (docs/operations.md, "Runs over several workers"):
chunk tasks on any worker, the last chunk queues the final task, progress counts finished
chunks, and a chunk whose worker process is killed with SIGKILL is redone with no duplicate
value — compared with the same run executed in one process."""

import os
import signal
import time
from pathlib import Path

import pytest
from django.conf import settings as django_settings
from kombu import Connection

from evaluation.lib.demo import generate_demo_bundle
from evaluation.lib.formats.bundle import Bundle
from evaluation.lib.formats.submission import write_turn_submission
from evaluation.lib.rankers import generate_submission
from evaluation.models import Job, Run, UnitScore
from evaluation.services import jobs
from evaluation.services.benchmarks import benchmark_create_from_bundle
from evaluation.services.runs import run_create, run_process
from evaluation.services.submissions import submission_create, system_create
from tests.evaluation.test_evaluation_worker import enqueue_on
from tests.support.worker import FILESYSTEM, celery_worker, worker_log

CHUNK_TURNS = "60"  # 896 answered turns of the demo: 15 chunks


@pytest.fixture
def demo_submission(transactional_db, tmp_path, settings):
    settings.MEDIA_ROOT = tmp_path / "media"
    settings.NLI_MODEL_PATH = ""
    settings.RUN_CHUNK_TURNS = int(CHUNK_TURNS)
    bundle = generate_demo_bundle(42)
    benchmark = benchmark_create_from_bundle(bundle=Bundle(**bundle))
    # the hidden phase is over: runs score every split (evaluation.services.runs.scored_splits)
    benchmark.hidden_released_at = benchmark.created_at
    benchmark.save(update_fields=["hidden_released_at"])
    lines = generate_submission("popularity", items=bundle["items"], reviews=bundle["reviews"],
                                dialogues=bundle["dialogues"])
    write_turn_submission(lines, tmp_path / "popularity.jsonl")
    return submission_create(system=system_create(name="Popularity"), benchmark=benchmark,
                             path_or_file=tmp_path / "popularity.jsonl", user=None)


def reference_rows(submission):
    """Unit values and summaries of the same run executed in this process."""
    run = run_create(submission=submission, enqueue=False)
    run_process(job_id=run.job_id)
    units = sorted(run.unit_scores.values_list("metric", "unit_id", "dialogue_id", "value"))
    summaries = dict(run.summaries.values_list("metric", "value"))
    return units, summaries


def follow(job, processes, *, seconds=240, on_progress=None):
    """Poll the job until it finishes; (stage, done, total) as seen on the way."""
    seen = []
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        job.refresh_from_db()
        if (job.stage, job.done, job.total) not in seen:
            seen.append((job.stage, job.done, job.total))
            if on_progress:
                on_progress(job)
        if job.is_finished:
            return seen
        time.sleep(0.05)
    logs = "\n".join(worker_log(p)[-2000:] for p in processes)
    pytest.fail(f"the workers never finished the job: {seen}\n{logs}")


def assert_same_as_reference(run, reference):
    units, summaries = reference
    mine = sorted(run.unit_scores.values_list("metric", "unit_id", "dialogue_id", "value"))
    assert len(mine) == len(units) and mine == units  # no duplicate, nothing missing
    mine = dict(run.summaries.values_list("metric", "value"))
    assert set(mine) == set(summaries)
    assert {m for m, v in mine.items() if v is None} == {m for m, v in summaries.items()
                                                         if v is None}  # entailment: no model
    for metric, value in mine.items():
        if value is not None:
            assert value == pytest.approx(summaries[metric], rel=1e-9), metric


def child_pids(pid: int) -> list[int]:
    children = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[1]) == pid:
                children.append(int(entry.name))
    return children


def wait_until_ready(*workers, seconds=60):
    """Both workers have their pool process, and a moment to connect to the broker, before the
    run starts, so that both take chunks."""
    deadline = time.monotonic() + seconds
    while not all(child_pids(worker.pid) for worker in workers):
        assert time.monotonic() < deadline, "a worker never started its pool"
        time.sleep(0.2)
    time.sleep(3)


def test_embedded_one_worker_runs_the_chunks_and_the_final_task(
        demo_submission, tmp_path, monkeypatch):
    reference = reference_rows(demo_submission)
    with celery_worker(FILESYSTEM, tmp_path, MEDIA_ROOT=str(django_settings.MEDIA_ROOT),
                       NLI_MODEL_PATH="", CONCORD_RUN_CHUNK_TURNS=CHUNK_TURNS) as (broker, worker):
        monkeypatch.setattr(jobs, "task_enqueue", enqueue_on(broker))
        run = run_create(submission=demo_submission)
        seen = follow(run.job, [worker])
        log = worker_log(worker)
    run = Run.objects.get(pk=run.pk)
    assert run.job.status == Job.Status.SUCCEEDED, run.job.error
    chunks = run.chunks.count()
    assert chunks == 15 and run.job.result["chunks"] == chunks
    # The progress bar counted finished chunks, then the bootstrap.
    counted = [done for stage, done, total in seen if stage == "score" and total == chunks]
    assert counted and counted == sorted(counted) and max(counted) <= chunks
    assert seen[-1][0] == "bootstrap"
    assert_same_as_reference(run, reference)
    assert "evaluate_run_chunk_job" in log and "finalize_run_job" in log, log[-3000:]


@pytest.mark.skipif(not django_settings.CELERY_BROKER_URL.startswith("redis://"),
                    reason="the service-mode test needs Redis")
def test_two_workers_share_a_run_and_a_killed_chunk_is_redone_without_duplicates(
        demo_submission, tmp_path, monkeypatch):
    reference = reference_rows(demo_submission)
    url = django_settings.CELERY_BROKER_URL
    with Connection(url) as connection:
        connection.default_channel.queue_purge("celery")  # nothing left from another test
    env = {"MEDIA_ROOT": str(django_settings.MEDIA_ROOT), "NLI_MODEL_PATH": "",
           "CONCORD_RUN_CHUNK_TURNS": CHUNK_TURNS}
    killed = []

    def kill_mid_run(job):
        # Once a chunk has finished and others are running, kill one worker's pool process
        # (the one executing a chunk) with SIGKILL: no cleanup, no acknowledgement.
        if not killed and job.stage == "score" and 0 < job.done < job.total - 3:
            for pid in child_pids(first.pid):
                os.kill(pid, signal.SIGKILL)
                killed.append(pid)

    with celery_worker(url, tmp_path / "a", **env) as (broker, first), \
            celery_worker(url, tmp_path / "b", **env) as (_, second):
        monkeypatch.setattr(jobs, "task_enqueue", enqueue_on(broker))
        wait_until_ready(first, second)
        run = run_create(submission=demo_submission)
        follow(run.job, [first, second], on_progress=kill_mid_run)
        logs = worker_log(first), worker_log(second)
    run = Run.objects.get(pk=run.pk)
    assert run.job.status == Job.Status.SUCCEEDED, run.job.error
    assert killed, "the run finished before a worker could be killed"
    assert "SIGKILL" in logs[0] or "signal 9" in logs[0], logs[0][-3000:]
    # Both workers scored chunks; the killed chunk was redone, and nothing is duplicated.
    assert all("evaluate_run_chunk_job" in log and "succeeded" in log for log in logs)
    assert run.chunks.filter(finished_at__isnull=True).count() == 0
    assert_same_as_reference(run, reference)
    assert UnitScore.objects.filter(run=run).count() == sum(c.values for c in run.chunks.all())
