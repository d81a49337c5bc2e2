"""The arena is found from the site (issue 34.1): the navigation bar, the benchmark page, its
leaderboard and the ratings page link to it; the ratings heading says "arena" once; a failed
answer can be asked again from the battle page, which still names no system."""

import pytest
from django.test import Client

from evaluation.models import Arena, Battle, BattleTurn, System
from evaluation.services.arena import arena_open, battle_reply_run

pytestmark = pytest.mark.django_db


@pytest.fixture
def arena(tiny_benchmark, settings):
    settings.LIVE_LOOPBACK_PORTS = [(9, 9)]  # allowed, and nothing listens: calls fail
    systems = [System.objects.create(slug=f"secret-bot-{n}", name=f"Secret Bot {n}",
                                     live_kind="http", live_endpoint=f"http://127.0.0.1:9/{n}",
                                     live_max_retries=0) for n in range(2)]
    return arena_open(benchmark=tiny_benchmark, systems=systems)


def test_every_page_links_the_arenas_and_the_benchmarks_pages_link_its_battles(arena, client):
    home = client.get("/").content.decode()
    assert 'href="/arenas/">Arenas</a>' in home
    for url in ("/benchmarks/tiny/", "/leaderboards/tiny/", "/arenas/tiny/ratings/"):
        page = client.get(url)
        assert page.status_code == 200, url
        assert 'id="battle-link" href="/arena/tiny/"' in page.content.decode(), url


def test_no_battle_link_without_a_battle_arena(tiny_benchmark, client):
    for url in ("/benchmarks/tiny/", "/leaderboards/tiny/"):
        assert 'id="battle-link"' not in client.get(url).content.decode(), url
    imported = Arena.objects.create(slug="tiny-votes", name="Tiny votes",
                                    benchmark=tiny_benchmark)
    page = client.get(f"/arenas/{imported.slug}/ratings/").content.decode()
    assert 'id="battle-link"' not in page  # imported votes: no battles to join
    assert "<h1>Tiny votes <span class=\"muted\">arena ratings</span></h1>" in page


def test_the_ratings_heading_says_arena_once(arena, client):
    assert arena.name == "Tiny Tourism arena"
    page = client.get("/arenas/tiny/ratings/").content.decode()
    assert "<title>Tiny Tourism arena ratings" in page and "arena arena" not in page.lower()
    assert "<h1>Tiny Tourism arena <span class=\"muted\">ratings</span></h1>" in page


def test_a_failed_answer_is_asked_again_from_the_page_without_naming_a_system(arena):
    client = Client()
    start = client.post("/arena/tiny/battles/")
    battle = Battle.objects.get(uuid=start.url.rstrip("/").split("/")[-1])
    client.post(f"/arena/battles/{battle.uuid}/say/", {"message": "hello"})
    for side in "ab":  # nothing listens on port 9: both fail, unreachable
        battle_reply_run(battle_id=battle.pk, index=0, side=side)
    page = client.get(f"/arena/battles/{battle.uuid}/").content.decode()
    assert "failed to answer: it could not be reached" in page and 'id="arena-retry"' in page
    again = client.post(f"/arena/battles/{battle.uuid}/retry/", {}, HTTP_HX_REQUEST="true")
    body = again.content.decode()
    assert again.status_code == 200 and "answering…" in body
    assert set(battle.turns.exclude(side="user").values_list("state", flat=True)) == {
        BattleTurn.State.PENDING}
    refused = client.post(f"/arena/battles/{battle.uuid}/retry/", {}, HTTP_HX_REQUEST="true")
    assert refused.status_code == 400 and "wait until both" in refused.content.decode()
    for text in (page, body):
        for system in System.objects.all():
            assert system.name not in text and system.slug not in text
            assert system.live_endpoint not in text
