"""Simulator validity against human labels in Chromium: the simulated board's trust cell
stacks its references (the arena's reason, the headline labels line, "+N more"), the simulators
page has a row per study field; no sideways scroll at 1366×768 and 390×844."""

import pytest

from tests.browser.conftest import screenshot
from tests.browser.test_leaderboard import log_in
from tests.browser.test_simulation_leakage import CULPRITS, OVERFLOW
from tests.evaluation.simulation_fixtures import sim_benchmark  # noqa: F401
from tests.leaderboard.test_simulator_validity_board import BOARD, RANKINGS, _simulate
from tests.leaderboard.test_simulator_validity_labels import (
    COLUMN,
    _imported_study,
    _label_study,
    _submission,
)

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_labels_lines_on_the_board_and_the_simulators_page(
        page, sim_benchmark, researcher, author, annotator, other_annotator):  # noqa: F811
    sims = {name: _simulate(sim_benchmark, researcher, name) for name in RANKINGS}
    submissions = [_submission(sim_benchmark, sim.system, researcher, n)
                   for n, sim in enumerate(sims.values())]
    _label_study(sim_benchmark, author, [annotator, other_annotator], submissions)
    _imported_study(sim_benchmark, author, ["Coverer", "Half"], "Two systems")
    log_in(page)
    for width, height in ((1366, 768), (390, 844)):
        page.set_viewport_size({"width": width, "height": height})
        page.goto(f"/leaderboards/{sim_benchmark.slug}/{BOARD}/")
        cell = page.locator(f'tr.trust-row th[data-trust-key="{COLUMN}"]')
        lines = cell.locator(".validity-ref")
        assert lines.count() == 2
        assert lines.nth(0).inner_text().startswith("τb vs arena not measured")
        assert lines.nth(1).inner_text().startswith("τb vs labels (Informativeness) -0.33")
        boxes = [lines.nth(i).bounding_box() for i in range(2)]
        assert boxes[1]["y"] >= boxes[0]["y"] + boxes[0]["height"] - 1  # one line each
        assert cell.locator(".validity-more").inner_text() == "+2 more"
        assert page.evaluate(OVERFLOW) <= 1, (f"board scrolls sideways at {width}",
                                              page.evaluate(CULPRITS))
        screenshot(page, f"simulated-board-labels-validity-{width}")
        page.goto(f"/leaderboards/{sim_benchmark.slug}/simulators/")
        rows = page.locator("table.simulators-table tbody tr[data-reference=labels]")
        assert rows.count() == 3 + 1  # three study fields, and the why row of `overall`
        natural = page.locator('tr[data-aspect="likert.naturalness"]')
        assert "1.00" in natural.inner_text()
        assert page.evaluate(OVERFLOW) <= 1, (f"simulators page scrolls sideways at {width}",
                                              page.evaluate(CULPRITS))
        screenshot(page, f"simulators-page-labels-{width}")
