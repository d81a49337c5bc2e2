"""A whole arena battle in Chromium against two real local HTTP systems (docs/arena.md):
spinner while a system is slow, an error when one fails, the vote, the reveal, and a replayed
and a concurrent second vote refused. Every response before the vote is scanned for each
system's name, slug, id and endpoint: nothing may say which system is which."""

import re

import pytest

from evaluation.models import Battle, BattleTurn, System, Vote
from evaluation.services.arena import arena_open
from evaluation.services.live import system_set_live
from tests.browser.conftest import htmx_settled, screenshot
from tests.support.a11y import assert_accessible
from tests.support.live_server import Raw, trickled
from tests.support.live_server import live_server as crs_server

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def _slow(request):
    return Raw(200, b'{"response": "Harbor Grill: quiet, fresh crab.", '
                    b'"ranked_item_ids": ["r1", "r2"]}', delay=1.0)


def _flaky(request):
    if "break" in request["utterance"]:
        return Raw(500, b"oops")
    return {"response": "Noodle Nook is <b>cheap</b> & fast.", "ranked_item_ids": ["r2"]}


def _system(pk, name, slug, url):
    system = System.objects.create(pk=pk, name=name, slug=slug)
    return system_set_live(system=system, endpoint=url, timeout_seconds=5, max_retries=0)


def test_a_blind_battle_end_to_end(page, tiny_benchmark):
    with crs_server(_slow) as slow, crs_server(_flaky) as flaky:
        systems = [_system(987651, "Zephyr Recommender", "zephyr-recommender", slow.url),
                   _system(987652, "Quokka CRS", "quokka-crs", flaky.url)]
        arena_open(benchmark=tiny_benchmark, systems=systems)
        secrets = [s for system in systems
                   for s in (system.name, system.slug, str(system.pk), system.live_endpoint,
                             system.live_endpoint.split(":")[-1].split("/")[0])]
        seen = []  # (url, headers, body) of every response before the vote
        voted = {"now": False}

        def record(response):
            if voted["now"]:
                return
            try:
                body = response.text()
            except Exception:  # noqa: BLE001 - redirects have no body
                body = ""
            seen.append((response.url, str(response.headers), body))

        page.on("response", record)
        page.goto("/arena/tiny/")
        assert_accessible(page, "arena home")
        page.click("#arena-start button[type=submit]")
        page.wait_for_url(re.compile(r"/arena/battles/[0-9a-f-]{36}/$"))
        assert page.locator("#arena-scenario").is_visible()

        # by keyboard: type, Tab to "Send to both", Enter
        page.focus("#arena-message")
        page.keyboard.type("Somewhere quiet for seafood?")
        page.keyboard.press("Tab")
        page.keyboard.press("Enter")
        slow_side = "a" if Battle.objects.get().system_a_id == 987651 else "b"
        fast_side = "b" if slow_side == "a" else "a"
        # the fast system's reply arrives while the slow one still shows its spinner
        page.locator(f"#reply-0-{fast_side}.state-ok").wait_for()
        assert page.locator(f"#reply-0-{slow_side} .spinner").is_visible()
        screenshot(page, "arena-spinner")
        page.locator(f"#reply-0-{slow_side}.state-ok").wait_for()
        htmx_settled(page)
        fast = page.locator(f"#reply-0-{fast_side}").inner_text()
        assert "<b>cheap</b> & fast" in fast  # the system's markup is text, not HTML
        assert page.locator(f"#reply-0-{fast_side} b").count() == 0
        # focus did not drop to the page's top: it is on the next message box
        assert page.evaluate("document.activeElement.id") == "arena-message"

        page.fill("#arena-message", "Can it break?")
        page.click(".arena-say button[type=submit]")
        page.locator(f"#reply-1-{fast_side}.state-error").wait_for()
        page.locator(f"#reply-1-{slow_side}.state-ok").wait_for()
        htmx_settled(page)
        failed = page.locator(f"#reply-1-{fast_side}").inner_text()
        assert "failed to answer: it answered with an HTTP error (http_status)" in failed
        screenshot(page, "arena-before-vote")
        assert_accessible(page, "battle before the vote")

        # blinding: nothing so far names either system
        leaks = [(url, secret) for url, headers, body in seen for secret in secrets
                 if secret in url or secret in headers or secret in body]
        assert len(seen) >= 8 and not leaks, leaks

        voted["now"] = True
        page.fill("#arena-reason", "It answered even when the other broke.")
        page.click(f"#arena-vote button[value={slow_side}]")
        page.locator("#reveal").wait_for()
        reveal = page.locator("#reveal").inner_text()
        assert "Zephyr Recommender" in reveal and "Quokka CRS" in reveal
        screenshot(page, "arena-reveal")
        assert_accessible(page, "battle after the vote")

        vote = Vote.objects.get()
        assert vote.outcome == slow_side and vote.reason.startswith("It answered")
        assert BattleTurn.objects.filter(battle=vote.battle).count() == 6  # 2 × (you, A, B)

        # a replayed vote and two concurrent ones are refused; still one vote
        action = page.url.split("#")[0] + "vote/"
        token = next(c["value"] for c in page.context.cookies() if c["name"] == "csrftoken")
        replay = page.request.post(action, form={"outcome": fast_side},
                                   headers={"X-CSRFToken": token}, max_redirects=0)
        assert replay.status == 409 and "already has its vote" in replay.text()
        statuses = page.evaluate(
            """async ([action, token]) => {
                 const send = (o) => fetch(action, {method: "POST", redirect: "manual",
                   headers: {"X-CSRFToken": token,
                             "Content-Type": "application/x-www-form-urlencoded"},
                   body: "outcome=" + o}).then(r => r.status);
                 return Promise.all([send("a"), send("b")]);
               }""", [action, token])
        assert statuses == [409, 409]
        assert Vote.objects.count() == 1 and Vote.objects.get().outcome == slow_side


