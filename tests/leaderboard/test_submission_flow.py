"""The browser submission flow without a browser: upload → validation report or progress →
result → publish; uploads are stored outside the static root and never served as HTML."""

import json

import pytest
from django.conf import settings as django_settings
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client
from django.urls import reverse

from evaluation.models import Submission, System
from evaluation.services.submissions import system_create
from tests.support.submissions import stored_files, tiny_lines

pytestmark = pytest.mark.django_db


def upload(lines=None, name="submission.jsonl"):
    content = "".join(json.dumps(line) + "\n" for line in (lines or tiny_lines()))
    return SimpleUploadedFile(name, content.encode(), content_type="application/x-ndjson")


@pytest.fixture
def mine(researcher):
    return system_create(name="Mine", owner=researcher, family="LLM")


def post_upload(client, system, file, htmx=True):
    headers = {"HTTP_HX_REQUEST": "true"} if htmx else {}
    return client.post(reverse("leaderboard:submission_create", args=[system.slug]),
                       {"benchmark": "tiny", "file": file}, **headers)


def test_a_researcher_registers_a_system(client, researcher):
    client.force_login(researcher)
    response = client.post(reverse("leaderboard:system_create"), {
        "name": "Grounded CRS", "team": "Lab", "family": "LLM", "description": "d",
        "paper_url": "https://example.org/p", "code_url": ""})
    system = System.objects.get(name="Grounded CRS")
    assert response.url == reverse("leaderboard:submission_create", args=[system.slug])
    assert system.owner == researcher and not system.is_baseline


def test_an_invalid_file_gets_a_line_numbered_report_and_nothing_is_stored(
        client, researcher, mine, tiny_benchmark, media_root):
    lines = tiny_lines()
    lines[1]["dialogue_id"] = "nope"
    lines[2]["ranked_item_ids"] = ["zzz"]
    client.force_login(researcher)
    html = post_upload(client, mine, upload(lines)).content.decode()
    assert "nothing was stored" in html
    assert '<td class="num">2</td><td><code>$.dialogue_id</code></td>' \
           "<td>unknown dialogue id &#x27;nope&#x27;</td>" in html
    assert "<td class=\"num\">3</td>" in html and "unknown item id" in html
    assert not Submission.objects.exists() and not stored_files(media_root)
    # without htmx the whole page comes back, with 422
    response = post_upload(client, mine, upload(lines), htmx=False)
    assert response.status_code == 422 and "<html" in response.content.decode()


def test_a_valid_file_shows_progress_then_results_and_a_publish_button(
        client, researcher, mine, tiny_benchmark, media_root,
        django_capture_on_commit_callbacks):
    client.force_login(researcher)
    with django_capture_on_commit_callbacks() as queued:  # the run's task is not sent yet
        response = post_upload(client, mine, upload())
    submission = Submission.objects.get()
    detail = reverse("leaderboard:submission_detail", args=[submission.uuid])
    assert response["HX-Push-Url"] == detail
    html = response.content.decode()
    assert 'id="submission-status"' in html and 'role="progressbar"' in html
    assert 'data-status="queued"' in html and 'hx-trigger="every 1s"' in html
    assert "Valid file: 4 lines stored" in html
    assert 'hx-swap-oob="true"' in html and "1 of 5 submissions used" in html
    assert len(queued) == 1
    with django_capture_on_commit_callbacks(execute=True):
        queued[0]()  # the worker (eager in tests) plans the run; its chunks and final task follow
    poll = reverse("leaderboard:submission_status", args=[submission.uuid]) + "?fresh=1"
    assert f'hx-get="{poll}"' in response.content.decode()  # the upload's answer polls as fresh
    html = client.get(poll, HTTP_HX_REQUEST="true").content.decode()
    assert 'data-status="succeeded"' in html and "publish-button" in html
    # the heading still says what was stored once the run is done; the quota line is not resent
    assert "Valid file: 4 lines stored" in html and "hx-swap-oob" not in html
    assert "hx-trigger" not in html  # polling stops
    assert ">0.750</a>" in html  # recall@1
    stored = stored_files(media_root)
    assert len(stored) == 1 and str(django_settings.STATIC_ROOT) not in str(stored[0])


def test_the_status_fragment_polls_while_the_run_is_running(client, researcher, mine,
                                                            tiny_benchmark):
    from evaluation.models import Job

    client.force_login(researcher)
    post_upload(client, mine, upload())
    submission = Submission.objects.get()
    Job.objects.update(status=Job.Status.RUNNING, done=3, total=10, stage="score")
    html = client.get(reverse("leaderboard:submission_status", args=[submission.uuid]),
                      HTTP_HX_REQUEST="true").content.decode()
    assert 'hx-trigger="every 1s"' in html and "width: 30%" in html and "3 / 10" in html
    assert "publish-button" not in html


