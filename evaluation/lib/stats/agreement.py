"""Inter-annotator agreement (spec: statistics.md "Inter-annotator agreement (per study, per
field)"; annotation.md forms 1–4; Trace §7.1 and appendix K.2; FACE appendix A.2.2).

Inputs are plain annotators × units matrices (rows are annotators, columns units, None/NaN for
"did not rate"), label lists per unit, or mappings; nothing here knows about Django.

- ``compute_alpha`` / ``alpha_with_ci``: Krippendorff's alpha at the nominal, ordinal, interval or
  ratio level, or with MASI distance for set-valued answers (the whole error checklist), with a
  studentized jackknife CI over units (for a nominal field a test-inversion CI,
  ``category_test``, or a profile-likelihood CI for a yes/no field rated twice per unit,
  ``binary_icc``).
- ``reliability_matrix`` and ``checklist_indicator_matrices``: the matrices alpha reads.

How each annotator agrees with the others is in ``annotators`` (leave-one-out, diagnostics,
pairwise correlation, Cohen's kappa); majority vote, citation precision and blind
recommendation agreement are in ``label_summaries``.
"""


from __future__ import annotations

import math
from collections.abc import Hashable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from evaluation.lib.stats.alpha import (
    PreparedData,
    alpha_parts,
    alpha_resampled,
    as_label_set,
    is_missing,
    masi_distance,
    prepare,
)
from evaluation.lib.stats.binary_icc import profile_interval, unit_counts
from evaluation.lib.stats.bootstrap import DEFAULT_CONFIDENCE, DEFAULT_RESAMPLES, DEFAULT_SEED
from evaluation.lib.stats.category_test import (
    MAX_OUTCOMES,
    TEST_DRAWS,
    CategoryCounts,
    category_counts,
    outcome_count,
    test_inversion_interval,
)
from evaluation.lib.stats.clustered import jackknife_standard_error, t_quantile
from evaluation.lib.stats.results import Estimate

__all__ = [
    "ReliabilityMatrix",
    "alpha_with_ci",
    "checklist_indicator_matrices",
    "compute_alpha",
    "masi_distance",
    "reliability_matrix",
]

NO_ERROR_LABEL = "no_errors"


# --- reshaping -----------------------------------------------------------------------------


@dataclass(frozen=True)
class ReliabilityMatrix:
    """Ratings pivoted to annotators × units; ``values[a][u]`` is None where not rated."""

    annotators: list
    units: list
    values: list[list[Any]]


def reliability_matrix(
    ratings: Sequence[tuple[Hashable, Hashable, Any]],
    *,
    annotators: Sequence[Hashable] | None = None,
    units: Sequence[Hashable] | None = None,
) -> ReliabilityMatrix:
    """Pivot (annotator, unit, value) triples; a repeated (annotator, unit) pair is an error."""
    if annotators is None:
        annotators = _sorted_unique(rating[0] for rating in ratings)
    if units is None:
        units = _sorted_unique(rating[1] for rating in ratings)
    annotators, units = list(annotators), list(units)
    row_of = {annotator: i for i, annotator in enumerate(annotators)}
    column_of = {unit: j for j, unit in enumerate(units)}
    values: list[list[Any]] = [[None] * len(units) for _ in annotators]
    seen = set()
    for annotator, unit, value in ratings:
        if (annotator, unit) in seen:
            raise ValueError(f"two ratings by {annotator!r} for unit {unit!r}")
        seen.add((annotator, unit))
        values[row_of[annotator]][column_of[unit]] = value
    return ReliabilityMatrix(annotators, units, values)


