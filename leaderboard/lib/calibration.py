"""Calibration check of every interval and test Concord shows (statistics.md "Comparing systems").

Simulates studies with turns clustered in dialogues and runs them through the very functions the
pages call, then counts how often the 95% intervals cover the truth and how often true nulls are
called significant:

- ``mean_coverage``: a system's mean on a leaderboard or run page (``cluster_mean``, what
  ``summaries_upsert`` stores), Gaussian turns and binary turns;
- ``difference_size``: "A is significantly better than B" on the compare page
  (``compare_systems``), with the paired t-test beside it, true difference 0;
- ``leaderboard_fwer``: five equally good systems on a leaderboard (``rank_tables.better_matrices``,
  what the rank snapshot stores): share of leaderboards that rank some pair apart;
- ``correlation_coverage``: a metric–human Pearson and Spearman interval (``correlation_with_ci``)
  against the population value;
- ``metric_board_fwer``: two equally good evaluators on the metric leaderboard
  (``rank_evaluators`` with dialogue clusters): share ranked apart;
- ``alpha_coverage``: Krippendorff's alpha interval of the study report (``alpha_with_ci``) at the
  interval, ordinal and nominal level, with as many units as the other checks have dialogues,
  and on two yes/no designs with a rarer answer; coverage counts the intervals the report
  shows, and a "shown" row says what share of the studies get one;
- ``arena_coverage``: the arena page's rating intervals (``arena.arena_table``), votes among
  ``ARENA_SYSTEMS`` systems of known Bradley–Terry strengths, ``ARENA_VOTES_PER_COLUMN`` votes per
  dialogue of the column: Bradley–Terry against the population Bradley–Terry rating, Elo against
  the expected online Elo after that many votes (its only fixed target; statistics.md "Arena");
  Bradley–Terry also on systems spread twice as wide, with the share of arenas shown intervals;
- ``style_coverage``: the style coefficient's sandwich Wald interval
  (``arena_style.style_controlled_ratings``) on simulated votes with a known length effect;
- ``adaptive_votes_ratio``: votes until the true top 3 is stable (``arena_pairing``), adaptive
  pairing over uniform (the issue's goal: at most 0.70, i.e. ≥ 30% fewer votes);
- ``ppi_coverage``: the human-anchored PPI++ mean (``ppi.anchored_mean``, study report and
  ``manage.py anchored``) with the column's number of labelled dialogues (2–8 turns each: about
  50, 150 and 500 labelled turns at 10, 30, 100) and ten times as many unlabelled ones, for
  simulated judges correlated 0, 0.3, 0.6 and 0.9 with the humans, unbiased or biased; with
  each coverage the mean and the largest ratio of the PPI++ to the human-only interval width;
- ``validity_tau`` and ``validity_spearman``: a simulated board's rank agreement with the arena
  (``simulator_validity``) against its population value (``calibration_validity``);
  ``validity_labels_tau`` and ``validity_labels_spearman``: the same with a study's label means
  per system as the human side.
- ``active_*``: the labels active handout saves for the width uniform reaches with 300 labels,
  per judge design at ρ ≈ 0.6 (two of them report their own uncertainty), both policies'
  coverage, an oracle and the designs' bounds (``calibration_active``), once per run.

Design: each dialogue has 2–8 turns (uniform), a dialogue effect and turn noise of equal variance
(intra-dialogue correlation 0.5); binary turns draw a dialogue success rate from Beta(3, 7)
(mean 0.3), or from Beta(19, 1) (mean 0.95) for a share near its bound. Every figure is a
share over ``reps`` simulated studies, so its Monte Carlo standard error is about
sqrt(p(1 − p)/reps): 0.007 for a coverage of 0.95 at 1,000 repetitions.
Pure numpy: nothing here imports Django.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import lru_cache

import numpy as np
from scipy import stats

from evaluation.lib.stats import system_meta
from evaluation.lib.stats.agreement import alpha_with_ci, compute_alpha
from evaluation.lib.stats.clustered import cluster_mean, paired_cluster_difference
from evaluation.lib.stats.comparison import compare_systems
from evaluation.lib.stats.correlation import correlation_with_ci, rank_evaluators
from evaluation.lib.stats.ppi import AnchoredSample, anchored_mean
from leaderboard.lib.calibration_active import DESIGNS as ACTIVE_DESIGNS
from leaderboard.lib.calibration_active import GOAL as ACTIVE_GOAL
from leaderboard.lib.calibration_active import check_rows as active_rows
from leaderboard.lib.calibration_active import saving as active_saving
from leaderboard.lib.calibration_arena import (  # noqa: F401 - the bench's arena cases
    ADAPTIVE_REPS_PER_ARENA,
    ADAPTIVE_STRENGTHS,
    ARENA_ELO_SPREAD,
    ARENA_ELO_TARGET_ARENAS,
    ARENA_SYSTEMS,
    ARENA_TIE_SHARE,
    ARENA_VOTES_PER_COLUMN,
    ARENA_WIDE_ELO_SPREAD,
    STYLE_EFFECT,
    STYLE_STRENGTHS,
    STYLE_VOTES_PER_COLUMN,
    _arena_votes,
    adaptive_votes_ratio,
    arena_coverage,
    arena_strengths,
    expected_elo,
    style_coverage,
    true_bradley_terry,
)
from leaderboard.lib.calibration_meta import (
    META_DESIGNS,
    length_slope_coverage,
    meta_coverage,
)
from leaderboard.lib.calibration_validity import validity_coverage, validity_label_coverage
from leaderboard.lib.rank_tables import better_matrices, cluster_tables

DIALOGUE_COUNTS = (10, 30, 100)
NOMINAL = 0.95
LEVEL = 0.05
# The goals: coverage within ±2 points of 95%, test level within ±1 point of 5%,
# family-wise error at most 5% (plus Monte Carlo slack when judging a finite run).
COVERAGE_TOLERANCE = 0.02
LEVEL_TOLERANCE = 0.01
PPI_WIDTH_LIMIT = 1.05  # the PPI++ interval never more than 5% wider than the human-only one


@dataclass
class Check:
    """One simulated figure at each dialogue count."""

    key: str
    label: str
    # coverage | coverage_min (a discrete estimand: at least 95%) | size | fwer | width (PPI++ /
    # human-only width) | shown | power | ratio (no goal) | saving (share of labels saved, at
    # least ACTIVE_GOAL) | reference (a figure the others are checked against: no goal)
    kind: str
    code_path: str
    values: dict[int, float] = field(default_factory=dict)

    def goal(self) -> str:
        if self.kind == "shown":
            return "(share)"
        if self.kind == "power":
            return "(power)"
        if self.kind == "ratio":
            return "(mean)"
        if self.kind == "reference":
            return "(reference)"
        if self.kind == "saving":
            return f"≥ {ACTIVE_GOAL:.2f}"
        if self.kind == "coverage":
            return f"{NOMINAL:.2f} ± {COVERAGE_TOLERANCE:.2f}"
        if self.kind == "coverage_min":
            return f"≥ {NOMINAL - COVERAGE_TOLERANCE:.2f}"
        if self.kind == "size":
            return f"{LEVEL:.2f} ± {LEVEL_TOLERANCE:.2f}"
        if self.kind == "width":
            return f"≤ {PPI_WIDTH_LIMIT:.2f}"
        return f"≤ {LEVEL:.2f}"

    def within_goal(self, value: float, reps: int) -> bool:
        """Whether ``value`` meets the goal, allowing two Monte Carlo standard errors."""
        if self.kind in ("shown", "power", "ratio", "reference"):
            return True
        if math.isnan(value):  # no study showed an interval: nothing to judge
            return True
        if self.kind == "saving":
            return value >= ACTIVE_GOAL
        if self.kind == "width":  # a ratio of widths, not a share: no Monte Carlo slack
            return value <= PPI_WIDTH_LIMIT
        target = NOMINAL if self.kind.startswith("coverage") else LEVEL
        slack = 2.0 * math.sqrt(target * (1.0 - target) / max(reps, 1))
        if self.kind == "coverage":
            return abs(value - NOMINAL) <= COVERAGE_TOLERANCE + slack
        if self.kind == "coverage_min":  # a discrete estimand: at least the nominal coverage
            return value >= NOMINAL - COVERAGE_TOLERANCE - slack
        if self.kind == "size":
            return abs(value - LEVEL) <= LEVEL_TOLERANCE + slack
        return value <= LEVEL + slack

    def to_dict(self, reps: int) -> dict:
        return {
            "key": self.key,
            "label": self.label,
            "kind": self.kind,
            "code_path": self.code_path,
            "goal": self.goal(),
            # None: no simulated study showed an interval (a coverage of nothing)
            "values": {str(g): None if math.isnan(v) else v for g, v in self.values.items()},
            "within_goal": {str(g): self.within_goal(v, reps) for g, v in self.values.items()},
        }


def _dialogue_sizes(rng: np.random.Generator, dialogues: int) -> np.ndarray:
    return rng.integers(2, 9, size=dialogues)


def _gaussian_turns(rng, sizes, mean=0.0):
    clusters = np.repeat(np.arange(len(sizes)), sizes)
    values = mean + rng.normal(size=len(sizes))[clusters] + rng.normal(size=clusters.size)
    return values, clusters


def _binary_turns(rng, sizes, shape=(3.0, 7.0)):
    clusters = np.repeat(np.arange(len(sizes)), sizes)
    rates = rng.beta(*shape, size=len(sizes))[clusters]
    return (rng.random(clusters.size) < rates).astype(float), clusters


def _labels(clusters: np.ndarray) -> list[str]:
    return [f"d{c:04d}" for c in clusters]


def mean_coverage(rng, dialogues: int, kind: str) -> bool:
    sizes = _dialogue_sizes(rng, dialogues)
    if kind == "gaussian":
        values, clusters = _gaussian_turns(rng, sizes)
        truth, bounds = 0.0, None
    elif kind == "near_bound":
        # a share near 1 (e.g. cgs, tsr on a hard tier): dialogue rates from Beta(19, 1)
        values, clusters = _binary_turns(rng, sizes, (19.0, 1.0))
        truth, bounds = 0.95, (0.0, 1.0)
    else:
        values, clusters = _binary_turns(rng, sizes)
        truth, bounds = 0.3, (0.0, 1.0)
    estimate = cluster_mean(values, _labels(clusters), bounds=bounds)
    return estimate.ci_low <= truth <= estimate.ci_high


PREFERENCE_ANNOTATORS = 3
PREFERENCE_TIE = 0.2  # the share of votes that are ties
PREFERENCE_SHAPE = (6.0, 4.0)  # a dialogue's chance that the first system wins a non-tie vote
PREFERENCE_TRUTH = (PREFERENCE_SHAPE[0] / sum(PREFERENCE_SHAPE) * (1.0 - PREFERENCE_TIE)
                    + PREFERENCE_TIE / 2.0)


def preference_coverage(rng, dialogues: int) -> bool:
    """A study's pairwise items: 1-3 turns per dialogue, each judged by 3 annotators (win 1,
    tie 0.5, loss 0), votes correlated within a dialogue through its own win chance; does the
    win rate's interval (the call annotation.lib.preferences makes) cover the true rate?"""
    turns = rng.integers(1, 4, size=dialogues)
    clusters = np.repeat(np.arange(dialogues), turns * PREFERENCE_ANNOTATORS)
    chance = rng.beta(*PREFERENCE_SHAPE, size=dialogues)[clusters]
    tie = rng.random(clusters.size) < PREFERENCE_TIE
    win = rng.random(clusters.size) < chance
    scores = np.where(tie, 0.5, win.astype(float))
    estimate = cluster_mean(scores, _labels(clusters), bounds=(0.0, 1.0))
    return estimate.ci_low <= PREFERENCE_TRUTH <= estimate.ci_high


