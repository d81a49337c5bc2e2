"""Report builders: agreement, metric–human correlation, factor coupling and the metric
leaderboard of one study, as plain dicts (spec: statistics.md; metrics.md §F; Trace §7.1 and
Table 10; FACE §5, Tables 1–2; CoRE §7.1.1).

Pure Python over a `labels.LabelTable` and evaluator `ScoreSet`s; every number comes from
`evaluation.lib.stats` and keeps its n, CI, method and the reason it is undefined. The report page,
the `agreement` / `correlate` commands and the export bundle all print what these return, so
they always show the same numbers. Database reads are in `report_selectors`.
"""

from __future__ import annotations

import math
from collections import Counter, defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from annotation.lib.labels import (
    CHECKLIST_SET_FIELD,
    CITATION_FIELD,
    PAIRWISE_FIELD,
    RECOMMEND_FIELD,
    FieldSpec,
    LabelRow,
    LabelTable,
    UnitKey,
    system_display,
)
from annotation.lib.preferences import pairwise_preferences
from evaluation.lib import columns
from evaluation.lib.stats import system_meta
from evaluation.lib.stats.agreement import (
    ALPHA_INTERVAL,
    ALPHA_PAIR_INTERVAL,
    ALPHA_TEST_INTERVAL,
    alpha_with_ci,
    reliability_matrix,
)
from evaluation.lib.stats.annotators import (
    AgreementField,
    annotator_diagnostics,
    cohen_kappa,
    leave_one_annotator_out,
    pairwise_annotator_correlation,
    worst_annotator_pairs,
)
from evaluation.lib.stats.bootstrap import DEFAULT_RESAMPLES, DEFAULT_SEED
from evaluation.lib.stats.correlation import (
    ALL_UNITS,
    ASPECT_MEAN,
    POOLED,
    inter_factor_kendall,
    item_level_correlations,
    join_on_units,
    quadratic_weighted_kappa,
    rank_evaluators,
    sample_efficiency_curve,
    system_level_correlation,
)
from evaluation.lib.stats.label_summaries import (
    blind_recommendation_agreement,
    citation_precision,
    majority_vote,
)
from evaluation.lib.stats.methods import SAMPLE_EFFICIENCY_REPEATS
from evaluation.lib.stats.results import Estimate

AGGREGATED_REASON = ("the data set publishes only labels aggregated over annotators (one value "
                     "per unit), so agreement between annotators cannot be computed")
MAX_LEAVE_OUT_ANNOTATORS = 100
MAX_PAIR_ANNOTATORS = 40
HUMANS = "humans"
MATCHED = "matched metrics"


# --- agreement -------------------------------------------------------------------------------


def _matrix(rows: Sequence[LabelRow], annotators: Sequence[str]) -> tuple[list, list]:
    """annotators × units values of one field (per-annotator rows only) and the unit keys."""
    triples = [(row.annotator, row.key, row.value) for row in rows if row.annotator]
    units = sorted({key for _, key, _ in triples})
    matrix = reliability_matrix(triples, annotators=annotators, units=units)
    return matrix.values, units


def _numeric(matrix: list[list]) -> list[list[float]]:
    return [[math.nan if v is None else float(v) for v in row] for row in matrix]


