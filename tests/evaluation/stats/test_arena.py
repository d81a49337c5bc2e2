"""Arena ratings: online Elo and Bradley–Terry, with bootstrap CIs over votes."""

import io
import json
import math

import numpy as np
import pytest

from evaluation.lib.stats.arena import (
    bradley_terry_ratings,
    bradley_terry_with_ci,
    elo_ratings,
    elo_with_ci,
    fit_bradley_terry,
)


def test_elo_two_votes_by_hand():
    ratings = elo_ratings([("A", "B", "a"), ("A", "B", "tie")])
    # Vote 1: E_A = ½, A gains 16·½ = 8 → 1008 / 992.
    # Vote 2: E_A = 1 / (1 + 10^(−16/400)), A gains 16·(½ − E_A) (a small loss).
    expected_a = 1 / (1 + 10 ** (-16 / 400))
    assert ratings["A"] == pytest.approx(1008 + 16 * (0.5 - expected_a))
    assert ratings["B"] == pytest.approx(992 - 16 * (0.5 - expected_a))
    assert ratings["A"] == pytest.approx(1007.632, abs=1e-3)


def test_elo_depends_on_vote_order_and_keeps_the_rating_total():
    votes = [("A", "B", "a"), ("B", "C", "b"), ("C", "A", "tie"), ("A", "C", "B")]
    forward, backward = elo_ratings(votes), elo_ratings(votes[::-1])
    assert forward != backward
    assert sum(forward.values()) == pytest.approx(3000)


def test_elo_rejects_bad_votes():
    with pytest.raises(ValueError):
        elo_ratings([("A", "A", "a")])
    with pytest.raises(ValueError):
        elo_ratings([("A", "B", "draw")])


def test_bradley_terry_two_wins_to_one_by_hand():
    ratings = bradley_terry_ratings([("A", "B", "a"), ("A", "B", "a"), ("B", "A", "a")])
    # MLE: P(A beats B) = 2/3, so the strengths are 2 : 1 → 400·log10(2) apart around 1000.
    assert ratings["A"] == pytest.approx(1000 + 200 * math.log10(2))
    assert ratings["B"] == pytest.approx(1000 - 200 * math.log10(2))


def test_bradley_terry_counts_ties_as_half_wins():
    ratings = bradley_terry_ratings([("A", "B", "tie"), ("B", "A", "tie")])
    assert ratings == {"A": pytest.approx(1000), "B": pytest.approx(1000)}
    lopsided = bradley_terry_ratings([("A", "B", "a"), ("A", "B", "tie")])
    # A scored 1.5 of 2 → P = 3/4 → strengths 3 : 1.
    assert lopsided["A"] - lopsided["B"] == pytest.approx(400 * math.log10(3))


def test_bradley_terry_is_undefined_when_a_system_never_wins():
    estimates = bradley_terry_with_ci([("A", "B", "a"), ("A", "B", "a")])
    assert estimates["B"].value is None
    assert "unbounded" in estimates["B"].undefined_reason
    assert bradley_terry_ratings([("A", "B", "a")]) is None


def _simulated_votes(n_votes=600, seed=0):
    rng = np.random.default_rng(seed)
    strength = {"A": 1.0, "B": 0.0, "C": -1.0}
    names = list(strength)
    votes = []
    for _ in range(n_votes):
        a, b = rng.choice(names, size=2, replace=False)
        p = 1 / (1 + math.exp(strength[b] - strength[a]))
        votes.append((a, b, "a" if rng.random() < p else "b"))
    return votes


def test_bradley_terry_solves_the_likelihood_equations():
    votes = _simulated_votes()
    names = sorted({v[0] for v in votes} | {v[1] for v in votes})
    index = {name: i for i, name in enumerate(names)}
    wins = np.zeros((3, 3))
    for a, b, outcome in votes:
        winner, loser = (a, b) if outcome == "a" else (b, a)
        wins[index[winner], index[loser]] += 1
    theta = fit_bradley_terry(wins)
    probability = 1 / (1 + np.exp(theta[None, :] - theta[:, None]))
    expected_wins = ((wins + wins.T) * probability).sum(axis=1)
    assert expected_wins == pytest.approx(wins.sum(axis=1))
    assert theta.mean() == pytest.approx(0)