def _paired_systems(rng, dialogues: int, kind: str, n_systems: int):
    """Equally good systems answering the same turns: shared dialogue difficulty, own noise."""
    sizes = _dialogue_sizes(rng, dialogues)
    clusters = np.repeat(np.arange(dialogues), sizes)
    if kind == "gaussian":
        difficulty = rng.normal(size=dialogues)[clusters]
        systems = [
            difficulty + rng.normal(size=dialogues)[clusters] + rng.normal(size=clusters.size)
            for _ in range(n_systems)
        ]
    else:
        rates = rng.beta(3.0, 7.0, size=dialogues)[clusters]
        systems = [(rng.random(clusters.size) < rates).astype(float) for _ in range(n_systems)]
    return systems, _labels(clusters)


def difference_size(rng, dialogues: int, kind: str) -> tuple[bool, bool]:
    """(interval test significant, paired t-test significant) for two equal systems."""
    (a, b), labels = _paired_systems(rng, dialogues, kind, 2)
    comparison = compare_systems("A", a, labels, "B", b, labels)
    t_p = comparison.t_test.p_value
    return comparison.significant, t_p is not None and t_p < LEVEL


# The unequal-length design of issue 30: 2–13 turns per dialogue (uniform), Gaussian turns as
# above; POWER_DIFFERENCE is the fixed true difference (in turn-noise SDs) the power rows use.
UNEQUAL_TURNS = (2, 13)
POWER_DIFFERENCE = 0.8


