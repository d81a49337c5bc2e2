"""A large upload in Chromium (issue 18, item 3): above CONCORD_INLINE_VALIDATION_BYTES (set
tiny here) the form answers at once with the staged upload's progress bar, which a real Celery
worker on Redis turns into the line-numbered report, or into the submission and its run."""

import json

import pytest
from django.conf import settings

from evaluation.models import Job, Submission
from tests.browser.conftest import screenshot
from tests.browser.test_leaderboard import log_in
from tests.support.broker import broker_at
from tests.support.submissions import tiny_lines, write_lines
from tests.support.worker import celery_worker

pytestmark = [pytest.mark.browser, pytest.mark.slow, pytest.mark.django_db(transaction=True),
              pytest.mark.skipif(not settings.CELERY_BROKER_URL.startswith("redis://"),
                                 reason="needs Redis and a real worker")]


@pytest.fixture
def system(researcher, tiny_benchmark, settings, tmp_path):
    from evaluation.services.submissions import system_create

    settings.MEDIA_ROOT = tmp_path / "media"
    settings.INLINE_VALIDATION_BYTES = 100  # the tiny file (about 800 bytes) is "large"
    return system_create(name="Big Files", owner=researcher, family="LLM")


def test_a_large_upload_shows_its_progress_then_the_report_then_the_run(page, system, tmp_path):
    bad = tmp_path / "submission.jsonl"
    lines = tiny_lines()
    lines[1]["ranked_item_ids"] = ["r2", "nope"]
    bad.write_text("".join(json.dumps(line) + "\n" for line in lines[:2]) + "\n"
                   + "".join(json.dumps(line) + "\n" for line in lines[2:]), encoding="utf-8")
    log_in(page)
    page.goto(f"/systems/{system.slug}/submit/")
    page.set_input_files("input[name=file]", str(bad))
    with broker_at(settings.CELERY_BROKER_URL):  # queued; no worker has started yet
        page.click("#submission-form button[type=submit]")
        staged = page.locator("#staged-upload[data-status=queued]")
        staged.wait_for()
        assert staged.locator(".progress[role=progressbar]").count() == 1
        assert "Checking submission.jsonl" in staged.inner_text()
        job = Job.objects.get(kind=Job.Kind.SUBMISSION_VALIDATION)
        assert page.url.endswith(f"/submissions/staged/{job.pk}/")
        screenshot(page, "staged-upload-queued")
        with celery_worker(settings.CELERY_BROKER_URL, tmp_path,
                           MEDIA_ROOT=str(settings.MEDIA_ROOT), NLI_MODEL_PATH=""):
            report = page.locator("#staged-upload[data-status=failed] #validation-report")
            report.wait_for(timeout=60_000)
            text = report.inner_text()
            assert "nothing was stored" in text and "unknown item id 'nope'" in text
            assert "blank line" in text
            rows = report.locator("tbody tr td.num").all_inner_texts()
            assert "2" in rows and "3" in rows  # the lines of the two problems
            screenshot(page, "staged-upload-report")
            assert not Submission.objects.exists()

            page.goto(f"/systems/{system.slug}/submit/")
            page.set_input_files("input[name=file]",
                                 str(write_lines(tmp_path / "good.jsonl")))
            page.click("#submission-form button[type=submit]")
            page.locator("#staged-upload").wait_for()
            page.wait_for_selector("#submission-status[data-status=succeeded]",
                                   timeout=60_000)
            assert "Valid file: 4 lines stored" in page.locator("#submission-status").inner_text()
            screenshot(page, "staged-upload-evaluated")
    assert Submission.objects.count() == 1
