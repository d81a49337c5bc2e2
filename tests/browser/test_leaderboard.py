"""Leaderboards in Chromium: upload → validation report → progress → publish → leaderboard row;
sorting through HTMX; the charts render with the right number of marks."""

import json
import threading
import time

import pytest
from django.db import transaction

from tests.browser.conftest import htmx_settled, screenshot
from tests.conftest import PASSWORD
from tests.support.leaderboard import evaluated, mixed_lines, worse_lines
from tests.support.submissions import tiny_lines, write_lines

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def media(settings, tmp_path):
    settings.MEDIA_ROOT = tmp_path / "media"
    return tmp_path


@pytest.fixture
def board(media, tiny_benchmark, researcher):
    """Four systems on the tiny benchmark: two of the researcher's, two baselines."""
    from evaluation.services.submissions import system_create, system_get_or_create_baseline

    systems = {
        "echo": (system_create(name="Echo", owner=researcher, family="LLM", team="Lab A"),
                 tiny_lines()),
        "mixed": (system_create(name="Mixed", owner=researcher, family="dense"),
                  mixed_lines()),
        "reverse": (system_get_or_create_baseline(key="reverse", name="Reverse",
                                                  family="retrieval", description="backwards"),
                    worse_lines()),
        "popular": (system_get_or_create_baseline(key="popular", name="Popular",
                                                  family="heuristic", description="popular"),
                    [{**line, "ranked_item_ids": sorted(line["ranked_item_ids"])}
                     for line in worse_lines()]),
    }
    return {key: evaluated(system, benchmark=tiny_benchmark, lines=lines, folder=media,
                           public=True)
            for key, (system, lines) in systems.items()}


def log_in(page, username="researcher"):
    page.goto("/accounts/login/")
    page.fill("input[name=username]", username)
    page.fill("input[name=password]", PASSWORD)
    page.click("form.stack button[type=submit]")
    page.wait_for_url("**/")


def test_upload_progress_publish_then_the_row_is_on_the_leaderboard(page, media, tiny_benchmark,
                                                                   researcher, monkeypatch):
    from evaluation.services import jobs
    from evaluation.services import runs as evaluation_services

    def slow_worker(task, pk, **_kwargs):  # a worker that picks the run up a moment later
        def work():
            from django.db import connection

            time.sleep(1.5)
            evaluation_services.run_process(job_id=pk)
            connection.close()

        transaction.on_commit(threading.Thread(target=work).start)

    monkeypatch.setattr(jobs, "task_enqueue", slow_worker)
    log_in(page)
    page.goto("/systems/new/")
    page.fill("input[name=name]", "Grounded CRS")
    page.fill("input[name=team]", "Lab A")
    page.fill("input[name=family]", "LLM")
    page.fill("textarea[name=description]", "Ranks with an LLM and quotes reviews verbatim.")
    page.fill("input[name=paper_url]", "https://example.org/paper")
    page.click("form.study-form button[type=submit]")
    page.wait_for_url("**/systems/grounded-crs/submit/")

    bad = tiny_lines()
    bad[1]["dialogue_id"] = "nope"
    page.set_input_files("input[name=file]", str(write_lines(media / "bad.jsonl", bad)))
    page.click("#submission-form button[type=submit]")
    report = page.locator("#validation-report")
    report.wait_for()
    assert "nothing was stored" in report.inner_text()
    assert report.locator("tbody tr").first.locator("td").first.inner_text() == "2"
    screenshot(page, "leaderboard-submit-invalid")
    htmx_settled(page)  # focus moves when the swap has settled, a moment after it shows
    # focus did not drop to the page's top: it is on the report, the next thing to read
    assert page.evaluate("document.activeElement.id") == "submission-result"

    page.set_input_files("input[name=file]", str(write_lines(media / "good.jsonl")))
    page.focus("#submission-form button[type=submit]")
    page.keyboard.press("Enter")  # by keyboard
    status = page.locator("#submission-status")
    status.wait_for()
    htmx_settled(page)
    assert page.evaluate("document.activeElement.id") == "submission-result"
    assert status.get_attribute("data-status") in ("queued", "running")
    assert page.locator(".progress[role=progressbar]").count() == 1
    assert "1 of 5 submissions used" in page.locator("#quota-line").inner_text()
    screenshot(page, "leaderboard-submit-progress")
    page.wait_for_selector("#submission-status[data-status=succeeded]", timeout=20_000)
    assert "/submissions/" in page.url  # HX-Push-Url: reloading shows the same result
    assert page.locator("#submission-status table.results tbody tr").count() >= 5
    page.click("#publish-button")
    page.wait_for_selector("#submission-status .badge.public")
    screenshot(page, "leaderboard-submit-result")

    page.goto("/leaderboards/tiny/turn/")
    row = page.locator("tr[data-system=grounded-crs]")
    assert row.count() == 1 and "Lab A" in row.inner_text()
    assert row.locator("td.val a").first.get_attribute("href").startswith("/runs/")