def unequal_difference(rng, dialogues: int, true_difference: float = 0.0,
                       kind: str = "gaussian") -> tuple[bool, bool]:
    """(compare page significant, jackknife-t alone significant) for A = B + TRUE_DIFFERENCE on
    dialogues of 2–13 turns: the compare page's test (the randomisation test at 6–12 dialogues)
    and the jackknife-t it replaced there, on the same data. KIND "binary": 0/1 turns with a
    shared dialogue success rate from Beta(3, 7) (no true difference only)."""
    sizes = rng.integers(UNEQUAL_TURNS[0], UNEQUAL_TURNS[1] + 1, size=dialogues)
    clusters = np.repeat(np.arange(dialogues), sizes)
    if kind == "binary":
        rates = rng.beta(3.0, 7.0, size=dialogues)[clusters]
        a, b = ((rng.random(clusters.size) < rates).astype(float) for _ in range(2))
    else:
        difficulty = rng.normal(size=dialogues)[clusters]
        a, b = (difficulty + rng.normal(size=dialogues)[clusters]
                + rng.normal(size=clusters.size) for _ in range(2))
    labels = _labels(clusters)
    comparison = compare_systems("A", a + true_difference, labels, "B", b, labels)
    jackknife = paired_cluster_difference(a + true_difference, labels, b, labels)
    return comparison.significant, jackknife.ci_excludes(0.0)


def leaderboard_fwer(rng, dialogues: int, kind: str, n_systems: int = 5) -> bool:
    systems, labels = _paired_systems(rng, dialogues, kind, n_systems)
    rows = []
    for s, values in enumerate(systems):
        sums: dict[str, list[float]] = {}
        for value, label in zip(values, labels, strict=True):
            entry = sums.setdefault(label, [0.0, 0])
            entry[0] += value
            entry[1] += 1
        rows += [(s, "m", label, total, count) for label, (total, count) in sums.items()]
    tables = cluster_tables(rows, list(range(n_systems)))
    better = better_matrices([tables[s] for s in range(n_systems)], ["m"], {"m": True})
    return bool(better.any())


