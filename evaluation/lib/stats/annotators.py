"""How each annotator agrees with the others (spec: statistics.md "Inter-annotator agreement";
Trace Table 11; FACE appendix A.2.2).

- ``leave_one_annotator_out`` and ``worst_annotator_pairs``: how agreement moves without people.
- ``annotator_diagnostics``: per-annotator means, deviation from the others, flag rate, gold
  accuracy (Trace Table 11).
- ``pairwise_annotator_correlation`` (FACE style) and ``cohen_kappa``.
"""

from __future__ import annotations

import itertools
import math
import warnings
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from scipy import stats

from evaluation.lib.stats.agreement import NO_ERROR_LABEL, _alpha_estimate, _error_categories
from evaluation.lib.stats.alpha import PreparedData, is_missing, prepare
from evaluation.lib.stats.results import Estimate

# --- leave-one-out -----------------------------------------------------------------------


@dataclass(frozen=True)
class AgreementField:
    """One annotated field: its annotators × units matrix and level of measurement."""

    data: Any
    level: str = "interval"
    value_order: Sequence | None = None


@dataclass(frozen=True)
class LeaveOutRow:
    """Alpha per field with some annotators dropped, and the mean over the defined fields."""

    dropped: tuple
    alphas: dict[str, Estimate]
    mean_alpha: float | None

    def to_dict(self) -> dict[str, Any]:
        return {
            "dropped": list(self.dropped),
            "alphas": {name: estimate.to_dict() for name, estimate in self.alphas.items()},
            "mean_alpha": self.mean_alpha,
        }


def _alpha_without(prepared: Mapping[str, PreparedData], keep: np.ndarray, dropped) -> LeaveOutRow:
    alphas = {}
    for name, item in prepared.items():
        subset = PreparedData(item.level, item.kind, item.matrix[keep], item.distances)
        alphas[name] = _alpha_estimate(subset)
    defined = [estimate.value for estimate in alphas.values() if estimate.is_defined]
    mean = float(np.mean(defined)) if defined else None
    return LeaveOutRow(tuple(dropped), alphas, mean)


def _prepare_fields(fields: Mapping[str, AgreementField], annotators: Sequence) -> dict:
    prepared = {}
    for name, item in fields.items():
        prepared[name] = prepare(item.data, item.level, item.value_order)
        if prepared[name].matrix.shape[0] != len(annotators):
            raise ValueError(f"field {name!r} does not have one row per annotator")
    return prepared


def leave_one_annotator_out(
    fields: Mapping[str, AgreementField], annotators: Sequence[Hashable]
) -> list[LeaveOutRow]:
    """The all-annotator row first, then alpha per field without each annotator in turn.

    Every field's matrix has one row per entry of ``annotators``, in that order.
    """
    prepared = _prepare_fields(fields, annotators)
    everyone = np.ones(len(annotators), dtype=bool)
    rows = [_alpha_without(prepared, everyone, ())]
    for i, annotator in enumerate(annotators):
        keep = everyone.copy()
        keep[i] = False
        rows.append(_alpha_without(prepared, keep, (annotator,)))
    return rows


def worst_annotator_pairs(
    fields: Mapping[str, AgreementField], annotators: Sequence[Hashable], *, limit: int = 5
) -> list[LeaveOutRow]:
    """The pairs whose removal raises mean alpha the most (highest mean after dropping first)."""
    prepared = _prepare_fields(fields, annotators)
    rows = []
    for i, j in itertools.combinations(range(len(annotators)), 2):
        keep = np.ones(len(annotators), dtype=bool)
        keep[[i, j]] = False
        rows.append(_alpha_without(prepared, keep, (annotators[i], annotators[j])))
    rows.sort(key=lambda row: -math.inf if row.mean_alpha is None else row.mean_alpha, reverse=True)
    return rows[:limit]


# --- per-annotator diagnostics -----------------------------------------------------------


