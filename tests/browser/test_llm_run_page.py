"""The CoRE run page in Chromium: usage with unknown cost, the agreement chart, factor rationales
and the debate transcript; model text with markup stays text (no script runs). A judge's run
page (the registry's generic unit table) at a laptop's and a phone's width."""

import pytest

from evaluation.services.llm_runs import llm_run_create
from tests.browser.conftest import screenshot
from tests.evaluation import llm_fixtures
from tests.evaluation.llm_fixtures import core_answer, server_config, succeeded

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]
llm_server = llm_fixtures.llm_server
llm_settings = llm_fixtures.llm_settings
log_submission = llm_fixtures.log_submission


def test_core_run_page_shows_factors_debate_chart_and_cost(page, llm_server, log_submission):
    def answer(request):
        return core_answer(request, rationale=lambda name: (
            f"Step 1: I read every system turn in the interaction.\nStep 2: for {name} I found "
            "one weak reply <script>window.pwned = true</script> and counted it."))

    server = llm_server(answer)
    run = succeeded(llm_run_create(submission=log_submission, evaluator="core",
                                   model=server_config(server), enqueue=False))
    log_submission.is_public = True
    log_submission.save(update_fields=["is_public"])
    dialogs = []
    page.on("dialog", lambda dialog: (dialogs.append(dialog.message), dialog.dismiss()))

    page.goto(f"/runs/{run.pk}/")
    assert page.locator("#llm-cost").inner_text() == "unknown"
    assert page.locator("#llm-agreement svg polyline").count() == 2
    unit = page.locator("details.llm-unit").first
    unit.locator("table.llm-factors details").first.locator("summary").click()
    rationale = unit.locator("table.llm-factors .llm-text").first
    assert "<script>window.pwned = true</script>" in rationale.inner_text()
    assert page.evaluate("window.pwned === undefined") and not dialogs
    assert unit.locator("table.llm-round").count() == 4
    assert "Round 4" in unit.locator("table.llm-round").nth(3).inner_text()
    # the label names the rubric that computed it (CoRE §6.3–6.4 use iEvaLM's)
    assert "Persuasiveness (iEvaLM's rubric, 0–2): 1" in unit.inner_text()
    screenshot(page, "core-run-page")


@pytest.mark.parametrize("width,height", [(1366, 768), (390, 844)])
def test_a_judge_run_page_is_the_generic_unit_table_and_fits_the_screen(
        page, llm_server, log_submission, width, height):
    def answer(request):
        return ("The recommender asks about the budget and explains its picks in detail, "
                "naming parking and price.\n<proactiveness>4</proactiveness>"
                "<coherence>3</coherence><personalization>5</personalization>")

    server = llm_server(answer)
    run = succeeded(llm_run_create(submission=log_submission, evaluator="pepper_judge",
                                   model=server_config(server), enqueue=False))
    log_submission.is_public = True
    log_submission.save(update_fields=["is_public"])
    page.set_viewport_size({"width": width, "height": height})

    page.goto(f"/runs/{run.pk}/")
    table = page.locator("table.llm-aspects")
    headers = [text.lower() for text in table.locator("th").all_inner_texts()]
    assert headers == ["log", "proactiveness", "coherence", "personalization", "rationale"]
    assert table.locator("tbody tr").count() == 2
    assert page.locator("#llm-units h2").inner_text().startswith("Logs")
    sideways = page.evaluate(
        "() => document.documentElement.scrollWidth - document.documentElement.clientWidth")
    assert sideways <= 1, f"the page scrolls sideways by {sideways}px at {width}px"
    screenshot(page, f"pepper-run-page-{width}")


PEPPER = ("Asks good questions.\n<proactiveness>4</proactiveness><coherence>3</coherence>"
          "<personalization>5</personalization>")


@pytest.mark.parametrize("width, height", [(1366, 768), (390, 844)])
def test_a_smoke_test_run_says_why_it_is_not_published(page, llm_server, log_submission,
                                                       settings, width, height):
    server = llm_server(lambda request: PEPPER)
    llm_fixtures.offer_profile(settings, "laptop", server.api_base, backend="concord-local")
    run = succeeded(llm_run_create(submission=log_submission, evaluator="pepper_judge",
                                   model={**server_config(server), "profile": "laptop"},
                                   enqueue=False))
    log_submission.is_public = True
    log_submission.save(update_fields=["is_public"])
    page.set_viewport_size({"width": width, "height": height})

    page.goto(f"/runs/{run.pk}/")
    notice = page.locator("#smoke-test")
    assert notice.is_visible()
    assert "A smoke test, never published." in notice.inner_text()
    assert "built-in local server" in notice.inner_text()
    assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth")
    screenshot(page, f"smoke-test-run-page-{width}")
