"""What a CRS arena records per side (docs/arena.md, "What a vote records"): the verdict, the
accepted item (one of that side's cards), the style of its answers, and what the vote-quality
flags read — with real live systems over HTTP."""

import hashlib
import random

import pytest
from django.core.exceptions import ValidationError

from evaluation.models import Vote
from evaluation.selectors.arena import battle_view
from evaluation.services.arena import (
    arena_open,
    battle_reply_run,
    battle_say,
    battle_start,
    battle_vote,
)
from evaluation.services.live import live_system_create
from tests.support.live_server import first_items, live_server


@pytest.fixture
def arena(tiny_benchmark, researcher):
    cited = {"response": 'Harbor Grill is quiet. "Lovely view" [R1]',
             "ranked_item_ids": ["r1", "r2"], "citations": [{"label": "R1", "review_id": "v1"}]}
    with live_server(lambda request: cited) as one, \
            live_server(first_items(["r2"], "Noodle Nook is cheap.")) as two:
        systems = [live_system_create(name="Seafood Bot", owner=researcher, endpoint=one.url,
                                      timeout_seconds=2, max_retries=0),
                   live_system_create(name="Noodle Bot", owner=researcher, endpoint=two.url,
                                      timeout_seconds=2, max_retries=0)]
        yield arena_open(benchmark=tiny_benchmark, systems=systems)


def _battle(arena):
    battle = battle_start(arena=arena, session_key="sess-1", rng=random.Random(1))
    battle_say(battle=battle, text="Somewhere quiet for seafood?")
    for side in ("a", "b"):
        battle_reply_run(battle_id=battle.pk, index=0, side=side)
    seafood = "a" if battle.system_a.name == "Seafood Bot" else "b"
    return battle, seafood, "b" if seafood == "a" else "a"


def test_a_vote_stores_each_sides_verdict_accepted_item_style_and_timing(arena):
    battle, seafood, noodle = _battle(arena)
    view = battle_view(battle=battle)
    assert [item for item, _ in view.cards[seafood]] == ["r1", "r2"]
    assert [item for item, _ in view.cards[noodle]] == ["r2"]
    vote = battle_vote(battle=battle, outcome=seafood,
                       satisfaction={seafood: "satisfied", noodle: "frustrated"},
                       accepted={seafood: "r2", noodle: ""})
    vote.refresh_from_db()
    assert getattr(vote, f"satisfaction_{seafood}") == "satisfied"
    assert getattr(vote, f"satisfaction_{noodle}") == "frustrated"
    assert (getattr(vote, f"accepted_item_{seafood}"), getattr(vote, f"accepted_item_{noodle}")) \
        == ("r2", "")
    # 'Harbor Grill is quiet. "Lovely view" [R1]': 7 words (\w+: R1 counts), 2 cards, 1 label
    assert vote.style[seafood] == {"length": 7.0, "items": 2.0, "citations": 1.0}
    assert vote.style[noodle] == {"length": 4.0, "items": 1.0, "citations": 0.0}
    assert vote.words_shown == 11
    assert 0 <= vote.seconds_to_vote < 60
    assert vote.session_ref == hashlib.sha256(b"sess-1").hexdigest()[:32]
    after = battle_view(battle=battle)
    labels = dict((label, (verdict, item)) for label, verdict, item in after.reveal["signals"])
    assert labels[f"System {seafood.upper()}"][0] == "Satisfied"


@pytest.mark.parametrize("satisfaction, accepted, message", [
    ({"a": "happy"}, {}, "unknown verdict 'happy' for System A"),
    ({}, {"a": "nope"}, "System A did not show the item 'nope'"),
])
def test_a_bad_signal_is_refused_and_nothing_is_stored(arena, satisfaction, accepted, message):
    battle, _, _ = _battle(arena)
    with pytest.raises(ValidationError, match=message):
        battle_vote(battle=battle, outcome="a", satisfaction=satisfaction, accepted=accepted)
    battle.refresh_from_db()
    assert battle.status == "open" and not Vote.objects.exists()


def test_an_item_the_other_side_showed_cannot_be_accepted_for_this_side(arena):
    battle, seafood, noodle = _battle(arena)
    with pytest.raises(ValidationError, match=f"System {noodle.upper()} did not show"):
        battle_vote(battle=battle, outcome="a", accepted={noodle: "r1"})


def test_the_signals_are_optional(arena):
    battle, _, _ = _battle(arena)
    vote = battle_vote(battle=battle, outcome="tie")
    assert (vote.satisfaction_a, vote.satisfaction_b, vote.accepted_item_a) == ("", "", "")
