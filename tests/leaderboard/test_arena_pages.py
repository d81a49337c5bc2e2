"""The arena's pages under abuse (docs/arena.md): rate limits per session and per address,
strangers, votes without an exchange, bad input; nothing partial is stored."""

import re

import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext

from evaluation.models import Battle, BattleTurn, System, Vote
from evaluation.services.arena import arena_open, battle_reply_run

pytestmark = pytest.mark.django_db


@pytest.fixture
def arena(tiny_benchmark, settings):
    settings.LIVE_LOOPBACK_PORTS = [(9, 9)]  # allowed, and nothing listens: calls fail
    systems = [System.objects.create(slug=f"s{n}", name=f"S{n}", live_kind="http",
                                     live_endpoint=f"http://127.0.0.1:9/{n}") for n in range(2)]
    return arena_open(benchmark=tiny_benchmark, systems=systems)


def _start(client) -> Battle:
    response = client.post("/arena/tiny/battles/")
    assert response.status_code == 302, response.content
    return Battle.objects.get(uuid=response.url.rstrip("/").split("/")[-1])


def test_battle_starts_are_limited_per_session_and_per_address(arena, settings):
    settings.ARENA_BATTLES_PER_HOUR_SESSION, settings.ARENA_BATTLES_PER_HOUR_ADDRESS = 2, 3
    first = Client(REMOTE_ADDR="10.0.0.1")
    _start(first)
    _start(first)
    refused = first.post("/arena/tiny/battles/")
    assert refused.status_code == 429 and b"Too many requests" in refused.content
    other = Client(REMOTE_ADDR="10.0.0.1")  # a new session from the same address
    _start(other)
    assert other.post("/arena/tiny/battles/").status_code == 429  # the address's 4th
    elsewhere = Client(REMOTE_ADDR="10.0.0.2")
    _start(elsewhere)
    assert Battle.objects.count() == 4


def test_messages_are_limited_and_a_refused_message_stores_nothing(arena, settings):
    settings.ARENA_MESSAGES_PER_HOUR_SESSION = 1
    client = Client(REMOTE_ADDR="10.0.0.9")
    battle = _start(client)
    say = f"/arena/battles/{battle.uuid}/say/"
    assert client.post(say, {"message": "hello"}, HTTP_HX_REQUEST="true").status_code == 200
    for side in "ab":  # the systems are unreachable: both settle as errors
        battle_reply_run(battle_id=battle.pk, index=0, side=side)
    refused = client.post(say, {"message": "again"}, HTTP_HX_REQUEST="true")
    assert refused.status_code == 429 and b"Too many requests" in refused.content
    assert battle.turns.filter(side="user").count() == 1
    assert set(battle.turns.exclude(side="user").values_list("error_kind", flat=True)) == {
        "unreachable"}


def test_a_vote_needs_an_exchange_and_a_valid_choice(arena):
    client = Client()
    battle = _start(client)
    vote = f"/arena/battles/{battle.uuid}/vote/"
    response = client.post(vote, {"outcome": "a"})
    assert response.status_code == 400 and b"at least one exchange" in response.content
    client.post(f"/arena/battles/{battle.uuid}/say/", {"message": "hi"})
    pending = client.post(vote, {"outcome": "a"})
    assert pending.status_code == 400 and b"wait until both" in pending.content
    for side in "ab":
        battle_reply_run(battle_id=battle.pk, index=0, side=side)
    assert client.post(vote, {"outcome": "<script>"}).status_code == 400
    assert not Vote.objects.exists()
    assert client.post(vote, {"outcome": "both_bad"}).status_code == 302
    again = client.post(vote, {"outcome": "a"})
    assert again.status_code == 409 and b"already has its vote" in again.content
    assert Vote.objects.get().outcome == "both_bad"


