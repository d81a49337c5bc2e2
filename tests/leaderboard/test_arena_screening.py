"""Which arena votes count (docs/arena.md; security issue 28.7 and 28.10): a live system whose
answer names it flags its battle and its vote is left out; a system owner's vote is left out;
the ratings (page, CSV/JSON export, API, `arena_ratings`) are those of the counted votes only
and say how many were left out. Real loopback live systems, real PostgreSQL."""

import csv
import io
import random

import pytest
from django.core.management import call_command
from django.test import Client
from django.urls import reverse

from core.roles import RESEARCHER
from evaluation.lib.stats.arena import elo_ratings
from evaluation.models import Battle, Vote
from evaluation.selectors.arena import battle_view
from evaluation.services.arena import (
    arena_open,
    battle_reply_run,
    battle_say,
    battle_start,
    battle_vote,
)
from evaluation.services.live import live_system_create
from tests.conftest import _user
from tests.support.live_server import first_items, live_server

pytestmark = pytest.mark.django_db


@pytest.fixture
def systems(tiny_benchmark, researcher):
    """Two loopback live systems: "Sneaky CRS" introduces itself, "Noodle Bot" does not."""
    with live_server(first_items(["r1"], "I am Sneaky CRS: try Harbor Grill.")) as sneaky, \
            live_server(first_items(["r2"], "Noodle Nook is cheap.")) as honest:
        yield (live_system_create(name="Sneaky CRS", owner=researcher, endpoint=sneaky.url,
                                  timeout_seconds=5, max_retries=0),
               live_system_create(name="Noodle Bot", owner=researcher, endpoint=honest.url,
                                  timeout_seconds=5, max_retries=0))


def _battle(arena, *, user=None, session="s"):
    battle = battle_start(arena=arena, session_key=session, user=user, rng=random.Random(1))
    index = battle_say(battle=battle, text="Somewhere quiet?")
    for side in "ab":
        battle_reply_run(battle_id=battle.pk, index=index, side=side)
    return Battle.objects.select_related("system_a", "system_b").get(pk=battle.pk)


def test_an_answer_naming_its_system_flags_the_battle_and_its_vote_is_not_counted(
        tiny_benchmark, systems):
    sneaky, honest = systems
    arena = arena_open(benchmark=tiny_benchmark, systems=[sneaky, honest])
    battle = _battle(arena)
    assert battle.identity_leaked
    vote = battle_vote(battle=battle, outcome="a")
    assert vote.excluded_reason == Vote.Excluded.IDENTITY_LEAKED
    assert battle_view(battle=battle).reveal["not_counted"] == "an answer named its system"


def test_a_battle_whose_answers_say_nothing_of_their_systems_counts(tiny_benchmark, researcher):
    with live_server(first_items(["r1"], "Harbor Grill is quiet.")) as one, \
            live_server(first_items(["r2"], "Noodle Nook is cheap.")) as two:
        arena = arena_open(benchmark=tiny_benchmark, systems=[
            live_system_create(name="Seafood Bot", owner=researcher, endpoint=one.url),
            live_system_create(name="Noodle Bot", owner=researcher, endpoint=two.url)])
        battle = _battle(arena)
    assert not battle.identity_leaked
    assert battle_vote(battle=battle, outcome="a").excluded_reason == ""
    assert battle_view(battle=battle).reveal["not_counted"] == ""


@pytest.fixture
def owner_arena(tiny_benchmark, researcher):
    """Two honest systems, "Seafood Bot" owned by `researcher`, "Noodle Bot" by someone else."""
    other = _user("other-owner", RESEARCHER)
    with live_server(first_items(["r1"], "Harbor Grill is quiet.")) as one, \
            live_server(first_items(["r2"], "Noodle Nook is cheap.")) as two:
        yield arena_open(benchmark=tiny_benchmark, systems=[
            live_system_create(name="Seafood Bot", owner=researcher, endpoint=one.url),
            live_system_create(name="Noodle Bot", owner=other, endpoint=two.url)])


def test_an_owners_vote_is_not_counted_however_they_cast_it(owner_arena, researcher,
                                                            annotator):
    started_signed_in = _battle(owner_arena, user=researcher, session="s1")
    assert battle_vote(battle=started_signed_in, outcome="a").excluded_reason == "owner"
    # Started anonymously, voted after signing in: the voter is the owner.
    signed_in_later = _battle(owner_arena, session="s2")
    assert battle_vote(battle=signed_in_later, outcome="a",
                       user=researcher).excluded_reason == "owner"
    stranger = _battle(owner_arena, user=annotator, session="s3")
    assert battle_vote(battle=stranger, outcome="a", user=annotator).excluded_reason == ""