def checklist_indicator_matrices(
    checklists: Any,
    categories: Sequence[str] | None = None,
    *,
    no_error_label: str | None = NO_ERROR_LABEL,
) -> dict[str, list[list[int | None]]]:
    """One yes/no (1/0) matrix per error category from an annotators × units checklist matrix.

    Each category becomes its own nominal variable for alpha; unanswered cells stay None.
    ``categories`` defaults to every category anyone ticked (the no-error label excluded).
    """
    rows = [list(row) for row in checklists]
    answers = [
        [None if is_missing(a) else _error_categories(a, no_error_label) for a in row]
        for row in rows
    ]
    if categories is None:
        categories = sorted({label for row in answers for a in row if a for label in a})
    return {
        category: [[None if a is None else int(category in a) for a in row] for row in answers]
        for category in categories
    }


def _sorted_unique(items) -> list:
    distinct = set(items)
    try:
        return sorted(distinct)
    except TypeError:
        return sorted(distinct, key=repr)


def _error_categories(answer: Any, no_error_label: str | None) -> set:
    labels = set(as_label_set(answer))
    labels.discard(no_error_label)
    return labels


# --- Krippendorff's alpha -----------------------------------------------------------------


def _alpha_estimate(prepared: PreparedData) -> Estimate:
    parts = alpha_parts(prepared)
    n = {
        "units": parts.pairable_units,
        "units_total": prepared.n_units,
        "annotators": parts.annotators,
        "pairable_values": parts.pairable_values,
    }
    params = {"level": prepared.level}
    method = "krippendorff_alpha"
    if parts.annotators < 2:
        reason = "fewer than two annotators gave any value"
    elif parts.pairable_units == 0:
        reason = "no unit has values from two or more annotators (no pairable values)"
    elif parts.expected <= 0:
        reason = "all pairable values are identical, so there is no variation to agree on"
    else:
        return Estimate(parts.value, n=n, method=method, params=params)
    return Estimate.undefined(reason, method=method, n=n, params=params)


def compute_alpha(
    data: Any, level: str = "interval", *, value_order: Sequence | None = None
) -> Estimate:
    """Krippendorff's alpha of an annotators × units matrix.

    ``level`` is "nominal", "ordinal", "interval", "ratio" or "masi" (cells are sets of labels;
    an empty set is a real answer such as "No errors", None is missing). ``value_order`` lets
    ordinal data be labels (e.g. ["low", "mid", "high"]). n: ``units`` = pairable units (rated by
    ≥ 2 annotators), ``units_total``, ``annotators`` (gave any value), ``pairable_values``.
    """
    return _alpha_estimate(prepare(data, level, value_order))


ALPHA_INTERVAL = "jackknife_root_icc_z_t"
# A yes/no field whose every pairable unit has two values gets this interval ...
ALPHA_PAIR_INTERVAL = "profile_likelihood_beta_binomial_t"
# ... any other yes/no field, and a field of three or more categories on fewer than
# CATEGORY_TEST_UNITS pairable units, this one, while its design is small enough to simulate
# (category_test.MAX_OUTCOMES; ``_simulated`` decides). From CATEGORY_TEST_UNITS units the
# jackknife is calibrated for three categories and the test's model, one correlation shared by
# every category, is not (statistics.md, "Nominal fields: a test-inversion interval").
ALPHA_TEST_INTERVAL = "dirichlet_multinomial_test_inversion_mid_p"
CATEGORY_TEST_UNITS = 20
MAX_ALPHA_GROUPS = 200  # leave-outs per interval: more units are left out in 200 groups
# A nominal interval needs MIN_MINORITY_VALUES pairable values outside the most frequent
# category and, when those are fewer than RARE_SHARE of the pairable values, at least
# MIN_RARE_VALUES of them (statistics.md, "Too few values of the rarer categories"); otherwise
# no interval is shown.
MIN_MINORITY_VALUES = 6
RARE_SHARE = 0.2
MIN_RARE_VALUES = 30
# ... and at least MIN_DISAGREEING_UNITS unit whose values are not all the same: where the
# annotators agree on every unit, alpha is 1, so is every leave-one-out alpha, and the
# jackknife's interval is the point 1 however few the units (statistics.md, same section).
MIN_DISAGREEING_UNITS = 1


