"""No interval from too little data (issue 30.7): a system with fewer than
MIN_VOTES_FOR_INTERVAL votes gets no rating interval and no rank interval, with the reason."""

import pytest

from evaluation.lib.stats import arena
from evaluation.lib.stats.arena import MIN_VOTES_FOR_INTERVAL, arena_table
from evaluation.lib.stats.methods import METHOD_DESCRIPTIONS


@pytest.mark.parametrize("method", ["elo", "bt"])
def test_one_vote_gives_a_rating_but_no_interval_and_no_rank_interval(method):
    table = arena_table([("A", "B", "a")], method=method, n_resamples=200)
    if method == "bt":  # one win has no maximum-likelihood rating at all
        assert all(row.rating is None for row in table.rows)
        return
    top = table.rows[0]
    assert (top.system, top.rating) == ("A", 1008.0)  # the "1008.0 [1008.0, 1008.0]"
    for row in table.rows:
        assert row.ci_low is row.ci_high is None
        assert row.rank_low is row.rank_high is None
        assert row.ci_note == "too few votes for an interval: 1 of the 10 a system needs"
    estimate = arena.elo_with_ci([("A", "B", "a")], n_resamples=200)["A"]
    assert estimate.value == 1008.0 and estimate.ci_low is None
    assert estimate.params["ci_note"].startswith("too few votes for an interval: 1 of")


def test_only_the_systems_below_the_floor_lose_their_interval():
    # A and B meet 12 times; C plays A once.
    votes = [("A", "B", "a"), ("B", "A", "a"), ("A", "B", "tie"), ("A", "B", "a")] * 3
    votes.append(("C", "A", "b"))
    table = arena_table(votes, method="elo", n_resamples=300)
    by_system = {row.system: row for row in table.rows}
    assert by_system["A"].votes == 13 and by_system["B"].votes == 12
    for system in "AB":
        row = by_system[system]
        assert row.ci_low < row.rating < row.ci_high and row.rank_low is not None
        assert row.ci_note is None
    c = by_system["C"]
    assert c.votes == 1 and c.rating is not None and c.rank is not None
    assert c.ci_low is None and c.rank_low is None and "1 of the 10" in c.ci_note


def test_at_the_floor_the_interval_is_shown():
    votes = [("A", "B", "a"), ("B", "A", "a")] * (MIN_VOTES_FOR_INTERVAL // 2)
    table = arena_table(votes, method="elo", n_resamples=200)
    assert all(row.votes == MIN_VOTES_FOR_INTERVAL for row in table.rows)
    assert all(row.ci_low is not None and row.rank_low is not None for row in table.rows)


def test_the_floor_is_in_the_method_texts():
    for method in ("elo", "bradley_terry"):
        assert f"fewer than {MIN_VOTES_FOR_INTERVAL} votes" in METHOD_DESCRIPTIONS[method]