def _correlated_units(rng, dialogues: int, noise: Sequence[float]):
    """Human scores (dialogue effect + turn noise, variance 2) and one metric per noise level."""
    sizes = _dialogue_sizes(rng, dialogues)
    clusters = np.repeat(np.arange(dialogues), sizes)
    human = rng.normal(size=dialogues)[clusters] + rng.normal(size=clusters.size)
    # Metric errors are clustered too (a judge misreads a whole dialogue), half and half.
    metrics = [
        human
        + s * (rng.normal(size=dialogues)[clusters] + rng.normal(size=clusters.size)) / math.sqrt(2)
        for s in noise
    ]
    units = [f"d{c:04d}#{i}" for i, c in enumerate(clusters)]
    dialogue_of = {unit: f"d{c:04d}" for unit, c in zip(units, clusters, strict=True)}
    return units, human, metrics, dialogue_of


CORRELATION_NOISE = math.sqrt(2.0)  # metric error variance 2 = human variance 2: rho = 1/sqrt(2)
TRUE_PEARSON = 1.0 / math.sqrt(2.0)
TRUE_SPEARMAN = 6.0 / math.pi * math.asin(TRUE_PEARSON / 2.0)  # bivariate normal


def correlation_coverage(rng, dialogues: int, method: str) -> bool:
    units, human, (metric,), dialogue_of = _correlated_units(rng, dialogues, [CORRELATION_NOISE])
    result = correlation_with_ci(
        dict(zip(units, metric, strict=True)),
        dict(zip(units, human, strict=True)),
        method,
        clusters=dialogue_of,
    )
    truth = TRUE_PEARSON if method == "pearson" else TRUE_SPEARMAN
    return result.ci_low is not None and result.ci_low <= truth <= result.ci_high


def metric_board_fwer(rng, dialogues: int, _kind: str = "") -> bool:
    units, human, metrics, dialogue_of = _correlated_units(
        rng, dialogues, [CORRELATION_NOISE, CORRELATION_NOISE]
    )
    rows = rank_evaluators(
        {f"e{i}": dict(zip(units, m, strict=True)) for i, m in enumerate(metrics)},
        dict(zip(units, human, strict=True)),
        clusters=dialogue_of,
    )
    return len({row.rank for row in rows}) > 1


# Agreement: each unit has a true value (variance ALPHA_RHO) and each of ALPHA_ANNOTATORS
# annotators adds noise (variance 1 − ALPHA_RHO). Interval: the ratings themselves, whose
# population alpha is ALPHA_RHO; ordinal: cut into a 1–5 scale at ±0.4 and ±1.2; nominal:
# yes when above 0.5.
ALPHA_RHO = 0.6
ALPHA_ANNOTATORS = 3
ORDINAL_CUTS = (-1.2, -0.4, 0.4, 1.2)
NOMINAL_CUT = 0.5


# The yes/no designs: (cut, annotators). "nominal" is the bench's design (31% yes); "rare" a
# category that 16% of the values take (population alpha 0.355), "pair" two annotators on the
# bench's design. "nominal" and "rare" are where the jackknife's interval was too short or too
# wide (statistics.md, "Too few values of the rarer categories"); they get the test-inversion
# interval ("Nominal fields: a test-inversion interval"), "pair" the profile-likelihood
# interval of a yes/no field rated twice ("Yes/no fields rated twice").
YES_NO_DESIGNS = {"nominal": (NOMINAL_CUT, ALPHA_ANNOTATORS), "rare": (1.0, ALPHA_ANNOTATORS),
                  "pair": (NOMINAL_CUT, 2)}
# Three categories (a citation verdict, a pairwise preference): the ratings cut at ±0.5 (31 /
# 38 / 31%), as many annotators as the other designs; the test-inversion interval too.
CATEGORY_CUTS = (-0.5, 0.5)


def _ratings(rng, units: int, level: str, annotators: int = ALPHA_ANNOTATORS,
             cut: float = NOMINAL_CUT) -> np.ndarray:
    truth = rng.normal(size=units) * math.sqrt(ALPHA_RHO)
    ratings = truth[None, :] + rng.normal(size=(annotators, units)) * math.sqrt(1 - ALPHA_RHO)
    if level == "ordinal":
        return np.digitize(ratings, ORDINAL_CUTS).astype(float) + 1.0
    if level == "nominal":
        return (ratings > cut).astype(float)
    if level == "categories":
        return np.digitize(ratings, CATEGORY_CUTS).astype(float)
    return ratings


@lru_cache(maxsize=8)
def true_alpha(level: str, cut: float = NOMINAL_CUT) -> float:
    """The population alpha of the design: ALPHA_RHO at the interval level; for two categories
    1 − P(two ratings of a unit differ) / P(two ratings of different units differ), from the
    bivariate normal, and so for three categories (Σ_c P(both in c) against Σ_c P(c)²); the
    ordinal value from one seeded study of 300,000 units (its own sampling error is about
    0.001)."""
    if level == "interval":
        return ALPHA_RHO
    joint = stats.multivariate_normal([0.0, 0.0], [[1.0, ALPHA_RHO], [ALPHA_RHO, 1.0]]).cdf
    if level == "nominal":
        yes = stats.norm.sf(cut)
        both = joint([-cut, -cut])
        return 1.0 - 2.0 * (yes - both) / (2.0 * yes * (1.0 - yes))
    if level == "categories":
        ends = [-40.0, *CATEGORY_CUTS, 40.0]  # ±40: the whole line, as far as the cdf sees
        same = differ = 0.0
        for low, high in zip(ends, ends[1:], strict=False):
            share = stats.norm.cdf(high) - stats.norm.cdf(low)
            same += joint([high, high]) - 2.0 * joint([low, high]) + joint([low, low])
            differ += share * (1.0 - share)
        return 1.0 - (1.0 - same) / differ
    return compute_alpha(_ratings(np.random.default_rng(99), 300_000, level), level).value