def test_a_stalled_answer_fails_in_time_and_is_asked_again_and_a_failed_send_says_so(
        page, tiny_benchmark):
    """Issue 28.3 and 34.1: a system that trickles its answer a byte a second shows its error
    within its timeout, "Ask again" gets its answer; a send the server fails (a 500) says so on
    the page, and the battle can still be abandoned."""
    answers = iter([trickled(1.0)])

    def stalling_once(request):
        return next(answers, {"response": "Sorry, here: Harbor Grill.", "ranked_item_ids": ["r1"]})

    with crs_server(stalling_once) as stalling, crs_server(_flaky) as fine:
        systems = [_system(987661, "Stalling Bot", "stalling-bot", stalling.url),
                   _system(987662, "Fine Bot", "fine-bot", fine.url)]
        System.objects.filter(pk=987661).update(live_timeout_seconds=2)
        arena_open(benchmark=tiny_benchmark, systems=systems)
        page.goto("/arena/tiny/")
        page.click("#arena-start button[type=submit]")
        page.wait_for_url(re.compile(r"/arena/battles/[0-9a-f-]{36}/$"))
        stalled = "a" if Battle.objects.get().system_a_id == 987661 else "b"

        page.fill("#arena-message", "Somewhere quiet?")
        page.click(".arena-say button[type=submit]")
        page.locator(f"#reply-0-{stalled}.state-error").wait_for(timeout=8000)
        text = page.locator(f"#reply-0-{stalled}").inner_text()
        assert "failed to answer: it took longer than its time limit (timeout)" in text
        turn = BattleTurn.objects.get(index=0, side=stalled)
        assert turn.error == "timed out after 2 s" and turn.latency_ms < 3000
        htmx_settled(page)
        screenshot(page, "arena-timeout")
        assert_accessible(page, "battle with a timed-out answer")

        page.click("#arena-retry")
        page.locator(f"#reply-0-{stalled}.state-ok").wait_for()
        assert "Harbor Grill" in page.locator(f"#reply-0-{stalled}").inner_text()
        htmx_settled(page)
        assert page.locator("#arena-retry").count() == 0

        page.route("**/say/", lambda route: route.fulfill(status=500, body="boom"))
        page.fill("#arena-message", "And cheaper?")
        page.click(".arena-say button[type=submit]")
        alert = page.locator(".arena-say [data-htmx-error]")
        alert.wait_for()
        assert "Sending failed: the server answered 500" in alert.inner_text()
        assert page.locator("#arena-message").input_value() == "And cheaper?"  # nothing lost
        screenshot(page, "arena-send-failed")
        page.unroute("**/say/")
        page.click("text=Abandon this battle (no vote)")
        page.wait_for_url(re.compile(r"/arena/tiny/$"))
        assert Battle.objects.get().status == Battle.Status.ABANDONED
