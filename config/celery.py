"""The Celery application: one for the whole project, configured from Django settings."""

import os

from celery import Celery
from celery.signals import worker_ready

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")

app = Celery("concord")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()


@worker_ready.connect
def _fail_jobs_of_dead_workers(**kwargs):
    """A starting worker fails the jobs whose worker died while nobody was watching."""
    from evaluation.services.jobs import jobs_fail_stale

    jobs_fail_stale()