def _field_agreement(spec: FieldSpec, rows: list[LabelRow], annotators: list[str], *,
                     n_resamples: int, seed: int) -> dict:
    per_annotator = [row for row in rows if row.annotator]
    entry = {**spec.to_dict(), "labels": len(rows),
             "units": len({row.key for row in rows}),
             "aggregated_labels": len(rows) - len(per_annotator), "alpha": {}}
    if not per_annotator:
        for level in spec.alpha_levels:
            entry["alpha"][level] = Estimate.undefined(
                AGGREGATED_REASON, method="krippendorff_alpha",
                n={"units": 0, "units_total": entry["units"], "annotators": 0,
                   "pairable_values": 0}, params={"level": level}).to_dict()
        return entry
    matrix, units = _matrix(rows, annotators)
    for level in spec.alpha_levels:
        data = _numeric(matrix) if spec.is_numeric else matrix
        entry["alpha"][level] = alpha_with_ci(data, level, n_resamples=n_resamples,
                                              seed=seed).to_dict()
    if spec.is_numeric:
        pairwise = pairwise_annotator_correlation(_numeric(matrix))
        entry["pairwise"] = {name: estimate.to_dict() for name, estimate in pairwise.items()}
    if spec.level == "nominal":
        by_unit: dict = defaultdict(list)
        for row in per_annotator:
            by_unit[row.key].append(row.value)
        votes = majority_vote(by_unit)
        entry["majority"] = {"units": votes.n_units, "ties": votes.tie_count,
                             "method": "majority_vote"}
        raters = sorted({row.annotator for row in per_annotator})
        if len(raters) == 2:
            first, second = ({row.key: row.value for row in per_annotator if row.annotator == a}
                             for a in raters)
            entry["kappa"] = cohen_kappa(first, second).to_dict()
    return entry


def _leave_out(fields: list[dict], table: LabelTable, by_field: dict, annotators: list[str]
               ) -> dict:
    """Alpha per field without each annotator (and pair), on fields whose alpha is defined."""
    usable = [f for f in fields if f["alpha"][f["alpha_levels"][0]]["value"] is not None]
    if not usable:
        return {"fields": [], "rows": [], "pairs": [],
                "note": "no field has a defined alpha, so there is nothing to leave out from"}
    if len(annotators) > MAX_LEAVE_OUT_ANNOTATORS:
        return {"fields": [], "rows": [], "pairs": [],
                "note": f"{len(annotators)} annotators: the table is computed for at most "
                        f"{MAX_LEAVE_OUT_ANNOTATORS}"}
    data = {}
    for entry in usable:
        spec = table.fields[entry["field"]]
        matrix, _ = _matrix(by_field[spec.name], annotators)
        data[spec.name] = AgreementField(_numeric(matrix) if spec.is_numeric else matrix,
                                         spec.primary_level)
    rows = [_leave_out_row(row) for row in leave_one_annotator_out(data, annotators)]
    pairs, note = [], ""
    if 4 <= len(annotators) <= MAX_PAIR_ANNOTATORS:
        pairs = [_leave_out_row(row) for row in worst_annotator_pairs(data, annotators)]
    elif len(annotators) > MAX_PAIR_ANNOTATORS:
        note = f"worst pairs are computed for at most {MAX_PAIR_ANNOTATORS} annotators"
    else:
        note = "worst pairs need at least four annotators (dropping two must leave two)"
    return {"fields": [f["field"] for f in usable],
            "levels": {f["field"]: f["alpha_levels"][0] for f in usable},
            "rows": rows, "pairs": pairs, "note": note, "method": "leave_one_annotator_out"}


def _leave_out_row(row) -> dict:
    return {"dropped": list(row.dropped), "mean_alpha": row.mean_alpha,
            "alphas": {name: estimate.value for name, estimate in row.alphas.items()},
            "reasons": {name: estimate.undefined_reason for name, estimate in row.alphas.items()
                        if estimate.value is None}}


def _diagnostics(table: LabelTable, by_field: dict, annotators: list[str],
                 gold: Mapping[str, tuple[int, int]]) -> list[dict]:
    if not annotators:
        return []
    scales = {}
    for name, spec in table.fields.items():
        if spec.is_numeric and any(row.annotator for row in by_field.get(name, ())):
            scales[name] = _numeric(_matrix(by_field[name], annotators)[0])
    checklists = None
    if any(row.annotator for row in by_field.get(CHECKLIST_SET_FIELD, ())):
        checklists = _matrix(by_field[CHECKLIST_SET_FIELD], annotators)[0]
    labels = Counter(row.annotator for row in table.rows if row.annotator)
    out = []
    for diagnostic in annotator_diagnostics(annotators, scales=scales,
                                            error_checklists=checklists):
        entry = diagnostic.to_dict()
        matched, checked = gold.get(diagnostic.annotator, (0, 0))
        entry["gold_accuracy"] = matched / checked if checked else None
        entry["n"] = {**entry["n"], "gold_answers": checked, "labels": labels[diagnostic.annotator]}
        entry["method"] = "annotator_diagnostics"
        out.append(entry)
    return out


