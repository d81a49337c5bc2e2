"""Preference coverage of an interactive evaluation, as in PEPPER (Kim et al.), §3.3.1.

For a simulated user u with hidden target items Y(u) and the top-K list P_x^u the system showed
at its x-th turn:

- Recall@(t, K) = |P_t^u ∩ Y(u)| / |Y(u)|, the recall of turn t's list alone;
- PC_t@K = mean over users of |(∪_{x≤t} P_x^u) ∩ Y(u)| / |Y(u)|, what has been covered so far;
- PCIR_t@K = PC_t − PC_{t−1} (PC_0 = 0), the share newly covered at turn t;
- PCIR_avg@K, in one of two named variants (`PCIR_VARIANTS`; docs/simulation.md, "PCIR_avg:
  two readings of the paper"): `eq3` (the default) is the mean of Eq. 3's PCIR_t over
  t = 1..T, which telescopes to PC_T / T; `tables` is (PC_T − PC_1) / (T − 1), the mean of
  PCIR_t over t = 2..T, the reading under which the paper's Table 5 follows from its Table 3.

Each is a mean over users, reported with the studentized cluster (jackknife-t) CI whose
clusters are the users (each simulated user's dialogue is one cluster; statistics.md). A
dialogue that ended before turn T (an iEvaLM-style user accepted its target) keeps its last
list for the remaining turns: the user took that recommendation, so its recall stands and
coverage stops growing. Failed dialogues are
not scored at all (the run reports them).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from evaluation.lib.metrics.types import MetricSpec
from evaluation.lib.stats.bootstrap import DEFAULT_RESAMPLES, DEFAULT_SEED
from evaluation.lib.stats.clustered import cluster_mean
from evaluation.lib.stats.results import Estimate

KS = (1, 5, 10, 20, 50)
PREFERENCE_ELICITATION = "preference elicitation"  # the axis of a simulated-… board
HEADLINE_KS = (5, 10, 50)  # a simulated-… board's default columns; "all metrics" adds 1 and 20


def preference_specs(ks: Sequence[int] = KS) -> tuple[MetricSpec, ...]:
    """The metrics a simulation stores per user and summarises (`preference_report`'s
    summaries): PC_T@K, PCIR_avg@K and Recall@K, shares of the users' targets."""
    described = (("pc", "PC_T@{k}: share of the user's targets shown in a top {k} by the "
                        "last turn (PEPPER §3.3.1)."),
                 ("pcir_avg", "PCIR_avg@{k}: PC_T@{k} / T, the share newly covered per turn."),
                 ("recall", "Recall@{k}: share of the user's targets in a turn's top {k}, "
                            "averaged over turns."))
    return tuple(  # in the report's order; a board lists PC first, then PCIR_avg, then Recall
        MetricSpec(f"{name}@{k}", PREFERENCE_ELICITATION, "dialogue", "higher", (0.0, 1.0),
                   text.format(k=k), headline=(i * len(HEADLINE_KS) + HEADLINE_KS.index(k) + 1
                                               if k in HEADLINE_KS else 0))
        for k in ks for i, (name, text) in enumerate(described))

# PCIR_avg's variants: name -> the label printed beside every number it computed
PCIR_EQ3, PCIR_TABLES = "eq3", "tables"
PCIR_VARIANTS = {
    PCIR_EQ3: "PCIR_avg = mean of PCIR_t (Eq. 3) over t = 1..T = PC_T / T",
    PCIR_TABLES: "PCIR_avg = (PC_T − PC_1) / (T − 1), the mean of PCIR_t over t = 2..T "
                 "(fits the paper's Tables 3 and 5)",
}


def pcir_avg(coverage: Sequence[float], variant: str = PCIR_EQ3) -> float | None:
    """PCIR_avg of one coverage curve PC_1..PC_T in VARIANT; None for `tables` at T = 1 (no
    increase to average)."""
    if variant not in PCIR_VARIANTS:
        raise ValueError(f"unknown PCIR_avg variant {variant!r} (choose from "
                         f"{', '.join(PCIR_VARIANTS)})")
    turns = len(coverage)
    if variant == PCIR_EQ3:
        return float(coverage[-1]) / turns
    if turns < 2:
        return None
    return (float(coverage[-1]) - float(coverage[0])) / (turns - 1)


@dataclass(frozen=True)
class SimulatedUser:
    """What the metrics need of one simulated dialogue."""

    user_id: str
    target_item_ids: tuple[str, ...]
    rankings: tuple[tuple[str, ...], ...]  # the system's ranked ids at turns 1, 2, …


