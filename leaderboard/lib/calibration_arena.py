"""The arena's calibration cases of ``bench_calibration`` (leaderboard/lib/calibration.py):
Elo and Bradley–Terry interval coverage on simulated arenas, the style coefficient's coverage
(evaluation/lib/stats/arena_style.py) and the votes adaptive pairing saves
(evaluation/lib/stats/arena_pairing.py). Pure: no Django."""

from __future__ import annotations

import math
from functools import lru_cache

import numpy as np
from scipy import special

from evaluation.lib.stats import arena, arena_pairing, arena_style

# Arena: ARENA_SYSTEMS systems whose true ratings are evenly spaced from 880 to 1120 Elo (the best
# beats the worst 80% of the time), votes in uniformly random pairs, ARENA_TIE_SHARE ties (as
# ``arena.simulated_votes`` draws them), ARENA_VOTES_PER_COLUMN × the column's count votes
# (100, 300, 1,000: CRS Arena had 9 systems and a few hundred votes).
ARENA_SYSTEMS = 9
ARENA_ELO_SPREAD = 120.0
ARENA_TIE_SHARE = 0.1
ARENA_VOTES_PER_COLUMN = 10
ARENA_ELO_TARGET_ARENAS = 4000  # simulated arenas averaged for the expected Elo (MC error ~0.5)


# The wide design: the same 9 systems spread from 700 to 1300 (the best beats the worst 97% of
# the time), where skipped resamples made the percentile interval too short at 100 votes.
ARENA_WIDE_ELO_SPREAD = 300.0


def arena_strengths(spread: float = ARENA_ELO_SPREAD) -> np.ndarray:
    """The systems' natural-log Bradley–Terry strengths θ (Elo = 1000 + 400 θ / ln 10)."""
    elo = np.linspace(-spread, spread, ARENA_SYSTEMS)
    return elo * math.log(arena.ELO_BASE) / arena.ELO_SCALE


def _arena_votes(rng, votes: int, spread: float = ARENA_ELO_SPREAD):
    return arena.simulated_votes(votes, ARENA_SYSTEMS, tie_share=ARENA_TIE_SHARE,
                                 strengths=arena_strengths(spread), rng=rng)


@lru_cache(maxsize=4)
def true_bradley_terry(spread: float = ARENA_ELO_SPREAD) -> dict[str, float]:
    """The population Bradley–Terry ratings the fit estimates: the fit on the expected win
    table. Every pair is equally likely and i scores (1 − τ) expit(θ_i − θ_j) + τ/2 against j
    on average (τ the tie share, a tie half a win), so the target is the maximum of the expected
    likelihood; with ties it is a little closer to 1000 than the strengths themselves."""
    theta = arena_strengths(spread)
    expected = ((1.0 - ARENA_TIE_SHARE) * special.expit(theta[:, None] - theta[None, :])
                + ARENA_TIE_SHARE / 2.0)
    np.fill_diagonal(expected, 0.0)
    fitted = arena.fit_bradley_terry(expected, tolerance=1e-12)
    ratings = arena.ELO_INITIAL + arena.ELO_SCALE * fitted / math.log(arena.ELO_BASE)
    return {f"system-{s:03d}": float(r) for s, r in enumerate(ratings)}


@lru_cache(maxsize=8)
def expected_elo(votes: int) -> dict[str, float]:
    """The expected online Elo after VOTES votes of the design (CRS Arena's K = 16, start 1000):
    the mean over ``ARENA_ELO_TARGET_ARENAS`` seeded simulated arenas. It depends on the number
    of votes (Elo starts at 1000 and moves by at most K per vote), so it is a target only for
    this design, not a property of the systems."""
    rng = np.random.default_rng(7)
    names = [f"system-{s:03d}" for s in range(ARENA_SYSTEMS)]
    total = np.zeros(ARENA_SYSTEMS)
    for _ in range(ARENA_ELO_TARGET_ARENAS):
        ratings = arena.elo_ratings(_arena_votes(rng, votes))
        total += [ratings.get(name, arena.ELO_INITIAL) for name in names]
    return dict(zip(names, (total / ARENA_ELO_TARGET_ARENAS).tolist(), strict=True))


def arena_coverage(rng, count: int, method: str) -> float | None:
    """Share of the arena's systems whose 95% interval (``arena_table``, as the page computes
    it) covers the target; None when the page shows no intervals (no ratings, or too few
    votes for an interval). METHOD "bt_wide" is Bradley–Terry on the wide design."""
    votes = ARENA_VOTES_PER_COLUMN * count
    spread = ARENA_WIDE_ELO_SPREAD if method == "bt_wide" else ARENA_ELO_SPREAD
    fitted = "bt" if method == "bt_wide" else method
    table = arena.arena_table(_arena_votes(rng, votes, spread), method=fitted)
    truth = true_bradley_terry(spread) if fitted == "bt" else expected_elo(votes)
    covered = [row.ci_low <= truth[row.system] <= row.ci_high for row in table.rows
               if row.ci_low is not None]
    return float(np.mean(covered)) if covered else None


# Style control (docs/arena.md, "Style control"): 4 systems, a known length effect, 40 votes
# per dialogue-count column; the check is whether the length coefficient's 95% Wald
# (sandwich) interval covers it.
STYLE_STRENGTHS = (0.0, 0.4, -0.3, 0.8)
STYLE_EFFECT = 0.5
STYLE_VOTES_PER_COLUMN = 40
# Adaptive pairing (docs/arena.md, "Adaptive pairing"): votes until the true top 3 is stable,
# adaptive over uniform, on 6 systems 0.25 apart in log-strength; one simulated arena per 50
# reps (each runs a bootstrap per batch of 25 votes), at the first dialogue count only.
ADAPTIVE_STRENGTHS = (0.0, 0.25, 0.5, 0.75, 1.0, 1.25)
ADAPTIVE_REPS_PER_ARENA = 50


def style_coverage(rng, count: int) -> bool | None:
    """Whether the length coefficient's interval covers the true effect; None if no fit."""
    votes = arena_style.simulated_styled_votes(
        STYLE_VOTES_PER_COLUMN * count, STYLE_STRENGTHS, STYLE_EFFECT,
        seed=int(rng.integers(2 ** 31)))
    table = arena_style.style_controlled_ratings(votes, features=["length"])
    coefficient = table.coefficients[0] if table.coefficients else None
    if coefficient is None or coefficient.ci_low is None:
        return None
    return coefficient.ci_low <= STYLE_EFFECT <= coefficient.ci_high


def adaptive_votes_ratio(reps: int, seed: int) -> tuple[float, float, float]:
    """(mean votes adaptive / mean votes uniform, mean adaptive, mean uniform) over
    max(2, REPS // ADAPTIVE_REPS_PER_ARENA) simulated arenas per way of pairing."""
    arenas = max(2, reps // ADAPTIVE_REPS_PER_ARENA)
    means = [float(np.mean([arena_pairing.simulate_votes_until_stable(
        ADAPTIVE_STRENGTHS, adaptive=adaptive, seed=seed + k) for k in range(arenas)]))
        for adaptive in (True, False)]
    return means[0] / means[1], means[0], means[1]