@dataclass(frozen=True)
class AnnotatorDiagnostics:
    """How one annotator rates compared with the others (Trace appendix K.2, Table 11)."""

    annotator: Hashable
    mean_rating: dict[str, float | None] = field(default_factory=dict)
    mean_abs_deviation: dict[str, float | None] = field(default_factory=dict)
    flag_rate: float | None = None
    mean_error_categories: float | None = None
    gold_accuracy: float | None = None
    n: dict[str, int] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {
            "annotator": self.annotator,
            "mean_rating": dict(self.mean_rating),
            "mean_abs_deviation": dict(self.mean_abs_deviation),
            "flag_rate": self.flag_rate,
            "mean_error_categories": self.mean_error_categories,
            "gold_accuracy": self.gold_accuracy,
            "n": dict(self.n),
        }


def _mean_or_none(values) -> float | None:
    values = list(values)
    return float(np.mean(values)) if values else None


def _scale_diagnostics(matrix: np.ndarray):
    """Per annotator: mean rating, mean |rating − mean of the others on that item|, counts."""
    present = ~np.isnan(matrix)
    filled = np.where(present, matrix, 0.0)
    total, count = filled.sum(axis=0), present.sum(axis=0)
    results = []
    for row, mask in zip(filled, present, strict=True):
        others = count - mask
        comparable = mask & (others > 0)
        with np.errstate(invalid="ignore", divide="ignore"):
            other_means = (total - row) / others
        deviations = np.abs(row - other_means)[comparable]
        results.append(
            (
                _mean_or_none(row[mask]),
                _mean_or_none(deviations),
                int(mask.sum()),
                int(comparable.sum()),
            )
        )
    return results


def annotator_diagnostics(
    annotators: Sequence[Hashable],
    *,
    scales: Mapping[str, Any] | None = None,
    error_checklists: Any | None = None,
    gold_responses: Any | None = None,
    gold_answers: Sequence[Any] | None = None,
    no_error_label: str | None = NO_ERROR_LABEL,
) -> list[AnnotatorDiagnostics]:
    """Per-annotator behaviour: every matrix has one row per annotator, in order.

    - ``scales``: name → annotators × units ratings; gives the mean rating and the mean absolute
      deviation from the other annotators' mean on the same item (items nobody else rated skip).
    - ``error_checklists``: annotators × units of label sets (None = not answered); flag rate =
      share of answered items with at least one error category; mean number of categories.
      ``no_error_label`` (the exclusive "No errors" choice) is not an error category.
    - ``gold_responses`` (annotators × gold items) against ``gold_answers``: share answered right.
    """
    scale_results = {
        name: _scale_diagnostics(np.array(matrix, dtype=float))
        for name, matrix in (scales or {}).items()
    }
    diagnostics = []
    for i, annotator in enumerate(annotators):
        mean_rating, deviation, n = {}, {}, {}
        for name, per_annotator in scale_results.items():
            mean_rating[name], deviation[name], n[f"rated:{name}"], n[f"compared:{name}"] = (
                per_annotator[i]
            )
        flag_rate = mean_categories = gold_accuracy = None
        if error_checklists is not None:
            answers = [a for a in error_checklists[i] if not is_missing(a)]
            sizes = [len(_error_categories(a, no_error_label)) for a in answers]
            n["checklists"] = len(sizes)
            flag_rate = _mean_or_none(size > 0 for size in sizes)
            mean_categories = _mean_or_none(sizes)
        if gold_responses is not None and gold_answers is not None:
            pairs = [
                (given, expected)
                for given, expected in zip(gold_responses[i], gold_answers, strict=True)
                if not is_missing(given)
            ]
            n["gold_items"] = len(pairs)
            gold_accuracy = _mean_or_none(given == expected for given, expected in pairs)
        diagnostics.append(
            AnnotatorDiagnostics(
                annotator, mean_rating, deviation, flag_rate, mean_categories, gold_accuracy, n
            )
        )
    return diagnostics


# --- correlations between annotators and Cohen's kappa --------------------------------------