def test_arena_cis_order_the_systems_and_report_vote_counts():
    votes = _simulated_votes()
    for estimates in (elo_with_ci(votes, n_resamples=200), bradley_terry_with_ci(votes)):
        a, c = estimates["A"], estimates["C"]
        assert a.ci_low <= a.value <= a.ci_high
        assert a.ci_low > c.ci_high
        assert a.n["votes"] == a.n["wins"] + a.n["losses"] + a.n["ties"]
    bt = bradley_terry_with_ci(votes)
    assert bt["A"].params["valid_resamples"] == 1000
    assert bt == bradley_terry_with_ci(votes)


# --- both_bad, anchors, the table, against scikit-learn, bootstrap machinery, coverage ---------

from sklearn.linear_model import LogisticRegression  # noqa: E402

from evaluation.lib.stats import arena  # noqa: E402


def test_both_bad_counts_as_a_tie():
    votes = [("A", "B", "a"), ("B", "C", "tie"), ("A", "C", "b")]
    with_both_bad = [("A", "B", "a"), ("B", "C", "both_bad"), ("A", "C", "b")]
    assert elo_ratings(with_both_bad) == elo_ratings(votes)
    assert bradley_terry_ratings(with_both_bad) == pytest.approx(bradley_terry_ratings(votes))


def test_elo_three_systems_by_hand():
    # 1: A beats B (both 1000) → A 1008, B 992.
    # 2: C beats A: E_C = 1 / (1 + 10^((1008 − 1000) / 400)) → C gains 16 (1 − E_C).
    # 3: B and C tie.
    ratings = elo_ratings([("A", "B", "a"), ("C", "A", "a"), ("B", "C", "tie")])
    a, b, c = 1008.0, 992.0, 1000.0
    gain = 16 * (1 - 1 / (1 + 10 ** ((a - c) / 400)))
    c, a = c + gain, a - gain
    change = 16 * (0.5 - 1 / (1 + 10 ** ((c - b) / 400)))
    b, c = b + change, c - change
    assert ratings == {"A": pytest.approx(a, abs=1e-12), "B": pytest.approx(b, abs=1e-12),
                       "C": pytest.approx(c, abs=1e-12)}
    assert a == pytest.approx(999.8158, abs=1e-4)  # 1008 − 16 · (1 − 1 / (1 + 10^(−8/400)))


def _chatbot_arena_design(votes, names):
    """Chatbot Arena's `compute_mle_elo` design: per ordered pair two rows (a won / a lost),
    weighted by 2·wins + ties, columns ±ln 10, no intercept, no penalty."""
    index = {name: i for i, name in enumerate(names)}
    size = len(names)
    table = np.zeros((size, size))
    for a, b, outcome in votes:
        i, j = index[a], index[b]
        if outcome == "a":
            table[i, j] += 2
        elif outcome == "b":
            table[j, i] += 2
        else:
            table[i, j] += 1
            table[j, i] += 1
    rows, labels, weights = [], [], []
    for i in range(size):
        for j in range(size):
            if i == j or table[i, j] + table[j, i] == 0:
                continue
            x = np.zeros(size)
            x[i], x[j] = math.log(10), -math.log(10)
            rows += [x, x]
            labels += [1, 0]
            weights += [table[i, j], table[j, i]]
    return np.array(rows), np.array(labels), np.array(weights)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_bradley_terry_matches_scikit_learn_on_chatbot_arenas_design(seed):
    rng = np.random.default_rng(seed)
    names = ["A", "B", "C", "D", "E"]
    strength = dict(zip(names, rng.normal(0, 0.8, len(names)), strict=True))
    votes = []
    for _ in range(400):
        a, b = rng.choice(names, size=2, replace=False)
        p = 1 / (1 + math.exp(strength[b] - strength[a]))
        u = rng.random()
        votes.append((a, b, "tie" if u < 0.15 else "both_bad" if u < 0.2
                      else "a" if rng.random() < p else "b"))
    x, y, w = _chatbot_arena_design(votes, names)
    # Chatbot Arena uses lbfgs (tol 1e-6); newton-cg solves the same unpenalized problem to
    # 1e-12 so the comparison can be tight. Both start at zero and move only in the sum-zero
    # subspace (every row of the design sums to zero), so the mean rating stays 1000.
    model = LogisticRegression(fit_intercept=False, C=np.inf, solver="newton-cg", tol=1e-12,
                               max_iter=10_000)
    model.fit(x, y, sample_weight=w)
    reference = 1000 + 400 * model.coef_[0]
    assert reference.mean() == pytest.approx(1000, abs=1e-9)
    ours = bradley_terry_ratings(votes)
    assert [ours[name] for name in names] == pytest.approx(reference.tolist(), abs=1e-6)