def minority_rule(rare: int, pairable_values: int) -> str | None:
    """Why a nominal field with RARE of its PAIRABLE_VALUES outside the most frequent category
    gets no interval, or None when it gets one."""
    if rare < MIN_MINORITY_VALUES:
        return (f"too few values outside the most frequent category for an interval ({rare}; "
                f"an interval needs {MIN_MINORITY_VALUES})")
    if rare < RARE_SHARE * pairable_values and rare < MIN_RARE_VALUES:
        return (f"too few values outside the most frequent category for an interval ({rare}, "
                f"{rare / pairable_values:.0%} of the pairable values; an interval needs "
                f"{MIN_RARE_VALUES}, or {RARE_SHARE:.0%} of the values)")
    return None


def disagreement_rule(disagreeing: int) -> str | None:
    """Why a nominal field with DISAGREEING units (pairable units whose values are not all the
    same) gets no interval, or None when it gets one."""
    if disagreeing < MIN_DISAGREEING_UNITS:
        return (f"the annotators agree on every unit: no interval ({MIN_DISAGREEING_UNITS} "
                "unit with a disagreement is needed; the jackknife has no spread to measure)")
    return None


def disagreeing_units(prepared: PreparedData) -> int:
    """Pairable units (two or more values) whose values are not all the same."""
    matrix = prepared.matrix.astype(float)
    present = _present(prepared)
    pairable = present.sum(axis=0) >= 2
    low = np.where(present, matrix, np.inf).min(axis=0)
    high = np.where(present, matrix, -np.inf).max(axis=0)
    return int((pairable & (high > low)).sum())


def minority_values(prepared: PreparedData) -> int:
    """Pairable values (in units with two or more values) outside the most frequent category."""
    matrix = prepared.matrix
    present = _present(prepared)
    pairable = present.sum(axis=0) >= 2
    _, counts = np.unique(matrix[:, pairable][present[:, pairable]], return_counts=True)
    return int(counts.sum() - counts.max()) if len(counts) else 0


def _alpha_z(alpha, mean_values: float) -> np.ndarray:
    """The scale alpha's interval is built on: z(α) = −2 / √(m(m − 1)) × artanh(√((m − 1)(1 − α)
    / m)), m values per unit (statistics.md). Its slope is 1 / ((1 + (m − 1)α) √(1 − α)): the
    intraclass z's stretch near the floor α = −1/(m − 1), but the square root of 1 − α near
    perfect agreement, where alpha's standard error shrinks like √(1 − α) for categories
    (Bloch & Kraemer 1989) rather than like 1 − α. z runs from −∞ at the floor to 0 at α = 1;
    α is clipped to [floor, 1].
    """
    m = max(mean_values, 2.0)
    floor = -1.0 / (m - 1.0) + 1e-12
    alpha = np.clip(np.asarray(alpha, dtype=float), floor, 1.0)
    root = np.sqrt((m - 1.0) * (1.0 - alpha) / m)
    return -2.0 / math.sqrt(m * (m - 1.0)) * np.arctanh(np.minimum(root, 1.0 - 1e-16))


def _alpha_z_inverse(z: float, mean_values: float) -> float:
    """α from ``_alpha_z``; 1 for z ≥ 0 (an upper limit beyond perfect agreement)."""
    if z >= 0.0:
        return 1.0
    m = max(mean_values, 2.0)
    root = math.tanh(-z * math.sqrt(m * (m - 1.0)) / 2.0) * math.sqrt(m / (m - 1.0))
    return 1.0 - root * root


