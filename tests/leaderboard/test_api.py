"""The REST API: token and session auth, multipart upload with line-numbered errors, quota,
access rules, run progress/results, leaderboards, and the OpenAPI schema and docs page."""

import json

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from evaluation.models import Submission
from evaluation.services.submissions import system_create
from tests.support.submissions import tiny_lines

pytestmark = pytest.mark.django_db


def upload(lines=None):
    content = "".join(json.dumps(line) + "\n" for line in (lines or tiny_lines()))
    return SimpleUploadedFile("submission.jsonl", content.encode())


@pytest.fixture
def api(researcher):
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {Token.objects.create(user=researcher).key}")
    return client


@pytest.fixture
def mine(researcher):
    return system_create(name="Mine", owner=researcher)


def test_benchmarks_and_systems_are_listed(api, tiny_benchmark, mine):
    benchmarks = api.get(reverse("leaderboard:api_benchmarks")).json()
    assert [b["slug"] for b in benchmarks["results"]] == ["tiny"]
    assert benchmarks["results"][0]["leaderboard"] == "/api/leaderboards/tiny/"
    systems = api.get(reverse("leaderboard:api_systems")).json()["results"]
    assert [s["slug"] for s in systems] == ["mine"] and systems[0]["owner"] == "researcher"
    # a stranger does not see the unpublished system
    assert APIClient().get(reverse("leaderboard:api_systems")).json()["results"] == []


def test_a_researcher_registers_and_edits_a_system_with_a_token(api, outsider):
    response = api.post(reverse("leaderboard:api_systems"),
                        {"name": "Via API", "family": "LLM", "paper_url": "https://x.org/p"})
    assert response.status_code == 201 and response.json()["slug"] == "via-api"
    url = reverse("leaderboard:api_system", args=["via-api"])
    assert api.patch(url, {"team": "Lab"}, format="json").json()["team"] == "Lab"
    other = APIClient()
    other.force_authenticate(outsider)
    assert other.patch(url, {"team": "X"}, format="json").status_code == 404  # not visible


def test_upload_with_token_queues_a_run_and_reports_it(api, mine, tiny_benchmark,
                                                       django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True):
        response = api.post(reverse("leaderboard:api_submissions"),
                            {"system": "mine", "benchmark": "tiny", "file": upload()},
                            format="multipart")
    assert response.status_code == 201, response.content
    body = response.json()
    assert body["line_count"] == 4 and body["is_public"] is False
    (run,) = body["runs"]
    result = api.get(run["url"]).json()
    assert result["status"] == "succeeded" and result["metrics"]["recall@1"]["value"] == 0.75
    assert result["metrics"]["recall@1"]["ci"][0] is not None
    assert result["progress"]["done"] == result["progress"]["total"]
    # unpublished: a stranger cannot read the run
    assert APIClient().get(run["url"]).status_code == 404
    publish = reverse("leaderboard:api_submission_publish", args=[body["uuid"]])
    assert api.post(publish, {"public": True}, format="json").json()["is_public"] is True
    assert APIClient().get(run["url"]).status_code == 200


def test_an_invalid_upload_is_400_with_every_problem_and_nothing_is_stored(api, mine,
                                                                           tiny_benchmark):
    lines = tiny_lines()
    lines[0]["response"] = ""
    response = api.post(reverse("leaderboard:api_submissions"),
                        {"system": "mine", "benchmark": "tiny", "file": upload(lines)},
                        format="multipart")
    assert response.status_code == 400
    assert {"file": "submission.jsonl", "line": 1, "path": "$.response",
            "message": "the response is empty"} in response.json()["errors"]
    assert not Submission.objects.exists()


def test_the_quota_answers_429(api, mine, tiny_benchmark, settings):
    settings.DAILY_SUBMISSION_QUOTA = 1
    url = reverse("leaderboard:api_submissions")
    data = {"system": "mine", "benchmark": "tiny"}
    assert api.post(url, {**data, "file": upload()}, format="multipart").status_code == 201
    response = api.post(url, {**data, "file": upload()}, format="multipart")
    assert response.status_code == 429 and "quota" in response.json()["detail"]


def test_uploading_for_someone_elses_system_is_refused(api, tiny_benchmark, finished_submission,
                                                       outsider):
    theirs = system_create(name="Theirs", owner=outsider)
    url = reverse("leaderboard:api_submissions")
    data = {"system": "theirs", "benchmark": "tiny", "file": upload()}
    assert api.post(url, data, format="multipart").status_code == 404  # not visible to us
    finished_submission(theirs, public=True)
    data["file"] = upload()
    assert api.post(url, data, format="multipart").status_code == 403  # visible, not ours


def test_session_writes_need_the_csrf_token(researcher, mine, tiny_benchmark):
    client = APIClient(enforce_csrf_checks=True)
    client.force_login(researcher)
    response = client.post(reverse("leaderboard:api_submissions"),
                           {"system": "mine", "benchmark": "tiny", "file": upload()},
                           format="multipart")
    assert response.status_code == 403 and "CSRF" in response.json()["detail"]


def test_the_leaderboard_endpoint_has_ranks_cis_and_runs(api, board_world):
    data = APIClient().get(reverse("leaderboard:api_leaderboard", args=["tiny"])).json()
    assert data["protocol"] == "turn" and data["rank_metric"] == "trace:recall@1"
    echo = next(s for s in data["systems"] if s["slug"] == "echo")
    cell = echo["metrics"]["trace:recall@1"]
    assert cell["value"] == 0.75 and cell["rank"] == 1 and cell["ci_low"] is not None
    assert cell["run"] == board_world["runs"]["echo"][1].pk
    assert {s["slug"] for s in data["systems"]} == {"echo", "baseline-reverse"}
    assert "trace:gs_t70" in {c["key"] for c in data["columns"]}


def test_the_token_endpoint_and_the_schema(client, researcher):
    response = client.post(reverse("leaderboard:api_token_obtain"),
                           {"username": "researcher", "password": "pw-for-tests-123"})
    assert response.json()["token"] == Token.objects.get(user=researcher).key
    schema = client.get(reverse("leaderboard:api_schema") + "?format=json").json()
    for path in ("/api/benchmarks/", "/api/systems/", "/api/submissions/",
                 "/api/runs/{run_id}/", "/api/leaderboards/{benchmark}/"):
        assert path in schema["paths"]
    body = schema["paths"]["/api/submissions/"]["post"]["requestBody"]["content"]
    assert "multipart/form-data" in body
    docs = client.get(reverse("leaderboard:api_docs")).content.decode()
    assert "/api/submissions/" in docs and "multipart/form-data" in docs and "429" in docs
    assert "<script" not in docs.split("</head>")[1]