def test_bradley_terry_anchor_pins_one_system():
    votes = [("A", "B", "a"), ("A", "B", "a"), ("B", "A", "a"), ("B", "C", "a"), ("C", "B", "a")]
    centred = bradley_terry_ratings(votes)
    anchored = bradley_terry_ratings(votes, anchor=("B", 1114.0))
    assert anchored["B"] == pytest.approx(1114.0)
    assert anchored["A"] - anchored["C"] == pytest.approx(centred["A"] - centred["C"])
    with pytest.raises(ValueError):
        bradley_terry_ratings(votes, anchor=("Z", 1000.0))


def test_the_batched_bootstrap_fit_equals_the_line_searched_fit_per_replicate():
    votes = _simulated_votes(n_votes=120, seed=3)
    encoded = arena._encode(votes)
    start = fit_bradley_terry(arena._win_matrix(encoded, np.arange(len(votes))))
    wins = arena._bt_replicate_wins(encoded, n_resamples=40, seed=5)
    batch = arena.fit_bradley_terry_batch(wins, start)
    for replicate, matrix in enumerate(wins):
        single = fit_bradley_terry(matrix)
        if single is None:
            assert np.isnan(batch[replicate]).all()
        else:
            assert batch[replicate] == pytest.approx(single, abs=1e-8)
    # The multinomial over cells draws N votes: every replicate holds exactly N games.
    assert (wins.sum(axis=(1, 2)) == len(votes)).all()


def test_sorted_draws_are_sorted_resamples_with_replacement():
    n, replicates = 500, 400
    draws = np.concatenate(list(arena._sorted_draws(n, replicates, np.random.default_rng(1),
                                                     block=64)), axis=1).T
    assert draws.shape == (n, replicates)
    assert (np.diff(draws, axis=0) >= 0).all() and draws.min() >= 0 and draws.max() < n
    counts = np.stack([np.bincount(draws[:, r], minlength=n) for r in range(replicates)])
    # Multinomial(n, 1/n): each index drawn once on average, variance 1 − 1/n.
    assert counts.mean() == pytest.approx(1.0)
    assert counts.var() == pytest.approx(1 - 1 / n, rel=0.05)
    assert (counts == 0).mean() == pytest.approx((1 - 1 / n) ** n, abs=0.01)


def test_each_elo_replicate_is_online_elo_on_its_drawn_votes_in_cast_order():
    votes = _simulated_votes(n_votes=150, seed=4)
    encoded = arena._encode(votes)
    options = {"k": 16.0, "base": 10.0, "scale": 400.0, "initial": 1000.0}
    replicates = arena._elo_replicates(encoded, n_resamples=5, seed=9, **options)
    draws = np.concatenate(list(arena._sorted_draws(len(votes), 5, np.random.default_rng(9))),
                           axis=1)
    for r in range(5):
        drawn = [votes[d] for d in draws[r]]
        expected = {name: 1000.0 for name in encoded.names} | elo_ratings(drawn)
        assert replicates[r] == pytest.approx([expected[n] for n in encoded.names], abs=1e-9)