def alpha_with_ci(
    data: Any,
    level: str = "interval",
    *,
    value_order: Sequence | None = None,
    n_resamples: int = DEFAULT_RESAMPLES,
    seed: int = DEFAULT_SEED,
    confidence: float = DEFAULT_CONFIDENCE,
) -> Estimate:
    """``compute_alpha`` plus a studentized jackknife CI over units (statistics.md).

    Alpha is recomputed without each pairable unit in turn (in ``MAX_ALPHA_GROUPS`` groups of
    units when there are more), on the scale ``_alpha_z`` with m̄ the mean number of values per
    pairable unit; the interval is z ± t_{G−1} × SE_jackknife(z) mapped back. The percentile
    bootstrap covered 0.83–0.85 at ten units, Fisher's intraclass z 0.90 for a yes/no field
    (``bench_calibration``). Deterministic: N_RESAMPLES is kept for callers; the jackknife
    draws nothing. Leave-outs where alpha is undefined are skipped and counted. A nominal
    field gets instead, for every study, the profile likelihood of ``binary_icc`` with a
    t-calibrated cut when it is yes/no and every pairable unit has two values, else the test
    inversion of ``category_test`` (seeded by SEED) when it is yes/no or has fewer than
    CATEGORY_TEST_UNITS pairable units (``_simulated``) — unless its units can split among its
    categories in more than ``MAX_OUTCOMES`` ways, too many to simulate. Any other nominal
    field takes the jackknife, and gets no interval with fewer than ``MIN_MINORITY_VALUES``
    pairable values outside its most frequent category — or, when those are under RARE_SHARE
    of the values, fewer than MIN_RARE_VALUES (``ci_note`` says why, ``minority_rule``; on
    yes/no designs the jackknife covered 0.45–0.92 there) — nor when its annotators agree on
    every unit (``disagreement_rule``: the jackknife's interval is then the point 1, which
    made near-perfect agreement on 10 units cover 0.85–0.91).
    """
    prepared = prepare(data, level, value_order)
    estimate = _alpha_estimate(prepared)
    if not estimate.is_defined:
        return estimate
    codes = nominal_codes(prepared)
    if codes is not None:
        counts = category_counts(codes)
        if counts.categories == 2 and counts.largest == 2:
            return _yes_no_pair_interval(estimate, codes, confidence)
        if _simulated(counts):
            return _test_inversion_interval(estimate, counts, confidence, seed)
    rare = minority_values(prepared) if prepared.level == "nominal" else None
    if rare is not None:
        disagreeing = disagreeing_units(prepared)
        too_few = (minority_rule(rare, estimate.n["pairable_values"])
                   or disagreement_rule(disagreeing))
        if too_few:
            return estimate.with_ci(None, None, interval=ALPHA_INTERVAL, minority_values=rare,
                                    disagreeing_units=disagreeing, ci_note=too_few)
    pairable = np.flatnonzero(_values_per_unit(prepared) >= 2)
    groups = [pairable[start::MAX_ALPHA_GROUPS] for start in range(
        min(len(pairable), MAX_ALPHA_GROUPS))]
    mean_values = estimate.n["pairable_values"] / estimate.n["units"]
    leave_outs = _alpha_leave_outs(prepared, groups)
    z = _alpha_z(leave_outs, mean_values)
    z = np.where(np.isfinite(leave_outs), z, np.nan)
    se = float(jackknife_standard_error(z))
    params = {"interval": ALPHA_INTERVAL, "resampled": "units", "groups": len(groups),
              "valid_leave_outs": int(np.isfinite(leave_outs).sum()), "confidence": confidence,
              "mean_values_per_unit": mean_values,
              **({"minority_values": rare} if rare is not None else {})}
    if not np.isfinite(se) or len(groups) < 2:
        return estimate.with_ci(None, None, **params, ci_note="too few units for an interval")
    half = float(t_quantile(len(groups) - 1, confidence)) * se
    centre = float(_alpha_z(estimate.value, mean_values))
    return estimate.with_ci(_alpha_z_inverse(centre - half, mean_values),
                            _alpha_z_inverse(centre + half, mean_values), **params)


