"""A real Celery worker process runs a job end to end: against Redis when it is reachable
(it is in CI), and always on the embedded filesystem broker that `make run` uses."""

import pytest
from django.conf import settings

from evaluation.models import Benchmark, Job
from evaluation.services.jobs import job_create
from evaluation.tasks import import_benchmark_job
from tests.support.worker import FILESYSTEM, celery_worker, wait_for_job, worker_log


def _brokers():
    yield pytest.param(FILESYSTEM, id="filesystem")
    if settings.CELERY_BROKER_URL.startswith("redis://"):
        # The id names the kind, not the URL: each parallel test process has its own Redis
        # database, and every process must collect the same test ids.
        yield pytest.param(settings.CELERY_BROKER_URL, id="redis")


@pytest.fixture(params=list(_brokers()))
def worker_broker(request, transactional_db, tmp_path):
    with celery_worker(request.param, tmp_path) as pair:
        yield pair


def test_worker_process_imports_a_benchmark_and_reports_progress(worker_broker, tiny_bundle_dir):
    broker, worker = worker_broker

    job = job_create(kind=Job.Kind.IMPORT_BENCHMARK, params={"path": str(tiny_bundle_dir)},
                     task=None)
    import_benchmark_job.apply_async((job.pk,), connection=broker)
    wait_for_job(job, worker, seconds=60)
    assert job.status == Job.Status.SUCCEEDED, job.error
    assert job.result == {"benchmark": "tiny"}
    assert (job.stage, job.done, job.total, job.attempts) == ("dialogues", 3, 3, 1)
    assert Benchmark.objects.get(slug="tiny").dialogues.count() == 3
    log = worker_log(worker)
    assert "import_benchmark_job" in log and "succeeded" in log, log[-3000:]