def alpha_coverage(rng, units: int, level: str) -> bool | None:
    """Whether the study report's interval covers the population alpha; None when the report
    shows no interval (alpha undefined, or the jackknife's rules). LEVEL is "interval",
    "ordinal", "categories" (nominal, CATEGORY_CUTS) or a key of YES_NO_DESIGNS."""
    cut, annotators = YES_NO_DESIGNS.get(level, (NOMINAL_CUT, ALPHA_ANNOTATORS))
    measured = "nominal" if level in YES_NO_DESIGNS else level
    ratings = _ratings(rng, units, measured, annotators, cut)
    estimate = alpha_with_ci(ratings, "nominal" if level == "categories" else measured)
    if estimate.ci_low is None:
        return None
    return estimate.ci_low <= true_alpha(measured, cut) <= estimate.ci_high


PPI_CORRELATIONS = (0.0, 0.3, 0.6, 0.9)
PPI_UNLABELLED_PER_LABELLED = 10  # unlabelled dialogues per labelled one


def _ppi_judge(rng, human, clusters, correlation: float, biased: bool):
    """A judge correlated CORRELATION with the humans' turn values (variance 2). Biased: shifted
    by 1 and scaled by 2 (which PPI++ ignores exactly) and half its error shared by the turns of
    a dialogue (a per-dialogue bias, which the clustered variance must carry)."""
    if biased:
        error = (rng.normal(size=clusters.max() + 1)[clusters]
                 + rng.normal(size=clusters.size)) / math.sqrt(2.0)
    else:
        error = rng.normal(size=clusters.size)
    judge = correlation * human / math.sqrt(2.0) + math.sqrt(1.0 - correlation**2) * error
    return 1.0 + 2.0 * judge if biased else judge


def ppi_coverage(rng, dialogues: int, correlation: float, biased: bool) -> tuple[bool, float]:
    """(whether the PPI++ interval covers the human mean 0, its width / the human-only width)
    for DIALOGUES labelled dialogues and ten times as many unlabelled ones."""
    unlabelled = PPI_UNLABELLED_PER_LABELLED * dialogues
    human, clusters = _gaussian_turns(rng, _dialogue_sizes(rng, dialogues + unlabelled))
    judge = _ppi_judge(rng, human, clusters, correlation, biased)
    labelled = clusters < dialogues
    result = anchored_mean(AnchoredSample(human[labelled], judge[labelled], clusters[labelled],
                                          judge[~labelled], clusters[~labelled]))
    ppi, human_only = result.ppi, result.human_only
    ratio = (ppi.ci_high - ppi.ci_low) / (human_only.ci_high - human_only.ci_low)
    return bool(ppi.ci_low <= 0.0 <= ppi.ci_high), float(ratio)


def _ppi_key(correlation: float, biased: bool) -> str:
    return f"ppi_r{round(10 * correlation)}" + ("_biased" if biased else "")


def _ppi_figures(reps: int, seed: int, dialogues: int, correlation: float,
                 biased: bool) -> tuple[float, float, float]:
    """(coverage, mean width ratio, largest width ratio) over REPS simulated studies."""
    rng = np.random.default_rng(seed)
    runs = [ppi_coverage(rng, dialogues, correlation, biased) for _ in range(reps)]
    ratios = [ratio for _, ratio in runs]
    return float(np.mean([hit for hit, _ in runs])), float(np.mean(ratios)), float(max(ratios))


def _ppi_checks() -> list[Check]:
    checks = []
    for biased in (False, True):
        for correlation in PPI_CORRELATIONS:
            key, judge = _ppi_key(correlation, biased), f"r={correlation:.1f}" + (
                ", biased" if biased else "")
            path = "ppi.anchored_mean (study report, manage.py anchored)"
            checks += [Check(key, f"95% CI of a PPI++ mean, judge {judge}", "coverage", path),
                       Check(f"{key}_width", "  mean width ratio PPI++ / human only", "ratio",
                             path),
                       Check(f"{key}_width_max", "  largest width ratio", "width", path)]
    return checks


def _share(simulate: Callable[[np.random.Generator], bool], reps: int, seed: int) -> float:
    rng = np.random.default_rng(seed)
    return float(np.mean([simulate(rng) for _ in range(reps)]))


def _shown_share(simulate: Callable[[np.random.Generator], float | None], reps: int,
                 seed: int) -> tuple[float, float]:
    """(the mean of SIMULATE over the studies that show an interval, the share that do)."""
    rng = np.random.default_rng(seed)
    results = [simulate(rng) for _ in range(reps)]
    shown = [float(r) for r in results if r is not None]
    return (float(np.mean(shown)) if shown else float("nan")), len(shown) / reps


