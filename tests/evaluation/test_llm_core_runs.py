"""CoRE runs end to end: a `log` submission, the real litellm code path against a scripted
OpenAI-compatible server on 127.0.0.1, the database cache, the stored results and the run page.

The gateway calls the cache from its worker threads, whose database connections commit on their
own, so these tests use transactional databases.
"""

import pytest
from django.urls import reverse

from evaluation.lib.credentials import parse_credentials
from evaluation.lib.llm.core_rubrics import FACTOR_GUIDELINES, FACTOR_KEYS
from evaluation.models import DebateTurn, Job, LLMCacheEntry
from evaluation.services.llm_runs import llm_run_create
from tests.evaluation.llm_fixtures import (
    core_answer,
    executed,
    offer_profile,
    server_config,
    succeeded,
)
from tests.support.llm_server import http_error

pytestmark = pytest.mark.django_db(transaction=True)
CALLS_PER_RUN = 2 * 12 + (16 + 8) + 2  # factors, debates (4 rounds; 2 rounds), persuasiveness


def core_run(submission, server, **options):
    return llm_run_create(submission=submission, evaluator="core", model=server_config(server),
                          enqueue=False, **options)


def test_core_run_stores_rationales_every_debate_round_and_the_final_mean(llm_server,
                                                                         log_submission):
    server = llm_server(core_answer)
    run = succeeded(core_run(log_submission, server))

    assert server.request_count == CALLS_PER_RUN
    coherence = run.unit_scores.get(metric="core.coherence", unit_id="log-d1")
    assert coherence.value == 4 and coherence.unit_type == "dialogue"
    assert coherence.detail["rationale"] == "I counted the Coherence problems turn by turn."
    assert run.unit_scores.get(metric="core.factor_mean", unit_id="log-d1").value == (
        pytest.approx((4 + 2 + 1 + 9 * 3) / 12))

    rounds = DebateTurn.objects.filter(run=run, unit_id="log-d1")
    assert sorted(set(rounds.values_list("round", flat=True))) == [1, 2, 3, 4]
    assert rounds.count() == 16 and rounds.filter(statement__contains="in round 3").count() == 4
    last = [t.score for t in rounds.filter(round=4)]
    final = run.unit_scores.get(metric="core.debate", unit_id="log-d1")
    assert final.value == pytest.approx(sum(last) / 4) == pytest.approx(50.25)
    assert final.detail["stopped"] == "max_rounds"
    agreed = run.unit_scores.get(metric="core.debate", unit_id="log-d2")
    assert (agreed.value, agreed.detail["stopped"], agreed.detail["rounds"]) == (80, "agreement", 2)

    assert run.unit_scores.get(metric="persuasiveness", unit_id="log-d2").value == 1
    recall = {s.metric: s.value for s in run.unit_scores.filter(unit_id="log-d2",
                                                                metric__startswith="session")}
    assert recall == {"session_recall@1": 0.0, "session_recall@5": 1.0, "session_recall@10": 1.0}
    summary = run.summaries.get(metric="core.debate")
    assert (summary.axis, summary.n, summary.value) == ("LLM judge", 2, pytest.approx(65.125))
    assert run.summaries.get(metric="session_recall@5").axis == "Accuracy"
    assert run.usage["calls"] == CALLS_PER_RUN and run.usage["cost_usd"] is None
    assert run.usage["prompt_tokens"] == server.usage_totals()["prompt_tokens"]
    assert set(run.usage["stages"]) == {"factors", "debate", "persuasiveness"}


def test_each_factor_prompt_carries_its_own_rubric_and_no_other(llm_server, log_submission):
    server = llm_server(core_answer)
    succeeded(core_run(log_submission, server, use_debate=False))

    factor_prompts = [r for r in server.requests if "<guideline factor=" in r.prompt_text]
    assert len(factor_prompts) == 24
    for request in factor_prompts:
        judged = next(g for g in FACTOR_GUIDELINES
                      if f'<guideline factor="{g.name}">' in request.prompt_text)
        assert judged.definition in request.prompt_text
        assert all(line in request.prompt_text for line in judged.scoring_standard)
        others = [g for g in FACTOR_GUIDELINES if g is not judged]
        assert not any(g.definition in request.prompt_text for g in others)
        assert "Noodle Nook is cheap" in request.prompt_text or "parking" in request.prompt_text


