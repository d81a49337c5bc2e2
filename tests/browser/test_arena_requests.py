"""A researcher adds their live system to a benchmark's arena from its page, and staff approve
it, in Chromium (docs/arena.md, "Adding your system"); a 403 says who may (issue 34.2). Each
page is taken at 1366×768 and 390×844 without sideways scrolling."""

import pytest

from evaluation.models import Arena, ArenaRequest, System
from tests.browser.conftest import screenshot
from tests.browser.test_leaderboard import log_in

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

SIZES = ((1366, 768), (390, 844))


def _no_sideways_scroll(page, name):
    for width, height in SIZES:
        page.set_viewport_size({"width": width, "height": height})
        overflow = page.evaluate("document.documentElement.scrollWidth - window.innerWidth")
        assert overflow <= 0, f"{name} scrolls sideways by {overflow}px at {width}×{height}"
        screenshot(page, f"{name}-{width}")
    page.set_viewport_size({"width": 1280, "height": 900})


def _log_out(page):
    page.click("header .account button[type=submit]")
    page.wait_for_url("**/")


def test_ask_to_join_then_staff_approve(page, tiny_benchmark, researcher, staff, settings):
    settings.ARENA_REQUIRE_APPROVAL = True
    System.objects.create(slug="my-live-bot", name="My Live Bot", owner=researcher,
                          live_kind="http", live_endpoint="http://127.0.0.1:8001/chat")
    log_in(page)
    page.goto("/systems/my-live-bot/")
    page.select_option("#arena-join select[name=benchmark]", "tiny")
    page.click("#arena-join button[type=submit]")
    page.wait_for_url("**/systems/my-live-bot/#arena")
    assert "an operator approves each new arena system" in page.locator(".messages").inner_text()
    assert "waiting for an operator" in page.locator("#arena-requests").inner_text().lower()
    _no_sideways_scroll(page, "system-arena-requested")

    page.goto("/arena-requests/")  # a researcher does not decide: the 403 says who does
    assert "Only staff (the site's operators) can decide" in page.locator(
        "#forbidden-reason").inner_text()
    _no_sideways_scroll(page, "forbidden")
    _log_out(page)

    log_in(page, "staff")
    page.goto("/arenas/")
    page.click("#arena-requests-link a")
    page.wait_for_url("**/arena-requests/")
    _no_sideways_scroll(page, "arena-requests")
    pending = ArenaRequest.objects.get()
    page.click(f"#arena-request-{pending.pk} button.primary")
    page.wait_for_url("**/arena-requests/")
    assert "My Live Bot joins the arena of Tiny Tourism" in page.locator(".messages").inner_text()
    assert list(Arena.objects.get(slug="tiny").systems.values_list("slug", flat=True)) == [
        "my-live-bot"]
    _log_out(page)

    log_in(page)
    page.goto("/systems/my-live-bot/")
    assert "Battles in Tiny Tourism arena" in page.locator("#arena").inner_text()
