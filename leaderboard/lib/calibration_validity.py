"""`bench_calibration`'s simulator-validity case (docs/statistics.md, "Simulator validity"):
the coverage of the 95% interval of Kendall τ_b between a simulated board's ranking and the
arena's Bradley–Terry ranking, or a study's label means per system (`simulator_validity`, what
the simulated board's trust cell and the simulators page show).

Design: VALIDITY_SYSTEMS = 6 systems. Simulated side: each of the column's number of users
gives every system a score μ_s + b_u + e_us with a user effect b_u ~ N(0, 0.5) shared by the
systems (a design's users are the same for every system) and e_us ~ N(0, 0.5); μ_s = 0.25·s.
Human side: 10 votes per user (100, 300, 1,000 votes at 10, 30, 100 users) in random pairs
with 10% ties, Bradley–Terry strengths 60 Elo apart in the order VALIDITY_ORDER, which has 3
discordant pairs of 15 with μ: the population τ_b is 1 − 2·3/15 = 0.6, the target. Spearman
is checked the same way against its population value (1 − 6·Σd²/(n(n² − 1)) = 0.771).
Pure numpy: nothing here imports Django.
"""

from __future__ import annotations

import math

import numpy as np

from evaluation.lib.stats import arena
from evaluation.lib.stats.simulator_validity import simulator_validity

VALIDITY_SYSTEMS = 6
VALIDITY_ORDER = (2, 0, 1, 3, 5, 4)  # the systems' places in the human ranking
VALIDITY_SPACING = 0.25
VALIDITY_ELO_STEP = 60.0
VALIDITY_VOTES_PER_USER = 10
TRUE_TAU_B = 1.0 - 2.0 * 3 / 15
TRUE_SPEARMAN = 1.0 - 6.0 * sum((a - b) ** 2 for a, b in enumerate(VALIDITY_ORDER)) / (
    VALIDITY_SYSTEMS * (VALIDITY_SYSTEMS**2 - 1))
TRUTH = {"kendall_tau_b": TRUE_TAU_B, "spearman": TRUE_SPEARMAN}


def _simulated_scores(rng: np.random.Generator, users: int) -> dict:
    """system -> {user: value}: the simulated side of one study."""
    names = [f"system-{s:03d}" for s in range(VALIDITY_SYSTEMS)]
    effect = rng.normal(0.0, math.sqrt(0.5), users)
    return {name: {f"user-{u:04d}": float(VALIDITY_SPACING * s + effect[u]
                                          + rng.normal(0.0, math.sqrt(0.5)))
                   for u in range(users)} for s, name in enumerate(names)}


def validity_sample(rng: np.random.Generator, users: int):
    """(scores: system -> {user: value}, votes) of one simulated simulator study."""
    scores = _simulated_scores(rng, users)
    strengths = np.array(VALIDITY_ORDER, dtype=float) * VALIDITY_ELO_STEP * math.log(
        arena.ELO_BASE) / arena.ELO_SCALE
    votes = arena.simulated_votes(VALIDITY_VOTES_PER_USER * users, VALIDITY_SYSTEMS,
                                  tie_share=0.1, strengths=strengths, rng=rng)
    return scores, votes


def validity_coverage(rng: np.random.Generator, users: int, method: str) -> bool | None:
    """Whether the interval of METHOD covers its population value; None when undefined."""
    scores, votes = validity_sample(rng, users)
    seed = int(rng.integers(0, 2**31 - 1))
    agreement = simulator_validity(scores, votes=votes, seed=seed).agreements[method]
    if agreement.ci_low is None:
        return None
    return agreement.ci_low <= TRUTH[method] <= agreement.ci_high


# --- the human-labels side (the trust cell's "vs labels" line) -------------------------------

VALIDITY_LABEL_SPACING = 0.5  # Likert points between neighbours in VALIDITY_ORDER
VALIDITY_ANNOTATORS = 3


def validity_label_sample(rng: np.random.Generator, users: int):
    """(scores, labels: system -> [(dialogue, value)]) of one simulated study whose human side
    is a study's labels: each system has USERS labelled dialogues (10, 30, 100), each labelled
    by VALIDITY_ANNOTATORS annotators, value = ν_s + a dialogue effect ~ N(0, 0.5) + the
    annotator's noise ~ N(0, 0.5), ν_s = VALIDITY_LABEL_SPACING · VALIDITY_ORDER[s]: the
    population label means rank the systems as the votes do, so the population τ_b is 0.6."""
    scores = _simulated_scores(rng, users)
    labels = {}
    for s, name in enumerate(sorted(scores)):
        mean = VALIDITY_LABEL_SPACING * VALIDITY_ORDER[s]
        effect = rng.normal(0.0, math.sqrt(0.5), users)
        noise = rng.normal(0.0, math.sqrt(0.5), (users, VALIDITY_ANNOTATORS))
        labels[name] = [(f"{name}-d{d:04d}", float(mean + effect[d] + noise[d, a]))
                        for d in range(users) for a in range(VALIDITY_ANNOTATORS)]
    return scores, labels


def validity_label_coverage(rng: np.random.Generator, users: int, method: str) -> bool | None:
    """Whether the labels interval of METHOD covers its population value; None when
    undefined."""
    scores, labels = validity_label_sample(rng, users)
    seed = int(rng.integers(0, 2**31 - 1))
    agreement = simulator_validity(scores, labels=labels, seed=seed).agreements[method]
    if agreement.ci_low is None:
        return None
    return agreement.ci_low <= TRUTH[method] <= agreement.ci_high
