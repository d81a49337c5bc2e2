"""LLM budgets on the web and in the API (docs/operations.md, "LLM budgets"): the pages show the
estimate and the day's allowance before the user confirms, a start over a budget is refused with
the message that says why (a form error, never a 500 or a bare 403; 429 in the API) and stores
nothing, and an identical LLM run already queued is followed instead of started twice."""

import pytest
from django.urls import reverse
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from evaluation.models import Job, LLMSpend, Run, Simulation, Submission
from evaluation.services.live import live_system_create
from evaluation.services.llm_models import model_options
from evaluation.services.llm_runs import llm_run_create
from tests.evaluation.llm_fixtures import MODEL, llm_settings, log_submission  # noqa: F401
from tests.evaluation.simulation_fixtures import sim_benchmark  # noqa: F401
from tests.support.live_server import live_server

pytestmark = pytest.mark.django_db


@pytest.fixture
def public_log_submission(log_submission):  # noqa: F811
    Submission.objects.filter(pk=log_submission.pk).update(is_public=True)
    log_submission.refresh_from_db()
    return log_submission


def test_the_confirm_page_shows_the_allowance_and_a_refusal_stores_nothing(
        public_log_submission, author, client, llm_settings):  # noqa: F811
    llm_settings.LLM_MODEL = MODEL  # the operator's `default` profile
    client.force_login(author)
    url = reverse("leaderboard:submission_evaluate", args=[public_log_submission.uuid])
    choice = {"evaluator": "pepper_judge", "profile": "default"}
    page = client.get(url, choice).content.decode()
    assert 'id="budget-allowance"' in page and "5000000 of 5000000 tokens left" in page
    assert 'id="confirm-button"' in page and 'id="budget-problem"' not in page
    llm_settings.LLM_DAILY_BUDGET_TOKENS = 100
    page = client.get(url, choice).content.decode()
    assert "your daily allowance has 100 tokens left (CONCORD_LLM_DAILY_BUDGET_TOKENS); it " \
           "resets at 00:00 UTC." in page
    assert 'id="confirm-button"' not in page
    start = reverse("leaderboard:submission_evaluate_start", args=[public_log_submission.uuid])
    refused = client.post(start, choice)
    assert refused.status_code == 400
    assert b"your daily allowance has 100 tokens left" in refused.content
    assert not Run.objects.exists() and not Job.objects.exists()
    assert not LLMSpend.objects.exists()


def test_an_identical_queued_run_is_followed_not_started_twice(public_log_submission, author,
                                                                client, llm_settings):  # noqa: F811
    llm_settings.LLM_MODEL = MODEL  # the operator's `default` profile
    queued = llm_run_create(submission=public_log_submission, evaluator="pepper_judge",
                            model=model_options(), user=author, enqueue=False)
    client.force_login(author)
    start = reverse("leaderboard:submission_evaluate_start", args=[public_log_submission.uuid])
    response = client.post(start, {"evaluator": "pepper_judge", "profile": "default"},
                           follow=True)
    assert response.redirect_chain[-1][0] == reverse("job_detail", args=[queued.job_id])
    assert f"already queued (run {queued.pk}, job {queued.job_id}" in \
        response.content.decode()
    assert Run.objects.count() == 1


@pytest.fixture
def pepper_settings(llm_settings):  # noqa: F811
    llm_settings.LLM_MODEL = "openai/scripted-user"
    llm_settings.LLM_API_BASE = "http://127.0.0.1:9/v1"  # never called: nothing starts
    return llm_settings


def test_the_simulation_form_shows_the_estimate_then_refuses_over_the_budget(
        sim_benchmark, researcher, client, pepper_settings):  # noqa: F811
    with live_server(lambda body: {"response": "Try r1.", "ranked_item_ids": ["r1"]}) as crs:
        system = live_system_create(name="CRS", owner=researcher, endpoint=crs.url)
        client.force_login(researcher)
        url = reverse("leaderboard:system_simulate", args=[system.slug])
        form = {"benchmark": sim_benchmark.slug, "simulator": "pepper", "users": 3,
                "turns": 4, "seed": 0, "timeout_seconds": 30}
        page = client.post(url, form)
        text = page.content.decode()
        assert page.status_code == 200 and 'id="budget-tokens"' in text
        assert 'id="confirm-button"' in text and not Simulation.objects.exists()
        pepper_settings.LLM_DAILY_BUDGET_TOKENS = 100
        text = client.post(url, form).content.decode()
        assert "This simulation is estimated at" in text and 'id="confirm-button"' not in text
        refused = client.post(url, {**form, "confirm": "1"})
    assert refused.status_code == 400
    assert b"your daily allowance has 100 tokens left" in refused.content
    assert not Simulation.objects.exists() and not Job.objects.exists()


def test_the_api_refuses_a_simulation_over_the_daily_allowance_with_429(
        sim_benchmark, researcher, pepper_settings):  # noqa: F811
    pepper_settings.LLM_DAILY_BUDGET_TOKENS = 100
    api = APIClient()
    api.credentials(HTTP_AUTHORIZATION=f"Token {Token.objects.create(user=researcher).key}")
    with live_server(lambda body: {"response": "Try r1.", "ranked_item_ids": ["r1"]}) as crs:
        system = live_system_create(name="CRS", owner=researcher, endpoint=crs.url)
        answer = api.post("/api/simulations/", {
            "system": system.slug, "benchmark": sim_benchmark.slug, "simulator": "pepper",
            "users": 3, "turns": 4}, format="json")
    assert answer.status_code == 429
    assert "This simulation is estimated at" in answer.json()["detail"]
    assert "CONCORD_LLM_DAILY_BUDGET_TOKENS" in answer.json()["detail"]
    assert not Simulation.objects.exists() and not LLMSpend.objects.exists()