def _citations(rows: list[LabelRow], *, n_resamples: int, seed: int) -> list[dict]:
    labels: dict[UnitKey, list] = defaultdict(list)
    systems, dialogues = {}, {}
    for row in rows:
        if row.annotator:
            labels[row.key].append(row.value)
            systems[row.key] = system_display(row.system)
            dialogues[row.key] = row.dialogue_id
    if not labels:
        return []
    result = citation_precision(labels, systems, quote_dialogues=dialogues)
    return [{"system": system, **estimate.to_dict()} for system, estimate in result.items()]


def _recommend(rows: list[LabelRow], gold: Mapping[UnitKey, Sequence[str]]) -> dict:
    picks: dict[UnitKey, list] = defaultdict(list)
    for row in rows:
        if row.annotator:
            picks[row.key].append(row.value)
    if not picks:
        return {}
    gold_sets = {key: set(items) for key, items in gold.items() if items}
    result = blind_recommendation_agreement(picks, gold_sets)
    return {name: estimate.to_dict() for name, estimate in result.items()}


def build_agreement(table: LabelTable, *, snapshot: Mapping | None = None,
                    gold_accuracy: Mapping[str, tuple[int, int]] | None = None,
                    recommend_gold: Mapping[UnitKey, Sequence[str]] | None = None,
                    n_resamples: int = DEFAULT_RESAMPLES, seed: int = DEFAULT_SEED) -> dict:
    """The agreement report of a study: per field, leave-one-out, annotators, citations, picks.

    ``gold_accuracy``: annotator -> (matched, checked) on gold items; ``recommend_gold``: unit ->
    acceptable items of a blind-recommendation unit.
    """
    annotators = table.annotators()
    by_field = table.by_field()
    fields = [_field_agreement(spec, by_field[name], annotators, n_resamples=n_resamples,
                               seed=seed)
              for name, spec in table.fields.items() if by_field.get(name)]
    citation_rows = by_field.get(CITATION_FIELD, [])
    try:
        citations = _citations(citation_rows, n_resamples=n_resamples, seed=seed)
        citation_note = ""
    except ValueError as exc:  # an imported "citation" field with other categories
        citations, citation_note = [], f"citation precision needs Supported/Partial/Not " \
                                       f"supported labels ({exc})"
    return {
        "kind": "agreement",
        "study": dict(snapshot or {}),
        "annotators": annotators,
        "aggregated_only": bool(table.rows) and not annotators,
        "fields": fields,
        "leave_one_out": _leave_out(fields, table, by_field, annotators),
        "diagnostics": _diagnostics(table, by_field, annotators, gold_accuracy or {}),
        "citation_precision": citations,
        "citation_note": citation_note,
        "blind_recommendation": _recommend(by_field.get(RECOMMEND_FIELD, []),
                                           recommend_gold or {}),
        "pairwise_preferences": pairwise_preferences(by_field.get(PAIRWISE_FIELD, []),
                                                     n_resamples=n_resamples, seed=seed),
        # each field's record names its own interval (params.interval): the jackknife, or for a
        # nominal field the test inversion or the profile likelihood (yes/no rated twice)
        "interval": {"method": ALPHA_INTERVAL, "yes_no_pairs": ALPHA_PAIR_INTERVAL,
                     "simulated": ALPHA_TEST_INTERVAL,
                     "resampled": "units", "confidence": 0.95},
    }


