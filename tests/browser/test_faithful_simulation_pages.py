"""The pages of issue 30's faithful simulators in Chromium at a laptop's and a phone's size:
an iEvaLM run's page (iEvaLM's metrics, the PEPPER-style extra, persuasiveness), a PEPPER run's
page (the prepared general preferences, the PCIR_avg formula) and the form's new options; no
page scrolls sideways."""

import json

import pytest

from evaluation.services.benchmarks import benchmark_import
from evaluation.services.live import live_system_create
from evaluation.services.llm_models import model_options
from evaluation.services.simulations import simulation_create
from tests.browser.conftest import screenshot
from tests.browser.test_leaderboard import log_in
from tests.evaluation.llm_fixtures import llm_server, llm_settings  # noqa: F401
from tests.evaluation.simulation_fixtures import release_hidden, run_all, simulation_bundle
from tests.support.bundles import write_tiny
from tests.support.live_server import live_server

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]
SIZES = {"laptop": (1366, 768), "phone": (390, 844)}


@pytest.fixture
def sim_benchmark(tmp_path, settings):
    settings.MEDIA_ROOT = tmp_path / "media"
    return release_hidden(benchmark_import(path=write_tiny(tmp_path / "sim",
                                                           simulation_bundle())))


def llm_user(request):
    prompt = request.prompt_text
    if "summarise a person's tastes" in prompt:
        return json.dumps({"likes": ["seafood"], "dislikes": ["noise"],
                           "narrative": "I love seafood by the water and quiet rooms."})
    if "<rating>" in prompt:
        return "The explanation fits what I want. <rating>2</rating>"
    if "The items shown to you now" in prompt:
        return json.dumps({"reflected_preferences": [], "utterance": "Quieter, please."})
    return json.dumps({"utterance": "Somewhere quiet?"})


def no_sideways_scroll(page) -> bool:
    return page.evaluate("() => document.scrollingElement.scrollWidth <= "
                         "document.scrollingElement.clientWidth + 1")


def test_the_faithful_simulators_pages(page, sim_benchmark, researcher,
                                       llm_server, llm_settings):  # noqa: F811
    llm = llm_server(llm_user)
    model = model_options(profile=llm.profile, model="openai/scripted-user")
    with live_server(lambda body: {"response": "Harbor Grill: quiet, by the water.",
                                   "ranked_item_ids": ["r3", "r1"]}) as crs:
        system = live_system_create(name="Faithful CRS", owner=researcher, endpoint=crs.url)
        runs = {name: run_all(simulation_create(
            benchmark=sim_benchmark, system=system, simulator=name, users=3, turns=3,
            model=model, enqueue=False)) for name in ("ievalm", "pepper")}
    log_in(page)
    for name, simulation in runs.items():
        assert simulation.job.status == "succeeded", simulation.job.error
        for size, (width, height) in SIZES.items():
            page.set_viewport_size({"width": width, "height": height})
            page.goto(f"/runs/{simulation.run_id}/")
            section = page.locator("#simulation")
            page.locator("#simulation details.sim-dialogue summary").first.click()
            text = section.inner_text()
            if name == "ievalm":
                assert "iEvaLM's metrics" in text and "ievalm_recall@25" in text
                assert "an extra for this iEvaLM run" in text
                assert "Persuasiveness (iEvaLM's rubric): 2" in text
            else:
                assert "prepared once for this user before any dialogue" in text
                assert "PC_T / T" in text and "top 4 shown to the user" in text
            assert no_sideways_scroll(page), (name, size)
            screenshot(page, f"faithful-{name}-run-{size}")
    page.set_viewport_size({"width": 390, "height": 844})
    page.goto(f"/systems/{system.slug}/simulate/")
    assert page.input_value("input[name=shown_k]") == "4"
    assert page.locator("select[name=pcir] option").count() == 2
    assert no_sideways_scroll(page)
    screenshot(page, "faithful-simulate-form-phone")
