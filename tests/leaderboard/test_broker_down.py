"""Nothing is stored without its job (issue 18, point 2): with the broker down an upload is
refused with a 503 that says nothing was stored, and it costs no quota; a job whose task was
lost after its commit is sent again by a worker's sweep."""

import json

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse
from rest_framework.authtoken.models import Token

from evaluation.models import Job, Run, Submission
from evaluation.services.submissions import submissions_today
from tests.support.broker import unreachable_broker
from tests.support.submissions import stored_files, tiny_lines

pytestmark = pytest.mark.django_db(transaction=True)


def _file():
    body = "".join(json.dumps(line) + "\n" for line in tiny_lines()).encode()
    return SimpleUploadedFile("s.jsonl", body)


def test_an_upload_while_the_broker_is_down_stores_nothing(client, settings, tiny_benchmark,
                                                          researcher, media_root):
    from evaluation.services.submissions import system_create

    settings.DAILY_SUBMISSION_QUOTA = 1
    system = system_create(name="Down", owner=researcher)
    client.force_login(researcher)
    url = reverse("leaderboard:submission_create", args=[system.slug])
    token = Token.objects.create(user=researcher)
    with unreachable_broker():
        page = client.post(url, {"benchmark": "tiny", "file": _file()}, HTTP_HX_REQUEST="true")
        api = client.post(reverse("leaderboard:api_submissions"),
                          {"system": system.slug, "benchmark": "tiny", "file": _file()},
                          HTTP_AUTHORIZATION=f"Token {token.key}")
    assert page.status_code == 503 and page["Retry-After"] == "60"
    assert "queue unavailable" in page.content.decode().lower()
    assert "nothing was stored" in page.content.decode()
    assert api.status_code == 503
    assert api.json() == {"detail": "The evaluation queue is unavailable; nothing was stored. "
                                    "Try again in a minute."}
    assert not Submission.objects.exists() and not Run.objects.exists()
    assert not Job.objects.exists()
    assert not stored_files(media_root)
    assert submissions_today(system) == 0  # the quota of one is still there to use
    response = client.post(url, {"benchmark": "tiny", "file": _file()}, HTTP_HX_REQUEST="true")
    assert response.status_code == 200 and Submission.objects.count() == 1
