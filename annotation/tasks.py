"""Celery tasks of the annotation app: thin wrappers that take ids and call one service."""

from celery import shared_task

from evaluation.lib.rankers.embeddings import EmbeddingsUnavailable
from evaluation.services.jobs import job_begin, job_finish, job_progress

from .imports import reference_free_embedding_process
from .models import Study
from .services.study_exports import (
    export_is_bundle,
    export_path,
    study_bundle_write,
    study_export_write,
)
from .services.validation import benchmark_validations_refresh, metric_validations_refresh


@shared_task(acks_late=True)
def study_export_job(job_id: int) -> None:
    job = job_begin(job_id)
    if job is None:
        return
    study = Study.objects.filter(pk=job.params.get("study")).first()
    if study is None:
        job_finish(job_id, error="The study no longer exists.")
        return
    def progress(stage, done, total):
        job_progress(job_id, stage, done, total)

    if export_is_bundle(job):
        job_finish(job_id, result=study_bundle_write(study=study, path=export_path(job),
                                                     progress=progress))
        return
    rows = study_export_write(study=study, path=export_path(job), progress=progress)
    job_finish(job_id, result={"rows": rows})


@shared_task(acks_late=True)
def refresh_validations_job(benchmark_id: int | None, study_id: int | None) -> None:
    """Store the metric-leaderboard rows behind the leaderboards' trust column: of every
    study on BENCHMARK_ID (its runs changed) or of STUDY_ID (its labels changed). Idempotent."""
    if benchmark_id is not None:
        benchmark_validations_refresh(benchmark_id=benchmark_id)
    study = Study.objects.filter(pk=study_id).select_related("benchmark").first() \
        if study_id is not None else None
    if study is not None:
        metric_validations_refresh(study=study)


@shared_task(acks_late=True)
def reference_free_embedding_job(job_id: int) -> None:
    """The embedding baseline of an imported data set (annotation.imports)."""
    job = job_begin(job_id)
    if job is None:
        return
    try:
        result = reference_free_embedding_process(
            job=job, progress=lambda stage, done, total: job_progress(job_id, stage, done, total))
    except (ValueError, EmbeddingsUnavailable) as exc:
        job_finish(job_id, error=str(exc)[:500])
        return
    job_finish(job_id, result=result)