def _checks() -> list[Check]:
    return [
        Check("mean_gaussian", "95% CI of a mean, Gaussian turns", "coverage",
              "clustered.cluster_mean (run and leaderboard means)"),
        Check("mean_binary", "95% CI of a mean, binary turns", "coverage",
              "clustered.cluster_mean (run and leaderboard means)"),
        Check("mean_near_bound", "95% CI of a share near 1 (0.95), logit scale", "coverage",
              "clustered.cluster_mean bounds=(0, 1) (run means, system page tiers)"),
        Check("diff_gaussian", "A vs B significant, no true difference, Gaussian", "size",
              "comparison.compare_systems (compare page)"),
        Check("diff_binary", "A vs B significant, no true difference, binary", "size",
              "comparison.compare_systems (compare page)"),
        Check("ttest_gaussian", "paired t-test beside it, Gaussian", "size",
              "comparison.paired_t_test (compare page)"),
        Check("diff_unequal", "A vs B significant, no difference, 2-13 turns", "size",
              "comparison.compare_systems (compare page, manage.py compare)"),
        Check("diff_unequal_jackknife", "  jackknife-t alone (before issue 30)", "size",
              "clustered.paired_cluster_difference"),
        Check("diff_unequal_binary", "A vs B significant, no difference, 2-13 binary", "size",
              "comparison.compare_systems (compare page, manage.py compare)"),
        Check("diff_unequal_binary_jackknife", "  jackknife-t alone (before issue 30)", "size",
              "clustered.paired_cluster_difference"),
        Check("power_unequal", "  power at a true difference of 0.8, 2-13 turns", "power",
              "comparison.compare_systems (compare page, manage.py compare)"),
        Check("power_unequal_jackknife", "  power, jackknife-t alone (before)", "power",
              "clustered.paired_cluster_difference"),
        Check("preference_win_rate", "95% CI of a pairwise win rate (3 annotators, ties)",
              "coverage", "clustered.cluster_mean bounds=(0, 1) (study report: pairwise "
              "preferences)"),
        Check("fwer_gaussian", "5 equal systems: some pair ranked apart, Gaussian", "fwer",
              "rank_tables.better_matrices (leaderboard ranks)"),
        Check("fwer_binary", "5 equal systems: some pair ranked apart, binary", "fwer",
              "rank_tables.better_matrices (leaderboard ranks)"),
        Check("corr_pearson", "95% CI of Pearson r (metric vs humans)", "coverage",
              "correlation.correlation_with_ci (study report)"),
        Check("corr_spearman", "95% CI of Spearman rho (metric vs humans)", "coverage",
              "correlation.correlation_with_ci (study report)"),
        Check("metric_board", "2 equally good evaluators ranked apart", "fwer",
              "correlation.rank_evaluators (metric leaderboard)"),
        Check("alpha_interval", "95% CI of Krippendorff's alpha, interval (units)", "coverage",
              "agreement.alpha_with_ci (study report)"),
        Check("alpha_ordinal", "95% CI of Krippendorff's alpha, ordinal 1-5", "coverage",
              "agreement.alpha_with_ci (study report)"),
        Check("alpha_nominal", "95% CI of Krippendorff's alpha, nominal yes/no", "coverage",
              "agreement.alpha_with_ci (study report)"),
        Check("alpha_nominal_shown", "  share of yes/no fields given an interval", "shown",
              "agreement.alpha_with_ci (study report)"),
        Check("alpha_rare", "95% CI of alpha, yes/no, 16% yes", "coverage",
              "agreement.alpha_with_ci (study report)"),
        Check("alpha_rare_shown", "  share given an interval", "shown",
              "agreement.alpha_with_ci (study report)"),
        Check("alpha_pair", "95% CI of alpha, yes/no, 2 annotators", "coverage",
              "agreement.alpha_with_ci (study report)"),
        Check("alpha_pair_shown", "  share given an interval", "shown",
              "agreement.alpha_with_ci (study report)"),
        Check("alpha_categories", "95% CI of alpha, 3 categories (31/38/31%)", "coverage",
              "agreement.alpha_with_ci (study report)"),
        Check("alpha_categories_shown", "  share given an interval", "shown",
              "agreement.alpha_with_ci (study report)"),
        Check("arena_bt", "95% CI of Bradley-Terry rating (9 sys, 10x votes)", "coverage",
              "arena.arena_table method=bt (arena page, export, API)"),
        Check("arena_bt_shown", "  share of arenas given intervals", "shown",
              "arena.arena_table method=bt (arena page, export, API)"),
        Check("arena_bt_wide", "95% CI of Bradley-Terry, 700-1300 (10x votes)", "coverage",
              "arena.arena_table method=bt (arena page, export, API)"),
        Check("arena_bt_wide_shown", "  share of arenas given intervals", "shown",
              "arena.arena_table method=bt (arena page, export, API)"),
        Check("arena_elo", "95% CI of Elo vs expected Elo (9 sys, 10x votes)", "coverage",
              "arena.arena_table method=elo (arena page, export, API)"),
        Check("validity_tau", "95% CI of Kendall tau_b, simulated vs arena (6 sys)",
              "coverage_min", "simulator_validity (simulated boards' trust cell, simulators page)"),
        Check("validity_tau_shown", "  share of studies given an interval", "shown",
              "simulator_validity (simulated boards' trust cell, simulators page)"),
        Check("validity_spearman", "95% CI of Spearman, simulated vs arena (6 sys)",
              "coverage_min", "simulator_validity (simulated boards' trust cell, simulators page)"),
        Check("validity_spearman_shown", "  share of studies given an interval", "shown",
              "simulator_validity (simulated boards' trust cell, simulators page)"),
        Check("validity_labels_tau", "95% CI of Kendall tau_b, simulated vs labels (6 sys)",
              "coverage_min", "simulator_validity labels (simulated boards' trust cell, "
              "simulators page)"),
        Check("validity_labels_tau_shown", "  share of studies given an interval", "shown",
              "simulator_validity labels (simulated boards' trust cell, simulators page)"),
        Check("validity_labels_spearman", "95% CI of Spearman, simulated vs labels (6 sys)",
              "coverage_min", "simulator_validity labels (simulated boards' trust cell, "
              "simulators page)"),
        Check("validity_labels_spearman_shown", "  share of studies given an interval", "shown",
              "simulator_validity labels (simulated boards' trust cell, simulators page)"),
        Check("arena_style", "95% CI of a style coefficient (4 sys, 40x votes)", "coverage",
              "arena_style.style_controlled_ratings (arena page, API, arena_ratings)"),
        Check("arena_style_shown", "  share of arenas given the interval", "shown",
              "arena_style.style_controlled_ratings (arena page, API, arena_ratings)"),
        Check("arena_adaptive", "votes to a stable top 3: adaptive / uniform", "ratio",
              "arena_pairing.pair_probabilities (battle_start); goal <= 0.70"),
        *_ppi_checks(),
        *_meta_checks(),
        *_active_checks(),
    ]