def nominal_codes(prepared: PreparedData) -> np.ndarray | None:
    """The category codes 0 … k − 1 (−1 = no value or a unit rated once) of a nominal field
    whose pairable values take two or more categories, or None for any other field. A yes/no
    field rated twice per unit gets the profile-likelihood interval (the extended beta-binomial
    is saturated for pairs, so it assumes nothing; statistics.md, "Yes/no fields rated twice"),
    others the test-inversion interval as ``_simulated`` says ("Nominal fields: a
    test-inversion interval")."""
    if prepared.level != "nominal":
        return None
    matrix = prepared.matrix
    present = _present(prepared)
    pairable = present & (present.sum(axis=0) >= 2)[None, :]
    categories = np.unique(matrix[pairable])
    if len(categories) < 2:
        return None
    return np.where(pairable, np.searchsorted(categories, np.where(pairable, matrix,
                                                                   categories[0])), -1)


def _yes_no_pair_interval(estimate: Estimate, pairs: np.ndarray, confidence: float) -> Estimate:
    """The profile-likelihood interval of the intraclass correlation of two yes/no ratings
    per unit, its likelihood-ratio cut calibrated like a t interval on n − 1 degrees of freedom
    (n pairable units): the set of ρ within t²_{n−1} / 2 of the maximum log-likelihood."""
    units = estimate.n["units"]
    if units < 2:
        return estimate.with_ci(None, None, interval=ALPHA_PAIR_INTERVAL,
                                ci_note="too few units for an interval")
    cut = float(t_quantile(units - 1, confidence)) ** 2
    rho_hat, low, high = profile_interval(unit_counts(pairs), cut=cut)
    return estimate.with_ci(low, high, interval=ALPHA_PAIR_INTERVAL, confidence=confidence,
                            likelihood_cut=cut, rho_mle=rho_hat)


def _simulated(counts: CategoryCounts) -> bool:
    """Whether a nominal field gets the test inversion: a yes/no field always, one of three or
    more categories on fewer than CATEGORY_TEST_UNITS pairable units; either only while its
    units split among its categories in at most MAX_OUTCOMES ways."""
    small = counts.categories == 2 or counts.units.sum() < CATEGORY_TEST_UNITS
    return small and outcome_count(counts) <= MAX_OUTCOMES


def _test_inversion_interval(estimate: Estimate, counts: CategoryCounts, confidence: float,
                             seed: int) -> Estimate:
    """The test-inversion interval of a nominal field: every ρ₀ at which alpha is in neither
    tail of its own distribution simulated from the extended Dirichlet-multinomial at
    (p̂(ρ₀), ρ₀) on the study's units (``category_test.test_inversion_interval``). Seeded: the
    same study always gets the same interval."""
    low, high = test_inversion_interval(counts, confidence, seed=seed)
    # the test's alpha comes from unit counts: equal to the estimate up to rounding, which must
    # not put the estimate outside its own interval
    low, high = min(low, estimate.value), max(high, estimate.value)
    return estimate.with_ci(low, high, interval=ALPHA_TEST_INTERVAL, confidence=confidence,
                            draws=TEST_DRAWS, seed=seed)


def _alpha_leave_outs(prepared: PreparedData, groups: Sequence[np.ndarray]) -> np.ndarray:
    """Alpha without each group of units (NaN where undefined): what ``jackknife_leave_outs``
    gives with alpha recomputed on the kept columns, all leave-outs at once
    (``alpha_resampled``, each unit weighted 1 or, left out, 0; equal to 1e-12, tested)."""
    step = max(1, 4_000_000 // max(prepared.n_units, 1))  # at most ~4 million weights at once
    values = []
    for start in range(0, len(groups), step):
        block = groups[start:start + step]
        weights = np.ones((len(block), prepared.n_units))
        for row, group in enumerate(block):
            weights[row, group] = 0.0
        values.append(alpha_resampled(prepared, weights))
    return np.concatenate(values) if values else np.empty(0)


def _present(prepared: PreparedData) -> np.ndarray:
    """Which cells of the annotators × units matrix hold a value."""
    matrix = prepared.matrix
    return ~np.isnan(matrix) if prepared.kind == "numeric" else matrix >= 0


def _values_per_unit(prepared: PreparedData) -> np.ndarray:
    return _present(prepared).sum(axis=0)


