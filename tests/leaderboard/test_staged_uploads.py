"""A large upload does not hold a web worker (issue 18, item 3): above
CONCORD_INLINE_VALIDATION_BYTES (set tiny here, not a huge file) the file is staged under
MEDIA_ROOT and a real Celery worker on Redis validates it with the inline path's own code; the
page shows a progress bar that turns into the report or the submission, the API answers 202 and
a URL to poll. Nothing partial: a rejected file leaves no submission, no run, no quota use, and
the staged file is deleted either way. Only the uploader and staff see a staged upload."""

import json
import shutil

import pytest
from django.conf import settings as django_settings
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse
from rest_framework.authtoken.models import Token

from core.roles import RESEARCHER
from evaluation.models import Benchmark, Job, Run, Submission
from evaluation.services.submissions import submissions_today, system_create
from tests.conftest import _user
from tests.support.broker import unreachable_broker
from tests.support.submissions import stored_files, tiny_lines
from tests.support.worker import tasks_to_workers, wait_for_job, wait_until_idle, worker_process

pytestmark = [pytest.mark.django_db(transaction=True),
              pytest.mark.skipif(not django_settings.CELERY_BROKER_URL.startswith("redis://"),
                                 reason="needs Redis and a real worker")]

QUOTA = 2


def _file(lines=None, name="submission.jsonl"):
    lines = tiny_lines() if lines is None else lines
    body = "".join(line if isinstance(line, str) else json.dumps(line) + "\n" for line in lines)
    return SimpleUploadedFile(name, body.encode())


def _bad_lines():
    lines = tiny_lines()
    lines[1]["ranked_item_ids"] = ["r2", "nope"]
    return [json.dumps(lines[0]) + "\n", json.dumps(lines[1]) + "\n", "\n"] + lines[2:]


@pytest.fixture
def small_threshold(settings, media_root):
    settings.INLINE_VALIDATION_BYTES = 100  # the tiny file (about 800 bytes) is "large"
    settings.DAILY_SUBMISSION_QUOTA = QUOTA
    return settings


@pytest.fixture(scope="module")
def module_media(tmp_path_factory):
    return tmp_path_factory.mktemp("staged-uploads") / "media"


@pytest.fixture
def media_root(settings, module_media):
    """The module's media folder (its worker's MEDIA_ROOT), empty for each test."""
    settings.MEDIA_ROOT = module_media
    yield module_media
    shutil.rmtree(module_media, ignore_errors=True)


@pytest.fixture(scope="module")
def module_worker(django_db_setup, module_media):
    """One worker process for the module's tests (each one's start and stop cost seconds). Its
    periodic sweep is off (its start sweep finds nothing): no test here relies on it, and it
    must not touch a later test's jobs. Nothing is queued between these tests (the others run
    tasks eagerly); the test that queues tasks before its own worker starts lives in
    test_staged_quota.py, where no other worker can take them."""
    with worker_process(django_settings.CELERY_BROKER_URL, module_media.parent,
                        MEDIA_ROOT=str(module_media), NLI_MODEL_PATH="",
                        CONCORD_DAILY_SUBMISSION_QUOTA=str(QUOTA),
                        CONCORD_JOB_SWEEP_SECONDS="3600") as process:
        yield process


@pytest.fixture
def worker(module_worker, small_threshold, media_root):
    """The module's worker runs this test's tasks, and has finished them (and the tasks they
    queued) before the next test begins."""
    with tasks_to_workers():
        yield module_worker
        wait_until_idle(django_settings.CELERY_BROKER_URL, module_worker)


@pytest.fixture
def system(researcher):
    return system_create(name="Big", owner=researcher)


def _staged_files(media_root):
    return list((media_root / "staged").glob("*")) if (media_root / "staged").exists() else []


def test_a_large_upload_is_checked_by_a_worker_and_becomes_a_submission_with_a_run(
        client, worker, tiny_benchmark, researcher, system, media_root):
    client.force_login(researcher)
    url = reverse("leaderboard:submission_create", args=[system.slug])
    answer = client.post(url, {"benchmark": "tiny", "file": _file()}, HTTP_HX_REQUEST="true")
    assert answer.status_code == 200
    staged = Job.objects.get(kind=Job.Kind.SUBMISSION_VALIDATION)
    page_url = reverse("leaderboard:submission_staged", args=[staged.pk])
    assert answer["HX-Push-Url"] == page_url
    assert 'id="staged-upload"' in answer.content.decode()
    assert 'role="progressbar"' in answer.content.decode()
    wait_for_job(staged, worker)
    assert staged.status == Job.Status.SUCCEEDED, staged.error
    assert staged.stage == "checking the file (KiB read)" and staged.done == staged.total == 1
    submission = Submission.objects.get()
    run = Run.objects.get()
    assert staged.result == {"submission": str(submission.uuid), "run": run.pk}
    assert submission.line_count == 4 and submission.created_by == researcher
    assert submission.file.open("rb").read() == _file().read()
    wait_for_job(run.job, worker)
    assert run.job.status == Job.Status.SUCCEEDED, run.job.error
    page = client.get(page_url).content.decode()
    assert "Valid file: 4 lines stored" in page and f"run #{run.pk}" in page
    assert not _staged_files(media_root)
    assert submissions_today(system) == 1


