"""bench_calibration's checks of the judge-bias probes' length slope (judge_probes.length_slope,
the run page) and of the system-level meta-evaluation (statistics.md, "System-level
meta-evaluation"): do the bootstrap intervals of pairwise accuracy, soft pairwise accuracy and
tie-calibrated accuracy (evaluation/lib/stats/system_meta.py, the metric leaderboard's columns)
cover what they estimate?

A simulated study: SYSTEMS systems with true human means 0.12 × s, a judge whose unit scores
correlate about 0.6 with the human labels, and whose system means carry their own shift (so it
orders some close pairs differently from the humans); labels are 1 unit per dialogue, 3 turns
per dialogue, with a dialogue effect. Two designs: every system answers the same dialogues
(paired, the Trace benchmarks) or every dialogue is its own system's (unpaired, CRS Arena).

What the interval estimates: these statistics depend on the study's size (a p-value shrinks as
dialogues grow; pairwise accuracy of means is biased towards 1/2 when the noise is large), so the
estimand is the statistic's expected value at the study's size, taken as the mean of the point
estimates of max(100, min(reps, TRUTH_DRAWS)) independent studies of the design.
Pure numpy: no Django.
"""

from __future__ import annotations

import numpy as np

from evaluation.lib.stats import judge_probes, system_meta

SYSTEMS = 6
TURNS = 3
JUDGE_SHIFT_SD = 0.08
TRUTH_DRAWS = 1000  # at most; as many as the repetitions, at least 100
META_DESIGNS = ("paired", "unpaired")


def meta_study(rng: np.random.Generator, dialogues: int, design: str):
    """(human, metric, system_of, cluster_of) of one simulated study, DIALOGUES per system."""
    shifts = np.random.default_rng(7).normal(0.0, JUDGE_SHIFT_SD, SYSTEMS)  # fixed judge
    human, metric, system_of, cluster_of = {}, {}, {}, {}
    shared = rng.normal(0.0, 0.6, dialogues)  # a shared dialogue's difficulty
    for s in range(SYSTEMS):
        for d in range(dialogues):
            dialogue = f"d{d}" if design == "paired" else f"s{s}d{d}"
            effect = shared[d] if design == "paired" else rng.normal(0.0, 0.6)
            effect += rng.normal(0.0, 0.5)
            for t in range(TURNS):
                key = (f"s{s}", f"{dialogue}#{t}")
                value = 0.12 * s + effect + rng.normal(0.0, 1.0)
                human[key] = value
                metric[key] = 0.6 * value + shifts[s] + rng.normal(0.0, 0.9)
                system_of[key], cluster_of[key] = key[0], dialogue
    return human, metric, system_of, cluster_of


def _points(rng, dialogues: int, design: str, draws: int) -> dict[str, float]:
    """The mean point estimate of each statistic over DRAWS studies (no resampling)."""
    totals = {name: [] for name in system_meta.STATISTICS}
    for _ in range(draws):
        human, metric, system_of, cluster_of = meta_study(rng, dialogues, design)
        out = system_meta.meta_evaluate(human, {"judge": metric}, system_of, cluster_of,
                                        n_resamples=0)["judge"]
        for name in totals:
            totals[name].append(out[name]["value"])
    return {name: float(np.mean(values)) for name, values in totals.items()}


def meta_coverage(reps: int, seed: int, dialogues: int, design: str) -> dict[str, float]:
    """Share of REPS studies whose interval covers the statistic's expected value, per
    statistic, plus each interval's mean width ("<name>_width")."""
    truth = _points(np.random.default_rng(seed + 1), dialogues, design,
                    max(100, min(reps, TRUTH_DRAWS)))
    rng = np.random.default_rng(seed)
    hits = {name: [] for name in system_meta.STATISTICS}
    widths = {name: [] for name in system_meta.STATISTICS}
    for _ in range(reps):
        human, metric, system_of, cluster_of = meta_study(rng, dialogues, design)
        out = system_meta.meta_evaluate(human, {"judge": metric}, system_of, cluster_of,
                                        seed=int(rng.integers(1 << 30)))["judge"]
        for name in hits:
            part = out[name]
            hits[name].append(part["ci_low"] <= truth[name] <= part["ci_high"])
            widths[name].append(part["ci_high"] - part["ci_low"])
    return {**{name: float(np.mean(v)) for name, v in hits.items()},
            **{f"{name}_width": float(np.mean(v)) for name, v in widths.items()},
            **{f"{name}_truth": truth[name] for name in truth}}


def length_slope_coverage(rng: np.random.Generator, dialogues: int,
                          true_slope: float = 0.4) -> bool:
    """Whether the run page's length-slope interval covers the true within-dialogue slope:
    DIALOGUES dialogues of 2–8 judged turns, a dialogue effect on both the answers' length and
    the score (which a pooled slope would take for a length preference)."""
    scores, lengths, clusters = {}, {}, {}
    for d in range(dialogues):
        level = rng.normal()
        for t in range(int(rng.integers(2, 9))):
            words = int(max(5, 120 + 60 * level + rng.normal(0, 50)))
            lengths[(d, t)] = words
            scores[(d, t)] = 3 + level + true_slope * words / 100 + rng.normal(0, 0.8)
            clusters[(d, t)] = d
    out = judge_probes.length_slope(scores, lengths, clusters)
    return out["ci_low"] <= true_slope <= out["ci_high"]