# --- evaluator scores and how they meet the human fields -------------------------------------


@dataclass
class ScoreSet:
    """One evaluator's metric on the benchmark's units, over every system it scored."""

    evaluator: str
    metric: str
    unit_type: str
    values: dict[UnitKey, float] = field(default_factory=dict)
    # the judge's own uncertainty per unit where it reports one (UnitScore.detail
    # ["uncertainty"]["sd"], e.g. FACE's grade distributions), read only for the label plan
    uncertainty: dict[UnitKey, float] = field(default_factory=dict)

    @property
    def label(self) -> str:
        return f"{self.evaluator} · {self.metric}"


def _last(name: str) -> str:
    # CRSArena-Eval calls FACE's overall impression `dialogue_overall`: it is `overall`.
    return name.rsplit(".", 1)[-1].removeprefix("dialogue_")


def match_aspects(scores: Sequence[ScoreSet], fields: Mapping[str, FieldSpec]
                  ) -> tuple[list[tuple[ScoreSet, FieldSpec]], bool]:
    """Which metric is compared with which human field (both on the same unit type), and
    whether the pairs were matched by name.

    A metric named like a field (exactly, or by the last dotted part when that is unambiguous:
    `relevance` ~ `face.relevance`) is compared with that field only; when none of the metrics
    is named like a field, each metric is compared with every numeric field of its unit type.
    """
    numeric = [spec for spec in fields.values() if spec.is_numeric]
    pairs = []
    for score in scores:
        same_type = [spec for spec in numeric if spec.unit_type == score.unit_type]
        exact = [spec for spec in same_type if spec.name == score.metric]
        loose = [spec for spec in same_type if _last(spec.name) == _last(score.metric)]
        named = exact or (loose if len(loose) == 1 else [])
        pairs += [(score, spec) for spec in named]
    if pairs:
        return pairs, True
    return [(score, spec) for score in scores for spec in numeric
            if spec.unit_type == score.unit_type], False


def _subset_groups(keys, groups: Mapping[UnitKey, str] | None) -> Mapping | None:
    if groups is None:
        return None
    return {key: groups[key] for key in keys if groups.get(key) not in (None, "")}


def _qwk(score: ScoreSet, spec: FieldSpec, human: Mapping[UnitKey, float]) -> dict | None:
    """QWK when the metric gives whole scale points of the field's scale (CoRE)."""
    if spec.scale_min is None or spec.scale_max is None:
        return None
    keys, metric, _ = join_on_units(score.values, human)
    low, high = spec.scale_min, spec.scale_max
    if not keys or any(v != int(v) or not low <= v <= high for v in metric):
        return None
    rounded = {key: math.floor(human[key] + 0.5) for key in keys}
    labels = list(range(int(low), int(high) + 1))
    return quadratic_weighted_kappa({key: int(score.values[key]) for key in keys}, rounded,
                                    labels=labels).to_dict()


def _row(score: ScoreSet, aspect: str, subset, correlations: Mapping) -> dict:
    return {"evaluator": score.evaluator, "metric": score.metric, "aspect": aspect,
            "subset": subset,
            "correlations": {name: c.to_dict() for name, c in correlations.items()}}