def test_a_rejected_large_upload_gets_line_numbered_errors_and_stores_nothing(
        client, worker, tiny_benchmark, researcher, system, media_root):
    client.force_login(researcher)
    url = reverse("leaderboard:submission_create", args=[system.slug])
    answer = client.post(url, {"benchmark": "tiny", "file": _file(_bad_lines())})
    staged = Job.objects.get(kind=Job.Kind.SUBMISSION_VALIDATION)
    assert answer.status_code == 302
    assert answer["Location"] == reverse("leaderboard:submission_staged", args=[staged.pk])
    wait_for_job(staged, worker)
    assert staged.status == Job.Status.FAILED
    assert staged.error == "The file is not valid; nothing was stored."
    problems = [(e["line"], e["message"]) for e in staged.result["errors"]]
    assert (2, "unknown item id 'nope'") in problems and (3, "blank line") in problems
    assert all(e["file"] == "submission.jsonl" for e in staged.result["errors"])
    assert not Submission.objects.exists() and not Run.objects.exists()
    assert Job.objects.count() == 1  # no run's job either
    assert submissions_today(system) == 0
    assert not _staged_files(media_root) and not stored_files(media_root)
    page = client.get(answer["Location"]).content.decode()
    assert "The file is not valid — nothing was stored" in page
    assert "<td class=\"num\">2</td>" in page and "unknown item id" in page


def test_the_api_answers_202_and_a_url_to_poll(client, worker, tiny_benchmark, researcher,
                                                system, media_root):
    token = Token.objects.create(user=researcher)
    auth = {"HTTP_AUTHORIZATION": f"Token {token.key}"}
    upload = client.post(reverse("leaderboard:api_submissions"),
                         {"system": system.slug, "benchmark": "tiny", "file": _file()}, **auth)
    assert upload.status_code == 202, upload.content
    body = upload.json()
    assert upload["Location"] == body["url"] == f"/api/submissions/staged/{body['id']}/"
    assert body["status"] in ("queued", "running", "succeeded")
    assert body["page"] == f"/submissions/staged/{body['id']}/"
    wait_for_job(Job.objects.get(pk=body["id"]), worker)
    polled = client.get(body["url"], **auth).json()
    submission = Submission.objects.get()
    assert polled["status"] == "succeeded" and polled["errors"] is None
    assert polled["submission"]["uuid"] == str(submission.uuid)
    assert polled["submission"]["runs"][0]["id"] == Run.objects.get().pk
    assert polled["progress"]["done"] == polled["progress"]["total"] == 1

    bad = client.post(reverse("leaderboard:api_submissions"),
                      {"system": system.slug, "benchmark": "tiny", "file": _file(_bad_lines())},
                      **auth).json()
    wait_for_job(Job.objects.get(pk=bad["id"]), worker)
    polled = client.get(bad["url"], **auth).json()
    assert polled["status"] == "failed" and polled["submission"] is None
    assert polled["detail"] == "The file is not valid; nothing was stored."
    assert {"file": "submission.jsonl", "line": 3, "path": "$",
            "message": "blank line"} in polled["errors"]
    assert Submission.objects.count() == 1 and submissions_today(system) == 1
    assert not _staged_files(media_root)


def test_hidden_only_large_upload_gets_the_generic_refusal(client, worker, tiny_benchmark,
                                                           researcher, system, media_root):
    Benchmark.objects.filter(pk=tiny_benchmark.pk).update(hidden_released_at=None)
    token = Token.objects.create(user=researcher)
    auth = {"HTTP_AUTHORIZATION": f"Token {token.key}"}
    hidden = [line for line in tiny_lines() if line["dialogue_id"] == "d3"]
    body = client.post(reverse("leaderboard:api_submissions"),
                       {"system": system.slug, "benchmark": "tiny", "file": _file(hidden)},
                       **auth).json()
    wait_for_job(Job.objects.get(pk=body["id"]), worker)
    polled = client.get(body["url"], **auth).json()
    assert polled["status"] == "failed"
    assert [e["message"] for e in polled["errors"]] == [
        "the file answers only hidden dialogues, which are scored when the benchmark's owner "
        "releases the hidden scores; answer a public split too"]
    assert not Submission.objects.exists() and submissions_today(system) == 0
    assert not _staged_files(media_root)


