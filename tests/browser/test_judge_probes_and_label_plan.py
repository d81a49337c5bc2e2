"""The judge-bias probes on an LLM run page (a CoRE run: logs, so no length probe, and a judge
family read from its model) and "Label these next" in a study report's human-anchored section,
in Chromium at 1366×768 and 390×844: no sideways page scroll; screenshots to look at."""

import os

import pytest
from django.contrib.auth.models import User
from django.core.cache import cache

from annotation.report_bench import synthetic_report_study
from evaluation.services.llm_runs import llm_run_create
from tests.browser.conftest import screenshot
from tests.browser.test_annotation_forms import log_in
from tests.evaluation import llm_fixtures
from tests.evaluation.llm_fixtures import core_answer, server_config, succeeded

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]
llm_server = llm_fixtures.llm_server
llm_settings = llm_fixtures.llm_settings
log_submission = llm_fixtures.log_submission
SCREENS = ((1366, 768), (390, 844))


def _element_shot(locator, name: str) -> None:
    """The section alone, for people to look at (CONCORD_SCREENSHOTS, as conftest.screenshot)."""
    folder = os.environ.get("CONCORD_SCREENSHOTS")
    if folder:
        locator.screenshot(path=os.path.join(folder, f"{name}.png"))


def _no_sideways_scroll(page) -> None:
    wide = page.evaluate("""() => [...document.querySelectorAll('body *')].filter(
        e => e.getBoundingClientRect().right > document.documentElement.clientWidth + 1)
        .slice(0, 8).map(e => e.tagName + '#' + e.id + '.' + e.className)""")
    assert page.evaluate("() => document.documentElement.scrollWidth"
                         " - document.documentElement.clientWidth") <= 0, wide


def test_the_run_page_probes(page, llm_server, log_submission):
    server = llm_server(lambda request: core_answer(request))
    run = succeeded(llm_run_create(submission=log_submission, evaluator="core",
                                   model=server_config(server, model="openai/llama-3.1-8b"),
                                   enqueue=False))
    log_submission.is_public = True
    log_submission.save(update_fields=["is_public"])
    for width, height in SCREENS:
        page.set_viewport_size({"width": width, "height": height})
        page.goto(f"/runs/{run.pk}/")
        section = page.locator("#judge-probes")
        assert "Llama (Meta) model" in section.locator("#self-preference").inner_text()
        assert "Not measured" in section.locator("#length-probe-none").inner_text()
        assert "Not applicable" in section.locator("#position-probe").inner_text()
        _no_sideways_scroll(page)
        section.scroll_into_view_if_needed()
        screenshot(page, f"run-judge-probes-{width}")
        _element_shot(section, f"run-judge-probes-section-{width}")


def test_the_label_plan_in_the_report(page, live_server):
    cache.clear()
    staff = User.objects.create_user("plan-browser", is_staff=True, password="pw-plan-browser")
    study = synthetic_report_study(slug="plan-browser", author=staff, labels=300, systems=4,
                                   annotators=2, scored_factor=3, seed=5)
    log_in(page, live_server, staff)
    for width, height in SCREENS:
        page.set_viewport_size({"width": width, "height": height})
        page.goto(f"/studies/{study.slug}/report/?evaluator=external:judge&aspect=overall")
        plan = page.locator("#label-plan")
        assert plan.locator("#label-plan-chart polyline").count() == 2
        assert plan.locator("#label-plan-table tbody tr").count() >= 2
        assert "Where the ranking is still uncertain" in plan.inner_text()
        # the section fits the screen (its chart and table scroll inside themselves); the report
        # page around it is another section's (its header overflows at 390 px)
        assert plan.evaluate("e => e.getBoundingClientRect().right") <= width
        plan.scroll_into_view_if_needed()
        screenshot(page, f"label-plan-{width}")
        _element_shot(plan, f"label-plan-section-{width}")
