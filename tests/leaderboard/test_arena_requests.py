"""Researchers add their own live systems to a benchmark's arena (issue 34.2): at once, or
through staff's approval when `CONCORD_ARENA_REQUIRE_APPROVAL` is on; refusals say why and
store nothing; the `arena_open` command still adds systems."""

import pytest
from django.core.management import call_command
from django.test import Client

from evaluation.models import Arena, ArenaRequest, Benchmark, System

pytestmark = pytest.mark.django_db


def _live(owner, slug="my-bot", **extra):
    return System.objects.create(slug=slug, name=slug.replace("-", " ").title(), owner=owner,
                                 live_kind="http", live_endpoint="http://127.0.0.1:8001/chat",
                                 **extra)


def _client(user):
    client = Client()
    client.force_login(user)
    return client


def _messages(response) -> str:
    return " ".join(str(m) for m in response.wsgi_request._messages)


def test_without_approval_the_system_joins_at_once(tiny_benchmark, researcher, settings):
    settings.ARENA_REQUIRE_APPROVAL = False
    system = _live(researcher)
    client = _client(researcher)
    page = client.get(f"/systems/{system.slug}/").content.decode()
    assert 'id="arena-join"' in page and "Add to the arena" in page
    answer = client.post(f"/systems/{system.slug}/arena/", {"benchmark": "tiny"})
    assert answer.status_code == 302 and answer.url == f"/systems/{system.slug}/#arena"
    assert "now battles in the arena of Tiny Tourism" in _messages(answer)
    arena = Arena.objects.get(slug="tiny")
    assert list(arena.systems.all()) == [system]
    request = ArenaRequest.objects.get()
    assert (request.status, request.requested_by, request.decided_by) == (
        "approved", researcher, None)
    page = client.get(f"/systems/{system.slug}/").content.decode()
    assert 'href="/arenas/tiny/ratings/">Tiny Tourism arena</a>' in page
    assert 'id="arena-join"' not in page  # no other arena to join


def test_with_approval_staff_approve_or_reject(tiny_benchmark, researcher, staff, settings):
    settings.ARENA_REQUIRE_APPROVAL = True
    system, other = _live(researcher), _live(researcher, slug="other-bot")
    client = _client(researcher)
    assert "Ask to join" in client.get(f"/systems/{system.slug}/").content.decode()
    answer = client.post(f"/systems/{system.slug}/arena/", {"benchmark": "tiny"})
    assert "an operator approves each new arena system" in _messages(answer)
    assert not Arena.objects.filter(slug="tiny").exists()  # nothing joins before approval
    page = client.get(f"/systems/{system.slug}/").content.decode()
    assert "waiting for an operator" in page
    again = client.post(f"/systems/{system.slug}/arena/", {"benchmark": "tiny"})
    assert "already waiting for an operator" in _messages(again)
    assert ArenaRequest.objects.count() == 1

    refused = client.get("/arena-requests/")  # researchers do not decide
    assert refused.status_code == 403
    assert ("Only staff (the site&#x27;s operators) can decide which systems join an arena. "
            "To add your own live system, use the Arena section of its page."
            ) in refused.content.decode()

    operator = _client(staff)
    assert "1 waiting for you" in operator.get("/arenas/").content.decode()
    listing = operator.get("/arena-requests/").content.decode()
    assert "My Bot" in listing and "http://127.0.0.1:8001/chat" in listing
    pending = ArenaRequest.objects.get(system=system)
    done = operator.post(f"/arena-requests/{pending.pk}/approve/")
    assert done.status_code == 302 and "My Bot joins the arena of Tiny Tourism" in _messages(done)
    assert list(Arena.objects.get(slug="tiny").systems.all()) == [system]
    pending.refresh_from_db()
    assert (pending.status, pending.decided_by) == ("approved", staff)
    twice = operator.post(f"/arena-requests/{pending.pk}/reject/")
    assert "already approved" in _messages(twice)

    client.post(f"/systems/{other.slug}/arena/", {"benchmark": "tiny"})
    second = ArenaRequest.objects.get(system=other)
    operator.post(f"/arena-requests/{second.pk}/reject/", {"note": "its <b>answers</b> are empty"})
    second.refresh_from_db()
    assert second.status == "rejected"
    assert list(Arena.objects.get(slug="tiny").systems.all()) == [system]
    page = client.get(f"/systems/{other.slug}/").content.decode()
    assert "its &lt;b&gt;answers&lt;/b&gt; are empty" in page and "rejected" in page


def test_refusals_say_why_and_store_nothing(tiny_benchmark, researcher, settings):
    settings.ARENA_REQUIRE_APPROVAL = False
    client = _client(researcher)
    offline = System.objects.create(slug="offline", name="Offline", owner=researcher)
    page = client.get("/systems/offline/").content.decode()
    assert "Only a live system can battle" in page and 'id="arena-join"' not in page
    answer = client.post("/systems/offline/arena/", {"benchmark": "tiny"})
    assert "Offline is not a live system" in _messages(answer)
    settings.CREDENTIALS = {}
    keyed = _live(researcher, slug="keyed", live_credential="gone")
    answer = client.post(f"/systems/{keyed.slug}/arena/", {"benchmark": "tiny"})
    assert "Keyed's endpoint is not called: credential 'gone'" in _messages(answer)
    assert not ArenaRequest.objects.exists() and not Arena.objects.exists()
    assert offline.arenas.count() == 0


def test_only_the_owner_asks_and_only_for_benchmarks_they_see(tiny_benchmark, researcher,
                                                              outsider, settings):
    settings.ARENA_REQUIRE_APPROVAL = False
    system = _live(researcher)
    # a stranger's private system is not revealed
    assert _client(outsider).post(f"/systems/{system.slug}/arena/",
                                  {"benchmark": "tiny"}).status_code == 404
    Benchmark.objects.filter(slug="tiny").update(is_public=False, owner=outsider)
    assert _client(researcher).post(f"/systems/{system.slug}/arena/",
                                    {"benchmark": "tiny"}).status_code == 404
    assert not ArenaRequest.objects.exists()


def test_a_public_system_of_someone_else_gets_a_403_that_says_who_may(
        tiny_benchmark, researcher, outsider, settings):
    system = _live(researcher, is_baseline=True)  # visible to everyone
    answer = _client(outsider).post(f"/systems/{system.slug}/arena/", {"benchmark": "tiny"})
    assert answer.status_code == 403
    assert "Only the system&#x27;s owner (or staff) can change it" in answer.content.decode()


def test_the_command_still_opens_arenas(tiny_benchmark, researcher):
    system = _live(researcher)
    call_command("arena_open", "tiny", system.slug)
    assert list(Arena.objects.get(slug="tiny").systems.all()) == [system]
