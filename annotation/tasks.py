"""Celery tasks of the annotation app: thin wrappers that take ids and call one service."""

from celery import shared_task

from evaluation.services.jobs import job_begin, job_finish, job_progress

from .models import Study
from .services.study_exports import (
    export_is_bundle,
    export_path,
    study_bundle_write,
    study_export_write,
)


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
