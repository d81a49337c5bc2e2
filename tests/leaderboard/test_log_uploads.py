"""`log` submissions uploaded from the browser and the API like `turn` ones (issue 20, item 7):
the validation `evaluate` uses (line-numbered, nothing stored), the same daily quota, no log of
a hidden dialogue before the hidden scores are released, and no Trace run."""

import json

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client
from django.urls import reverse
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from evaluation.models import Benchmark, Job, Run, Submission
from evaluation.services.submissions import system_create
from tests.conftest import PASSWORD
from tests.evaluation.llm_fixtures import LOGS
from tests.support.submissions import stored_files

pytestmark = pytest.mark.django_db


def logs_file(logs=None, name="logs.jsonl"):
    content = "".join(json.dumps(log) + "\n" for log in (LOGS if logs is None else logs))
    return SimpleUploadedFile(name, content.encode(), content_type="application/x-ndjson")


@pytest.fixture
def mine(researcher):
    return system_create(name="Mine", owner=researcher, family="LLM")


@pytest.fixture
def browser(researcher):
    client = Client(enforce_csrf_checks=True)
    assert client.login(username=researcher.username, password=PASSWORD)
    return client


@pytest.fixture
def api(researcher):
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {Token.objects.create(user=researcher).key}")
    return client


def post_form(client, system, file, protocol="log", htmx=True):
    url = reverse("leaderboard:submission_create", args=[system.slug])
    client.get(url)
    headers = {"HTTP_HX_REQUEST": "true"} if htmx else {}
    return client.post(url, {"benchmark": "tiny", "protocol": protocol, "file": file,
                             "csrfmiddlewaretoken": client.cookies["csrftoken"].value},
                       **headers)


def test_the_form_offers_the_log_protocol_and_stores_a_valid_log_file(
        browser, mine, log_benchmark, media_root):
    page = browser.get(reverse("leaderboard:submission_create", args=[mine.slug]))
    assert b'value="log"' in page.content and b"Tiny Tourism (v1.0; turn, log)" in page.content
    response = post_form(browser, mine, logs_file(), htmx=False)
    submission = Submission.objects.get()
    assert response.status_code == 302
    assert response["Location"] == reverse("leaderboard:submission_detail",
                                           args=[submission.uuid])
    assert (submission.protocol, submission.line_count, submission.system) == ("log", 2, mine)
    assert not Run.objects.exists() and not Job.objects.exists()  # no Trace run for logs
    with submission.file.open("rb") as handle:
        assert [json.loads(line)["log_id"] for line in handle] == ["log-d1", "log-d2"]
    detail = browser.get(response["Location"]).content.decode()
    assert "Mine on Tiny Tourism" in detail and "scored by LLM evaluators" in detail


def test_an_invalid_log_file_gets_the_line_numbered_report_and_nothing_is_stored(
        browser, mine, log_benchmark, media_root):
    logs = json.loads(json.dumps(LOGS))
    logs[1]["log_id"] = "log-d1"
    logs[1]["turns"][1]["recommended_item_ids"] = ["zzz"]
    html = post_form(browser, mine, logs_file(logs)).content.decode()
    assert "nothing was stored" in html
    assert ('<td class="num">2</td><td><code>$.log_id</code></td>'
            "<td>duplicate log id &#x27;log-d1&#x27; (first on line 1)</td>") in html
    assert "<code>$.turns[1].recommended_item_ids[0]</code>" in html
    assert "unknown item id &#x27;zzz&#x27;" in html
    assert not Submission.objects.exists() and not stored_files(media_root)
    response = post_form(browser, mine, logs_file(logs), htmx=False)
    assert response.status_code == 422


def test_a_turn_only_benchmark_refuses_log_files(browser, mine, tiny_benchmark, api):
    response = post_form(browser, mine, logs_file(), htmx=False)
    assert response.status_code == 200 and b"takes turn submissions only" in response.content
    answer = api.post(reverse("leaderboard:api_submissions"), {
        "system": "mine", "benchmark": "tiny", "protocol": "log", "file": logs_file()},
        format="multipart")
    assert answer.status_code == 400 and "not `log` ones" in answer.json()["protocol"][0]
    assert not Submission.objects.exists()


def test_log_uploads_count_against_the_same_daily_quota_as_turn_uploads(
        browser, mine, log_benchmark, settings, api):
    from tests.support.submissions import tiny_lines

    settings.DAILY_SUBMISSION_QUOTA = 2
    turn = "".join(json.dumps(line) + "\n" for line in tiny_lines()).encode()
    assert api.post(reverse("leaderboard:api_submissions"), {
        "system": "mine", "benchmark": "tiny",
        "file": SimpleUploadedFile("submission.jsonl", turn)},
        format="multipart").status_code == 201
    assert post_form(browser, mine, logs_file(), htmx=False).status_code == 302
    refused = post_form(browser, mine, logs_file(), htmx=False)
    assert refused.status_code == 429 and b"used its 2 submissions" in refused.content
    answer = api.post(reverse("leaderboard:api_submissions"), {
        "system": "mine", "benchmark": "tiny", "protocol": "log", "file": logs_file()},
        format="multipart")
    assert answer.status_code == 429
    assert Submission.objects.count() == 2


def test_the_api_uploads_a_log_file_and_reports_its_problems_by_line(api, mine, log_benchmark,
                                                                     media_root):
    url = reverse("leaderboard:api_submissions")
    bad = json.loads(json.dumps(LOGS))
    bad[0]["dialogue_id"] = "d9"
    answer = api.post(url, {"system": "mine", "benchmark": "tiny", "protocol": "log",
                            "file": logs_file(bad)}, format="multipart")
    assert answer.status_code == 400
    assert answer.json()["errors"] == [{"file": "logs.jsonl", "line": 1,
                                        "path": "$.dialogue_id",
                                        "message": "unknown dialogue id 'd9'"}]
    assert not Submission.objects.exists() and not stored_files(media_root)
    answer = api.post(url, {"system": "mine", "benchmark": "tiny", "protocol": "log",
                            "file": logs_file()}, format="multipart")
    assert answer.status_code == 201, answer.content
    body = answer.json()
    assert (body["protocol"], body["line_count"], body["is_public"]) == ("log", 2, False)
    assert not Run.objects.exists()


def test_logs_of_hidden_dialogues_wait_for_the_release(api, mine, log_benchmark, media_root):
    Benchmark.objects.filter(pk=log_benchmark.pk).update(hidden_released_at=None)
    hidden = [*LOGS, {"log_id": "log-d3", "dialogue_id": "d3",
                      "turns": [{"role": "user", "text": "x"}, {"role": "system", "text": "y"}]}]
    url = reverse("leaderboard:api_submissions")
    answer = api.post(url, {"system": "mine", "benchmark": "tiny", "protocol": "log",
                            "file": logs_file(hidden)}, format="multipart")
    assert answer.status_code == 400
    assert answer.json()["errors"] == [{
        "file": "logs.jsonl", "line": 3, "path": "$.dialogue_id",
        "message": "dialogue 'd3' is a hidden dialogue; logs of hidden dialogues are accepted "
                   "once the benchmark's owner releases the hidden scores"}]
    assert not Submission.objects.exists() and not stored_files(media_root)
    from django.utils import timezone

    Benchmark.objects.filter(pk=log_benchmark.pk).update(hidden_released_at=timezone.now())
    answer = api.post(url, {"system": "mine", "benchmark": "tiny", "protocol": "log",
                            "file": logs_file(hidden)}, format="multipart")
    assert answer.status_code == 201 and Submission.objects.get().line_count == 3
