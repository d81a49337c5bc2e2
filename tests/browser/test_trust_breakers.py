"""Small things that make a first visitor stop trusting Concord, checked in Chromium."""

import time

import pytest
from django.core.cache import cache

from annotation.services.study_exports import study_export_start
from annotation.tasks import study_export_job
from evaluation.services import jobs
from tests.annotation.conftest import make_study
from tests.browser.conftest import screenshot
from tests.browser.test_annotation_forms import log_in

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.fixture(autouse=True)
def media(settings, tmp_path):
    settings.MEDIA_ROOT = tmp_path / "media"
    cache.clear()


def test_paper_bundle_download_appears_without_a_reload(page, live_server, tiny_benchmark,
                                                        author, monkeypatch):
    """The outer export poll used to race the inner job poll and stop after a second or two,
    so a bundle that finished later showed its Download button only after a reload."""
    study = make_study(tiny_benchmark, author, slug="export-study")
    monkeypatch.setattr(jobs, "task_enqueue", lambda *args, **kwargs: None)  # no worker yet
    job = study_export_start(study=study, user=author, bundle=True)
    log_in(page, live_server, author)
    page.goto(f"/studies/{study.slug}/dashboard/")
    status = page.locator("#bundle-status")
    assert "Queued" in status.inner_text()
    time.sleep(3.5)  # several polls while the job waits
    study_export_job(job.pk)  # the worker's task, run here: the job finishes now
    page.locator("#bundle-status a", has_text="Download ZIP").wait_for(timeout=5_000)
    screenshot(page, "study-dashboard-bundle-ready")


def test_leaderboard_system_column_sticks_when_scrolled_right(page, live_server, tiny_benchmark,
                                                             researcher, tmp_path):
    from tests.support.leaderboard import make_world

    make_world(benchmark=tiny_benchmark, owner=researcher, folder=tmp_path)
    page.set_viewport_size({"width": 700, "height": 800})
    page.goto("/leaderboards/tiny/turn/?columns=all")
    box = page.locator(".table-scroll")
    system = page.locator("tbody td.sticky-2").first
    before = system.bounding_box()["x"]
    width = box.evaluate("el => el.scrollWidth - el.clientWidth")
    assert width > 200, "the table should be wider than the screen"
    box.evaluate("el => { el.scrollLeft = el.scrollWidth; }")
    page.wait_for_timeout(100)
    assert abs(system.bounding_box()["x"] - before) < 2, "the system names scrolled away"
    screenshot(page, "leaderboard-scrolled-right")


def test_a_link_without_a_scheme_is_accepted_in_the_browser(page, live_server, researcher):
    from evaluation.models import System

    log_in(page, live_server, researcher)
    page.goto("/systems/new/")
    page.fill("input[name=name]", "Schemeless")
    page.fill("input[name=paper_url]", "arxiv.org/abs/2401.00001")
    page.locator("main form button[type=submit]").first.click()
    page.wait_for_url(lambda url: "/systems/new/" not in url)
    assert System.objects.get(name="Schemeless").paper_url == "https://arxiv.org/abs/2401.00001"


def test_pages_fit_a_phone_width_screen(page, live_server, tiny_benchmark, researcher,
                                        tmp_path):
    from tests.support.leaderboard import make_world

    make_world(benchmark=tiny_benchmark, owner=researcher, folder=tmp_path)
    page.set_viewport_size({"width": 375, "height": 740})
    wide = []
    for path in ("/", "/benchmarks/", "/benchmarks/tiny/", "/benchmarks/tiny/dialogues/d1/",
                 "/leaderboards/", "/leaderboards/tiny/turn/", "/systems/",
                 "/systems/lb-public/", "/accounts/login/", "/signup/"):
        page.goto(path)
        overflow = page.evaluate(
            "() => document.documentElement.scrollWidth - document.documentElement.clientWidth")
        if overflow > 1:
            culprits = page.evaluate("""() => Array.from(document.querySelectorAll('main *'))
                .filter(e => e.getBoundingClientRect().right >
                             document.documentElement.clientWidth + 1)
                .filter(e => !e.closest('.table-scroll, table.data, pre'))
                .slice(0, 4).map(e => e.tagName + '.' + e.className)""")
            wide.append((path, overflow, culprits))
    screenshot(page, "phone-signup")
    assert not wide, wide