def test_only_the_uploader_and_staff_see_a_staged_upload(client, small_threshold, tiny_benchmark,
                                                         researcher, system, staff, outsider):
    # Without a worker the tests run tasks eagerly: the check ran during the POST.
    client.force_login(researcher)
    client.post(reverse("leaderboard:submission_create", args=[system.slug]),
                {"benchmark": "tiny", "file": _file(_bad_lines())})
    staged = Job.objects.get(kind=Job.Kind.SUBMISSION_VALIDATION)
    page = reverse("leaderboard:submission_staged", args=[staged.pk])
    api = reverse("leaderboard:api_staged_upload", args=[staged.pk])
    assert client.get(page).status_code == 200 and client.get(api).status_code == 200
    rival = _user("rival", RESEARCHER)
    for stranger in (rival, outsider):
        client.force_login(stranger)
        assert client.get(page).status_code == 404
        assert client.get(page, HTTP_HX_REQUEST="true").status_code == 404
        token = Token.objects.create(user=stranger)
        assert client.get(api, HTTP_AUTHORIZATION=f"Token {token.key}").status_code == 404
    client.force_login(staff)
    assert client.get(page).status_code == 200 and client.get(api).status_code == 200
    client.logout()
    assert client.get(page).status_code == 302  # to the login page
    assert client.get(api).status_code in (401, 403)
    other_job = Job.objects.create(kind=Job.Kind.STUDY_EXPORT, created_by=researcher)
    client.force_login(researcher)
    assert client.get(reverse("leaderboard:submission_staged", args=[other_job.pk])
                      ).status_code == 404


def test_a_large_upload_while_the_broker_is_down_stores_nothing(client, small_threshold,
                                                                tiny_benchmark, researcher,
                                                                system, media_root):
    client.force_login(researcher)
    token = Token.objects.create(user=researcher)
    with unreachable_broker():
        page = client.post(reverse("leaderboard:submission_create", args=[system.slug]),
                           {"benchmark": "tiny", "file": _file()}, HTTP_HX_REQUEST="true")
        api = client.post(reverse("leaderboard:api_submissions"),
                          {"system": system.slug, "benchmark": "tiny", "file": _file()},
                          HTTP_AUTHORIZATION=f"Token {token.key}")
    assert page.status_code == 503 and page["Retry-After"] == "60"
    assert "nothing was stored" in page.content.decode()
    assert api.status_code == 503
    assert api.json() == {"detail": "The evaluation queue is unavailable; nothing was stored. "
                                    "Try again in a minute."}
    assert not Job.objects.exists() and not Submission.objects.exists()
    assert not _staged_files(media_root) and not stored_files(media_root)
    assert submissions_today(system) == 0


def test_a_check_delivered_again_after_its_submission_was_stored_makes_no_second_one(
        client, small_threshold, tiny_benchmark, researcher, system, media_root):
    """The worker died after the submission's commit, before the job was marked finished: the
    broker delivers the task again, and the job finds the submission its staging named."""
    from django.core.files.storage import default_storage

    from evaluation.services.staged_uploads import staged_upload_process

    client.force_login(researcher)
    client.post(reverse("leaderboard:submission_create", args=[system.slug]),
                {"benchmark": "tiny", "file": _file()})  # checked eagerly: no worker here
    staged = Job.objects.get(kind=Job.Kind.SUBMISSION_VALIDATION)
    assert staged.status == Job.Status.SUCCEEDED and not _staged_files(media_root)
    Job.objects.filter(pk=staged.pk).update(status=Job.Status.RUNNING, result={},
                                            finished_at=None)
    default_storage.save(staged.params["file"], _file())  # as it was when the worker died
    staged_upload_process(job_id=staged.pk)
    staged.refresh_from_db()
    submission = Submission.objects.get()
    assert staged.status == Job.Status.SUCCEEDED
    assert staged.result == {"submission": str(submission.uuid), "run": Run.objects.get().pk}
    assert str(submission.uuid) == staged.params["uuid"] and submissions_today(system) == 1
    assert not _staged_files(media_root)