def test_running_the_same_evaluation_again_makes_no_http_call(llm_server, log_submission):
    server = llm_server(core_answer)
    first = succeeded(core_run(log_submission, server))
    assert LLMCacheEntry.objects.count() == CALLS_PER_RUN

    second = succeeded(core_run(log_submission, server))

    assert server.request_count == CALLS_PER_RUN  # nothing new reached the server
    assert second.usage["calls"] == 0 and second.usage["cached_calls"] == CALLS_PER_RUN
    assert second.usage["cost_usd"] == 0.0  # nothing was paid: known to be free
    assert second.usage["cached_prompt_tokens"] == first.usage["prompt_tokens"]
    values = dict(first.summaries.values_list("metric", "value"))
    assert dict(second.summaries.values_list("metric", "value")) == values


def test_rate_limits_and_server_errors_are_retried_through_the_run(llm_server, log_submission):
    seen = set()

    def flaky(request):
        # Every distinct prompt first fails once: 429 for factors, 500 for everything else.
        key = request.prompt_text
        if key not in seen:
            seen.add(key)
            is_factor = "<guideline factor=" in key
            return http_error(429 if is_factor else 500, retry_after=0 if is_factor else None)
        return core_answer(request)

    server = llm_server(flaky)
    run = succeeded(core_run(log_submission, server))

    assert server.request_count == 2 * CALLS_PER_RUN
    assert run.usage["calls"] == CALLS_PER_RUN and run.usage["failed_calls"] == 0
    assert run.unit_scores.exclude(metric__startswith="session").filter(value=None).count() == 0


def test_an_unparseable_factor_is_a_recorded_failure_never_a_default(llm_server, log_submission):
    def broken_novelty(request):
        if '<guideline factor="Novelty">' in request.prompt_text:
            return "Novelty looks fine to me, maybe a four-ish."
        return core_answer(request)

    server = llm_server(broken_novelty)
    run = succeeded(core_run(log_submission, server, use_debate=False))

    novelty = run.unit_scores.get(metric="core.novelty", unit_id="log-d1")
    assert novelty.value is None
    assert novelty.detail["failure"].startswith("unparseable after 3 answers")
    assert novelty.detail["answer"] == "Novelty looks fine to me, maybe a four-ish."
    assert run.summaries.get(metric="core.novelty").n == 0
    assert run.unit_scores.get(metric="core.factor_mean", unit_id="log-d1").detail == {
        "scored": 11, "of": 12}
    assert run.job.result["failed_units"] == 2
    page = _page(run, log_submission)
    assert "unparseable after 3 answers" in page and "maybe a four-ish" in page


def test_run_page_shows_debate_scores_per_round_and_unknown_cost_and_escapes_model_text(
        client, llm_server, log_submission, researcher):
    attack = "<script>alert('rationale')</script>"
    server = llm_server(lambda request: core_answer(
        request, rationale=lambda name: f"{attack} {name} counted."))
    run = succeeded(core_run(log_submission, server))

    page = _page(run, log_submission, client=client, user=researcher)
    assert attack not in page
    assert "&lt;script&gt;alert(&#x27;rationale&#x27;)&lt;/script&gt; Coherence counted." in page
    assert 'id="llm-cost">unknown<' in page and "$0.0000" not in page
    assert "Round 4" in page and "As the Linguist, in round 4 I weigh the factors." in page
    assert "<strong>50.3</strong> / 100" in page  # log-d1's final debate score
    assert "<polyline" in page and "Agreement over rounds" in page
    assert "Twelve factors" in page and page.count("<tr class=\"\">") >= 12


def _linguist_debate_prompts(server):
    return [r.prompt_text for r in server.requests if "YOUR ROLE: Linguist" in r.prompt_text]