def build_correlation(table: LabelTable, scores: Sequence[ScoreSet], *, evaluator: str,
                      by: str = "", groups: Mapping[UnitKey, str] | None = None,
                      snapshot: Mapping | None = None, with_points: bool = False,
                      keep=None) -> dict:
    """Metric–human correlation of one evaluator: item level per aspect, pooled and per subset,
    system level, and QWK where the metric scores on the human scale.

    ``groups`` maps a unit to its subset (``by``, e.g. the source data set); ``with_points``
    adds the joined (metric, human) pairs for the scatter plots (not part of the exports).
    ``keep(score, field)`` limits the rows computed to those pairs (a page's headline: a row
    of one (metric, aspect) pair is the same number whichever other pairs are computed);
    ``pairs`` still lists every pair.
    """
    pairs, by_name = match_aspects(scores, table.fields)
    chosen = pairs if keep is None else [(s, spec) for s, spec in pairs if keep(s, spec)]
    human = {spec.name: table.human_means(spec.name) for _, spec in chosen}
    item_rows, system_rows, scatter = [], [], []
    for metric_name, matched in _pooling_groups(chosen, by_name).items():
        metric_map = {spec.name: score.values for score, spec in matched}
        human_map = {spec.name: human[spec.name] for _, spec in matched}
        keys = {key for values in metric_map.values() for key in values}
        rows = item_level_correlations(metric_map, human_map,
                                       subsets=_subset_groups(keys, groups))
        lookup = {spec.name: score for score, spec in matched}
        for row in rows:
            score = lookup.get(row.aspect, matched[0][0])
            metric = score.metric if row.aspect not in (POOLED, ASPECT_MEAN) else metric_name
            item_rows.append({**_row(score, row.aspect, row.subset, row.correlations),
                              "metric": metric})
        for score, spec in matched:
            system_rows += _system_rows(score, spec, human[spec.name], groups)
            qwk = _qwk(score, spec, human[spec.name])
            if qwk is not None:
                for row in item_rows:
                    if (row["metric"], row["aspect"], row["subset"]) == (
                            score.metric, spec.name, ALL_UNITS):
                        row["qwk"] = qwk
            if with_points:
                scatter.append(_points(score, spec, human[spec.name], groups))
    return {
        "kind": "correlation",
        "study": dict(snapshot or {}),
        "evaluator": evaluator,
        "by": by,
        "subsets": sorted({row["subset"] for row in item_rows if row["subset"] != ALL_UNITS},
                          key=str),
        "pairs": [{"metric": score.metric, "aspect": spec.name, "unit_type": spec.unit_type}
                  for score, spec in pairs],
        "item_level": item_rows,
        "system_level": system_rows,
        **({"scatter": scatter} if with_points else {}),
    }


TRAINED = ":train"  # the units an evaluator's instructions were optimized on (report_selectors)


def is_headline(evaluator: str, metric: str) -> bool:
    """Whether a metric is one of its evaluator's headline metrics (`columns.is_headline`: every
    metric of an evaluator without a declared headline; the rest of the suite are sensitivity
    variants)."""
    return columns.is_headline(evaluator.removesuffix(TRAINED), metric)


def pick_aspect(aspects: Sequence[str], wanted: str = "") -> str:
    """WANTED when it is one of ASPECTS, else the first "overall" one, else the first."""
    if wanted in aspects:
        return wanted
    return next((name for name in aspects if "overall" in name), aspects[0] if aspects else "")


def build_correlation_headline(table: LabelTable, scores: Sequence[ScoreSet], *,
                               evaluator: str, aspect: str = "") -> dict:
    """``build_correlation`` of the pairs a report page shows first: the headline metrics
    compared with one aspect (ASPECT, or the default: ``pick_aspect``; every metric of the
    aspect when none of them is a headline metric), on all units. Adds ``aspect`` (the one
    chosen) and ``aspects`` (every aspect some metric is compared with)."""
    pairs, _ = match_aspects(scores, table.fields)
    aspects = list(dict.fromkeys(spec.name for _, spec in pairs))
    chosen = pick_aspect(aspects, aspect)
    metrics = [score.metric for score, spec in pairs if spec.name == chosen]
    headline = {name for name in metrics if is_headline(evaluator, name)} or set(metrics)
    report = build_correlation(table, scores, evaluator=evaluator,
                               keep=lambda score, spec: spec.name == chosen
                               and score.metric in headline)
    return {**report, "aspect": chosen, "aspects": aspects}


