"""The leakage audit and simulator validity in Chromium: a simulator that names its target on
purpose, its board's Leaked column and Dialogues selector (htmx), the run page's audit, the
simulators page; no sideways scroll at 1366×768 and 390×844."""

import pytest

from evaluation.services.live import live_system_create
from evaluation.services.llm_models import model_options
from evaluation.services.simulations import simulation_create
from tests.browser.conftest import htmx_settled, screenshot
from tests.browser.test_leaderboard import log_in
from tests.evaluation.llm_fixtures import llm_server, llm_settings  # noqa: F401
from tests.evaluation.simulation_fixtures import run_all, sim_benchmark  # noqa: F401
from tests.evaluation.test_simulation_leakage import crs, leaky_user
from tests.support.live_server import live_server

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

OVERFLOW = "() => document.documentElement.scrollWidth - document.documentElement.clientWidth"
CULPRITS = """() => Array.from(document.querySelectorAll('main *'))
    .filter(e => e.getBoundingClientRect().right > document.documentElement.clientWidth + 1)
    .filter(e => !e.closest('.table-scroll'))
    .slice(0, 6).map(e => e.tagName + '.' + e.className)"""


def test_leaked_dialogues_on_the_board_the_run_page_and_the_simulators_page(
        page, sim_benchmark, researcher, llm_server, llm_settings):  # noqa: F811
    llm = llm_server(leaky_user)
    with live_server(crs) as server:
        system = live_system_create(name="Echo CRS", owner=researcher, endpoint=server.url)
        simulation = run_all(simulation_create(
            benchmark=sim_benchmark, system=system, simulator="ievalm", users=3, turns=3,
            user=researcher, model=model_options(profile=llm.profile,
                                                 model="openai/scripted-user"),
            enqueue=False))
    assert simulation.run_id
    log_in(page)
    board = f"/leaderboards/{sim_benchmark.slug}/simulated-ievalm/"
    for width, height in ((1366, 768), (390, 844)):
        page.set_viewport_size({"width": width, "height": height})
        page.goto(board)
        assert page.locator("td.leak a").inner_text() == "2/3"
        assert "Leaked dialogues: 2 of 3" in page.locator("#lb-leakage").inner_text()
        assert page.evaluate(OVERFLOW) <= 1, (f"board scrolls sideways at {width}",
                                              page.evaluate(CULPRITS))
        screenshot(page, f"simulated-board-leakage-{width}")
        page.locator("select[name=dialogues]").select_option("both")
        htmx_settled(page)
        assert "dialogues=both" in page.url
        assert "Sanitised protocol (-Both)" in page.locator("#lb-leakage").inner_text()
        screenshot(page, f"simulated-board-sanitised-{width}")
        page.goto(f"/runs/{simulation.run_id}/")
        assert page.locator("#leakage").is_visible()
        assert page.locator("ul.leaked-dialogues > li").count() == 2
        assert page.locator("li.turn.flagged").count() == 2
        assert page.evaluate(OVERFLOW) <= 1, f"run page scrolls sideways at {width}"
        screenshot(page, f"simulation-run-leakage-{width}")
        page.goto(f"/leaderboards/{sim_benchmark.slug}/simulators/")
        row = page.locator("table.simulators-table tbody tr[data-protocol]").first
        assert "67%" in row.inner_text()  # leaked: 2 of 3
        assert page.evaluate(OVERFLOW) <= 1, f"simulators page scrolls sideways at {width}"
        screenshot(page, f"simulators-page-{width}")
