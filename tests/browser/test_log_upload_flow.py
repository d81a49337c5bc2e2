"""A researcher uploads a `log` file in Chromium; the PEPPER judge the operator runs on new log
uploads starts by itself (its estimate is within budget) and the submission's progress bar
follows it while a real Celery worker on Redis runs it against a scripted OpenAI-compatible
server on 127.0.0.1 (issue 20, item 7)."""

import json

import pytest
from django.conf import settings

from evaluation.models import AutoEvaluation, Benchmark, Job, Submission
from evaluation.services.auto_evaluation import auto_evaluator_save
from evaluation.services.submissions import system_create
from tests.browser.conftest import screenshot
from tests.browser.test_leaderboard import log_in
from tests.evaluation.llm_fixtures import LOGS, llm_settings  # noqa: F401
from tests.support.llm_server import scripted_llm_server
from tests.support.worker import celery_worker

pytestmark = [pytest.mark.browser, pytest.mark.slow, pytest.mark.django_db(transaction=True),
              pytest.mark.skipif(not settings.CELERY_BROKER_URL.startswith("redis://"),
                                 reason="needs Redis and a real worker")]

ANSWER = ("The system asked about my needs.\n<proactiveness>4</proactiveness>\n"
          "<coherence>3</coherence>\n<personalization>5</personalization>")


def test_a_log_upload_starts_the_operators_llm_evaluator(page, tiny_benchmark, researcher, staff,
                                                         llm_settings, tmp_path):  # noqa: F811
    Benchmark.objects.filter(pk=tiny_benchmark.pk).update(protocols=["turn", "log"])
    tiny_benchmark.refresh_from_db()
    system_create(name="Chatty", owner=researcher)
    bad, good = tmp_path / "bad.jsonl", tmp_path / "logs.jsonl"
    bad.write_text(json.dumps({**LOGS[0], "dialogue_id": "d9"}) + "\n", encoding="utf-8")
    good.write_text("".join(json.dumps(log) + "\n" for log in LOGS), encoding="utf-8")
    with scripted_llm_server(lambda request: ANSWER) as server:
        llm_settings.LLM_API_BASE = server.api_base
        auto_evaluator_save(benchmark=tiny_benchmark, evaluator="pepper_judge",
                            model="openai/gpt-4o-mini", user=staff, max_cost_per_submission=1.0)
        with celery_worker(settings.CELERY_BROKER_URL, tmp_path,
                           MEDIA_ROOT=str(llm_settings.MEDIA_ROOT),
                           CONCORD_LLM_API_BASE=server.api_base):
            log_in(page)
            page.goto("/systems/chatty/submit/")
            page.check("input[name=protocol][value=log]")
            page.set_input_files("input[name=file]", str(bad))
            page.click("#submission-form button[type=submit]")
            report = page.locator("#validation-report")
            report.wait_for()
            assert "nothing was stored" in report.inner_text()
            assert "unknown dialogue id 'd9'" in report.inner_text()
            assert not Submission.objects.exists()
            page.set_input_files("input[name=file]", str(good))
            page.click("#submission-form button[type=submit]")
            page.locator("#submission-status").wait_for()
            assert page.locator(".progress[role=progressbar]").count() == 1
            page.wait_for_selector("#submission-status[data-status=succeeded]",
                                   timeout=60_000)
            screenshot(page, "log-upload-auto-evaluated")
    evaluation = AutoEvaluation.objects.get()
    assert evaluation.status == "started" and evaluation.submission.protocol == "log"
    assert evaluation.run.job.status == Job.Status.SUCCEEDED
    assert evaluation.run.usage["units"] == 2
