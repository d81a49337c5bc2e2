"""A CRS arena's additions to the ratings (leaderboard/selectors/arena_crs.py): satisfaction and
acceptance rates, style control, vote quality, facets and stability — each checked against the
pure module run on the same votes, through the page, the exports, the API and arena_ratings."""

import csv
import io
import json
import uuid

import pytest
from django.core.management import call_command
from django.urls import reverse

from evaluation.lib.arena_signals import wilson_interval
from evaluation.lib.stats.arena import arena_table
from evaluation.lib.stats.arena_style import simulated_styled_votes, style_controlled_ratings
from evaluation.models import Battle, Vote
from evaluation.services.arena import arena_import_votes
from evaluation.services.submissions import system_create
from leaderboard.selectors.arenas import arena_board


@pytest.fixture
def styled_arena(tiny_benchmark, researcher):
    simulated = simulated_styled_votes(240, [0.8, 0.3, 0.0, -0.5], 0.7, seed=3)
    made = {}
    arena = arena_import_votes(
        benchmark=tiny_benchmark,
        votes=[{"system_a": v.system_a, "system_b": v.system_b, "outcome": v.outcome}
               for v in simulated],
        system_for=lambda name: made.setdefault(name, system_create(name=name, owner=researcher)))
    votes = list(arena.votes.order_by("position"))
    for index, (vote, sim) in enumerate(zip(votes, simulated, strict=True)):
        vote.style = {"a": {"length": sim.style_a["length"], "items": 0, "citations": 0},
                      "b": {"length": sim.style_b["length"], "items": 0, "citations": 0}}
        vote.session_ref, vote.seconds_to_vote, vote.words_shown = f"s{index}", 60.0, 50
        if index < 12:  # battle votes: satisfaction and acceptance asked
            vote.battle = Battle.objects.create(
                uuid=uuid.uuid4(), arena=arena, system_a_id=vote.system_a_id,
                system_b_id=vote.system_b_id, session_key="k", status="voted",
                scenario={"difficulty": "easy" if index % 2 else "hard", "rejections": index % 3})
            vote.satisfaction_a = "satisfied" if index % 3 else "frustrated"
            vote.accepted_item_a = "r1" if index % 4 == 0 else ""
        if index < 4:
            vote.seconds_to_vote = 0.5  # 50 words in half a second: too fast
        vote.save()
    return arena, simulated, made


def test_the_board_matches_the_pure_modules_on_the_same_votes(styled_arena):
    arena, simulated, made = styled_arena
    board = arena_board(arena, method="bt", n_resamples=100)
    ids = {name: system.pk for name, system in made.items()}
    reference = style_controlled_ratings(
        [type(v)(ids[v.system_a], ids[v.system_b], v.outcome,
                 {"length": v.style_a["length"], "items": 0, "citations": 0},
                 {"length": v.style_b["length"], "items": 0, "citations": 0}) for v in simulated])
    coefficients = {c.feature: c for c in board.crs.style.coefficients}
    assert coefficients["length"].coefficient == pytest.approx(
        reference.coefficients[0].coefficient)
    assert coefficients["length"].ci_low == pytest.approx(reference.coefficients[0].ci_low)
    assert coefficients["items"].note and coefficients["items"].coefficient is None
    rows = {row["slug"]: row for row in board.rows}
    for styled in reference.rows:
        row = next(r for r in rows.values() if made[r["system"]].pk == styled.system)
        assert row["style_rating"] == pytest.approx(styled.rating)
        assert row["style_rank"] == styled.rank
    # too fast: the first 4 votes; the ratings without them are the same method's on the rest
    assert board.crs.flag_counts == {"too_fast": 4, "same_side": 0, "owner": 0}
    kept = arena_table([(ids[v.system_a], ids[v.system_b], v.outcome) for v in simulated[4:]],
                       method="bt", n_resamples=10)
    for line in kept.rows:
        row = next(r for r in rows.values() if made[r["system"]].pk == line.system)
        assert row["rating_unflagged"] == pytest.approx(line.rating)
        assert row["rating_ability_weighted"] is not None
    # satisfaction / acceptance: side A of the 12 battle votes only, Wilson
    battle_votes = list(Vote.objects.filter(battle__isnull=False).select_related("system_a"))
    for system in {v.system_a for v in battle_votes}:
        mine = [v for v in battle_votes if v.system_a_id == system.pk]
        happy = sum(v.satisfaction_a == "satisfied" for v in mine)
        row = rows[system.slug]
        assert row["satisfaction_n"] == len(mine)
        assert (row["satisfaction_ci_low"], row["satisfaction_ci_high"]) == pytest.approx(
            wilson_interval(happy, len(mine)), abs=1e-4)
        sides = sum(1 for v in battle_votes if system.pk in (v.system_a_id, v.system_b_id))
        assert row["acceptance_n"] == sides
    assert set(board.crs.facets) == {"difficulty", "rejections"}
    assert board.table.top_k_stable_share is not None


