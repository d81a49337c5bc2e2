"""The metric leaderboard's system-level columns and Order-by control in Chromium, at 1366×768
and 390×844: the table scrolls inside its card, never the page."""

import pytest
from django.contrib.auth.models import User
from django.core.cache import cache

from annotation.report_bench import synthetic_report_study
from tests.browser.conftest import screenshot

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_order_by_soft_pairwise_accuracy_on_both_screens(page, live_server):
    cache.clear()
    staff = User.objects.create_user("board-browser", is_staff=True)
    study = synthetic_report_study(slug="sysmeta-browser", author=staff, labels=300, systems=4,
                                   annotators=2, scored_factor=2, seed=5)
    for width, height in ((1366, 768), (390, 844)):
        page.set_viewport_size({"width": width, "height": height})
        page.goto(f"/studies/{study.slug}/metric-leaderboard/?aspect=overall")
        page.locator("#board-order a", has_text="soft pairwise accuracy").click()
        page.wait_for_url("**sort=soft_pairwise_accuracy**")
        assert page.locator("#board-order a.active").inner_text() == "soft pairwise accuracy"
        cells = page.locator("#metric-board tbody tr td.system-level:nth-child(9)")
        values = [float(cells.nth(i).inner_text().split()[0]) for i in range(cells.count())]
        assert values and values == sorted(values, reverse=True)
        assert page.evaluate("() => document.documentElement.scrollWidth"
                             " - document.documentElement.clientWidth") <= 0
        assert "System level" in page.locator("#system-level-method").inner_text()
        screenshot(page, f"metric-board-system-level-{width}")
