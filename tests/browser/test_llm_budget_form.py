"""A researcher starts a PEPPER simulation in Chromium: the form first shows the estimated
tokens against the day's LLM allowance, "Start the simulation" then runs it and its reservation
is settled to what the simulated users spent; over the allowance the page says why and offers
no start (docs/operations.md, "LLM budgets")."""

import json

import pytest

from evaluation.models import Job, LLMSpend, Simulation
from evaluation.services.benchmarks import benchmark_import
from evaluation.services.live import live_system_create
from tests.browser.conftest import screenshot
from tests.browser.test_leaderboard import log_in
from tests.evaluation.simulation_fixtures import simulation_bundle
from tests.support.bundles import write_tiny
from tests.support.live_server import live_server
from tests.support.llm_server import scripted_llm_server

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def pepper_user(request):
    if "summarise a person's tastes" in request.prompt_text:
        return json.dumps({"likes": ["seafood"], "dislikes": ["noise"],
                           "narrative": "I love seafood."})
    return json.dumps({"reflected_preferences": [], "utterance": "Something else?"})


def test_a_pepper_simulation_is_estimated_then_confirmed_or_refused(page, tmp_path, settings,
                                                                    researcher):
    settings.MEDIA_ROOT = tmp_path / "media"
    benchmark = benchmark_import(path=write_tiny(tmp_path / "sim", simulation_bundle()))
    with scripted_llm_server(pepper_user) as llm, \
            live_server(lambda body: {"response": "Try r1.", "ranked_item_ids": ["r1"]}) as crs:
        settings.LLM_MODEL, settings.LLM_API_BASE = "openai/scripted-browser-user", llm.api_base
        system = live_system_create(name="Budget CRS", owner=researcher, endpoint=crs.url)
        log_in(page)
        # the first estimate loads the tokenizer and litellm's price map: seconds on a busy box
        page.set_default_timeout(60_000)
        page.goto(f"/systems/{system.slug}/simulate/")
        page.select_option("select[name=benchmark]", benchmark.slug)
        page.select_option("select[name=simulator]", "pepper")
        page.fill("input[name=users]", "2")  # d3 is hidden, not released
        page.fill("input[name=turns]", "3")
        page.click("#simulate-form button[type=submit]")
        assert "tokens" in page.locator("#budget-tokens").inner_text()
        assert "5000000 of 5000000 tokens left" in page.locator("#budget-allowance").inner_text()
        assert not Simulation.objects.exists()  # the estimate stored nothing
        screenshot(page, "simulation-estimate")
        page.click("#confirm-button")
        page.wait_for_url("**/jobs/*/")
        simulation = Simulation.objects.get()
        assert simulation.job.status == Job.Status.SUCCEEDED, simulation.job.error
        spend = LLMSpend.objects.get(job=simulation.job)
        assert spend.status == "settled" and spend.spent_tokens > 0

        settings.LLM_DAILY_BUDGET_TOKENS = spend.spent_tokens + 10  # 10 tokens left today
        page.goto(f"/systems/{system.slug}/simulate/")
        page.select_option("select[name=benchmark]", benchmark.slug)
        page.select_option("select[name=simulator]", "pepper")
        page.fill("input[name=users]", "2")  # d3 is hidden, not released
        page.fill("input[name=turns]", "3")
        page.click("#simulate-form button[type=submit]")
        problem = page.locator("#budget-problem").inner_text()
        assert "your daily allowance has 10 tokens left (CONCORD_LLM_DAILY_BUDGET_TOKENS)" in \
            problem and "resets at 00:00 UTC" in problem
        assert page.locator("#confirm-button").count() == 0
    assert Simulation.objects.count() == 1