def build_scatter(table: LabelTable, scores: Sequence[ScoreSet], *, aspect: str,
                  metrics: Sequence[str] | None = None,
                  groups: Mapping[UnitKey, str] | None = None) -> list[dict]:
    """The scatter points and sample-efficiency curve of each metric compared with ASPECT
    (only METRICS when given): exactly what ``build_correlation(with_points=True)`` returns
    for those pairs, computed for them alone."""
    pairs, _ = match_aspects(scores, table.fields)
    chosen = [(score, spec) for score, spec in pairs if spec.name == aspect
              and (metrics is None or score.metric in metrics)]
    human = table.human_means(aspect) if chosen else {}
    return [_points(score, spec, human, groups) for score, spec in chosen]


def _pooling_groups(pairs, by_name: bool) -> dict[str, list]:
    """Groups of (score, field) pairs that share a pooled row: all of them when metrics were
    matched to fields by name (one row per aspect, one pooled over the aspects' units, and
    the mean of the per-aspect coefficients, which is FACE Table 1's "All"), else
    one group per metric (that metric against each aspect, pooled over them)."""
    aspects = [spec.name for _, spec in pairs]
    if by_name and len(aspects) == len(set(aspects)):
        return {MATCHED: list(pairs)}
    grouped: dict[str, list] = defaultdict(list)
    for score, spec in pairs:
        grouped[score.metric].append((score, spec))
    return grouped


def _system_rows(score: ScoreSet, spec: FieldSpec, human: Mapping, groups) -> list[dict]:
    systems = {key: key[0] for key in score.values}
    rows = [{**_row(score, spec.name, ALL_UNITS,
                    system_level_correlation(score.values, human, systems)),
             "systems": len({key[0] for key in set(score.values) & set(human)})}]
    for subset in sorted({v for v in (groups or {}).values() if v}, key=str):
        keep = {key: value for key, value in score.values.items() if groups.get(key) == subset}
        rows.append({**_row(score, spec.name, subset,
                            system_level_correlation(keep, human, systems)),
                     "systems": len({key[0] for key in set(keep) & set(human)})})
    return rows


EFFICIENCY_REPEATS = SAMPLE_EFFICIENCY_REPEATS  # the number the method text prints


def _points(score: ScoreSet, spec: FieldSpec, human: Mapping, groups) -> dict:
    """The scatter's (metric, human, subset) points, and the sample-efficiency curve: the
    system-ranking Spearman ρ when each system is scored on k of its units (FACE Fig. 4)."""
    keys, xs, ys = join_on_units(score.values, human)
    largest = max(Counter(key[0] for key in keys).values(), default=0)
    sizes = sorted({size for size in (1, 2, 3, 5, 10, 20, 50) if size < largest} | {largest}
                   ) if largest else []
    curve = sample_efficiency_curve(
        dict(zip(keys, xs, strict=True)), dict(zip(keys, ys, strict=True)),
        {key: key[0] for key in keys}, sizes=sizes, n_repeats=EFFICIENCY_REPEATS)
    return {"metric": score.metric, "aspect": spec.name, "aspect_label": spec.title,
            "unit_type": spec.unit_type,
            "points": [(float(x), float(y), (groups or {}).get(key, "") or "")
                       for key, x, y in zip(keys, xs, ys, strict=True)],
            "efficiency": [point.to_dict() for point in curve]}


# --- factor coupling (CoRE §7.1.1) -----------------------------------------------------------


def coupling_fields(fields: Mapping[str, FieldSpec]) -> list[FieldSpec]:
    """CoRE's factors when the study has them, else the numeric dialogue-level fields."""
    core = [spec for name, spec in fields.items()
            if name.startswith("core.") and name != "core.overall" and spec.is_numeric]
    if len(core) >= 2:
        return core
    return [spec for spec in fields.values()
            if spec.unit_type == "dialogue" and spec.is_numeric]


