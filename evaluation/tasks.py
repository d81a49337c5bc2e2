"""Celery tasks of the evaluation app: thin wrappers that take ids and call one service."""

from celery import shared_task

from evaluation.lib.formats.errors import FormatError
from evaluation.lib.rankers import EmbeddingsUnavailable
from evaluation.services.benchmarks import benchmark_import
from evaluation.services.downloads import benchmark_downloads_build
from evaluation.services.jobs import job_beat_on_sqlite, job_begin, job_finish, job_progress
from evaluation.services.reference_rankers import baselines_job_process
from evaluation.services.runs import run_chunk_process, run_finalize, run_process
from evaluation.services.simulations import simulation_batch_process
from evaluation.services.staged_uploads import staged_upload_process


@shared_task(acks_late=True)
def import_benchmark_job(job_id: int) -> None:
    job = job_begin(job_id)
    if job is None:
        return
    try:
        benchmark = benchmark_import(
            path=job.params["path"], replace=job.params.get("replace", False),
            owner=job.created_by,
            progress=lambda stage, done, total: job_progress(job_id, stage, done, total),
        )
    except FormatError as exc:
        job_finish(job_id, error=str(exc))
        return
    job_finish(job_id, result={"benchmark": benchmark.slug})


@shared_task(acks_late=True)
def evaluate_run_job(job_id: int) -> None:
    """Start an evaluation run (the job of a `Run`): plan its chunks and queue one
    `evaluate_run_chunk_job` each (docs/operations.md, "Runs over several workers"); safe to
    deliver twice."""
    run_process(job_id=job_id, fan_out=True)


@shared_task(acks_late=True)
def evaluate_run_chunk_job(run_id: int, index: int) -> None:
    """Score one chunk of a run's dialogues; the last chunk to finish queues the final task.
    Safe to deliver twice and to redo after its worker was killed (values are upserted)."""
    run_chunk_process(run_id=run_id, index=index)


@shared_task(acks_late=True)
def finalize_run_job(run_id: int) -> None:
    """Summaries, CIs and the leaderboard refresh of a run whose chunks all finished."""
    run_finalize(run_id=run_id)


@shared_task(acks_late=True)
def evaluate_llm_run_job(job_id: int) -> None:
    """Execute an LLM evaluator run (CoRE, Trace judge, PEPPER judge); safe to deliver twice.

    A task of its own so that service deployments can route LLM work (slow, rate-limited,
    network-bound) to its own workers with `CELERY_TASK_ROUTES`; the body is the same.
    """
    run_process(job_id=job_id)


@shared_task(acks_late=True)
def simulate_batch_job(simulation_id: int, batch: int) -> None:
    """Simulate one batch of a simulation's users; safe to deliver twice (stored users are
    skipped), so a batch whose worker was killed is redone without duplicates."""
    simulation_batch_process(simulation_id=simulation_id, batch=batch)


@shared_task(acks_late=True)
def face_optimize_job(job_id: int) -> None:
    """FACE instruction optimization (FACE §2.3); a redelivered or restarted job continues
    after the last finished iteration."""
    # Imported here: the LLM layer loads litellm, which takes seconds to import.
    from evaluation.services.face_optimization import face_optimization_process

    face_optimization_process(job_id=job_id)


@shared_task(acks_late=True)
def validate_staged_upload_job(job_id: int) -> None:
    """Validate a large upload staged by the web request and, when valid, store it as a
    submission with its queued run (docs/operations.md, "Failure modes"); safe to deliver
    twice (the submission's uuid was chosen at staging)."""
    staged_upload_process(job_id=job_id)


@shared_task(acks_late=True)
def build_downloads_job(benchmark_id: int) -> None:
    benchmark_downloads_build(benchmark_id=benchmark_id)


@shared_task(acks_late=True)
def baselines_job(job_id: int) -> None:
    """The reference baselines `load_demo` leaves to a worker."""
    job = job_begin(job_id)
    if job is None:
        return
    job_beat_on_sqlite(job_id)  # `make run`: its first steps are silent for a while
    try:
        result = baselines_job_process(
            job=job, progress=lambda stage, done, total: job_progress(job_id, stage, done, total))
    except (ValueError, EmbeddingsUnavailable) as exc:
        job_finish(job_id, error=str(exc)[:500])
        return
    job_finish(job_id, result=result)
