"""Reads for a study's hand-out policy (statistics.md, "Label these next: active handout"): the
pool of items an active policy draws from, the evaluator metrics that could drive it, and the
policy's state for the author's dashboard. The writes (setting the policy, drawing waves) are
`services.handout_policy`.
"""

from __future__ import annotations

from dataclasses import dataclass

from django.db.models import Count

from annotation.lib.labels import REFERENCE

from .models import Annotation, HandoutDraw, HandoutWave, Study, StudyItem
from .report_selectors import POOL_MODES, evaluator_score_sets, study_aspect_fields

aspect_fields = study_aspect_fields  # the numeric human fields of a study's (mode's) forms


@dataclass(frozen=True)
class PoolItem:
    item_id: int
    system: str  # the label table's system name (REFERENCE for the benchmark's own responses)
    unit_id: str
    dialogue_id: str


def pool_items(study: Study, unit_type: str) -> list[PoolItem]:
    """The regular items of STUDY that units of UNIT_TYPE identify one to one (response items
    for turns, conversation items for dialogues)."""
    mode = POOL_MODES.get(unit_type)
    if mode is None:
        return []
    rows = (StudyItem.objects.filter(study=study, kind=StudyItem.Kind.NORMAL, mode=mode)
            .order_by("position")
            .values_list("pk", "system__name", "dialogue__external_id", "turn_index"))
    return [PoolItem(pk, system or REFERENCE,
                     dialogue if unit_type == "dialogue" else f"{dialogue}#{turn}", dialogue)
            for pk, system, dialogue, turn in rows]


def pool_unit_type(study: Study) -> str | None:
    """The unit type of an active study's pool (that of its human field)."""
    spec = aspect_fields(study).get(study.handout_aspect)
    return spec.unit_type if spec else None


def pool_scores(study: Study, evaluator: str, metric: str, unit_type: str,
                pool: list[PoolItem]) -> dict[tuple[str, str], float]:
    """EVALUATOR's METRIC on the units of POOL, keyed (system, unit id)."""
    return pool_score_set(study, evaluator, metric, unit_type, pool)[0]


def pool_score_set(study: Study, evaluator: str, metric: str, unit_type: str,
                   pool: list[PoolItem]) -> tuple[dict, dict]:
    """(values, uncertainties) of EVALUATOR's METRIC on the units of POOL, keyed (system, unit
    id): the uncertainty where the judge reports its own (FACE's grade distributions; the
    active rule's error predictor, as in the label plan)."""
    sets = evaluator_score_sets(benchmark=study.benchmark, evaluators=[evaluator],
                                unit_type=unit_type, units={p.unit_id for p in pool},
                                with_uncertainty=True)
    score = next((s for s in sets.get(evaluator, []) if s.metric == metric), None)
    return (dict(score.values), dict(score.uncertainty)) if score else ({}, {})


def handout_choices(*, study: Study) -> list[dict]:
    """Every evaluator metric with scores on some of STUDY's pool items (turn-level metrics on
    its response items, dialogue-level ones on its conversation items), with how many of them
    it scored: the settings page's list (only those that scored every item can be chosen)."""
    pools = {unit_type: pool_items(study, unit_type) for unit_type in POOL_MODES}
    units = {p.unit_id for pool in pools.values() for p in pool}
    if not units:
        return []
    rows = []
    for evaluator, sets in sorted(evaluator_score_sets(benchmark=study.benchmark,
                                                       units=units).items()):
        for score in sets:
            pool = pools.get(score.unit_type) or []
            scored = sum((p.system, p.unit_id) in score.values for p in pool)
            if scored:
                rows.append({"evaluator": evaluator, "metric": score.metric,
                             "unit_type": score.unit_type, "scored": scored,
                             "items": len(pool)})
    return sorted(rows, key=lambda r: (r["scored"] < r["items"], r["evaluator"], r["metric"]))


def handout_status(*, study: Study) -> dict:
    """The policy and, under "active", its waves: per wave its items, how many were drawn, how
    many of those are labelled to their target, and the labels the current wave still needs."""
    status = {"policy": study.handout_policy, "evaluator": study.handout_evaluator,
              "metric": study.handout_metric, "aspect": study.handout_aspect,
              "budget": study.handout_budget, "waves": [], "current": None}
    if not study.is_active_handout:
        return status
    labels = dict(Annotation.objects.filter(item__study=study, assignment__member__excluded=False)
                  .values_list("item").annotate(n=Count("pk")))
    waves = {wave.pk: {"number": wave.number, "of": wave.of, "rule": wave.rule,
                       "units": wave.units, "drawn": wave.drawn, "budget": wave.budget,
                       "complete": 0, "labels_left": 0}
             for wave in HandoutWave.objects.filter(study=study).order_by("number")}
    for wave_id, item, target in (HandoutDraw.objects.filter(wave__study=study, drawn=True)
                                  .values_list("wave_id", "item_id", "item__target_labels")):
        got = labels.get(item, 0)
        waves[wave_id]["complete"] += got >= target
        waves[wave_id]["labels_left"] += max(0, target - got)
    status["waves"] = list(waves.values())
    if status["waves"]:
        last = status["waves"][-1]
        status["current"] = last
        status["drawn_total"] = sum(w["drawn"] for w in status["waves"])
        status["done"] = last["number"] >= last["of"] and last["labels_left"] == 0
    status["query"] = {"evaluator": study.handout_evaluator, "metric": study.handout_metric,
                       "aspect": study.handout_aspect}
    return status