def _active_checks() -> list[Check]:
    return [Check(key, label, kind, code_path)
            for design in ACTIVE_DESIGNS for key, label, kind, code_path, _ in active_rows(design)]


def _run_active(by_key: dict[str, Check], reps: int, seed: int, first: int, counts,
                only: Sequence[str] | None) -> None:
    """Once per run (a pool of 1,000 units, not a dialogue count): shown under the first
    count, "—" under the others."""
    for k, design in enumerate(ACTIVE_DESIGNS):
        rows = active_rows(design)
        if only is not None and not {row[0] for row in rows} & set(only):
            continue
        figures = active_saving(reps, seed + 50 + k, design)
        for key, _, _, _, figure in rows:
            value = figures[figure]
            by_key[key].values.update({g: math.nan for g in counts})
            by_key[key].values[first] = math.nan if value is None else value


def _meta_checks() -> list[Check]:
    probes = [Check("judge_length_slope", "95% CI of a judge's length slope", "coverage",
                    "judge_probes.length_slope (LLM run page)")]
    return probes + [
        Check(f"meta_{design}_{name}", f"95% CI of {system_meta.LABELS[name]}, {design}",
              "coverage", "system_meta.meta_evaluate (metric leaderboard)")
        for design in META_DESIGNS for name in system_meta.STATISTICS]


def _run_meta(by_key: dict[str, Check], reps: int, base: int, dialogues: int,
              only: Sequence[str] | None) -> None:
    for k, design in enumerate(META_DESIGNS):
        keys = {f"meta_{design}_{name}": name for name in system_meta.STATISTICS}
        if only is not None and not set(keys) & set(only):
            continue
        figures = meta_coverage(reps, base + 40 + k, dialogues, design)
        for key, name in keys.items():
            by_key[key].values[dialogues] = figures[name]


CHECK_KEYS = tuple(check.key for check in _checks())


