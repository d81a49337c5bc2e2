"""A study author starts the PEPPER judge on a submission from its page in Chromium: the form,
the estimate page, the confirmation, then the job's progress bar while a real Celery worker on
Redis runs it against a scripted OpenAI-compatible server on 127.0.0.1."""

import pytest
from django.conf import settings

from evaluation.models import Job, Run, Submission
from tests.browser.conftest import screenshot
from tests.browser.test_leaderboard import log_in
from tests.evaluation.llm_fixtures import MODEL, llm_settings, log_submission  # noqa: F401
from tests.support.llm_server import scripted_llm_server
from tests.support.worker import celery_worker

pytestmark = [pytest.mark.browser, pytest.mark.slow, pytest.mark.django_db(transaction=True),
              pytest.mark.skipif(not settings.CELERY_BROKER_URL.startswith("redis://"),
                                 reason="needs Redis and a real worker")]

ANSWER = ("The system asked about my needs.\n<proactiveness>4</proactiveness>\n"
          "<coherence>3</coherence>\n<personalization>5</personalization>")


def test_estimate_confirm_and_progress_of_an_llm_run(page, log_submission, author,  # noqa: F811
                                                     llm_settings, tmp_path):  # noqa: F811
    Submission.objects.filter(pk=log_submission.pk).update(is_public=True)
    with scripted_llm_server(lambda request: ANSWER) as server:
        llm_settings.LLM_API_BASE, llm_settings.LLM_MODEL = server.api_base, MODEL
        # The worker reaches the model through its own `default` profile, as in production.
        with celery_worker(settings.CELERY_BROKER_URL, tmp_path,
                           MEDIA_ROOT=str(llm_settings.MEDIA_ROOT),
                           CONCORD_LLM_API_BASE=server.api_base, CONCORD_LLM_MODEL=MODEL):
            log_in(page, "author")
            page.goto(f"/submissions/{log_submission.uuid}/")
            page.click("#run-llm-evaluator")
            page.select_option("select[name=evaluator]", "pepper_judge")
            page.select_option("select[name=profile]", "default")
            page.click("#estimate-button")
            assert page.locator("#estimate-calls").inner_text() == "2"
            assert "unknown (no price" in page.locator("#estimate-cost").inner_text()
            screenshot(page, "llm-evaluate-estimate")
            assert Run.objects.count() == 0
            page.click("#confirm-button")
            page.wait_for_url("**/jobs/*/")
            page.wait_for_selector(".job-progress[data-status=succeeded]", timeout=60_000)
            screenshot(page, "llm-evaluate-progress")
    run = Run.objects.get()
    assert run.evaluator == "pepper_judge" and run.job.status == Job.Status.SUCCEEDED
    assert run.usage["units"] == 2 and run.usage["calls"] == 2
    assert len(server.requests) == 2
