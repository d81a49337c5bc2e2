"""The human-anchored report of a study that hands items out by the active policy (statistics.md,
"Label these next: active handout"): per system the active-inference estimate of the human mean
(Zrnic & Candès 2024: inverse-probability weights 1/π on the labels of the drawn items), its
λ = 0 version (the Horvitz–Thompson mean of the labels alone), the evaluator's mean, differences
and ranks — the same shape as `anchored.build_anchored`, whose unweighted PPI++ would be biased
here (the labelled items were chosen where the evaluator errs most).

The pool of a system is its study items in the waves whose drawn items all have a label of the
aspect (a wave still being labelled is left out whole: leaving out only its unlabelled drawn
items would bias the estimate), less any item the report's metric did not score. Each item
carries its wave and π (`DrawRow`, read from the database by `report_selectors`). Pure Python.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from annotation.lib.anchored import KIND, SCALE_NOTE, _cluster
from annotation.lib.labels import LabelTable, system_display
from annotation.lib.reports import ScoreSet
from evaluation.lib.stats import active_handout

POLICY = "active"
SHORT = "active IPW"


@dataclass(frozen=True)
class DrawRow:
    """One pool item of an active study: its unit (system, unit id), wave, π and whether it was
    drawn for the humans."""

    system: str
    unit_id: str
    wave: int
    pi: float
    drawn: bool
    unit_type: str = "turn"


def _part(estimate) -> dict:
    return {"mean": estimate.value, "ci": [estimate.ci_low, estimate.ci_high],
            "method": estimate.method, "undefined_reason": estimate.undefined_reason}


def completed_waves(draws: Sequence[DrawRow], human: Mapping) -> dict[str, set[int]]:
    """Per system, the waves every drawn item of which has a human label (HUMAN: unit key ->
    the human mean)."""
    waves: dict[str, set[int]] = defaultdict(set)
    open_: dict[str, set[int]] = defaultdict(set)
    for row in draws:
        waves[row.system].add(row.wave)
        if row.drawn and (row.system, row.unit_id) not in human:
            open_[row.system].add(row.wave)
    return {system: found - open_[system] for system, found in waves.items()}


def build_active_anchored(table: LabelTable, score: ScoreSet, aspect: str,
                          draws: Sequence[DrawRow], *, waves_planned: int = active_handout.WAVES,
                          matched_by_name: bool = True) -> dict:
    """The report of SCORE against the human field ASPECT for an active study whose pool items
    were drawn as DRAWS say."""
    spec = table.fields[aspect]
    if score.unit_type != spec.unit_type:
        raise ValueError(f"{score.metric} scores {score.unit_type}s but {aspect} labels "
                         f"{spec.unit_type}s")
    human = table.human_means(aspect)
    complete = completed_waves(draws, human)
    by_system: dict[str, list[DrawRow]] = defaultdict(list)
    unscored: dict[str, int] = defaultdict(int)
    for row in sorted(draws, key=lambda r: (r.system, r.unit_id)):
        if row.wave not in complete.get(row.system, set()):
            continue
        if (row.system, row.unit_id) not in score.values:
            unscored[row.system] += 1
            continue
        by_system[row.system].append(row)
    results = {}
    for system in sorted({row.system for row in draws}):
        rows = by_system.get(system, [])
        results[system] = active_handout.ipw_mean(
            [score.values[(system, r.unit_id)] for r in rows], [r.pi for r in rows],
            [r.drawn for r in rows], [human.get((system, r.unit_id)) for r in rows],
            [_cluster(score.unit_type, r.unit_id) for r in rows])
    names = list(results)
    differences = [{"a": a, "b": b,
                    **active_handout.ipw_difference(results[a], results[b]).to_dict()}
                   for i, a in enumerate(names) for b in names[i + 1:]]
    notes = [f"Items were handed out by the active policy: {active_handout.LABEL} weights each "
             "label by 1/π, its item's inclusion probability, so the estimate stays unbiased for "
             "the human mean over the study's items; the unweighted PPI++ mean would not be.",
             SCALE_NOTE]
    pending = {system: sorted({r.wave for r in draws if r.system == system}
                              - complete.get(system, set()))
               for system in results}
    if any(pending.values()):
        notes.append("Waves still being labelled are left out until every item they drew has "
                     "a label: " + ", ".join(
                         f"{system_display(s)} wave {', '.join(map(str, w))}"
                         for s, w in sorted(pending.items()) if w) + ".")
    if not matched_by_name:
        notes.append(f"{score.metric} is not named like {aspect}: it was chosen as its match.")
    if unscored:
        notes.append(f"Items {score.metric} did not score are left out (their π still holds for "
                     "the rest): " + ", ".join(f"{system_display(s)} {n}"
                                               for s, n in sorted(unscored.items())) + ".")
    systems = []
    for name, result in results.items():
        se = result.estimate.params.get("se")
        human_se = result.human_only.params.get("se")
        effective = result.n_labelled * (human_se / se) ** 2 if se and human_se else None
        systems.append({
            "system": name, "display": system_display(name),
            "human_only": _part(result.human_only), "evaluator_only": _part(result.evaluator_only),
            "ppi": _part(result.estimate), "lambda": result.lam, "effective_labels": effective,
            "n_labelled": result.n_labelled, "n_unlabelled": result.n_pool - result.n_labelled,
            "estimate": result.estimate.to_dict(), "waves_in_estimate": sorted(
                complete.get(name, set()))})
    used = {(r.system, r.unit_id) for rows in by_system.values() for r in rows}
    return {
        "kind": KIND, "policy": POLICY, "estimator": active_handout.LABEL, "estimator_short": SHORT,
        "evaluator": score.evaluator, "metric": score.metric, "aspect": aspect,
        "level": spec.unit_type, "labelled_fraction": None, "seed": None,
        "waves_planned": waves_planned, "systems": systems,
        "ranking": [row.to_dict() for row in active_handout.ipw_ranking(results)],
        "differences": differences, "notes": notes,
        "draws": [{"system": system_display(r.system), "unit_id": r.unit_id, "wave": r.wave,
                   "pi": r.pi, "drawn": r.drawn,
                   "label": human.get((r.system, r.unit_id)) if r.drawn else None,
                   "in_estimate": (r.system, r.unit_id) in used}
                  for r in sorted(draws, key=lambda r: (r.system, r.wave, r.unit_id))],
    }