def run_checks(
    reps: int = 1000,
    *,
    dialogue_counts: Sequence[int] = DIALOGUE_COUNTS,
    seed: int = 2026,
    progress: Callable[[str], None] | None = None,
    only: Sequence[str] | None = None,
) -> list[Check]:
    """Every check (or the keys ONLY names) at every dialogue count; each (check, count) has
    its own seeded stream, so a subset gives the same figures as the full run."""
    checks = _checks()
    by_key = {check.key: check for check in checks}
    for position, dialogues in enumerate(dialogue_counts):
        base = seed + 1000 * position

        def tests(kind, base=base, dialogues=dialogues):
            rng = np.random.default_rng(base + (1 if kind == "gaussian" else 2))
            pairs = [difference_size(rng, dialogues, kind) for _ in range(reps)]
            return float(np.mean([p[0] for p in pairs])), float(np.mean([p[1] for p in pairs]))

        figures = {
            "mean_gaussian": lambda d=dialogues, b=base: _share(
                lambda rng: mean_coverage(rng, d, "gaussian"), reps, b + 3),
            "mean_binary": lambda d=dialogues, b=base: _share(
                lambda rng: mean_coverage(rng, d, "binary"), reps, b + 4),
            "mean_near_bound": lambda d=dialogues, b=base: _share(
                lambda rng: mean_coverage(rng, d, "near_bound"), reps, b + 21),
            "preference_win_rate": lambda d=dialogues, b=base: _share(
                lambda rng: preference_coverage(rng, d), reps, b + 45),
            "fwer_gaussian": lambda d=dialogues, b=base: _share(
                lambda rng: leaderboard_fwer(rng, d, "gaussian"), reps, b + 5),
            "fwer_binary": lambda d=dialogues, b=base: _share(
                lambda rng: leaderboard_fwer(rng, d, "binary"), reps, b + 6),
            "corr_pearson": lambda d=dialogues, b=base: _share(
                lambda rng: correlation_coverage(rng, d, "pearson"), reps, b + 7),
            "corr_spearman": lambda d=dialogues, b=base: _share(
                lambda rng: correlation_coverage(rng, d, "spearman"), reps, b + 8),
            "metric_board": lambda d=dialogues, b=base: _share(
                lambda rng: metric_board_fwer(rng, d), reps, b + 9),
            "judge_length_slope": lambda d=dialogues, b=base: _share(
                lambda rng: length_slope_coverage(rng, d), reps, b + 60),
            # An interval that is not shown is not counted; "<key>_shown" is the share shown.
            **{f"alpha_{level}": lambda d=dialogues, b=base, level=level, k=k: _shown_share(
                lambda rng: alpha_coverage(rng, d, level), reps, b + 10 + k)
               for k, level in ((0, "interval"), (1, "ordinal"), (2, "nominal"), (5, "rare"),
                                (6, "pair"), (8, "categories"))},
            **{f"arena_{method}": lambda d=dialogues, b=base, method=method, k=k: _shown_share(
                lambda rng: arena_coverage(rng, d, method), reps, b + 13 + k)
               for k, method in ((0, "bt"), (1, "elo"), (4, "bt_wide"))},
            **{f"validity_{key}": lambda d=dialogues, b=base, method=method, k=k: _shown_share(
                lambda rng: validity_coverage(rng, d, method), reps, b + 40 + k)
               for k, (key, method) in enumerate((("tau", "kendall_tau_b"),
                                                  ("spearman", "spearman")))},
            **{f"validity_labels_{key}": lambda d=dialogues, b=base, method=method, k=k:
               _shown_share(lambda rng: validity_label_coverage(rng, d, method), reps, b + 70 + k)
               for k, (key, method) in enumerate((("tau", "kendall_tau_b"),
                                                  ("spearman", "spearman")))},
            "arena_style": lambda d=dialogues, b=base: _shown_share(
                lambda rng: style_coverage(rng, d), reps, b + 40),
        }
        for key, compute in figures.items():
            shown_key = f"{key}_shown"
            if only is not None and key not in only and shown_key not in only:
                continue
            value = compute()
            if isinstance(value, tuple):
                value, shown = value
                if shown_key in by_key:
                    by_key[shown_key].values[dialogues] = shown
            by_key[key].values[dialogues] = value
            if progress:
                progress(f"{key} at {dialogues} dialogues")
        if only is None or {"diff_gaussian", "ttest_gaussian"} & set(only):
            gaussian, t_test = tests("gaussian")
            by_key["diff_gaussian"].values[dialogues] = gaussian
            by_key["ttest_gaussian"].values[dialogues] = t_test
        if only is None or "diff_binary" in only:
            binary, _ = tests("binary")
            by_key["diff_binary"].values[dialogues] = binary
        for key, shift, kind, offset in (
                ("diff_unequal", 0.0, "gaussian", 30),
                ("power_unequal", POWER_DIFFERENCE, "gaussian", 31),
                ("diff_unequal_binary", 0.0, "binary", 32)):
            if only is None or {key, f"{key}_jackknife"} & set(only):
                stream = np.random.default_rng(base + offset)
                pairs = np.array([unequal_difference(stream, dialogues, shift, kind)
                                  for _ in range(reps)])
                by_key[key].values[dialogues] = float(pairs[:, 0].mean())
                by_key[f"{key}_jackknife"].values[dialogues] = float(pairs[:, 1].mean())
        if only is None or "arena_adaptive" in only:  # once per run: under the first count
            by_key["arena_adaptive"].values[dialogues] = (
                adaptive_votes_ratio(reps, base + 41)[0] if position == 0 else math.nan)
        _run_ppi(by_key, reps, base, dialogues, only)
        _run_meta(by_key, reps, base, dialogues, only)
    if dialogue_counts:
        _run_active(by_key, reps, seed, dialogue_counts[0], dialogue_counts, only)
    return [check for check in checks if check.values]


def _run_ppi(by_key: dict[str, Check], reps: int, base: int, dialogues: int,
             only: Sequence[str] | None) -> None:
    for k, (biased, correlation) in enumerate((b, r) for b in (False, True)
                                              for r in PPI_CORRELATIONS):
        key = _ppi_key(correlation, biased)
        if only is not None and not {key, f"{key}_width", f"{key}_width_max"} & set(only):
            continue
        coverage, mean_ratio, max_ratio = _ppi_figures(reps, base + 20 + k, dialogues,
                                                       correlation, biased)
        by_key[key].values[dialogues] = coverage
        by_key[f"{key}_width"].values[dialogues] = mean_ratio
        by_key[f"{key}_width_max"].values[dialogues] = max_ratio


def report_text(checks: Sequence[Check], reps: int) -> str:
    """A fixed-width table: one line per check, one column per dialogue count, and the goal."""
    counts = sorted({g for check in checks for g in check.values})
    header = f"{'check':<52}" + "".join(f"{g:>8}" for g in counts) + "   goal"
    lines = [f"bench_calibration: {reps} simulated studies per cell", header, "-" * len(header)]
    for check in checks:
        cells = "".join(
            f"{'—':>7} " if math.isnan(check.values[g]) else
            f"{check.values[g]:>7.3f}{' ' if check.within_goal(check.values[g], reps) else '!'}"
            for g in counts
        )
        lines.append(f"{check.label:<52}{cells}   {check.goal()}")
    lines.append("(! = outside the goal by more than two Monte Carlo standard errors)")
    return "\n".join(lines)
