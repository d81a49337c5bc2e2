"""Starting an LLM evaluator from a submission's page: form → estimate → confirm → job.

The estimate is checked by hand (the evaluator's real prompts counted with the same BPE, the
calls counted from the evaluator's definition, the price from litellm's map); the run itself
goes to a scripted OpenAI-compatible server on 127.0.0.1 (tests/support/llm_server.py)."""

import json

import pytest
from django.test import Client
from django.urls import reverse

from evaluation.lib.llm import estimate as run_estimate
from evaluation.lib.llm.conversation import ConversationLog
from evaluation.lib.llm.core_debate import DebateSettings
from evaluation.lib.llm.cost_report import count_tokens
from evaluation.lib.llm.gateway import token_cost
from evaluation.lib.llm.pepper_judge import build_pepper_messages
from evaluation.models import Job, Run, Submission
from evaluation.services.llm_models import model_options
from evaluation.services.llm_runs import llm_run_estimate
from evaluation.services.runs import run_process
from tests.conftest import PASSWORD
from tests.evaluation.llm_fixtures import LOGS, MODEL, llm_settings, log_submission  # noqa: F401
from tests.support.llm_server import scripted_llm_server

PEPPER_ANSWER = ("The system asked about my needs.\n<proactiveness>4</proactiveness>\n"
                 "<coherence>3</coherence>\n<personalization>5</personalization>")


def _logs():
    return [ConversationLog.from_dict(log) for log in LOGS]


def test_pepper_estimate_counts_the_real_prompt_of_every_log_and_prices_it():
    prices = []
    estimate = run_estimate.estimate_pepper_judge(
        _logs(), lambda p, a: prices.append((p, a)) or token_cost("gpt-4o-mini", p, a),
        domain="restaurants")
    prompt = sum(sum(count_tokens(m["content"]) for m in build_pepper_messages(log,
                 domain="restaurants")) for log in _logs())
    assert (estimate.units, estimate.calls) == (2, 2)
    assert estimate.prompt_tokens == prompt
    assert estimate.answer_tokens == 2 * run_estimate.ANSWER_TOKENS["pepper_judge"]
    assert prices == [(prompt, 400)]
    # gpt-4o-mini in litellm's map: $0.15 per million input tokens, $0.60 per million output.
    assert estimate.cost_usd == pytest.approx(prompt * 0.15e-6 + 400 * 0.60e-6)


def test_core_estimate_counts_factors_persuasiveness_and_every_debate_round():
    debate = DebateSettings(max_rounds=3, buffer="all_rounds")
    estimate = run_estimate.estimate_core(_logs(), lambda p, a: None, debate=debate)
    by_kind = {k.kind: k for k in estimate.kinds}
    # per log: 12 factors, 1 persuasiveness, 4 roles x 3 rounds
    assert (by_kind["factor"].calls, by_kind["persuasiveness"].calls,
            by_kind["debate"].calls) == (24, 2, 24)
    assert estimate.cost_usd is None  # no price: unknown, never 0
    without = run_estimate.estimate_core(_logs(), lambda p, a: None, debate=None)
    assert [k.kind for k in without.kinds] == ["factor", "persuasiveness"]
    # Rounds 2 and 3 also carry 4 and 8 earlier statements: 12 statements per role and log.
    extra = 2 * 4 * 12 * run_estimate.ANSWER_TOKENS["debate"]
    base = run_estimate.estimate_core(_logs(), lambda p, a: None,
                                      debate=DebateSettings(max_rounds=3, buffer="latest_round"))
    latest_extra = 2 * 4 * (0 + 4 + 4) * run_estimate.ANSWER_TOKENS["debate"]
    assert estimate.prompt_tokens - base.prompt_tokens == extra - latest_extra


@pytest.fixture
def public_log_submission(log_submission):  # noqa: F811
    Submission.objects.filter(pk=log_submission.pk).update(is_public=True)
    log_submission.refresh_from_db()
    return log_submission


def _client(user) -> Client:
    client = Client(enforce_csrf_checks=True)
    assert client.login(username=user.username, password=PASSWORD)
    return client


def _csrf(client, url) -> str:
    client.get(url)
    return client.cookies["csrftoken"].value