def test_a_battle_is_its_sessions_only(arena, researcher):
    owner, stranger = Client(), Client()
    battle = _start(owner)
    for url in (f"/arena/battles/{battle.uuid}/", f"/arena/battles/{battle.uuid}/replies/0/a/"):
        assert stranger.get(url).status_code == 404
    for url in ("say/", "vote/", "abandon/"):
        assert stranger.post(f"/arena/battles/{battle.uuid}/{url}",
                             {"message": "x", "outcome": "a"}).status_code == 404
    assert battle.turns.count() == 0 and Battle.objects.get().status == "open"
    assert owner.get(f"/arena/battles/{battle.uuid}/").status_code == 200
    # logged in, a battle follows its user to another browser
    logged = Client()
    logged.force_login(researcher)
    mine = _start(logged)
    elsewhere = Client()
    elsewhere.force_login(researcher)
    assert elsewhere.get(f"/arena/battles/{mine.uuid}/").status_code == 200
    # started anonymously, then logged in (a new session key): still theirs
    anonymous = Client()
    early = _start(anonymous)
    anonymous.force_login(researcher)
    assert anonymous.get(f"/arena/battles/{early.uuid}/").status_code == 200
    assert f"/arena/battles/{early.uuid}/" in anonymous.get("/arena/tiny/").content.decode()


def test_the_arena_page_lists_the_sessions_battles_to_resume(arena):
    client = Client()
    battle = _start(client)
    client.post(f"/arena/battles/{battle.uuid}/say/", {"message": "hi"})
    page = client.get("/arena/tiny/").content.decode()
    assert f"/arena/battles/{battle.uuid}/" in page and "Resume" in page
    assert BattleTurn.objects.filter(battle=battle, state="pending").count() == 2
    # the systems' names, not inside a random token of the page (its CSRF token may hold "S0")
    assert not re.search(r"(?<![\w+/=-])S[01](?![\w+/=-])", page)
    abandon = client.post(f"/arena/battles/{battle.uuid}/abandon/")
    assert abandon.status_code == 302 and Battle.objects.get().status == "abandoned"
    assert client.post(f"/arena/battles/{battle.uuid}/say/", {"message": "x"}).status_code == 400


def test_no_arena_and_too_few_systems_say_so(tiny_benchmark):
    page = Client().get("/arena/tiny/")
    assert b"No arena is open" in page.content
    assert Client().post("/arena/tiny/battles/").status_code == 404
    assert not Battle.objects.exists()


def test_a_turn_costs_the_same_sql_however_long_the_battle_is(arena):
    """docs/performance-history.md "Arena battles": a message and an answer fragment each cost a
    fixed
    handful of statements, the 1st as the 4th (no query per turn, no re-read of the battle)."""
    client = Client(REMOTE_ADDR="10.0.0.7")
    battle = _start(client)
    base = f"/arena/battles/{battle.uuid}/"
    counts = []
    for index in range(4):
        with CaptureQueriesContext(connection) as said:
            assert client.post(base + "say/", {"message": f"m{index}"},
                               HTTP_HX_REQUEST="true").status_code == 200
        for side in "ab":  # unreachable systems: both settle as errors, the battle goes on
            battle_reply_run(battle_id=battle.pk, index=index, side=side)
        with CaptureQueriesContext(connection) as fetched:
            answer = client.get(f"{base}replies/{index}/b/")
        assert answer.status_code == 200 and b"arena-controls" in answer.content
        counts.append(([q["sql"].split()[0] for q in said.captured_queries],
                       len(fetched.captured_queries)))
    assert all(count == counts[0] for count in counts)
    # the battle (with its systems), its status under the lock, its turns, the three new rows,
    # the battle's time, its turns for the page (and the savepoint around the message)
    assert [s for s in counts[0][0] if s not in ("SAVEPOINT", "RELEASE")] == [
        "SELECT", "SELECT", "SELECT", "INSERT", "UPDATE", "SELECT"]
    assert counts[0][1] == 2  # the battle (with its systems), its turns


