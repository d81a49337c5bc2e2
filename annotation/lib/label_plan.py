"""Label these next: the author's plan beside the human-anchored scores (statistics.md, "Label
these next: active handout").

For one evaluator metric and one human aspect, per system: the pool is every unit the evaluator
scored, the labels are the human means already in; the evaluator's predicted error per unit
(`active.error_model`, fitted on those labels: from the judge's own uncertainty where it stored
one on the units, FACE's, else per quintile of its scores; the plan names the predictor each
system used) gives the projected 95 % interval width of the
system's human mean at each label budget, for uniform handout and for the active policy
(`active.width_curve`; a study's budget split over systems in proportion to their pools). The
active curve is what the study's handout does (`active_handout`): where the judge reports its
uncertainty every wave follows ê; where it does not, the first of its WAVES waves is uniform
(nothing to predict from yet), so a 1/WAVES share of the pool is projected at uniform π. The
chart shows the mean over systems against the total number of labels. "Where the ranking is still
uncertain" lists the pairs of systems whose PPI++ difference (the anchored report) is not
significant, the closest first: the comparisons more labels would settle. Pure Python.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping

import numpy as np

from annotation.lib.labels import LabelTable, system_display
from annotation.lib.reports import ScoreSet
from evaluation.lib import charts
from evaluation.lib.stats import active, active_handout

POINTS = 8
UNCERTAINTY_PREDICTORS = ("uncertainty", "bernoulli", "prior")


def _budgets(labelled: int, pool: int) -> list[int]:
    low = max(10, labelled // 2)
    if pool <= low:
        return [pool]
    grid = np.unique(np.round(np.geomspace(low, pool, POINTS)).astype(int))
    return [int(x) for x in grid]


def build_label_plan(table: LabelTable, score: ScoreSet, aspect: str,
                     anchored: Mapping | None = None) -> dict:
    human = table.human_means(aspect)
    by_system: dict[str, list] = defaultdict(list)
    for key in sorted(score.values, key=repr):
        by_system[key[0]].append(key)
    systems = []
    for system, keys in sorted(by_system.items()):
        f = np.array([score.values[k] for k in keys], dtype=float)
        labelled = [i for i, k in enumerate(keys) if k in human]
        y = np.array([human[keys[i]] for i in labelled], dtype=float)
        reported = [score.uncertainty.get(k) for k in keys]
        model = active.error_model(f, labelled, y, uncertainty=reported
                                   if any(u is not None for u in reported) else None)
        spread = float(np.std(y, ddof=1)) if len(y) > 1 else 0.0
        systems.append({"system": system, "display": system_display(system), "pool": len(keys),
                        "labelled": len(labelled), "error": model.error, "spread": spread,
                        "predictor": model.predictor,
                        # the handout's wave 1 is uniform unless the judge reports uncertainty
                        "uniform_share": 0.0 if model.predictor in UNCERTAINTY_PREDICTORS
                        else 1 / active_handout.WAVES,
                        "with_uncertainty": sum(u is not None for u in reported)})
    pool = sum(s["pool"] for s in systems)
    labelled = sum(s["labelled"] for s in systems)
    rows = []
    if systems and labelled >= 3 * len(systems):
        for total in _budgets(labelled, pool):
            widths = {"uniform": [], "active": []}
            for s in systems:
                m = max(1, min(s["pool"], round(total * s["pool"] / pool)))
                curve = active.width_curve(s["error"], s["spread"], [m],
                                           uniform_share=s["uniform_share"])
                for policy in widths:
                    widths[policy].append(curve[0][policy])
            rows.append({"labels": total, **{p: float(np.mean(v)) for p, v in widths.items()}})
    uncertain = []
    for row in (anchored or {}).get("differences", []):
        p_value = (row.get("params") or {}).get("p_value")
        if row.get("value") is None or p_value is None or p_value < 0.05:
            continue
        uncertain.append({"a": system_display(row["a"]), "b": system_display(row["b"]),
                          "difference": row["value"], "ci_low": row["ci_low"],
                          "ci_high": row["ci_high"], "p_value": p_value})
    uncertain.sort(key=lambda r: abs(r["difference"]))
    used = sorted({s["predictor"] for s in systems}, key=list(active.PREDICTORS).index)
    return {"evaluator": score.evaluator, "metric": score.metric, "aspect": aspect,
            "labelled": labelled, "pool": pool, "rows": rows,
            "predictors": [{"key": key, "description": active.PREDICTORS[key],
                            "systems": sum(s["predictor"] == key for s in systems)}
                           for key in used],
            "uncertain": uncertain,
            "systems": [{k: v for k, v in s.items() if k != "error"} for s in systems]}


def plan_chart(plan: Mapping) -> dict | None:
    """The chart of PLAN's rows: projected width against labels, one line per policy."""
    rows = plan.get("rows") or []
    if not rows:
        return None
    chart = charts.turn_lines([("uniform", [r["uniform"] for r in rows]),
                               ("active", [r["active"] for r in rows])],
                              y_label="mean 95% CI width", x_label="human labels")
    positions = {t: x for x, t in chart["x_ticks"]}  # turn_lines numbers the points 1, 2, …
    chart["x_ticks"] = [(positions[str(i)], str(r["labels"]))
                        for i, r in enumerate(rows, start=1) if str(i) in positions]
    return chart
