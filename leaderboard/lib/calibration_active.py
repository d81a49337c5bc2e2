"""bench_calibration's measure of "label these next" (statistics.md, "Label these next: active
handout"): how many human labels the active policy needs for a target interval width against
uniform handout, at equal coverage (evaluation/lib/stats/active.py, the code the study uses).

A simulated system: a pool of POOL units with latent quality q ~ N(0, 1), human labels
Y = q + noise, and a judge f = q + e whose error sd is "hard" on a random share of units and
"easy" elsewhere (DESIGNS), each design's judge correlated about 0.6 with the humans
(`judge_correlation`). The "even" design (the same error everywhere) is the control: no policy
can beat uniform there. The most any policy can save is 1 − (E ê)² / E ê², ê the per-unit sd of
Y − λf (statistics.md): the active policy only pays where the judge's errors are uneven and
predictable from its scores.

Both policies spend the same expected number of labels m. Uniform: π = m/n. Active: a uniform
first quarter of the budget (the study's first labels), the error model (`active.predicted_error`)
fitted on it, the other three quarters drawn with π ∝ predicted error (`inclusion_probabilities`);
the two stages' IPW estimates are averaged by their budgets (each is unbiased, so the average
is). Pure numpy: no Django.
"""

from __future__ import annotations

import numpy as np

from evaluation.lib.stats import active

POOL = 1000
# judge designs, all with a judge–human correlation of about 0.6: (share of hard units, the
# judge's error sd on hard units, on the others, the humans' own noise sd)
DESIGNS = {
    "even": (0.0, 0.0, 1.1, 0.5),  # the same error everywhere: nothing to gain
    "mixed": (0.3, 2.0, 0.25, 0.5),  # 30% of units hard for the judge
    "failures": (0.1, 4.0, 0.2, 0.3),  # 10% judge failures, sure elsewhere
}
FIRST_SHARE = 0.25
BUDGETS = tuple(range(40, 601, 20))
TARGET_BUDGET = 300  # the target width: what uniform handout reaches with this many labels


def simulate_pool(rng: np.random.Generator, design: str = "mixed"):
    """(human labels, judge scores) of one pool of DESIGN."""
    share, hard, easy, human_sd = DESIGNS[design]
    q = rng.normal(size=POOL)
    y = q + rng.normal(0.0, human_sd, POOL)
    sd = np.where(rng.random(POOL) < share, hard, easy)
    return y, q + rng.normal(size=POOL) * sd


def judge_correlation(design: str = "mixed", seed: int = 0) -> float:
    y, f = simulate_pool(np.random.default_rng(seed), design)
    y2, f2 = zip(*(simulate_pool(np.random.default_rng(seed + k), design)
                   for k in range(1, 20)), strict=True)
    return float(np.corrcoef(np.concatenate([y, *y2]), np.concatenate([f, *f2]))[0, 1])


def one_study(rng: np.random.Generator, budget: int, policy: str,
              design: str = "mixed") -> tuple[float, float, float, int]:
    """(estimate, interval low, high, labels used) of one simulated study; truth is 0."""
    y, f = simulate_pool(rng, design)
    if policy == "uniform":
        pi = np.full(POOL, budget / POOL)
        xi = rng.random(POOL) < pi
        est = active.active_mean(f, pi, xi, y)
        return est.value, est.ci_low, est.ci_high, int(xi.sum())
    first = FIRST_SHARE * budget
    pi1 = np.full(POOL, first / POOL)
    xi1 = rng.random(POOL) < pi1
    error = active.predicted_error(f, np.flatnonzero(xi1), y[xi1])
    pi2 = active.inclusion_probabilities(error, budget - first)
    xi2 = rng.random(POOL) < pi2
    # Each stage's summands Z (λ tuned on its own); the average by budget, per unit.
    z = np.zeros(POOL)
    for pi, xi, share in ((pi1, xi1, FIRST_SHARE), (pi2, xi2, 1 - FIRST_SHARE)):
        est = active.active_mean(f, pi, xi, y)
        w = np.where(xi, 1.0 / pi, 0.0)
        z += share * (y * w + est.lam * f * (1 - w))
    value = float(z.mean())
    half = 1.959963984540054 * float(np.std(z, ddof=1) / np.sqrt(POOL))
    return value, value - half, value + half, int((xi1 | xi2).sum())


def curve(reps: int, seed: int, design: str = "mixed",
          budgets=BUDGETS) -> dict[str, list[dict]]:
    """Per policy and budget: mean labels used, mean width, coverage of the pool's truth (0)."""
    out: dict[str, list[dict]] = {}
    for k, policy in enumerate(("uniform", "active")):
        rows = []
        for budget in budgets:
            rng = np.random.default_rng(seed + 7919 * k + budget)
            runs = np.array([one_study(rng, budget, policy, design)
                             for _ in range(reps)])
            rows.append({"budget": budget, "labels": float(runs[:, 3].mean()),
                         "width": float((runs[:, 2] - runs[:, 1]).mean()),
                         "coverage": float(((runs[:, 1] <= 0) & (runs[:, 2] >= 0)).mean())})
        out[policy] = rows
    return out


def labels_for_width(rows: list[dict], target: float) -> float | None:
    """The labels at which the mean width first reaches TARGET (linear between budgets)."""
    for before, after in zip(rows, rows[1:], strict=False):
        if before["width"] <= target:
            return before["labels"]
        if after["width"] <= target:
            t = (before["width"] - target) / (before["width"] - after["width"])
            return before["labels"] + t * (after["labels"] - before["labels"])
    return None


def saving(reps: int, seed: int, design: str = "mixed") -> dict:
    """Labels each policy needs for the width uniform reaches at TARGET_BUDGET, the share saved,
    and each policy's coverage there."""
    rows = curve(reps, seed, design)
    target = next(r["width"] for r in rows["uniform"] if r["budget"] == TARGET_BUDGET)
    need = {policy: labels_for_width(rows[policy], target) for policy in rows}
    near = {policy: min(rows[policy], key=lambda r: abs(r["labels"] - (need[policy] or 0)))
            for policy in rows}
    return {"target_width": target, "labels_uniform": need["uniform"],
            "labels_active": need["active"],
            "saved": (1 - need["active"] / need["uniform"]) if need["active"] else None,
            "coverage_uniform": near["uniform"]["coverage"],
            "coverage_active": near["active"]["coverage"],
            "judge_correlation": judge_correlation(design), "curves": rows}