@pytest.mark.django_db(transaction=True)
def test_the_battle_bench_measures_every_turn_and_leaves_the_arena_without_its_systems():
    if connection.vendor != "postgresql":
        pytest.skip("needs PostgreSQL: the battle bench serves the arena from gunicorn workers")
    import json
    from io import StringIO

    from django.core.management import call_command

    from evaluation.models import Arena

    out = StringIO()
    call_command("bench_arena_battles", "--battles", "3", "--turns", "2", "--latency", "0.05",
                 "--json", stdout=out)
    result = json.loads(out.getvalue())
    assert result["turns_measured"] == 6 and result["failed_answers"] == 0
    assert 0 < result["concord_ms_p50"] <= result["concord_ms_p95"] <= result["concord_ms_max"]
    # gunicorn, the systems and the browsers each spent CPU in their own processes
    assert result["workers"] == 2 and len(result["cpu_ms_per_turn"]["web_per_worker"]) == 2
    assert result["cpu_ms_per_turn"]["web"] > 0 and result["cpu_ms_per_turn"]["browsers"] > 0
    assert 0 < result["cpu_ms_per_turn"]["web_requests"] < result["concord_ms_max"]
    arena = Arena.objects.get(slug="bench-arena")
    assert arena.battles.count() == 3 and not arena.systems.exists()
    # each battle: one unmeasured message that warms the workers, then the two measured ones
    assert BattleTurn.objects.filter(battle__arena=arena, state="ok").exclude(
        side="user").count() == 3 * 3 * 2


def test_the_scenario_reads_as_words_not_python(arena, client):
    battle = _start(client)
    Battle.objects.filter(pk=battle.pk).update(scenario={
        "dialogue_id": "d1", "item_type": "restaurant", "dog_friendly": True, "city": "Tucson",
        "user_profile": {"name": "Ana", "persona": "foodie_explorer"},
        "constraints": [{"kind": "noise", "value": "quiet", "stated_at_turn": 2},
                        {"kind": "neighborhood", "value": "El Presidio", "stated_at_turn": 4}],
        "rejections": [{"item_id": "tus-r-016", "reason": {"kind": "neighborhood",
                                                           "value": "El Presidio"},
                        "turn_index": 6}]})
    page = client.get(f"/arena/battles/{battle.uuid}/").content.decode()
    panel = page.split('id="arena-scenario"')[1].split("</dl>")[0]
    assert "<dt>Persona</dt><dd>Ana, foodie explorer</dd>" in panel
    assert "<dt>Request</dt><dd>Restaurant in Tucson; quiet, El Presidio</dd>" in panel
    assert "<dt>dog friendly</dt><dd>yes</dd>" in panel
    # never the reference dialogue's rejected item, nor a raw record
    assert "tus-r-016" not in panel and "kind:" not in panel and "turn" not in panel
    assert "{" not in panel and "True" not in panel and "dialogue id" not in panel


def test_an_answers_citations_link_the_reviews_they_quote(arena, client):
    battle = _start(client)
    client.post(f"/arena/battles/{battle.uuid}/say/", {"message": "quiet seafood?"},
                HTTP_HX_REQUEST="true")
    BattleTurn.objects.filter(battle=battle, side="a").update(
        state="ok", text='Try Harbor Grill: "the room was quiet" [R1]. Also "made up" [R2].',
        citations=[{"label": "R1", "review_id": "v1", "quote": "the room was quiet"},
                   {"label": "R2", "review_id": "nope", "quote": "made up"}])
    page = client.get(f"/arena/battles/{battle.uuid}/").content.decode()
    reply = page.split('id="reply-0-a"')[1].split("</div>\n")[1]
    assert ('<mark class="quote"><a href="/benchmarks/tiny/items/r1/#review-v1" target="_blank"'
            in page)
    assert ('<span class="label">[R1]</span> → <a href="/benchmarks/tiny/items/r1/#review-v1" '
            'target="_blank" rel="noopener">review v1</a> of Harbor Grill' in page)
    assert "review nope (not a review of this benchmark)" in page
    assert "[R1]" in reply