def test_publishing_puts_the_run_on_the_public_leaderboard(
        client, researcher, mine, tiny_benchmark, django_capture_on_commit_callbacks):
    board = reverse("leaderboard:board", args=["tiny", "turn"])
    client.force_login(researcher)
    with django_capture_on_commit_callbacks(execute=True):
        post_upload(client, mine, upload())
    submission = Submission.objects.get()
    assert 'data-system="mine"' not in Client().get(board).content.decode()
    publish = reverse("leaderboard:submission_publish", args=[submission.uuid])
    html = client.post(publish, {"public": "1"}, HTTP_HX_REQUEST="true").content.decode()
    assert "badge public" in html and "Withdraw" in html
    assert 'data-system="mine"' in Client().get(board).content.decode()
    client.post(publish, {"public": "0"})
    assert 'data-system="mine"' not in Client().get(board).content.decode()


def test_a_submission_without_a_successful_run_cannot_be_published(client, researcher, mine,
                                                                   tiny_benchmark):
    from evaluation.models import Job

    client.force_login(researcher)
    post_upload(client, mine, upload())
    submission = Submission.objects.get()
    Job.objects.update(status=Job.Status.FAILED, error="boom")
    html = client.post(reverse("leaderboard:submission_publish", args=[submission.uuid]),
                       {"public": "1"}, HTTP_HX_REQUEST="true").content.decode()
    assert "Only a submission with a finished, successful run" in html
    submission.refresh_from_db()
    assert not submission.is_public


def test_others_cannot_publish_or_upload(client, researcher, outsider, mine, tiny_benchmark):
    client.force_login(researcher)
    post_upload(client, mine, upload())
    submission = Submission.objects.get()
    submission.is_public = True
    submission.save()
    client.force_login(outsider)
    publish = reverse("leaderboard:submission_publish", args=[submission.uuid])
    assert client.post(publish, {"public": "0"}).status_code == 403
    assert post_upload(client, mine, upload()).status_code == 403
    submission.refresh_from_db()
    assert submission.is_public and Submission.objects.count() == 1


def test_forms_and_htmx_posts_need_the_csrf_token(researcher, mine, tiny_benchmark):
    client = Client(enforce_csrf_checks=True)
    client.force_login(researcher)
    assert post_upload(client, mine, upload()).status_code == 403
    page = client.get(reverse("leaderboard:submission_create", args=[mine.slug]))
    token = page.cookies["csrftoken"].value
    assert "X-CSRFToken" in page.content.decode()  # htmx sends it from base.html
    response = client.post(reverse("leaderboard:submission_create", args=[mine.slug]),
                           {"benchmark": "tiny", "file": upload()}, HTTP_HX_REQUEST="true",
                           HTTP_X_CSRFTOKEN=token)
    assert response.status_code == 200 and Submission.objects.count() == 1


def test_the_stored_file_is_downloaded_as_an_attachment_never_as_html(
        client, researcher, mine, tiny_benchmark):
    lines = tiny_lines()
    lines[2]["response"] = "<script>alert(1)</script> Old City Inn has free parking."
    client.force_login(researcher)
    post_upload(client, mine, upload(lines, name="evil.html"))
    submission = Submission.objects.get()
    assert submission.file.name.endswith(f"{submission.uuid}.jsonl")  # never the user's name
    response = client.get(reverse("leaderboard:submission_download", args=[submission.uuid]))
    assert response["Content-Type"] == "application/octet-stream"
    assert response["Content-Disposition"].startswith("attachment")
    assert response["X-Content-Type-Options"] == "nosniff"
    assert b"<script>" in b"".join(response.streaming_content)
    # and the drill-down shows that response escaped
    html = client.get(reverse("leaderboard:submission_dialogue",
                              args=[submission.uuid, "d2"])).content.decode()
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html and "<script>alert" not in html


def test_uploads_need_the_researcher_role(client, outsider, tiny_benchmark):
    system = system_create(name="Theirs", owner=outsider)
    client.force_login(outsider)
    assert client.get(reverse("leaderboard:system_create")).status_code == 403
    assert post_upload(client, system, upload()).status_code == 403


def test_signup_gives_the_researcher_role(client):
    from core.roles import RESEARCHER, has_role

    response = client.post(reverse("leaderboard:signup"), {
        "username": "newbie", "email": "", "password1": "a-Long-pass-42x",
        "password2": "a-Long-pass-42x"})
    assert response.url == reverse("leaderboard:system_create")
    from django.contrib.auth.models import User

    assert has_role(User.objects.get(username="newbie"), RESEARCHER)
    assert client.get(reverse("leaderboard:system_create")).status_code == 200
