"""The simulated-template leaderboard in Chromium: one row per simulated system with ranks, and
the PC_t-over-turns chart (one coloured line per system) that follows the sorted column's K."""

import pytest

from tests.browser.conftest import htmx_settled, screenshot
from tests.browser.test_leaderboard import log_in
from tests.evaluation.simulation_fixtures import sim_benchmark  # noqa: F401
from tests.leaderboard.test_simulated_board import RANKINGS, _simulate

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_simulated_board_shows_ranks_and_the_pc_chart(page, sim_benchmark,  # noqa: F811
                                                      researcher):
    for name in RANKINGS:
        assert _simulate(sim_benchmark, researcher, name).run_id
    log_in(page)
    page.goto(f"/leaderboards/{sim_benchmark.slug}/simulated-template/")
    rows = page.locator("table.leaderboard tbody tr.lb-row")
    assert rows.count() == 2
    assert rows.nth(0).locator("td.system").inner_text().startswith("Coverer")
    assert rows.nth(0).locator("td.rank").inner_text().strip() == "1"
    chart = page.locator("#pc-chart")
    assert chart.get_attribute("data-k") == "10"
    lines = chart.locator("g.pc-series")
    assert lines.count() == 2
    # Coverer's PC_t@10 is 1 at both turns, Misser's 0 then 1/6: Coverer's line is higher
    # (SVG y grows downwards) and the two lines have different colours.
    coverer = chart.locator('g.pc-series[data-system="Coverer"] circle.pc-dot')
    misser = chart.locator('g.pc-series[data-system="Misser"] circle.pc-dot')
    assert coverer.count() == misser.count() == 2
    assert float(coverer.nth(1).get_attribute("cy")) < float(misser.nth(1).get_attribute("cy"))
    assert (chart.locator("polyline.pc-line").nth(0).get_attribute("stroke")
            != chart.locator("polyline.pc-line").nth(1).get_attribute("stroke"))
    assert "Misser: PC_2@10 = 0.167" in misser.nth(1).locator("title").text_content()
    screenshot(page, "simulated-board")
    # Sorting by recall@5 (HTMX) plots K = 5.
    page.click('th[data-key="simulation.template:recall@5"] a')
    htmx_settled(page)
    assert page.locator("#pc-chart").get_attribute("data-k") == "5"


def test_the_design_selector_ranks_one_design_at_a_time(page, sim_benchmark,  # noqa: F811
                                                        researcher):
    """Issue 34.5: a 2-user × 3-turn run is offered as its own design, never ranked beside the
    3-user × 2-turn runs; the default is the design with the most systems."""
    for name in RANKINGS:
        assert _simulate(sim_benchmark, researcher, name).run_id
    assert _simulate(sim_benchmark, researcher, "Coverer", users=2, turns=3).run_id
    log_in(page)
    page.goto(f"/leaderboards/{sim_benchmark.slug}/simulated-template/")
    select = page.locator('#leaderboard label:has-text("Design") select[name=splits]')
    assert select.locator("option").count() == 2
    chosen = select.locator("option:checked").inner_text()
    assert chosen.startswith("template 1.0 · 3 users × 2 turns") and "(2 systems)" in chosen
    rows = page.locator("table.leaderboard tbody tr.lb-row")
    assert rows.count() == 2
    assert "Ranked on the design" in page.locator("#lb-coverage").inner_text()
    # The other design: its one run, alone, and the address says which design is shown.
    select.select_option(index=1)
    htmx_settled(page)
    assert rows.count() == 1
    assert rows.nth(0).locator("td.system").inner_text().startswith("Coverer")
    assert "2 users × 3 turns" in page.locator("#lb-coverage strong").inner_text()
    assert "splits=design-" in page.url
    assert page.locator("#pc-chart g.pc-series").count() == 1
    screenshot(page, "simulated-board-designs")