@pytest.mark.django_db
def test_staff_study_authors_and_the_owner_may_start_llm_evaluators(public_log_submission,
                                                                     researcher, author, staff):
    from tests.conftest import _user

    url = reverse("leaderboard:submission_evaluate", args=[public_log_submission.uuid])
    start = reverse("leaderboard:submission_evaluate_start", args=[public_log_submission.uuid])
    assert _client(researcher).get(url).status_code == 200  # the owner, a researcher (34.2)
    other = _user("other-researcher", "researcher")  # sees the public submission, not theirs
    refused = _client(other).get(url)
    assert refused.status_code == 403
    assert b"researchers may start one on their own systems" in refused.content
    assert _client(other).post(start, {}).status_code == 403
    assert _client(author).get(url).status_code == 200
    assert _client(staff).get(url).status_code == 200
    Submission.objects.filter(pk=public_log_submission.pk).update(is_public=False)
    assert _client(author).get(url).status_code == 404  # not visible to them any more
    assert Client().get(url).status_code == 302  # anonymous: log in first
    detail = reverse("leaderboard:submission_detail", args=[public_log_submission.uuid])
    assert b"run-llm-evaluator" in _client(researcher).get(detail).content  # their own
    assert b"run-llm-evaluator" in _client(staff).get(detail).content


@pytest.mark.django_db(transaction=True)  # the cache writes from the gateway's threads
def test_estimate_then_confirm_queues_the_run_and_a_bad_choice_stores_nothing(
        public_log_submission, author, llm_settings):  # noqa: F811
    url = reverse("leaderboard:submission_evaluate", args=[public_log_submission.uuid])
    client = _client(author)
    assert b'id="no-model"' in client.get(url).content  # no model configured: it says so
    llm_settings.LLM_MODEL = MODEL  # the operator's `default` profile
    page = client.get(url)
    assert b"pepper_judge" in page.content and b"trace_judge" not in page.content  # log only
    assert b'<option value="default"' in page.content
    bad = client.get(url, {"evaluator": "pepper_judge", "profile": "<script>alert(1)</script>"})
    assert bad.status_code == 400 and b"<script>alert" not in bad.content
    assert b"is not a model profile the operator offers (CONCORD_LLM_PROFILES)" in bad.content
    face_only = client.get(url, {"evaluator": "pepper_judge", "profile": "default",
                                 "instructions": "relevance-v1"})
    assert b"for FACE only" in face_only.content
    unknown = client.get(url, {"evaluator": "face", "profile": "default",
                               "instructions": "relevance-v9"})
    assert unknown.status_code == 400 and b"no FACE instruction version" in unknown.content
    confirm = client.get(url, {"evaluator": "pepper_judge", "profile": "default", "limit": "1"})
    assert confirm.status_code == 200
    expected = llm_run_estimate(submission=public_log_submission, evaluator="pepper_judge",
                                model=model_options(model=MODEL), limit=1)
    assert expected.calls == 1
    assert f'id="estimate-calls">{expected.calls}<'.encode() in confirm.content
    assert b"Estimate" in confirm.content and b"unknown (no price for" in confirm.content
    assert Run.objects.count() == 0 and Job.objects.count() == 0  # the estimate wrote nothing
    start = reverse("leaderboard:submission_evaluate_start", args=[public_log_submission.uuid])
    assert client.post(start, {"evaluator": "pepper_judge", "profile": "default"}
                       ).status_code == 403
    token = _csrf(client, url)
    refused = client.post(start, {"evaluator": "core", "profile": "SECRET_KEY",
                                  "csrfmiddlewaretoken": token})
    assert refused.status_code == 400 and Run.objects.count() == 0
    with scripted_llm_server(lambda request: PEPPER_ANSWER) as server:
        llm_settings.LLM_API_BASE = server.api_base
        # An address or a variable sent along is not a field: the profile alone says where.
        response = client.post(start, {"evaluator": "pepper_judge", "profile": "default",
                                       "limit": "1", "csrfmiddlewaretoken": token,
                                       "api_base": "http://127.0.0.1:9/v1",
                                       "api_key_env": "SECRET_KEY"})
        run = Run.objects.get()
        assert response.status_code == 302
        assert response["Location"] == reverse("job_detail", args=[run.job_id])
        assert run.job.created_by == author and run.config["limit"] == 1
        assert run.config["model"] == {"profile": "default", "model": MODEL,
                                       "temperature": 0.0, "max_tokens": None}
        run_process(job_id=run.job_id)  # what the worker runs (eager Celery ran it already)
        run.refresh_from_db()
        assert run.job.status == Job.Status.SUCCEEDED, run.job.error
        assert run.job.done == run.job.total and run.usage["units"] == 1
        assert len({json.dumps(r.messages) for r in server.requests}) == 1
    assert client.get(reverse("job_detail", args=[run.job_id])).status_code == 200