def _elo_replicates_in_python(votes, *, n_resamples, seed, block):
    """The Elo bootstrap in plain Python floats, as docs/statistics.md defines it: each
    replicate's sorted draws by Rényi's representation from the same exponentials, CRS Arena's
    update (K = 16, base 10, scale 400) applied to the drawn votes in cast order."""
    names = sorted({v[0] for v in votes} | {v[1] for v in votes})
    first = [names.index(v[0]) for v in votes]
    second = [names.index(v[1]) for v in votes]
    score = [{"a": 1.0, "b": 0.0, "tie": 0.5, "both_bad": 0.5}[v[2]] for v in votes]
    n, rng = len(votes), np.random.default_rng(seed)
    step = 16.0 * math.log(10.0) / 400.0
    theta = [[0.0] * len(names) for _ in range(n_resamples)]
    totals = [0.0] * n_resamples
    for start in range(0, n, block):
        spacing = rng.standard_exponential((n_resamples, min(block, n - start))).tolist()
        for r, row in enumerate(theta):
            for t, exponential in enumerate(spacing[r]):
                totals[r] += exponential * (1.0 / (n - (start + t)))
                vote = min(int(-math.expm1(-totals[r]) * n), n - 1)
                i, j = first[vote], second[vote]
                change = score[vote] * step - step / (1.0 + math.exp(row[j] - row[i]))
                row[i] += change
                row[j] -= change
    return names, [[1000.0 + x * (400.0 / math.log(10.0)) for x in row] for row in theta]


@pytest.mark.parametrize("threads", [1, 3])
def test_the_compiled_elo_bootstrap_equals_plain_python_to_the_last_bit(threads):
    votes = _simulated_votes(n_votes=60, seed=11)
    encoded = arena._encode(votes)
    options = {"k": 16.0, "base": 10.0, "scale": 400.0, "initial": 1000.0}
    compiled = arena._elo_replicates(encoded, n_resamples=7, seed=5, threads=threads, block=16,
                                     **options)
    names, expected = _elo_replicates_in_python(votes, n_resamples=7, seed=5, block=16)
    assert list(encoded.names) == names
    assert compiled.tolist() == expected  # exactly: the threads change nothing


def test_arena_table_ranks_rank_intervals_and_win_rates():
    votes = _simulated_votes(n_votes=900, seed=6)
    for method in ("elo", "bt"):
        table = arena.arena_table(votes, method=method, n_resamples=300)
        assert [row.system for row in table.rows] == ["A", "B", "C"]
        assert [row.rank for row in table.rows] == [1, 2, 3]
        assert all(row.rank_low <= row.rank <= row.rank_high for row in table.rows)
        assert (table.rows[0].rank_low, table.rows[0].rank_high) == (1, 1)
        assert table.valid_resamples == 300
        assert set(table.ratings()) == {"A", "B", "C"}
    small = arena.arena_table([("A", "B", "a"), ("B", "A", "tie"), ("B", "C", "b")],
                              method="bt", n_resamples=10)
    # A vs B: A won 1 of 1 and tied 1 → 1.5 / 2; B vs C: B lost its only game.
    assert small.win_rates == {("A", "B"): 0.75, ("B", "A"): 0.25, ("B", "C"): 0.0,
                               ("C", "B"): 1.0}
    assert small.undefined_reason == arena.NO_MLE
    assert all(row.rating is None and row.rank is None for row in small.rows)
    assert arena.arena_table([], method="elo").rows == []
    with pytest.raises(ValueError):
        arena.arena_table(votes, method="glicko")