def test_sorting_swaps_the_table_without_a_reload(page, board):
    page.goto("/leaderboards/tiny/turn/")
    page.evaluate("window.__kept = 'yes'")
    rows = page.locator("tr.lb-row")
    assert rows.count() == 4
    assert page.locator("svg.scatter circle.point").count() == 4
    assert page.locator("svg.scatter circle.point.baseline").count() == 2
    screenshot(page, "leaderboard")

    def recall_column():
        index = page.locator("tr.metric-row th").evaluate_all(
            "ths => ths.findIndex(th => th.dataset.key === 'trace:recall@1')")
        return [float(row.locator("td").nth(index).locator("a").inner_text())
                for row in rows.all()]

    assert recall_column() == sorted(recall_column(), reverse=True)
    header = page.locator("th[data-key='trace:recall@1'] a")
    header.click()  # best first is the default, so this flips to worst first
    page.wait_for_url("**order=asc**")
    htmx_settled(page)
    assert recall_column() == [0.25, 0.25, 0.25, 0.75]
    assert rows.last.get_attribute("data-system") == "echo"
    assert page.evaluate("window.__kept") == "yes"  # swapped by htmx, not reloaded
    page.locator("th[data-key='trace:recall@1'] a").click()
    page.wait_for_url("**order=desc**")
    htmx_settled(page)
    assert rows.first.get_attribute("data-system") == "echo"
    assert rows.first.locator("td.rank").inner_text() == "1"

    page.select_option("select[name=baselines]", "0")
    page.wait_for_url("**baselines=0**")
    htmx_settled(page)
    assert rows.count() == 2 and page.locator("svg.scatter circle.point").count() == 2
    assert page.evaluate("window.__kept") == "yes"


def test_the_system_page_charts_render_with_the_right_marks(page, board):
    page.goto("/systems/echo/")
    radar = page.locator("svg.radar")
    assert radar.is_visible()
    assert radar.locator("circle.vertex").count() == 5  # five axes with values
    assert radar.locator("polygon.shape").count() == 1
    bars = page.locator("svg.tier-bars")
    assert bars.locator("rect.bar").count() == 10  # 5 metrics × easy, hard (d3 is hidden)
    assert bars.locator("rect.bar").first.bounding_box()["height"] > 0
    screenshot(page, "leaderboard-system")

    page.locator("#dialogues a", has_text="d1").click()
    page.wait_for_url("**/dialogues/d1/")
    assert page.locator("mark.quote.verified").count() == 2
    assert page.locator("mark.quote.unverified").count() == 1
    assert page.locator("mark.quote.unverified").inner_text() == "best dumplings in the whole city"
    screenshot(page, "leaderboard-drilldown")

    page.goto("/compare/?benchmark=tiny&a=echo&b=baseline-reverse")
    assert page.locator("svg.forest circle.diff").count() >= 10
    assert "+0.500" in page.locator("table.compare-table").inner_text()
    screenshot(page, "leaderboard-compare")


def test_api_docs_page_lists_the_endpoints(page, board):
    page.goto("/api/docs/")
    assert page.locator("section.endpoint").count() >= 12
    assert "multipart/form-data" in page.locator("#post-api-submissions").inner_text()
    data = json.loads(page.goto("/api/leaderboards/tiny/?format=json").text())
    assert len(data["systems"]) == 4


def test_a_system_without_answers_is_listed_with_its_count_not_ranked(page, board, researcher,
                                                                      tiny_benchmark, media):
    from evaluation.services.submissions import system_create

    silent = [{**line, "response": "(no answer: the LLM baseline failed on this turn)",
               "ranked_item_ids": [], "citations": [], "metadata": {"no_answer": True}}
              for line in tiny_lines()]
    evaluated(system_create(name="Silent", owner=researcher, family="LLM"),
              benchmark=tiny_benchmark, lines=silent, folder=media, public=True)
    page.goto("/leaderboards/tiny/turn/")
    row = page.locator('tr[data-system="silent"]')
    assert "non-answers · not ranked" in row.inner_text().lower()  # badges are upper-cased
    assert row.locator("td.rank").inner_text().strip() == "—"
    assert page.locator("#lb-method").is_visible()
    screenshot(page, "leaderboard-non-answers")
