"""battle_start's adaptive pairing (docs/arena.md, "Adaptive pairing"): once the arena's counted
votes give Bradley–Terry ratings, pairs are drawn with `pair_probabilities`; before, the
least-battled pair."""

import random
from collections import Counter

import numpy as np
import pytest

from evaluation.lib.stats.arena_pairing import pair_probabilities
from evaluation.models import Battle, System, Vote
from evaluation.services.arena import _pair_counts, arena_open, battle_start, pair_choose

# (winner index, loser index, times): a clear order 0 > 1 > 2 > 3, 0 and 1 close
RESULTS = [(0, 1, 6), (1, 0, 5), (0, 2, 9), (2, 0, 2), (0, 3, 10), (3, 0, 1), (1, 2, 8),
           (2, 1, 3), (1, 3, 9), (3, 1, 2), (2, 3, 7), (3, 2, 4)]


@pytest.fixture
def voted(tiny_benchmark):
    systems = [System.objects.create(slug=f"s{n}", name=f"S{n}", live_kind="http",
                                     live_endpoint=f"http://127.0.0.1:9/{n}") for n in range(4)]
    arena = arena_open(benchmark=tiny_benchmark, systems=systems)
    position = 0
    for winner, loser, times in RESULTS:
        for _ in range(times):
            position += 1
            Vote.objects.create(arena=arena, system_a=systems[winner], system_b=systems[loser],
                                outcome="a", position=position)
    # votes the ratings leave out do not move the pairing
    Vote.objects.create(arena=arena, system_a=systems[3], system_b=systems[0], outcome="a",
                        position=position + 1, excluded_reason="owner")
    return arena, systems


def test_the_win_matrix_counts_counted_votes_only(voted):
    arena, systems = voted
    counts, wins = _pair_counts(arena, systems)
    expected = np.zeros((4, 4))
    for winner, loser, times in RESULTS:
        expected[winner, loser] += times
    assert np.array_equal(wins, expected)
    assert counts[frozenset((systems[0].pk, systems[3].pk))] == 12  # 11 counted + 1 left out


def test_pairs_are_drawn_with_the_pair_probabilities(voted):
    arena, systems = voted
    counts, wins = _pair_counts(arena, systems)
    expected = pair_probabilities(wins)
    rng = random.Random(5)
    n = 20_000
    drawn = Counter()
    sides = Counter()
    for _ in range(n):
        a, b = pair_choose(systems, counts, rng, wins)
        i, j = sorted((systems.index(a), systems.index(b)))
        drawn[(i, j)] += 1
        sides[a.pk < b.pk] += 1
    for pair, probability in expected.items():
        assert drawn[pair] / n == pytest.approx(probability, abs=4 * (0.25 / n) ** 0.5)
    assert expected[(0, 1)] == max(expected.values())  # the unsettled top pair most often
    assert sides[True] / n == pytest.approx(0.5, abs=0.02)


def test_battle_start_draws_adaptively(voted):
    arena, systems = voted
    pairs = Counter(frozenset((b.system_a_id, b.system_b_id))
                    for b in (battle_start(arena=arena, session_key=f"k{n}",
                                           rng=random.Random(n)) for n in range(60)))
    top = frozenset((systems[0].pk, systems[1].pk))
    assert pairs[top] == max(pairs.values()) and pairs[top] >= 15
    assert Battle.objects.filter(status="open").count() == 60