@pytest.mark.parametrize("width", [1280, 375])
def test_scenario_and_attributes_read_as_words_and_fit(page, live_server, tiny_benchmark, width):
    """The scenario panel showed raw dicts ({'max_price': 2}) and was clipped; item pages
    showed snake_case keys and Python's True/False."""
    from evaluation.models import Dialogue, Item

    dialogue = Dialogue.objects.get(benchmark=tiny_benchmark, external_id="d1")
    dialogue.scenario = {
        "persona": {"name": "Ana", "travel_style": "slow_and_quiet", "has_car": False},
        "constraints": [{"kind": "max_price", "value": 2}, {"kind": "needs_parking",
                                                             "value": True}],
        "long_note": "averyveryverylongwordwithoutanyspaces" * 6,
    }
    dialogue.save(update_fields=["scenario"])
    Item.objects.filter(benchmark=tiny_benchmark, external_id="r1").update(
        attributes={"free_parking": True, "wheelchair_access": False, "noise": "quiet"})
    page.set_viewport_size({"width": width, "height": 800})
    page.goto("/benchmarks/tiny/dialogues/d1/")
    panel = page.locator("aside.scenario")
    text = panel.inner_text()
    assert "{" not in text and "True" not in text and "False" not in text
    assert "travel style: slow_and_quiet" in text and "has car: no" in text
    assert panel.evaluate("el => el.scrollWidth - el.clientWidth") <= 1, "clipped sideways"
    screenshot(page, f"dialogue-scenario-{width}")
    page.goto("/benchmarks/tiny/items/r1/")
    attributes = page.locator("dl.kv").inner_text()
    assert "free parking" in attributes and "yes" in attributes and "no" in attributes
    assert "free_parking" not in attributes and "True" not in attributes
    screenshot(page, f"item-attributes-{width}")


@pytest.mark.parametrize("width", [1280, 375])
def test_leaderboard_split_selector_and_empty_report(page, live_server, tiny_benchmark,
                                                     researcher, author, tmp_path, width):
    from evaluation.services.runs import run_create, run_process
    from evaluation.services.submissions import submission_create, system_create
    from tests.support.leaderboard import make_world
    from tests.support.submissions import tiny_lines, write_lines

    make_world(benchmark=tiny_benchmark, owner=researcher, folder=tmp_path)
    partial = system_create(name="Test-only", owner=researcher, family="LLM")
    lines = [line for line in tiny_lines() if line["dialogue_id"] == "d2"]
    submission = submission_create(system=partial, benchmark=tiny_benchmark, user=researcher,
                                   path_or_file=write_lines(tmp_path / "p.jsonl", lines))
    submission.is_public = True
    submission.save(update_fields=["is_public"])
    run_process(job_id=run_create(submission=submission, user=researcher, enqueue=False).job_id)
    page.set_viewport_size({"width": width, "height": 800})
    page.goto("/leaderboards/tiny/turn/")
    rows = page.locator("tbody tr.lb-row")
    assert rows.count() == 1 and "Test-only" in rows.first.inner_text()
    screenshot(page, f"leaderboard-test-split-{width}")
    page.select_option("select[name=splits]", label="hidden + test + train (1 system)")
    page.wait_for_function("() => document.querySelectorAll('tbody tr.lb-row').length === 1 && "
                           "!document.querySelector('tbody').innerText.includes('Test-only')")
    assert "splits=hidden" in page.url
    screenshot(page, f"leaderboard-full-split-{width}")
    overflow = page.evaluate(
        "() => document.documentElement.scrollWidth - document.documentElement.clientWidth")
    assert overflow <= 1
    study = make_study(tiny_benchmark, author, slug="empty-study")
    log_in(page, live_server, author)
    page.goto(f"/studies/{study.slug}/report/")
    assert page.locator("#report-empty").is_visible()
    screenshot(page, f"report-empty-{width}")
    assert page.evaluate(
        "() => document.documentElement.scrollWidth - document.documentElement.clientWidth") <= 1