def test_the_page_exports_api_and_command_report_them(client, styled_arena):
    arena, _, _ = styled_arena
    page = client.get(reverse("leaderboard:arena_ratings", args=[arena.slug]) + "?method=bt")
    text = page.content.decode()
    assert page.status_code == 200
    for words in ("Satisfied", "Wilson", "Style control", "answer length (words)",
                  "Vote quality", "too fast", "Ability-weighted", "Top 3", "difficulty tier"):
        assert words in text, words
    api = client.get(reverse("leaderboard:api_arena_ratings", args=[arena.slug]),
                     {"method": "bt"}).json()
    assert api["style_control"]["coefficients"][0]["feature"] == "length"
    assert api["stability"]["k"] == 3 and "share" in api["stability"]
    assert {"satisfaction_rate", "acceptance_ci_high", "style_rating"} <= set(api["systems"][0])
    exported = client.get(reverse("leaderboard:arena_ratings_export", args=[arena.slug, "csv"]),
                          {"method": "bt"}).content.decode()
    header = next(csv.reader(io.StringIO(exported)))
    assert {"satisfaction_rate", "satisfaction_ci_low", "acceptance_rate", "style_rating",
            "rating_unflagged", "rating_ability_weighted"} <= set(header)
    out = io.StringIO()
    call_command("arena_ratings", arena.slug, "--method", "bt", "--json", "--resamples", "50",
                 stdout=out)
    printed = json.loads(out.getvalue())
    board = arena_board(arena, method="bt", n_resamples=50)
    assert printed["style_control"]["coefficients"][0]["ci_low"] == pytest.approx(
        board.crs.style.coefficients[0].ci_low)
    assert printed["rates_method"] == "Wilson score interval, 95%"
    out = io.StringIO()
    call_command("arena_ratings", arena.slug, "--method", "bt", "--resamples", "50", stdout=out)
    assert "Style control" in out.getvalue() and "satisfied" in out.getvalue()


def test_crs_arenas_imported_votes_carry_the_conversations_sentiment(db, staff, tmp_path):
    from tests.leaderboard.test_arena_ratings import CLOSED, OPEN, _conversation, _write

    (tmp_path / "crs_arena_dial_open.json").write_text(json.dumps(
        [_conversation(), _conversation("barcor_redial_u2", "frustrated"),
         _conversation("kbrd_redial_p2", "frustrated")]))
    _write(tmp_path / "votes_open.csv", OPEN)
    _write(tmp_path / "votes_closed.csv", CLOSED)
    call_command("import_public", "crs_arena_dial", str(tmp_path), stdout=io.StringIO())
    votes = list(Vote.objects.order_by("position").values_list(
        "voter_ref", "satisfaction_a", "satisfaction_b", "session_ref"))
    assert votes[0] == ("u1", "satisfied", "", "1")  # kbrd_redial_u1
    assert votes[1] == ("u2", "frustrated", "", "2")  # barcor_redial_u2
    assert votes[4] == ("p2", "", "frustrated", "5")  # crs2 = kbrd_redial, user p2
    board = arena_board(Vote.objects.first().arena, method="elo", n_resamples=20)
    kbrd = next(row for row in board.rows if row["system"] == "kbrd_redial")
    assert (kbrd["satisfaction_rate"], kbrd["satisfaction_n"]) == (0.5, 2)
    assert kbrd["acceptance_n"] == 0  # CRS Arena records no accepted item