def _padded(rankings: Sequence[Sequence[str]], turns: int) -> list[Sequence[str]]:
    if not rankings:
        return [()] * turns
    rankings = list(rankings[:turns])
    return rankings + [rankings[-1]] * (turns - len(rankings))


def user_curves(user: SimulatedUser, *, turns: int, k: int) -> tuple[np.ndarray, np.ndarray]:
    """(coverage, recall) of one user at turns 1..TURNS for cut-off K."""
    targets = set(user.target_item_ids)
    if not targets:
        raise ValueError(f"user {user.user_id!r} has no target items")
    covered: set[str] = set()
    coverage, recall = np.zeros(turns), np.zeros(turns)
    for t, ranked in enumerate(_padded(user.rankings, turns)):
        shown = set(ranked[:k]) & targets
        covered |= shown
        coverage[t] = len(covered) / len(targets)
        recall[t] = len(shown) / len(targets)
    return coverage, recall


@dataclass(frozen=True)
class PreferenceReport:
    turns: int
    users: int
    pc: Mapping[int, list[float]]          # K -> PC_t@K for t = 1..T
    pcir: Mapping[int, list[float]]        # K -> PCIR_t@K
    recall: Mapping[int, list[float]]      # K -> Recall@(t, K)
    summaries: Mapping[str, Estimate]      # "pc@10" (at T), "pcir_avg@10", "recall@10" (mean
    #                                        over turns), each with its user-clustered CI
    pcir_variant: str = PCIR_EQ3           # which PCIR_avg the summaries' pcir_avg@K are

    def as_json(self) -> dict:
        out: dict = {"turns": self.turns, "users": self.users,
                     "pcir_variant": self.pcir_variant,
                     "pcir_label": PCIR_VARIANTS[self.pcir_variant]}
        for name, table in (("pc", self.pc), ("pcir", self.pcir), ("recall", self.recall)):
            for k, values in table.items():
                out[f"{name}@{k}"] = [round(v, 6) for v in values]
        out["summaries"] = {name: {"value": e.value, "ci_low": e.ci_low, "ci_high": e.ci_high,
                                   "n": dict(e.n)} for name, e in self.summaries.items()}
        return out


def preference_report(users: Sequence[SimulatedUser], *, turns: int,
                      ks: Sequence[int] = KS, n_resamples: int = DEFAULT_RESAMPLES,
                      seed: int = DEFAULT_SEED, pcir: str = PCIR_EQ3) -> PreferenceReport:
    """PC_t, PCIR_t and Recall@(t, K) over USERS for every K and t ≤ TURNS, with CIs;
    PCIR_avg in variant PCIR (`PCIR_VARIANTS`)."""
    if pcir not in PCIR_VARIANTS:
        raise ValueError(f"unknown PCIR_avg variant {pcir!r} (choose from "
                         f"{', '.join(PCIR_VARIANTS)})")
    if turns < 1:
        raise ValueError("turns must be at least 1")
    ids = [u.user_id for u in users]
    pc, pcir_t, recall, summaries = {}, {}, {}, {}
    for k in ks:
        curves = [user_curves(u, turns=turns, k=k) for u in users]
        coverage = np.array([c for c, _ in curves]).reshape(len(users), turns)
        recalls = np.array([r for _, r in curves]).reshape(len(users), turns)
        mean_cov = coverage.mean(axis=0) if users else np.zeros(turns)
        pc[k] = mean_cov.tolist()
        pcir_t[k] = np.diff(mean_cov, prepend=0.0).tolist()
        recall[k] = (recalls.mean(axis=0) if users else np.zeros(turns)).tolist()
        # N_RESAMPLES and SEED stay in the signature for callers; the jackknife-t interval
        # draws nothing (bench_calibration measures why it replaced the bootstrap).
        options = {"bounds": (0.0, 1.0)}
        summaries[f"pc@{k}"] = cluster_mean(coverage[:, -1].tolist(), ids, **options)
        # PCIR_avg is linear in the curve, so the mean over users of each user's PCIR_avg is
        # PCIR_avg of the mean curve (PC_t): eq3 PC_T / T, tables (PC_T − PC_1) / (T − 1).
        per_user = [pcir_avg(row, pcir) for row in coverage]
        summaries[f"pcir_avg@{k}"] = (
            cluster_mean(per_user, ids, **options) if turns > 1 or pcir == PCIR_EQ3 else
            Estimate.undefined("PCIR_avg (PC_T − PC_1) / (T − 1) needs at least 2 turns",
                               method=summaries[f"pc@{k}"].method))
        summaries[f"recall@{k}"] = cluster_mean(recalls.mean(axis=1).tolist(), ids, **options)
    return PreferenceReport(turns, len(users), pc, pcir_t, recall, summaries, pcir)