def build_coupling(table: LabelTable, judges: Mapping[str, Sequence[ScoreSet]]) -> dict:
    """Kendall τ_b between every two factors, per rater type: the humans (their per-unit mean)
    and each judge whose metrics are named like at least two of the factors."""
    factors = coupling_fields(table.fields)
    if len(factors) < 2:
        return {"factors": [], "raters": [],
                "note": "fewer than two numeric dialogue-level fields: nothing to couple"}
    names = [spec.name for spec in factors]
    raters = [(HUMANS, {spec.name: table.human_means(spec.name) for spec in factors})]
    for evaluator, scores in judges.items():
        by_last = {_last(score.metric): score for score in scores}
        mine = {spec.name: by_last[_last(spec.name)].values for spec in factors
                if _last(spec.name) in by_last}
        if len(mine) >= 2:
            raters.append((evaluator, mine))
    out = []
    for rater, scores in raters:
        present = [name for name in names if scores.get(name)]
        matrix = inter_factor_kendall({name: scores[name] for name in present})
        out.append({"rater": rater, **matrix.to_dict(), "method": "inter_factor_kendall"})
    labels = {spec.name: spec.title for spec in factors}
    return {"factors": names, "labels": labels, "raters": out}


# --- the metric leaderboard ------------------------------------------------------------------


def build_metric_leaderboard(table: LabelTable, scores: Sequence[ScoreSet], aspect: str, *,
                             method: str = "spearman", n_resamples: int = DEFAULT_RESAMPLES,
                             seed: int = DEFAULT_SEED) -> dict:
    """Evaluators ranked by their correlation with the humans on one aspect, with dialogue-
    jackknife CIs and Holm-corrected tie-aware ranks (rank_evaluators); an undefined
    correlation has no rank. N_RESAMPLES and SEED are kept for callers; nothing is resampled."""
    spec = table.fields[aspect]
    by_evaluator: dict[str, list[ScoreSet]] = defaultdict(list)
    for score in scores:
        by_evaluator[score.evaluator].append(score)
    candidates: dict[str, ScoreSet] = {}
    for evaluator_scores in by_evaluator.values():
        for score, matched in match_aspects(evaluator_scores, table.fields)[0]:
            if matched.name == aspect:
                candidates[score.label] = score
    human = table.human_means(aspect)
    rows = []
    if candidates and human:
        # Turns of one dialogue are not independent: the leave-outs drop whole dialogues.
        units = table.units()
        clusters = {key: units[key]["dialogue_id"] or key[1] for key in human}
        ranked = rank_evaluators({label: s.values for label, s in candidates.items()}, human,
                                 method=method, clusters=clusters)
        systems = system_meta.meta_evaluate(
            human, {label: s.values for label, s in candidates.items()},
            {key: key[0] for key in human}, clusters)
        for row in ranked:
            score = candidates[row.system]
            rows.append({**row.to_dict(), "evaluator": score.evaluator, "metric": score.metric,
                         "system_level": systems[row.system]})
    return {"kind": "metric_leaderboard", "aspect": aspect, "aspect_label": spec.title,
            "unit_type": spec.unit_type, "method": method, "human_units": len(human),
            "rows": rows, "correction": "holm",
            "inference": {"interval": "dialogue jackknife, Fisher z, t with G - 1 df",
                          "ranks": "Holm over all pairs of evaluators", "confidence": 0.95,
                          "system_level": system_meta.INFERENCE}}


BOARD_ORDERS = {"correlation": "correlation", **system_meta.LABELS}


def order_metric_board(board: Mapping, by: str) -> list[dict]:
    """The board's rows ordered by BY: "correlation" (its rank order), or one of the system-level
    statistics (system_meta.STATISTICS), best first, undefined last."""
    rows = list(board.get("rows", []))
    if by not in system_meta.STATISTICS:
        return rows

    def key(row: Mapping) -> tuple:
        value = (row.get("system_level") or {}).get(by, {}).get("value")
        return (value is None, -(value or 0.0))
    return sorted(rows, key=key)
