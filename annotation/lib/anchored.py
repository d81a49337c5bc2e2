"""Human-anchored system scores (statistics.md, "Human-anchored system scores"): per system, the
human-only mean on the labelled units, the evaluator-only mean on every unit it scored, and the
PPI++ estimate that combines them (evaluation/lib/stats/ppi.py), with differences between
systems and their tie-aware ranks.

The labelled part of a system is its units with both a human label of the aspect (the mean over
annotators) and the evaluator's score; the unlabelled part is every other unit of that unit type
the evaluator scored for the system. Turns are clustered by their dialogue. Pure Python: the
reads are in `report_selectors.study_anchored`.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence

from annotation.lib.labels import LabelTable, system_display
from annotation.lib.reports import ScoreSet, match_aspects
from evaluation.lib.stats import ppi

KIND = "anchored"
SCALE_NOTE = ("The evaluator's scale need not be the humans': the rectifier (human − λ × "
              "evaluator) corrects any shift or scale, so the PPI++ estimate is on the humans' "
              "scale; the evaluator-only mean is on the evaluator's.")


def named_metrics(scores: Sequence[ScoreSet], table: LabelTable, aspect: str) -> list[str]:
    """The metrics of SCORES named like the human field ASPECT (`match_aspects`' rule)."""
    pairs, by_name = match_aspects(scores, {aspect: table.fields[aspect]})
    return [score.metric for score, _ in pairs] if by_name else []


def choose_metric(scores: Sequence[ScoreSet], table: LabelTable, aspect: str,
                  wanted: str = "") -> str:
    """WANTED (one of the evaluator's metrics on ASPECT's unit type), else the one metric named
    like ASPECT; a ValueError listing the choices otherwise."""
    unit_type = table.fields[aspect].unit_type
    choices = sorted({s.metric for s in scores if s.unit_type == unit_type})
    if wanted:
        if wanted in choices:
            return wanted
        raise ValueError(f"the evaluator has no {unit_type}-level metric {wanted!r} "
                         f"(metrics: {', '.join(choices) or 'none'})")
    named = named_metrics([s for s in scores if s.unit_type == unit_type], table, aspect)
    if len(named) == 1:
        return named[0]
    raise ValueError(f"no metric of the evaluator is named like the aspect {aspect!r}: choose "
                     f"one with --metric (metrics: {', '.join(choices) or 'none'})")


def _cluster(unit_type: str, unit_id: str) -> str:
    """A unit's dialogue: turn ids are `dialogue_id#turn_index`; a dialogue is its own."""
    return unit_id.rsplit("#", 1)[0] if unit_type == "turn" else unit_id


def _samples(human: Mapping, score: ScoreSet, labelled_fraction: float | None,
             seed: int) -> tuple[dict[str, ppi.AnchoredSample], dict[str, int]]:
    by_system: dict[str, list] = defaultdict(list)
    for key in score.values:
        by_system[key[0]].append(key)
    unscored = defaultdict(int)
    for system, _ in set(human) - set(score.values):
        unscored[system] += 1
    samples = {}
    for system, keys in sorted(by_system.items()):
        labelled = sorted((k for k in keys if k in human), key=repr)
        if labelled_fraction is not None and labelled:
            kept = ppi.keep_labelled_share(labelled, labelled_fraction, seed)
            labelled = [k for k in labelled if k in kept]
        chosen = set(labelled)
        rest = sorted((k for k in keys if k not in chosen), key=repr)
        samples[system] = ppi.AnchoredSample(
            [human[k] for k in labelled], [score.values[k] for k in labelled],
            [_cluster(score.unit_type, k[1]) for k in labelled],
            [score.values[k] for k in rest], [_cluster(score.unit_type, k[1]) for k in rest])
    return samples, dict(unscored)


def build_anchored(table: LabelTable, score: ScoreSet, aspect: str, *,
                   labelled_fraction: float | None = None, seed: int = 0,
                   matched_by_name: bool = True) -> dict:
    """The human-anchored report of SCORE (one evaluator metric, every unit it scored) against
    the human field ASPECT: per system the three means, λ and the effective number of labels;
    the ranking and every pairwise difference on the PPI++ means."""
    spec = table.fields[aspect]
    if score.unit_type != spec.unit_type:
        raise ValueError(f"{score.metric} scores {score.unit_type}s but {aspect} labels "
                         f"{spec.unit_type}s")
    human = {key: value for key, value in table.human_means(aspect).items()}
    samples, unscored = _samples(human, score, labelled_fraction, seed)
    results = {system: ppi.anchored_mean(sample) for system, sample in samples.items()}
    names = list(results)
    differences = [{"a": a, "b": b, **ppi.anchored_difference(results[a], results[b]).to_dict()}
                   for i, a in enumerate(names) for b in names[i + 1:]]
    notes = [SCALE_NOTE]
    if not matched_by_name:
        notes.append(f"{score.metric} is not named like {aspect}: it was chosen as its match.")
    if unscored:
        notes.append("Labelled units without an evaluator score are left out: " + ", ".join(
            f"{system_display(s)} {count}" for s, count in sorted(unscored.items())) + ".")
    return {
        "kind": KIND, "evaluator": score.evaluator, "metric": score.metric, "aspect": aspect,
        "level": spec.unit_type, "labelled_fraction": labelled_fraction,
        "seed": seed if labelled_fraction is not None else None,
        "systems": [{"system": name, "display": system_display(name), **result.to_dict(),
                     "estimate": result.ppi.to_dict()} for name, result in results.items()],
        "ranking": [row.to_dict() for row in ppi.anchored_ranking(results)],
        "differences": differences, "notes": notes,
    }


def resampled_coverage(table: LabelTable, score: ScoreSet, aspect: str, *, fraction: float,
                       seeds: Sequence[int]) -> dict:
    """How often the PPI++ interval on a seeded share FRACTION of each system's labelled units
    covers the human mean on all of them (what every label says), and its width against the
    human-only interval on the same share: per system and over all, for SEEDS draws."""
    human = table.human_means(aspect)
    full, _ = _samples(human, score, None, 0)
    truth = {system: ppi.anchored_mean(sample).human_only.value for system, sample in full.items()}
    hits: dict[str, list[bool]] = defaultdict(list)
    ratios: dict[str, list[float]] = defaultdict(list)
    human_hits: dict[str, list[bool]] = defaultdict(list)
    for seed in seeds:
        samples, _ = _samples(human, score, fraction, seed)
        for system, sample in samples.items():
            result = ppi.anchored_mean(sample)
            if truth[system] is None or result.ppi.ci_low is None:
                continue
            hits[system].append(result.ppi.ci_low <= truth[system] <= result.ppi.ci_high)
            human_hits[system].append(
                result.human_only.ci_low <= truth[system] <= result.human_only.ci_high)
            human_width = result.human_only.ci_high - result.human_only.ci_low
            if human_width > 0:  # not when every kept label is the same
                ratios[system].append((result.ppi.ci_high - result.ppi.ci_low) / human_width)

    def summary(h: list[bool], r: list[float], human_h: list[bool]) -> dict:
        return {"coverage": sum(h) / len(h) if h else None, "draws": len(h),
                "human_only_coverage": sum(human_h) / len(human_h) if human_h else None,
                "width_ratio": sum(r) / len(r) if r else None, "largest_width_ratio":
                max(r) if r else None}
    every_hit = [hit for values in hits.values() for hit in values]
    every_ratio = [ratio for values in ratios.values() for ratio in values]
    every_human = [hit for values in human_hits.values() for hit in values]
    return {"evaluator": score.evaluator, "metric": score.metric, "aspect": aspect,
            "fraction": fraction, "draws": len(seeds),
            "overall": summary(every_hit, every_ratio, every_human),
            "systems": {system_display(s): {**summary(hits[s], ratios[s], human_hits[s]),
                                            "n_labelled_all": len(full[s].human)}
                        for s in sorted(hits)}}
