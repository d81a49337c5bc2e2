"""First start serves fast (issue 34.6): `load_demo` evaluates the quick reference baselines
itself, a line each, and queues the sentence-model ones (Dense, Hybrid-RRF) for the worker,
whose progress the leaderboard shows as a bar until they join the table."""

import io

import pytest

from annotation.management.commands.load_demo import Command
from evaluation.lib.rankers import BASELINES
from evaluation.models import Job, Run
from evaluation.services.reference_rankers import baselines_enqueue, heavy_baselines

pytestmark = pytest.mark.django_db


def test_the_heavy_baselines_are_the_sentence_model_ones():
    assert heavy_baselines() == ["dense", "hybrid-rrf"]
    assert len(BASELINES) - len(heavy_baselines()) == 5


def test_load_demo_queues_them_and_the_worker_evaluates_them(
        tiny_benchmark, django_capture_on_commit_callbacks):
    out = io.StringIO()
    command = Command(stdout=out)
    with django_capture_on_commit_callbacks(execute=True):  # eager Celery: the task runs here
        command._heavy_baselines(tiny_benchmark, ["dense"], bars=None)
    job = Job.objects.get(params__baselines=tiny_benchmark.pk)
    assert f"Baselines dense: queued for the worker (job {job.pk}" in out.getvalue()
    assert "/leaderboards/tiny/ shows their progress" in out.getvalue()
    assert job.status == Job.Status.SUCCEEDED, job.error
    assert job.stage.startswith("baseline 1 of 1: ")
    assert job.result["baselines"][0]["baseline"] == "Dense"
    (done,) = job.result["baselines"]
    run = Run.objects.get(pk=done["run"])
    assert run.submission.system.slug == "baseline-dense" and run.job.status == "succeeded"
    # evaluated: nothing more to queue
    assert baselines_enqueue(benchmark=tiny_benchmark, names=["dense"]) is None
    command._heavy_baselines(tiny_benchmark, ["dense"], bars=None)
    assert "Baselines dense: already evaluated" in out.getvalue()
    command._step(3, "reference baselines: 5 evaluated here")
    assert "[load_demo 3/6] reference baselines: 5 evaluated here …" in out.getvalue()


def test_dense_reports_its_embeddings_as_it_goes(tiny_benchmark):
    from evaluation.services.reference_rankers import baseline_submission_create

    heard = []
    baseline_submission_create(benchmark=tiny_benchmark, name="dense",
                               progress=lambda stage, done, total: heard.append(
                                   (stage, done, total)))
    embeddings = [(done, total) for stage, done, total in heard if stage == "dense embeddings"]
    assert embeddings and embeddings[-1][0] == embeddings[-1][1]  # the last chunk: all done
    assert [stage for stage, _, _ in heard].index("dense embeddings") < [
        stage for stage, _, _ in heard].index("dense answers")


def test_a_pending_job_is_not_queued_twice(tiny_benchmark):
    pending = Job.objects.create(kind=Job.Kind.EVALUATION, status=Job.Status.RUNNING,
                                 params={"baselines": tiny_benchmark.pk, "names": ["dense"]})
    assert baselines_enqueue(benchmark=tiny_benchmark, names=["dense"]) == pending
    assert Job.objects.count() == 1


def test_the_leaderboard_shows_their_progress_until_they_finish(tiny_benchmark, client):
    job = Job.objects.create(kind=Job.Kind.EVALUATION, status=Job.Status.RUNNING,
                             params={"baselines": tiny_benchmark.pk,
                                     "names": ["dense", "hybrid-rrf"]},
                             stage="baseline 1 of 2: dense answers", done=3, total=12)
    page = client.get("/leaderboards/tiny/").content.decode()
    assert 'id="baselines-progress"' in page
    assert "Still evaluating 2 reference baselines on a worker" in page
    assert "baseline 1 of 2: dense answers · 3 / 12" in page and 'aria-valuenow="3"' in page
    fragment = client.get("/leaderboards/tiny/baselines-progress/").content.decode()
    assert 'hx-trigger="every 2s"' in fragment and "3 / 12" in fragment
    Job.objects.filter(pk=job.pk).update(status=Job.Status.SUCCEEDED)
    fragment = client.get("/leaderboards/tiny/baselines-progress/").content.decode()
    assert "are evaluated" in fragment and "hx-trigger" not in fragment
    assert 'id="baselines-progress"' not in client.get("/leaderboards/tiny/").content.decode()
    Job.objects.filter(pk=job.pk).update(status=Job.Status.FAILED, error="no model here")
    fragment = client.get("/leaderboards/tiny/baselines-progress/").content.decode()
    assert "failed on the worker: no model here" in fragment