def pairwise_annotator_correlation(data: Any, *, min_common_units: int = 3) -> dict[str, Estimate]:
    """Pearson r and Spearman ρ averaged over all annotator pairs (FACE appendix A.2.2).

    Each pair uses the units both annotators rated; pairs with fewer than ``min_common_units``
    such units, or where either annotator gave a constant rating, are skipped (counted in n).
    """
    matrix = np.array(data, dtype=float)
    present = ~np.isnan(matrix)
    per_method: dict[str, list[float]] = {"pearson": [], "spearman": []}
    pairs_total = skipped = 0
    for i, j in itertools.combinations(range(matrix.shape[0]), 2):
        pairs_total += 1
        both = present[i] & present[j]
        x, y = matrix[i, both], matrix[j, both]
        if both.sum() < min_common_units or np.ptp(x) == 0 or np.ptp(y) == 0:
            skipped += 1
            continue
        per_method["pearson"].append(float(stats.pearsonr(x, y).statistic))
        per_method["spearman"].append(float(stats.spearmanr(x, y).statistic))
    n = {
        "pairs": pairs_total - skipped,
        "pairs_skipped": skipped,
        "annotators": int(present.any(axis=1).sum()),
        "units": int((present.sum(axis=0) >= 2).sum()),
    }
    results = {}
    for name, values in per_method.items():
        method = f"pairwise_{name}"
        if values:
            results[name] = Estimate(float(np.mean(values)), n=n, method=method)
        else:
            results[name] = Estimate.undefined(
                f"no annotator pair shares {min_common_units}+ units with varying ratings",
                method=method,
                n=n,
            )
    return results


def _paired_labels(labels_a, labels_b) -> tuple[list, list]:
    if isinstance(labels_a, Mapping) and isinstance(labels_b, Mapping):
        shared = [key for key in labels_a if key in labels_b]
        labels_a = [labels_a[key] for key in shared]
        labels_b = [labels_b[key] for key in shared]
    if len(labels_a) != len(labels_b):
        raise ValueError("the two annotators' label lists must have the same length")
    kept = [(a, b) for a, b in zip(labels_a, labels_b, strict=True)]
    kept = [(a, b) for a, b in kept if not is_missing(a) and not is_missing(b)]
    return [a for a, _ in kept], [b for _, b in kept]


def cohen_kappa(
    labels_a: Sequence | Mapping,
    labels_b: Sequence | Mapping,
    *,
    weights: str | None = None,
    labels: Sequence | None = None,
) -> Estimate:
    """Cohen's kappa between two annotators (scikit-learn), unweighted, "linear" or "quadratic".

    Sequences are aligned by position, mappings joined on their keys; items either annotator left
    empty are dropped. Undefined with fewer than two items or when chance agreement is 1.
    Weighted kappa needs LABELS, the declared scale in order (its weights are distances between
    positions in it); for QWK call ``correlation.quadratic_weighted_kappa``.
    """
    if weights is not None and labels is None:
        raise ValueError("weighted kappa needs the declared scale's labels (labels=...)")
    method = "quadratic_weighted_kappa" if weights == "quadratic" else "cohen_kappa"
    a, b = _paired_labels(labels_a, labels_b)
    n = {"units": len(a)}
    params = {"weights": weights or "none"}
    if len(a) < 2:
        return Estimate.undefined(
            "fewer than two items rated by both", method=method, n=n, params=params
        )
    if len(set(a) | set(b)) < 2:
        return Estimate.undefined(
            "both raters used one and the same label everywhere (chance agreement is 1)",
            method=method,
            n=n,
            params=params,
        )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        from sklearn.metrics import cohen_kappa_score  # on first use: scikit-learn's import
        # costs every process that loads the app (a worker, `import_benchmark`) ~0.4 s and memory

        value = cohen_kappa_score(a, b, weights=weights, labels=labels)
    return Estimate(float(value), n=n, method=method, params=params)