def test_the_debate_form_is_stored_in_the_config_used_and_shown_on_the_run_page(
        llm_server, log_submission, client, researcher):
    server = llm_server(core_answer)
    run = succeeded(core_run(log_submission, server))

    assert run.config["debate"]["factor_view"] == "own_factors"
    prompts = _linguist_debate_prompts(server)
    assert prompts and all('"factor": "Naturalness", "score"' in p for p in prompts)
    assert not any('"factor": "Novelty"' in p for p in prompts)
    page = _page(run, log_submission, client=client, user=researcher)
    assert "Debate form: <code>own_factors</code>" in page
    assert "only its own three factors" in page

    variant = llm_server(core_answer)
    other = succeeded(core_run(log_submission, variant, debate={"factor_view": "all_scores"}))
    assert other.config["debate"]["factor_view"] == "all_scores"
    assert all('"factor": "Novelty", "yours": false' in p
               for p in _linguist_debate_prompts(variant))
    assert "Debate form: <code>all_scores</code>" in _page(other, log_submission, client=client,
                                                             user=researcher)


def test_a_priced_model_reports_its_cost_in_dollars(llm_server, log_submission, client,
                                                     researcher):
    server = llm_server(core_answer)
    run = succeeded(llm_run_create(submission=log_submission, evaluator="core",
                                   model=server_config(server, "openai/gpt-4o-mini"),
                                   use_debate=False, enqueue=False))

    assert run.usage["cost_usd"] > 0 and run.usage["calls_with_unknown_cost"] == 0
    page = _page(run, log_submission, client=client, user=researcher)
    cost = run.usage["cost_usd"]
    shown = f"${cost:.6f}" if cost < 0.01 else f"${cost:.4f}"  # small costs never read as $0
    assert f'id="llm-cost">{shown}<' in page


def test_a_missing_api_key_fails_the_run_before_any_call(llm_server, log_submission,
                                                         monkeypatch, llm_settings):
    monkeypatch.delenv("CONCORD_TEST_MISSING_KEY", raising=False)
    server = llm_server(core_answer)
    llm_settings.CREDENTIALS = parse_credentials("missing=CONCORD_TEST_MISSING_KEY")
    offer_profile(llm_settings, "keyed", server.api_base, credential="missing")
    model = {**server_config(server), "profile": "keyed"}
    run = executed(llm_run_create(submission=log_submission, evaluator="core", model=model,
                                  enqueue=False))

    assert run.job.status == Job.Status.FAILED
    assert "CONCORD_TEST_MISSING_KEY is not set" in run.job.error
    assert server.request_count == 0


def test_a_model_that_refuses_every_call_fails_the_run_with_the_reason(llm_server,
                                                                       log_submission):
    server = llm_server(lambda request: http_error(401, message="invalid api key"))
    run = executed(core_run(log_submission, server, use_debate=False))

    assert run.job.status == Job.Status.FAILED
    assert "no usable LLM answer" in run.job.error and "invalid api key" in run.job.error
    assert server.request_count == 2 * 12 + 2  # a 401 is never retried
    assert set(FACTOR_KEYS) <= {m.removeprefix("core.") for m in
                                run.unit_scores.values_list("metric", flat=True)}


def _page(run, submission, *, client=None, user=None) -> str:
    from django.test import Client

    client = client or Client()
    client.force_login(user or submission.system.owner)
    response = client.get(reverse("run_detail", args=[run.pk]))
    assert response.status_code == 200
    return response.content.decode()



def test_a_queued_run_is_executed_by_its_own_celery_task(llm_server, log_submission,
                                                         monkeypatch):
    from evaluation import tasks

    delivered = []
    monkeypatch.setattr(tasks.evaluate_llm_run_job, "delay",
                        lambda job_id: (delivered.append(job_id),
                                        tasks.evaluate_llm_run_job(job_id)))
    server = llm_server(core_answer)
    run = llm_run_create(submission=log_submission, evaluator="core",
                         model=server_config(server), use_debate=False)  # enqueued on commit

    run.refresh_from_db()
    assert delivered == [run.job_id] and run.job.status == Job.Status.SUCCEEDED
    assert run.summaries.get(metric="core.coherence").value == 4
