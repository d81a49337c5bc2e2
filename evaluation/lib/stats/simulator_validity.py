"""Simulator validity (issue 32 item 5; docs/statistics.md, "Simulator validity"): does a
simulated board rank the systems as people do?

For the systems that have both a simulated score (one design, one metric: the mean over the
simulated users) and a human reference on the same benchmark — arena votes (Bradley–Terry
strengths, the arena page's `bt`) or human labels (the mean of a label over the labelled
dialogues) — Kendall τ_b and Spearman ρ between the two per-system vectors, with percentile
intervals from a bootstrap that resamples both sides independently in every replicate:

- the simulated users, with replacement, the *same* draw for every system (a design's runs
  share their users, `paired_user_id`, so system means move together as they would in a new
  sample of users);
- the human side: the votes with replacement (a multinomial draw over the pair × outcome
  cells, the arena's own `_bt_replicate_wins`), each replicate refitted by Bradley–Terry; or the
  labelled dialogues with replacement within each system (labels clustered by dialogue).

τ_b is Kendall's tau-b (ties in either ranking corrected), the variant `scipy.stats.kendalltau`
computes by default; for S systems it is Σ_{i<j} sgn(x_i − x_j)·sgn(y_i − y_j) divided by the
square root of the numbers of pairs untied in x and in y. The estimand is the τ_b between the
population per-system means and the population strengths; with few systems and noisy sides the
plug-in τ is pulled towards 0 and its interval's coverage is checked by simulation in
`bench_calibration` (`validity_tau`, statistics.md). Undefined, with the reason, below
MIN_SYSTEMS systems or when one side is constant.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np
from scipy import stats

from evaluation.lib.stats import arena

MIN_SYSTEMS = 3
DEFAULT_RESAMPLES = 1000
DEFAULT_SEED = 42
METHODS = ("kendall_tau_b", "spearman")


@dataclass(frozen=True)
class RankAgreement:
    method: str  # kendall_tau_b or spearman
    value: float | None
    ci_low: float | None
    ci_high: float | None
    n_systems: int
    undefined_reason: str = ""

    def as_json(self) -> dict:
        return {"method": self.method, "value": self.value, "ci_low": self.ci_low,
                "ci_high": self.ci_high, "n_systems": self.n_systems,
                "undefined_reason": self.undefined_reason}


@dataclass(frozen=True)
class Validity:
    reference: str  # "arena" or "labels"
    systems: tuple[Hashable, ...]  # the systems both sides define, in this order
    simulated: tuple[float, ...]  # their simulated means
    human: tuple[float, ...]  # their human strengths or label means
    agreements: Mapping[str, RankAgreement]
    n_users: int
    n_human: int  # votes, or labelled dialogues
    n_resamples: int
    valid_resamples: int


def tau_b_rows(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Kendall's τ_b of each row of X with the same row of Y, (R, S) each; NaN where a row is
    constant (no untied pair)."""
    x, y = np.atleast_2d(x), np.atleast_2d(y)
    i, j = np.triu_indices(x.shape[1], k=1)
    sx, sy = np.sign(x[:, i] - x[:, j]), np.sign(y[:, i] - y[:, j])
    untied = np.abs(sx).sum(axis=1) * np.abs(sy).sum(axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(untied > 0, (sx * sy).sum(axis=1) / np.sqrt(untied), np.nan)


def spearman_rows(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Spearman's ρ (Pearson of average ranks) of each row of X with the same row of Y."""
    rx = stats.rankdata(np.atleast_2d(x), axis=1)
    ry = stats.rankdata(np.atleast_2d(y), axis=1)
    rx -= rx.mean(axis=1, keepdims=True)
    ry -= ry.mean(axis=1, keepdims=True)
    denominator = np.sqrt((rx**2).sum(axis=1) * (ry**2).sum(axis=1))
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(denominator > 0, (rx * ry).sum(axis=1) / denominator, np.nan)


_STATISTICS = {"kendall_tau_b": tau_b_rows, "spearman": spearman_rows}


def _user_matrix(scores: Mapping[Hashable, Mapping[Hashable, float]], systems):
    users = sorted({u for s in systems for u in scores[s]}, key=str)
    column = {u: c for c, u in enumerate(users)}
    values = np.zeros((len(systems), len(users)))
    present = np.zeros((len(systems), len(users)))
    for r, system in enumerate(systems):
        for user, value in scores[system].items():
            values[r, column[user]] = value
            present[r, column[user]] = 1.0
    return values, present


def _user_replicates(values, present, rng, n_resamples: int) -> np.ndarray:
    """(R, S) system means over a resample of the users, the same users for every system."""
    n_users = values.shape[1]
    counts = np.stack([np.bincount(rng.integers(0, n_users, n_users), minlength=n_users)
                       for _ in range(n_resamples)]).astype(float)  # (R, U)
    with np.errstate(invalid="ignore", divide="ignore"):
        return (counts @ (values * present).T) / (counts @ present.T)


def _vote_side(votes, systems, n_resamples: int, seed: int):
    """(point strengths of SYSTEMS, (R, S) replicate strengths) from Bradley–Terry on every
    vote (systems outside SYSTEMS still inform the fit); None when the MLE does not exist."""
    encoded = arena._encode(votes)
    theta = arena.fit_bradley_terry(arena._win_matrix(encoded, np.arange(len(votes))))
    if theta is None:
        return None
    index = [encoded.names.index(s) for s in systems]
    wins = arena._bt_replicate_wins(encoded, n_resamples=n_resamples, seed=seed)
    replicates = arena.fit_bradley_terry_batch(wins, theta)
    return theta[index], replicates[:, index]


def _label_side(labels: Mapping[Hashable, Sequence[tuple[Hashable, float]]], systems, rng,
                n_resamples: int):
    """(point label means of SYSTEMS, (R, S) replicate means): each system's labelled
    dialogues resampled with replacement (its labels of one dialogue stay together)."""
    point = np.zeros(len(systems))
    replicates = np.zeros((n_resamples, len(systems)))
    for s, system in enumerate(systems):
        by_dialogue: dict[Hashable, list[float]] = {}
        for dialogue, value in labels[system]:
            by_dialogue.setdefault(dialogue, []).append(float(value))
        sums = np.array([sum(v) for v in by_dialogue.values()])
        sizes = np.array([len(v) for v in by_dialogue.values()], dtype=float)
        point[s] = sums.sum() / sizes.sum()
        draws = rng.integers(0, len(sums), (n_resamples, len(sums)))
        replicates[:, s] = sums[draws].sum(axis=1) / sizes[draws].sum(axis=1)
    return point, replicates


def simulator_validity(scores: Mapping[Hashable, Mapping[Hashable, float]], *,
                       votes: Sequence[tuple[Hashable, Hashable, str]] = (),
                       labels: Mapping[Hashable, Sequence[tuple[Hashable, float]]] | None = None,
                       n_resamples: int = DEFAULT_RESAMPLES, seed: int = DEFAULT_SEED,
                       confidence: float = 0.95) -> Validity:
    """τ_b and Spearman between SCORES (system -> {user: simulated value}) and, for the same
    systems, VOTES (arena votes: (system a, system b, outcome)) or LABELS (system ->
    [(dialogue, label value)]): exactly one human side."""
    if bool(votes) == (labels is not None):
        raise ValueError("give the arena's votes or the human labels, one of them")
    reference = "arena" if votes else "labels"
    human_systems = {s for v in votes for s in v[:2]} if votes else {
        s for s, rows in labels.items() if rows}
    systems = tuple(sorted((s for s in scores if scores[s] and s in human_systems), key=str))
    n_human = len(votes) if votes else sum(len({d for d, _ in labels[s]}) for s in systems)
    n_users = len({u for s in systems for u in scores[s]})

    def undefined(reason: str, point=((), ())) -> Validity:
        return Validity(reference, systems, tuple(point[0]), tuple(point[1]),
                        {m: RankAgreement(m, None, None, None, len(systems), reason)
                         for m in METHODS}, n_users, n_human, n_resamples, 0)

    if len(systems) < MIN_SYSTEMS:
        return undefined(f"{len(systems)} system{'s' if len(systems) != 1 else ''} with both "
                         f"a simulated score and a human {('rating' if votes else 'label')}; "
                         f"at least {MIN_SYSTEMS} are needed")
    rng = np.random.default_rng(seed)
    values, present = _user_matrix(scores, systems)
    simulated = (values * present).sum(axis=1) / present.sum(axis=1)
    if votes:
        side = _vote_side(votes, systems, n_resamples, seed)
        if side is None:
            return undefined(arena.NO_MLE)
        human, human_replicates = side
    else:
        human, human_replicates = _label_side(labels, systems, rng, n_resamples)
    user_replicates = _user_replicates(values, present, rng, n_resamples)
    tail = (1.0 - confidence) / 2.0
    agreements = {}
    valid = 0
    for method, statistic in _STATISTICS.items():
        value = float(statistic(simulated[None, :], human[None, :])[0])
        if not np.isfinite(value):
            agreements[method] = RankAgreement(
                method, None, None, None, len(systems),
                "one side gives every system the same score")
            continue
        replicated = statistic(user_replicates, human_replicates)
        usable = replicated[np.isfinite(replicated)]
        valid = len(usable)
        low, high = (np.quantile(usable, [tail, 1.0 - tail]) if len(usable)
                     else (np.nan, np.nan))
        agreements[method] = RankAgreement(
            method, value, float(low) if np.isfinite(low) else None,
            float(high) if np.isfinite(high) else None, len(systems))
    return Validity(reference, systems, tuple(simulated.tolist()), tuple(human.tolist()),
                    agreements, n_users, n_human, n_resamples, valid)
