"""Krippendorff's alpha, vectorized (spec: statistics.md "Inter-annotator agreement";
Krippendorff 2011, "Computing Krippendorff's Alpha-Reliability", sections A–E; Passonneau 2006
for MASI).

alpha = 1 − D_o / D_e over the *pairable* values: those in units that at least two observers
rated. D_o is the mean distance between values of the same unit (each unit's pairs weighted by
1 / (m_u − 1), m_u = values in the unit); D_e is the mean distance between any two pairable values.
Missing values (None or NaN) are allowed anywhere.

Why not only the ``krippendorff`` package: it builds a units × values × values array, which is
fine for Likert data but needs gigabytes as soon as the values are many distinct numbers (a 0–100
scale on 100,000 units asks for ~8 GB). Here the levels use closed forms that never build that:

- interval: Σ_{i≠j}(x_i − x_j)² = 2·m·Σx² − 2·(Σx)², per unit and over all pairable values;
- ordinal: Krippendorff's ordinal distance equals the squared difference of the values' mid-ranks
  in the pairable-value distribution, so ordinal = interval on mid-ranks;
- nominal: Σ_{i≠j}[x_i ≠ x_j] = m² − Σ_c n_c²;
- ratio, MASI and any other metric: the coincidence matrix o (values × values) and the distance
  matrix δ, O(V²) in the number V of distinct values.

The results equal the package's to floating-point precision (tests/evaluation/stats).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy import sparse

LEVELS = ("nominal", "ordinal", "interval", "ratio", "masi")
MAX_DISTINCT_VALUES_FOR_MATRIX = 5000  # V × V doubles: 200 MB at this size


def is_missing(value: Any) -> bool:
    return value is None or (isinstance(value, float) and math.isnan(value))


def masi_distance(first: frozenset | set, second: frozenset | set) -> float:
    """MASI distance between two label sets: 1 − Jaccard × monotonicity (as in NLTK).

    The monotonicity weight is 1 for identical sets, 0.67 when one set contains the other, 0.33
    when they merely overlap and 0 when disjoint. Two empty sets are identical (distance 0).
    """
    first, second = set(first), set(second)
    if first == second:
        return 0.0
    intersection = len(first & second)
    union = len(first | second)
    if intersection == min(len(first), len(second)):
        monotonicity = 0.67
    elif intersection > 0:
        monotonicity = 0.33
    else:
        monotonicity = 0.0
    return 1.0 - intersection / union * monotonicity


def ratio_distance(values: np.ndarray) -> np.ndarray:
    """((a − b) / (a + b))² for every pair of values (0 when a + b = 0)."""
    total = values[:, None] + values[None, :]
    difference = values[:, None] - values[None, :]
    ratio = np.divide(difference, total, out=np.zeros_like(total), where=total != 0)
    return ratio**2


def as_label_set(value: Any) -> frozenset:
    """A checklist answer as a frozenset; a single string is one label, not its characters."""
    if isinstance(value, str):
        return frozenset([value])
    return frozenset(value)


@dataclass(frozen=True)
class AlphaParts:
    """The pieces of alpha for one matrix; ``value`` is None when alpha is undefined."""

    observed: float
    expected: float
    pairable_values: int
    pairable_units: int
    annotators: int

    @property
    def value(self) -> float | None:
        if self.pairable_units == 0 or self.expected <= 0:
            return None
        return 1.0 - self.observed / self.expected


@dataclass(frozen=True)
class PreparedData:
    """A reliability matrix encoded once, so bootstrap resamples only slice columns.

    ``kind`` is "numeric" (float matrix, NaN missing) or "codes" (int matrix, −1 missing, with a
    distance matrix over the ``domain``).
    """

    level: str
    kind: str
    matrix: np.ndarray
    distances: np.ndarray | None = None

    @property
    def n_units(self) -> int:
        return int(self.matrix.shape[1])

    def columns(self, indices: np.ndarray) -> PreparedData:
        return PreparedData(self.level, self.kind, self.matrix[:, indices], self.distances)


# --- encoding ------------------------------------------------------------------------------


def _rows(data: Any) -> list[list[Any]]:
    if isinstance(data, np.ndarray):
        return data.tolist()
    return [list(row) for row in data]


def _numeric_matrix(data: Any) -> np.ndarray | None:
    """A float matrix with NaN for missing, or None when the data are not all numbers."""
    if isinstance(data, np.ndarray) and data.dtype.kind in "iufb":
        return data.astype(float)
    try:
        matrix = np.array(data, dtype=float)
    except (TypeError, ValueError):
        return None
    return matrix if matrix.ndim == 2 else None


def _code_matrix(rows: list[list[Any]], convert: Callable[[Any], Hashable]):
    """Int codes (−1 for missing) and the list of distinct values in first-seen order."""
    index: dict[Hashable, int] = {}
    width = max((len(row) for row in rows), default=0)
    if any(len(row) != width for row in rows):
        raise ValueError("every annotator row must have one entry per unit")
    codes = np.full((len(rows), width), -1, dtype=np.int64)
    for r, row in enumerate(rows):
        for c, value in enumerate(row):
            if not is_missing(value):
                codes[r, c] = index.setdefault(convert(value), len(index))
    return codes, list(index)


def prepare(data: Any, level: str = "interval", value_order: Sequence | None = None):
    """Validate and encode an annotators × units matrix for ``level``."""
    if level not in LEVELS:
        raise ValueError(f"level must be one of {LEVELS}, not {level!r}")
    if level == "masi":
        codes, domain = _code_matrix(_rows(data), as_label_set)
        size = len(domain)
        _check_domain_size(size)
        distances = np.array([[masi_distance(a, b) for b in domain] for a in domain]).reshape(
            size, size
        )
        return PreparedData(level, "codes", codes, distances)
    if value_order is not None:
        if level not in ("nominal", "ordinal"):
            raise ValueError("value_order only makes sense for nominal or ordinal data")
        positions = {value: float(i) for i, value in enumerate(value_order)}
        rows = _rows(data)
        unknown = {v for row in rows for v in row if not is_missing(v) and v not in positions}
        if unknown:
            raise ValueError(f"values not in value_order: {sorted(map(repr, unknown))}")
        data = [[np.nan if is_missing(v) else positions[v] for v in row] for row in rows]
    matrix = _numeric_matrix(data)
    if level == "nominal" and matrix is None:
        codes, _ = _code_matrix(_rows(data), lambda value: value)
        return PreparedData(level, "codes_nominal", codes)
    if matrix is None:
        raise ValueError(f"{level} alpha needs numbers (or value_order for ordinal labels)")
    if level == "ratio":
        if np.nanmin(matrix, initial=0.0) < 0:
            raise ValueError("ratio data cannot be negative")
    return PreparedData(level, "numeric", matrix)


def _check_domain_size(size: int) -> None:
    if size > MAX_DISTINCT_VALUES_FOR_MATRIX:
        raise ValueError(
            f"{size} distinct values: this level needs a values × values distance matrix; "
            "use the interval or ordinal level, or round the values"
        )


# --- the computation -----------------------------------------------------------------------


def _pairable_numeric(matrix: np.ndarray):
    present = ~np.isnan(matrix)
    per_unit = present.sum(axis=0)
    keep = per_unit >= 2
    return matrix[:, keep], present[:, keep], per_unit[keep]


def _interval_parts(values: np.ndarray, present: np.ndarray, per_unit: np.ndarray, annotators):
    n = int(per_unit.sum())
    if n == 0:
        return AlphaParts(0.0, 0.0, 0, 0, annotators)
    # Centre first: the sums-of-squares identities lose precision far from zero.
    centred = np.where(present, values - values[present].mean(), 0.0)
    sums = centred.sum(axis=0)
    squares = (centred * centred).sum(axis=0)
    within = 2.0 * (per_unit * squares - sums * sums) / (per_unit - 1)
    observed = max(float(within.sum()), 0.0) / n
    total, total_squares = float(sums.sum()), float(squares.sum())
    expected = max(2.0 * (n * total_squares - total * total), 0.0) / (n * (n - 1))
    return AlphaParts(observed, expected, n, int(per_unit.size), annotators)


def _mid_ranks(values: np.ndarray) -> np.ndarray:
    """Each value replaced by its mid-rank among all the given values (ties share the mean)."""
    distinct, codes, counts = np.unique(values, return_inverse=True, return_counts=True)
    below = np.cumsum(counts) - counts
    return (below + counts / 2.0)[codes]


def _numeric_parts(prepared: PreparedData) -> AlphaParts:
    matrix = prepared.matrix
    annotators = int((~np.isnan(matrix)).any(axis=1).sum())
    values, present, per_unit = _pairable_numeric(matrix)
    if prepared.level == "ordinal" and per_unit.size:
        values = values.copy()
        values[present] = _mid_ranks(values[present])
    if prepared.level in ("interval", "ordinal"):
        return _interval_parts(values, present, per_unit, annotators)
    # ratio, and nominal given as numbers, go through codes.
    distinct, codes = np.unique(values[present], return_inverse=True)
    code_matrix = np.full(values.shape, -1, dtype=np.int64)
    code_matrix[present] = codes
    if prepared.level == "nominal":
        return _nominal_parts(code_matrix, annotators)
    _check_domain_size(len(distinct))
    return _coincidence_parts(code_matrix, ratio_distance(distinct), annotators)


def _unit_value_counts(codes: np.ndarray):
    """Sparse (unit, value, count) triples for the units with ≥ 2 values, and m_u per unit."""
    present = codes >= 0
    per_unit = present.sum(axis=0)
    keep = per_unit >= 2
    codes, present, per_unit = codes[:, keep], present[:, keep], per_unit[keep]
    n_values = int(codes.max()) + 1 if codes.size and present.any() else 0
    units = np.broadcast_to(np.arange(codes.shape[1]), codes.shape)[present]
    keys = units * max(n_values, 1) + codes[present]
    cells, counts = np.unique(keys, return_counts=True)
    return cells // max(n_values, 1), cells % max(n_values, 1), counts, per_unit, n_values


def _nominal_parts(codes: np.ndarray, annotators: int | None = None) -> AlphaParts:
    if annotators is None:
        annotators = int((codes >= 0).any(axis=1).sum())
    units, values, counts, per_unit, n_values = _unit_value_counts(codes)
    n = int(per_unit.sum())
    if n == 0:
        return AlphaParts(0.0, 0.0, 0, 0, annotators)
    squared_counts = counts.astype(float) ** 2
    same_value_pairs = np.bincount(units, weights=squared_counts, minlength=per_unit.size)
    observed = float(((per_unit**2 - same_value_pairs) / (per_unit - 1)).sum()) / n
    totals = np.bincount(values, weights=counts, minlength=n_values)
    expected = (n * n - float((totals**2).sum())) / (n * (n - 1))
    return AlphaParts(observed, expected, n, int(per_unit.size), annotators)


def _coincidence_parts(codes: np.ndarray, distances: np.ndarray, annotators=None) -> AlphaParts:
    """alpha from the coincidence matrix o_ck = Σ_u n_uc (n_uk − [c = k]) / (m_u − 1)."""
    if annotators is None:
        annotators = int((codes >= 0).any(axis=1).sum())
    units, values, counts, per_unit, _ = _unit_value_counts(codes)
    n = int(per_unit.sum())
    if n == 0:
        return AlphaParts(0.0, 0.0, 0, 0, annotators)
    size = distances.shape[0]
    table = sparse.csr_matrix((counts.astype(float), (units, values)), shape=(per_unit.size, size))
    weighted = sparse.diags(1.0 / (per_unit - 1.0)) @ table
    coincidences = (table.T @ weighted).toarray()
    coincidences -= np.diag(np.asarray(weighted.sum(axis=0)).ravel())
    observed = float((coincidences * distances).sum()) / n
    totals = np.asarray(table.sum(axis=0)).ravel()
    pair_mass = totals @ distances @ totals - float((totals * np.diag(distances)).sum())
    expected = float(pair_mass) / (n * (n - 1))
    return AlphaParts(observed, expected, n, int(per_unit.size), annotators)


def alpha_parts(prepared: PreparedData) -> AlphaParts:
    if prepared.kind == "numeric":
        return _numeric_parts(prepared)
    if prepared.kind == "codes_nominal":
        return _nominal_parts(prepared.matrix)
    return _coincidence_parts(prepared.matrix, prepared.distances)


# --- many resamples at once (the bootstrap) ------------------------------------------------------


def _unit_class_counts(prepared: PreparedData):
    """The pairable units' value counts: a sparse units × classes matrix N, m_u per unit, the
    classes' values (numeric data) and the distance matrix between classes (coincidence levels).
    """
    if prepared.kind == "numeric":
        values, present, per_unit = _pairable_numeric(prepared.matrix)
        distinct, codes = np.unique(values[present], return_inverse=True)
        code_matrix = np.full(values.shape, -1, dtype=np.int64)
        code_matrix[present] = codes
        distances = ratio_distance(distinct) if prepared.level == "ratio" else None
    else:
        code_matrix, distances, distinct = prepared.matrix, prepared.distances, None
        keep = (code_matrix >= 0).sum(axis=0) >= 2
        code_matrix = code_matrix[:, keep]
    present = code_matrix >= 0
    per_unit = present.sum(axis=0)
    size = int(code_matrix.max()) + 1 if present.any() else 0
    units = np.broadcast_to(np.arange(code_matrix.shape[1]), code_matrix.shape)[present]
    counts = sparse.csr_matrix((np.ones(units.size), (units, code_matrix[present])),
                               shape=(code_matrix.shape[1], max(size, 1)))
    if distances is not None and distances.shape[0] < counts.shape[1]:  # no value present
        distances = np.zeros((counts.shape[1], counts.shape[1]))
    return counts, per_unit.astype(float), distinct, distances


def alpha_resampled(prepared: PreparedData, weights: np.ndarray) -> np.ndarray:
    """alpha of every resample at once: WEIGHTS[b, u] is how often resample b drew unit u (a
    column of the prepared matrix). Equals ``alpha_parts(prepared.columns(indices)).value`` for
    each resample's indices (to floating-point precision), NaN where that is None; the closed
    forms of the module docstring, with every sum over units weighted.
    """
    # No matrix products: BLAS threads fight over a busy machine's cores (4-5x slower there);
    # einsum's own loops run in the calling thread.
    weights = np.asarray(weights, dtype=float)
    if prepared.kind == "numeric":
        keep = (~np.isnan(prepared.matrix)).sum(axis=0) >= 2
    else:
        keep = (prepared.matrix >= 0).sum(axis=0) >= 2
    w = weights[:, keep]
    if prepared.kind == "numeric" and prepared.level == "interval":
        values, present, per_unit = _pairable_numeric(prepared.matrix)
        centred = np.where(present, values - (values[present].mean() if present.any() else 0.0),
                           0.0)
        sums, squares = centred.sum(axis=0), (centred * centred).sum(axis=0)
        within = 2.0 * (per_unit * squares - sums * sums) / np.maximum(per_unit - 1, 1)
        n = _weigh(w, per_unit)
        observed = np.maximum(_weigh(w, within), 0.0)
        total, total_squares = _weigh(w, sums), _weigh(w, squares)
        expected_mass = np.maximum(2.0 * (n * total_squares - total * total), 0.0)
        units = (w > 0).sum(axis=1)
        return _alpha_values(observed, expected_mass, n, units)
    counts, per_unit, _, distances = _unit_class_counts(prepared)
    if counts.shape[1] <= 256:  # few distinct values (Likert, labels): dense is faster
        counts = counts.toarray()
    n = _weigh(w, per_unit)
    units = (w > 0).sum(axis=1)
    totals = (np.einsum("bu,uc->bc", w, counts) if isinstance(counts, np.ndarray)
              else np.asarray(counts.T @ w.T).T)  # resamples × classes
    divisor = np.maximum(per_unit - 1.0, 1.0)
    if prepared.level == "ordinal":
        ranks = np.cumsum(totals, axis=1) - totals + totals / 2.0  # mid-ranks per resample
        sums = _by_class(counts, ranks)  # units × resamples
        squares = _by_class(counts, ranks * ranks)
        within = 2.0 * (per_unit[:, None] * squares - sums * sums) / divisor[:, None]
        observed = np.maximum(np.einsum("bu,ub->b", w, within), 0.0)
        total = (totals * ranks).sum(axis=1)
        total_squares = (totals * ranks * ranks).sum(axis=1)
        expected_mass = np.maximum(2.0 * (n * total_squares - total * total), 0.0)
        return _alpha_values(observed, expected_mass, n, units)
    if prepared.level == "nominal":
        same = np.asarray(sparse.csr_matrix(counts).multiply(counts).sum(axis=1)).ravel()
        observed = _weigh(w, (per_unit**2 - same) / divisor)
        expected_mass = n * n - (totals**2).sum(axis=1)
        return _alpha_values(observed, expected_mass, n, units)
    diagonal = np.diag(distances)
    dense = counts if isinstance(counts, np.ndarray) else counts.toarray()
    pair_sums = ((dense @ distances) * dense).sum(axis=1)
    own = dense @ diagonal
    observed = _weigh(w, (pair_sums - own) / divisor)
    expected_mass = np.einsum("bc,bc->b", totals @ distances, totals) - totals @ diagonal
    return _alpha_values(observed, expected_mass, n, units)


def _weigh(weights: np.ndarray, per_unit: np.ndarray) -> np.ndarray:
    """Σ_u weights[b, u] · per_unit[u] for every resample b."""
    return np.einsum("bu,u->b", weights, per_unit)


def _by_class(counts, per_class: np.ndarray) -> np.ndarray:
    """Σ_c counts[u, c] · per_class[b, c]: units × resamples."""
    if isinstance(counts, np.ndarray):
        return np.einsum("uc,bc->ub", counts, per_class)
    return np.asarray(counts @ per_class.T)


def _alpha_values(observed, expected_mass, n, units) -> np.ndarray:
    with np.errstate(divide="ignore", invalid="ignore"):
        expected = np.where(n > 1, expected_mass / (n * (n - 1)), 0.0)
        value = 1.0 - (observed / np.where(n > 0, n, 1)) / expected
    return np.where((units > 0) & (expected > 0), value, np.nan)
