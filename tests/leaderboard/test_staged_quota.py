"""Staged uploads over the daily quota (issue 18, item 3): queued while no worker runs, then
checked by a real Celery worker that counts under the quota's lock. Apart from
test_staged_uploads.py, whose module-wide worker would take these tasks before the test starts
its own."""

import pytest
from django.conf import settings as django_settings
from django.urls import reverse
from rest_framework.authtoken.models import Token

from evaluation.models import Job, Run, Submission
from tests.leaderboard.test_staged_uploads import (  # noqa: F401 - fixtures
    QUOTA,
    _file,
    _staged_files,
    small_threshold,
    system,
)
from tests.support.broker import broker_at
from tests.support.worker import celery_worker, wait_for_job

pytestmark = [pytest.mark.django_db(transaction=True),
              pytest.mark.skipif(not django_settings.CELERY_BROKER_URL.startswith("redis://"),
                                 reason="needs Redis and a real worker")]


def test_staged_uploads_over_the_quota_store_nothing(client, small_threshold,  # noqa: F811
                                                     tiny_benchmark, researcher,
                                                     system, media_root, tmp_path):  # noqa: F811
    """Three staged while the quota of two had room: the worker counts under the quota's lock,
    so two become submissions and the third is refused with nothing stored; once the quota is
    used, a large upload is refused at once (429), before anything is staged."""
    token = Token.objects.create(user=researcher)
    auth = {"HTTP_AUTHORIZATION": f"Token {token.key}"}
    with broker_at(django_settings.CELERY_BROKER_URL):  # queued; no worker runs them yet
        ids = [client.post(reverse("leaderboard:api_submissions"),
                           {"system": system.slug, "benchmark": "tiny", "file": _file()},
                           **auth).json()["id"] for _ in range(QUOTA + 1)]
    assert len(_staged_files(media_root)) == QUOTA + 1
    with celery_worker(django_settings.CELERY_BROKER_URL, tmp_path, MEDIA_ROOT=str(media_root),
                       NLI_MODEL_PATH="", CONCORD_DAILY_SUBMISSION_QUOTA=str(QUOTA)) as (_, worker):
        jobs = [Job.objects.get(pk=pk) for pk in ids]
        for job in jobs:
            wait_for_job(job, worker)
    assert sorted(job.status for job in jobs) == ["failed", "succeeded", "succeeded"]
    refused = next(job for job in jobs if job.status == Job.Status.FAILED)
    assert refused.result == {"quota": True} and "used its 2 submissions" in refused.error
    assert Submission.objects.count() == QUOTA and Run.objects.count() == QUOTA
    assert not _staged_files(media_root)
    again = client.post(reverse("leaderboard:api_submissions"),
                        {"system": system.slug, "benchmark": "tiny", "file": _file()}, **auth)
    assert again.status_code == 429
    assert Job.objects.count() == (QUOTA + 1) + QUOTA  # the staged ones and the runs'
    client.force_login(researcher)
    page = client.get(reverse("leaderboard:submission_staged", args=[refused.pk]))
    assert "Daily quota reached" in page.content.decode()
