"""The battle page's per-side signals in Chromium (docs/arena.md, "What a vote records"): item
cards under the answers, Satisfied / Frustrated and the accepted item chosen by mouse and by
keyboard, stored on the vote and said after it; no sideways scroll at 1366 and 390 wide."""

import re

import pytest

from evaluation.models import Battle, System, Vote
from evaluation.services.arena import arena_open
from evaluation.services.live import system_set_live
from tests.browser.conftest import htmx_settled, screenshot
from tests.support.a11y import assert_accessible
from tests.support.live_server import live_server as crs_server

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def _system(pk, name, url):
    system = System.objects.create(pk=pk, name=name, slug=name.lower().replace(" ", "-"))
    return system_set_live(system=system, endpoint=url, timeout_seconds=5, max_retries=0)


def _no_sideways_scroll(page):
    assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth + 1")


@pytest.mark.parametrize("width, height", [(1366, 768), (390, 844)])
def test_verdicts_and_an_accepted_item_by_mouse_and_keyboard(page, tiny_benchmark, width,
                                                             height):
    page.set_viewport_size({"width": width, "height": height})
    with crs_server(lambda r: {"response": "Harbor Grill or the Noodle Nook.",
                               "ranked_item_ids": ["r1", "r2"]}) as one, \
            crs_server(lambda r: {"response": "Noodle Nook.", "ranked_item_ids": ["r2"]}) as two:
        arena_open(benchmark=tiny_benchmark, systems=[_system(987661, "Alpha Bot", one.url),
                                                      _system(987662, "Beta Bot", two.url)])
        page.goto("/arena/tiny/")
        page.click("#arena-start button[type=submit]")
        page.wait_for_url(re.compile(r"/arena/battles/[0-9a-f-]{36}/$"))
        page.fill("#arena-message", "Somewhere for seafood?")
        page.click(".arena-say button[type=submit]")
        page.locator("#reply-0-a.state-ok").wait_for()
        page.locator("#reply-0-b.state-ok").wait_for()
        htmx_settled(page)
        two_cards = "a" if Battle.objects.get().system_a_id == 987661 else "b"
        one_card = "b" if two_cards == "a" else "a"
        # the cards under the answers, by the benchmark's item names
        assert page.locator(f"#reply-0-{two_cards} .item-cards li").count() == 2
        assert page.locator(f"#reply-0-{one_card} .item-cards li").count() == 1
        # mouse: Satisfied for the two-card side, and a click on its second card
        page.check(f"input[name=satisfaction_{two_cards}][value=satisfied]")
        page.locator(f"#arena-signal-{two_cards} label.item-card").nth(1).click()
        # keyboard: Frustrated for the other side, then its one card (arrows move the choice)
        page.focus(f"input[name=satisfaction_{one_card}][value=satisfied]")
        page.keyboard.press("ArrowRight")
        page.focus(f"input[name=accepted_{one_card}][value='']")
        page.keyboard.press("ArrowLeft")
        assert page.is_checked(f"input[name=accepted_{one_card}][value=r2]")
        page.fill("#arena-reason", "The first one knew the harbour.")
        screenshot(page, f"arena-signals-{width}")
        _no_sideways_scroll(page)
        assert_accessible(page, "battle with the per-side questions")
        page.click(f"#arena-vote button[value={two_cards}]")
        page.wait_for_url(re.compile(r"#reveal$"))
        vote = Vote.objects.get()
        assert getattr(vote, f"satisfaction_{two_cards}") == "satisfied"
        assert getattr(vote, f"satisfaction_{one_card}") == "frustrated"
        assert getattr(vote, f"accepted_item_{two_cards}") == "r2"
        assert getattr(vote, f"accepted_item_{one_card}") == "r2"
        assert vote.reason == "The first one knew the harbour."
        reveal = page.locator(".arena-reveal-signals").inner_text()
        assert f"System {two_cards.upper()}: Satisfied" in reveal
        assert f"System {one_card.upper()}: Frustrated" in reveal
        screenshot(page, f"arena-signals-reveal-{width}")
        _no_sideways_scroll(page)
        # the ratings page's CRS sections: the vote's verdicts as rates, tables in their cards
        page.goto("/arenas/tiny/ratings/?method=bt")
        table = page.locator(".arena-signals-table").inner_text()
        assert "Alpha Bot" in table and "Beta Bot" in table
        assert page.locator("#facets").is_visible()
        screenshot(page, f"arena-ratings-crs-{width}")
        _no_sideways_scroll(page)