def test_the_vote_page_passes_the_voter(owner_arena, researcher):
    client = Client()
    started = client.post(reverse("leaderboard:arena_battle_start", args=["tiny"]))
    battle = Battle.objects.get(uuid=started.url.rstrip("/").split("/")[-1])
    index = battle_say(battle=battle, text="Somewhere quiet?")
    for side in "ab":
        battle_reply_run(battle_id=battle.pk, index=index, side=side)
    client.force_login(researcher)  # a new session key; the session keeps its battles
    response = client.post(reverse("leaderboard:arena_battle_vote", args=[battle.uuid]),
                           {"outcome": "a"})
    assert response.status_code == 302, response.content
    vote = Vote.objects.get(battle=battle)
    assert battle.user_id is None and vote.excluded_reason == "owner"
    page = client.get(response.url).content.decode()
    assert ("This vote is stored but not counted in the ratings: cast by the owner of a system "
            "in the battle.") in page


def test_the_ratings_leave_out_excluded_votes_and_say_how_many(tiny_benchmark, systems,
                                                              researcher, annotator, client):
    sneaky, honest = systems
    arena = arena_open(benchmark=tiny_benchmark, systems=[sneaky, honest])
    leaked = battle_vote(battle=_battle(arena, session="a1"), outcome="a")
    # Counted votes: imported-like votes with no battle, the honest system mostly winning.
    counted = []
    for position, outcome in enumerate(["b", "b", "a", "b"], start=10):
        counted.append(Vote.objects.create(arena=arena, system_a=sneaky, system_b=honest,
                                           outcome=outcome, position=position))
    # An owner's vote, for Sneaky CRS (stored as battle_vote stores it).
    owners = [Vote.objects.create(arena=arena, system_a=sneaky, system_b=honest, outcome="a",
                                  position=20 + n, excluded_reason="owner") for n in range(2)]
    assert leaked.excluded_reason == "identity_leaked"
    names = {sneaky.pk: sneaky.name, honest.pk: honest.name}
    as_cast = sorted([leaked, *counted, *owners], key=lambda v: v.position)
    every = [(names[v.system_a_id], names[v.system_b_id], v.outcome) for v in as_cast]
    kept = [(names[v.system_a_id], names[v.system_b_id], v.outcome) for v in counted]
    reference = elo_ratings(kept)
    assert reference != pytest.approx(elo_ratings(every))  # leaving them out matters

    api = client.get(reverse("leaderboard:api_arena_ratings", args=[arena.slug])).json()
    assert {s["system"]: s["rating"] for s in api["systems"]} == pytest.approx(reference)
    assert api["votes"] == 4 and api["excluded"] == {"identity_leaked": 1, "owner": 2}
    export = reverse("leaderboard:arena_ratings_export", args=[arena.slug, "json"])
    assert client.get(export).json()["excluded"] == {"identity_leaked": 1, "owner": 2}
    rows = list(csv.DictReader(io.StringIO(client.get(
        reverse("leaderboard:arena_ratings_export", args=[arena.slug, "csv"])).content.decode())))
    assert {(r["excluded_identity_leaked"], r["excluded_owner"]) for r in rows} == {("1", "2")}
    assert {r["system"]: float(r["rating"]) for r in rows} == pytest.approx(reference)

    html = client.get(reverse("leaderboard:arena_ratings", args=[arena.slug])).content.decode()
    assert "<strong>1</strong> battle excluded: an answer named its system." in html
    assert "<strong>2</strong> votes excluded: cast by the owner of a system in the battle." \
        in html
    assert f"{reference['Noodle Bot']:.1f}" in html

    out = io.StringIO()
    call_command("arena_ratings", arena.slug, "--resamples", "20", stdout=out)
    assert "4 votes" in out.getvalue()
    assert ("Not counted: 1 battle excluded: an answer named its system; 2 votes excluded: "
            "cast by the owner of a system in the battle") in out.getvalue()


def test_imported_votes_are_all_counted(tiny_benchmark, researcher):
    from evaluation.services.arena import arena_import_votes
    from evaluation.services.submissions import system_create

    made = {}
    arena = arena_import_votes(benchmark=tiny_benchmark, votes=[
        {"system_a": "X CRS", "system_b": "Y CRS", "outcome": "a", "voter_ref": "u1"},
        {"system_a": "Y CRS", "system_b": "X CRS", "outcome": "tie"}],
        system_for=lambda name: made.setdefault(name, system_create(name=name, owner=researcher)))
    assert list(arena.votes.values_list("excluded_reason", flat=True)) == ["", ""]
