"""The arena ratings page in Chromium: one table row, one forest mark and one heatmap row per
system, both methods, and no script injected by a system name from the vote files."""

import io

import pytest
from django.core.management import call_command

from evaluation.models import Arena
from tests.browser.conftest import screenshot
from tests.leaderboard.test_arena_ratings import folder  # noqa: F401 (fixture)

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_arena_ratings_page_draws_table_forest_and_heatmap(page, live_server, staff,
                                                            folder):  # noqa: F811
    call_command("import_public", "crs_arena_dial", str(folder), stdout=io.StringIO())
    arena = Arena.objects.get()
    dialogs = []
    page.on("dialog", lambda dialog: (dialogs.append(dialog.message), dialog.dismiss()))
    for method in ("elo", "bt"):
        page.goto(f"/arenas/{arena.slug}/ratings/?method={method}")
        assert page.locator("table.arena-table tbody tr").count() == 3
        assert page.locator("svg.forest circle").count() == 3
        assert page.locator("figure.arena-win-rates rect.cell").count() == 9
        assert page.locator("text=<b>evil</b>_redial").first.is_visible()
        screenshot(page, f"arena-ratings-{method}")
    assert dialogs == []