def test_bradley_terry_bootstrap_interval_covers_the_true_rating():
    """95% percentile-bootstrap CIs over votes cover the true BT ratings ~95% of the time."""
    rng = np.random.default_rng(11)
    names = ["A", "B", "C", "D"]
    theta = np.array([0.6, 0.2, -0.1, -0.7])
    truth = 1000 + 400 * (theta - theta.mean()) / math.log(10)
    covered, total, hidden = 0, 0, 0
    for simulation in range(2000):
        first = rng.integers(0, 4, 300)
        second = (first + rng.integers(1, 4, 300)) % 4
        won = rng.random(300) < 1 / (1 + np.exp(theta[second] - theta[first]))
        votes = [(names[i], names[j], "a" if w else "b")
                 for i, j, w in zip(first, second, won, strict=True)]
        table = arena.arena_table(votes, method="bt", n_resamples=300, seed=simulation)
        hidden += table.ci_note is not None
        for row in table.rows:
            if row.ci_low is None:  # too few votes for an interval
                continue
            total += 1
            covered += row.ci_low <= truth[names.index(row.system)] <= row.ci_high
    # 8,000 intervals (4 per arena, not independent): a 95% band around 0.95 is about ±0.008.
    # (150 arenas gave 0.923 and 600 gave 0.932: draws that low are what a few hundred arenas
    # give; at 2,000 the design covers 0.943 with B = 300 and 0.946 with B = 1,000.)
    assert hidden < 200 and 0.935 <= covered / total <= 0.965, covered / total


def test_bench_arena_times_both_methods():
    from django.core.management import call_command

    out = io.StringIO()
    call_command("bench_arena", "--votes", "300", "--systems", "5", "--resamples", "20",
                 "--json", stdout=out)
    reports = json.loads(out.getvalue())["reports"]
    assert [r["method"] for r in reports] == ["elo", "bt"]
    assert all(r["valid_resamples"] == 20 and r["wall_seconds"] > 0 for r in reports)


def test_simulated_votes_with_given_strengths_and_generator():
    first = arena.simulated_votes(50, 3, strengths=[0.0, 1.0, -1.0],
                                  rng=np.random.default_rng(8))
    again = arena.simulated_votes(50, 3, strengths=[0.0, 1.0, -1.0],
                                  rng=np.random.default_rng(8))
    assert first == again and len(first) == 50
    assert {v[2] for v in first} <= {"a", "b", "tie"}
    assert all(v[0] != v[1] for v in first)
    with pytest.raises(ValueError, match="strengths"):
        arena.simulated_votes(5, 3, strengths=[0.0, 1.0])


def test_bradley_terry_shows_no_interval_when_many_resamples_have_no_mle():
    # Each pair met twice, one win each way: the MLE exists (all ratings 1000), but most
    # resamples of six votes leave some system without a win or a loss. Skipping them cuts
    # the tails the percentile interval reads, so no interval (statistics.md, "Too few votes
    # for an interval"); the ratings themselves are unchanged.
    from evaluation.lib.stats import arena

    votes = [("A", "B", "a"), ("A", "B", "b"), ("B", "C", "a"), ("B", "C", "b"),
             ("A", "C", "a"), ("A", "C", "b")]
    table = arena.arena_table(votes, method="bt", n_resamples=200)
    assert table.valid_resamples < 0.95 * 200
    assert table.ci_note.startswith("too few votes for an interval")
    assert {row.system: row.rating for row in table.rows} == pytest.approx(
        bradley_terry_ratings(votes))
    assert all(row.ci_low is None and row.rank_low is None for row in table.rows)
    estimate = bradley_terry_with_ci(votes, n_resamples=200)["A"]
    assert estimate.value == pytest.approx(1000.0) and estimate.ci_low is None
    # each system has 4 votes, under the floor for an interval: its own note comes first
    row_note = next(row.ci_note for row in table.rows if row.system == "A")
    assert estimate.params["ci_note"] == (row_note or table.ci_note)
    assert estimate.params["ci_note"].startswith("too few votes")
    # Many votes: every resample has an MLE, intervals are shown.
    many = arena.simulated_votes(2000, 4, seed=3)
    table = arena.arena_table(many, method="bt", n_resamples=200)
    assert table.ci_note is None and all(row.ci_low is not None for row in table.rows)
