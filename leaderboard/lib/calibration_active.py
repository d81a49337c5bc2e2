"""bench_calibration's measure of "label these next" (statistics.md, "Label these next: active
handout"): how many human labels the active policy needs for a target interval width against
uniform handout, at equal coverage (evaluation/lib/stats/active.py and active_handout.py, the
code the study uses).

A simulated system: a pool of POOL units, each design's judge correlated about 0.6 with the
humans (`judge_correlation`):

- "even", "mixed", "failures": latent quality q ~ N(0, 1), human labels Y = q + noise, a judge
  f = q + e whose error sd is "hard" on a random share of units and "easy" elsewhere; the judge
  reports no uncertainty, so the active policy predicts its error per quintile of its scores.
  "even" (the same error everywhere) is the control: no policy can beat uniform there.
- "uncertain": a Likert judge that reports its own uncertainty. The humans' label is the mean
  of three annotators on a 1–5 scale (centre 3; annotator noise as in the bench's alpha design,
  population alpha 0.6, so the mean's noise sd is about 0.5); the judge scores on FACE's 0–4
  scale (centre 2) with an error sd log-uniform over an order of magnitude (sure on easy turns,
  unsure on hard ones) and reports a noisy version of it, u = sd · exp(N(0, 0.5²)) (its grade
  distribution's spread tracks its error only roughly).
- "binary": a yes/no outcome ("satisfied", "accepted the recommendation") with the share of yes
  of CRSArena-Dial (87 of 474 dialogues end satisfied), P(yes) = p ~ Beta with that mean; the
  judge is calibrated, f = p, and its uncertainty is its own Bernoulli spread sqrt(f (1 − f)).

Three policies spend the same expected number of labels m. Uniform: π = m/n. Active: the
study's own handout (`study_waves`): the pool split at random into the study's WAVES waves, each
wave's π from `active_handout.system_wave` — the function `plan_wave` calls per system — on the
labels of the waves before (wave 1 from the reported uncertainty where the design has one, the
`prior` or `bernoulli` predictor; uniform where it has none; later waves from the fitted error
model), its units drawn and labelled; then the one estimate `active.active_mean` over the pool
with every unit's π, as the study's report computes it. Oracle: π ∝ the true per-unit error sd,
all at once, no uniform share — it checks the simulation against the bound.

The most π ∝ ê can save is 1 − (E ê)² / E ê², ê_i the sd of Y_i − λf_i − c on unit i at the
population λ of PPI++ (`bound`, from the design's formulas: the equal-variance condition of the
IPW variance Σ ê²/π, minimised by π ∝ ê). The estimator re-tunes λ for the π it was given,
though, and under π ∝ ê the units sampled least (where the judge is sure) weigh most, so λ moves
towards 1 and their residuals shrink: `bound_retuned`, min over λ of (E ê_λ)² against min over λ
of E ê_λ², is the bound of the two together (both ignore the cap π ≤ 1, which binds when a few
units carry much of the error). The oracle's simulated saving is checked against them.
Pure numpy and scipy: no Django.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy import optimize

from evaluation.lib.stats import active, active_handout

POOL = 1000
WAVES = active_handout.WAVES
BUDGETS = tuple(range(40, 601, 20))
TARGET_BUDGET = 300  # the target width: what uniform handout reaches with this many labels
GOAL = 0.25  # issue 32: at least 25% fewer labels with a judge at ρ ≈ 0.6
RHO = 0.6
SATISFIED_SHARE = 87 / 474  # CRSArena-Dial: dialogues whose user ends satisfied
LIKERT_HUMAN_SD = 0.5
LIKERT_RANGE = 10.0  # the judge's error sd spans an order of magnitude
REPORT_NOISE = 0.5  # log-sd of the reported uncertainty around the true error sd


def _log_uniform_low(human_sd: float, spread: float, rho: float = RHO) -> float:
    """The smallest error sd s_lo of a judge whose error sd is log-uniform on [s_lo, spread ·
    s_lo] and correlates RHO with Y = q + N(0, human_sd²): E s² = 1/(ρ²(1 + h²)) − 1, and
    E s² = s_lo² (R² − 1) / (2 ln R) for the log-uniform."""
    mean_square = 1 / (rho ** 2 * (1 + human_sd ** 2)) - 1
    return math.sqrt(mean_square * 2 * math.log(spread) / (spread ** 2 - 1))


@dataclass(frozen=True)
class Design:
    label: str
    kind: str  # "two_level" | "log_uniform" | "binary"
    human_sd: float = 0.0
    share: float = 0.0  # two_level: share of hard units, their error sd, the others'
    hard: float = 0.0
    easy: float = 0.0
    low: float = 0.0  # log_uniform: the error sd's range [low, low · LIKERT_RANGE]
    human_centre: float = 0.0
    judge_centre: float = 0.0
    reports: bool = False  # does the judge report its own uncertainty?

    def truth(self) -> float:
        return SATISFIED_SHARE if self.kind == "binary" else self.human_centre


DESIGNS = {
    "even": Design("the same error everywhere", "two_level", 0.5, 0.0, 0.0, 1.1),
    "mixed": Design("30% of units hard for the judge", "two_level", 0.5, 0.3, 2.0, 0.25),
    "failures": Design("10% judge failures, sure elsewhere", "two_level", 0.3, 0.1, 4.0, 0.2),
    "uncertain": Design("Likert judge reporting its uncertainty", "log_uniform", LIKERT_HUMAN_SD,
                        low=_log_uniform_low(LIKERT_HUMAN_SD, LIKERT_RANGE), human_centre=3.0,
                        judge_centre=2.0, reports=True),
    "binary": Design("yes/no outcome, calibrated judge", "binary", reports=True),
}
POLICIES = ("uniform", "active", "oracle")


def _beta_shape(mean: float = SATISFIED_SHARE, rho: float = RHO) -> tuple[float, float]:
    """Beta(a, b) of P(yes) whose calibrated judge f = p correlates RHO with the outcome:
    corr² = Var p / (p̄(1 − p̄)) = 1 / (a + b + 1)."""
    total = 1 / rho ** 2 - 1
    return mean * total, (1 - mean) * total


def simulate_pool(rng: np.random.Generator, design: str = "mixed", size: int = POOL):
    """(human labels, judge scores, reported uncertainty or None, true error sd of the judge per
    unit) of one pool of DESIGN."""
    d = DESIGNS[design]
    if d.kind == "binary":
        p = rng.beta(*_beta_shape(), size)
        y = (rng.random(size) < p).astype(float)
        return y, p, np.sqrt(p * (1 - p)), np.sqrt(p * (1 - p))
    q = rng.normal(size=size)
    y = d.human_centre + q + rng.normal(0.0, d.human_sd, size)
    if d.kind == "two_level":
        sd = np.where(rng.random(size) < d.share, d.hard, d.easy)
    else:
        sd = np.exp(rng.uniform(math.log(d.low), math.log(d.low * LIKERT_RANGE), size))
    f = d.judge_centre + q + rng.normal(size=size) * sd
    reported = sd * np.exp(rng.normal(0.0, REPORT_NOISE, size)) if d.reports else None
    return y, f, reported, sd


def true_error(design: str, judge_sd: np.ndarray, lam: float | None = None) -> np.ndarray:
    """ê_i: the sd of Y − λf − c on a unit whose judge error sd is JUDGE_SD, at LAM or the
    population λ of PPI++ (Cov(Y, f)/Var f). Gaussian: Y − λf − c = (1 − λ) q + noise − λ e, so
    ê² = (1 − λ)² + h² + λ² s²; binary with a calibrated judge: λ = 1 is best for every π (the
    residual Y − p is uncorrelated with any function of p), ê² = p (1 − p) = JUDGE_SD²."""
    d = DESIGNS[design]
    if d.kind == "binary":
        return judge_sd
    lam = 1 / (1 + _mean_square_sd(d)) if lam is None else lam
    return np.sqrt((1 - lam) ** 2 + d.human_sd ** 2 + lam ** 2 * judge_sd ** 2)


def _mean_square_sd(d: Design) -> float:
    if d.kind == "two_level":
        return d.share * d.hard ** 2 + (1 - d.share) * d.easy ** 2
    return d.low ** 2 * (LIKERT_RANGE ** 2 - 1) / (2 * math.log(LIKERT_RANGE))


def bound(design: str, size: int = 400_000, seed: int = 0) -> float:
    """1 − (E ê)² / E ê²: the share of labels π ∝ ê saves against uniform (the most any policy
    can), over SIZE units of the design."""
    _, _, _, sd = simulate_pool(np.random.default_rng(seed), design, size)
    e = true_error(design, sd)
    return float(1 - e.mean() ** 2 / np.mean(e ** 2))


def bound_retuned(design: str, size: int = 400_000, seed: int = 0) -> float:
    """1 − min_λ (E ê_λ)² / min_λ E ê_λ²: π ∝ ê_λ with λ re-tuned for it, against uniform at its
    own best λ, over SIZE units of the design."""
    _, _, _, sd = simulate_pool(np.random.default_rng(seed), design, size)
    if DESIGNS[design].kind == "binary":
        return bound(design, size, seed)
    best = optimize.minimize_scalar(lambda lam: true_error(design, sd, lam).mean() ** 2,
                                    bounds=(0.0, 1.0), method="bounded",
                                    options={"xatol": 1e-6})
    return float(1 - best.fun / np.mean(true_error(design, sd) ** 2))


def judge_correlation(design: str = "mixed", seed: int = 0) -> float:
    y, f, _, _ = simulate_pool(np.random.default_rng(seed), design, 20 * POOL)
    return float(np.corrcoef(y, f)[0, 1])


def study_waves(rng: np.random.Generator, y: np.ndarray, f: np.ndarray,
                reported: np.ndarray | None, budget: float
                ) -> tuple[np.ndarray, np.ndarray, np.ndarray, list[str]]:
    """A study's active handout of one system's pool, wave by wave, as `active_handout.plan_wave`
    plans it: the pool split at random into WAVES equal waves, each wave's π from
    `active_handout.system_wave` (the function plan_wave calls per system) on the labels of
    the waves before, its units drawn with it and the drawn ones labelled. Returns (wave of each
    unit, π, drawn, the predictor of each wave)."""
    size = len(f)
    wave = np.empty(size, dtype=int)
    for number, part in enumerate(np.array_split(rng.permutation(size), WAVES), start=1):
        wave[part] = number
    labels = np.full(size, np.nan)
    pi, drawn = np.zeros(size), np.zeros(size, dtype=bool)
    predictors = []
    for number in range(1, WAVES + 1):
        inside = wave == number
        p, _, predictor = active_handout.system_wave(f, labels, reported, inside,
                                                     budget * inside.sum() / size)
        xi = rng.random(len(p)) < p
        pi[inside], drawn[inside] = p, xi
        labels[np.flatnonzero(inside)[xi]] = y[inside][xi]
        predictors.append(predictor)
    return wave, pi, drawn, predictors


def one_study(rng: np.random.Generator, budget: int, policy: str,
              design: str = "mixed") -> tuple[float, float, float, int]:
    """(estimate, interval low, high, labels used) of one simulated study."""
    y, f, reported, sd = simulate_pool(rng, design)
    if policy in ("uniform", "oracle"):
        pi = (np.full(POOL, budget / POOL) if policy == "uniform" else
              active.inclusion_probabilities(true_error(design, sd), budget, mix=0.0))
        xi = rng.random(POOL) < pi
    else:  # the study's handout: its waves, then the one estimate over the pool
        _, pi, xi, _ = study_waves(rng, y, f, reported, budget)
    est = active.active_mean(f, pi, xi, y)
    return est.value, est.ci_low, est.ci_high, int(xi.sum())


def curve(reps: int, seed: int, design: str = "mixed",
          budgets=BUDGETS) -> dict[str, list[dict]]:
    """Per policy and budget: mean labels used, mean width, coverage of the design's truth."""
    truth = DESIGNS[design].truth()
    out: dict[str, list[dict]] = {}
    for k, policy in enumerate(POLICIES):
        rows = []
        for budget in budgets:
            rng = np.random.default_rng(seed + 7919 * k + budget)
            runs = np.array([one_study(rng, budget, policy, design)
                             for _ in range(reps)])
            rows.append({"budget": budget, "labels": float(runs[:, 3].mean()),
                         "width": float((runs[:, 2] - runs[:, 1]).mean()),
                         "coverage": float(((runs[:, 1] <= truth)
                                            & (runs[:, 2] >= truth)).mean())})
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
    """Labels each policy needs for the width uniform reaches at TARGET_BUDGET, the share the
    active policy and the oracle save, each policy's coverage there, and the bound."""
    rows = curve(reps, seed, design)
    target = next(r["width"] for r in rows["uniform"] if r["budget"] == TARGET_BUDGET)
    need = {policy: labels_for_width(rows[policy], target) for policy in rows}
    near = {policy: min(rows[policy], key=lambda r: abs(r["labels"] - (need[policy] or 0)))
            for policy in rows}

    def saved(policy):
        return (1 - need[policy] / need["uniform"]) if need[policy] else None

    return {"target_width": target, "labels_uniform": need["uniform"],
            "labels_active": need["active"], "labels_oracle": need["oracle"],
            "saved": saved("active"), "saved_oracle": saved("oracle"), "bound": bound(design),
            "bound_retuned": bound_retuned(design),
            "coverage_uniform": near["uniform"]["coverage"],
            "coverage_active": near["active"]["coverage"],
            "coverage_oracle": near["oracle"]["coverage"],
            "judge_correlation": judge_correlation(design), "curves": rows}


CODE_PATH = "active_handout.system_wave (plan_wave's waves) + active.active_mean (study handout)"


def check_rows(design: str) -> list[tuple[str, str, str, str, str]]:
    """bench_calibration's rows of DESIGN: (key, label, kind, code path, `saving` figure)."""
    return [
        (f"active_saved_{design}", f"Labels saved by active handout, {design}", "saving",
         CODE_PATH, "saved"),
        (f"active_coverage_{design}", f"  95% CI of the active estimate, {design}", "coverage",
         "active.active_mean (study handout)", "coverage_active"),
        (f"active_uniform_coverage_{design}", "  95% CI of uniform handout (same estimator)",
         "coverage", "active.active_mean (study handout)", "coverage_uniform"),
        (f"active_oracle_{design}", "  oracle π ∝ true error: labels saved", "reference",
         "active.inclusion_probabilities (true errors)", "saved_oracle"),
        (f"active_bound_{design}", "  bound 1 − (E ê)²/E ê² (design)", "reference",
         "calibration_active.bound", "bound"),
        (f"active_bound_retuned_{design}", "  bound with λ re-tuned for π ∝ ê", "reference",
         "calibration_active.bound_retuned", "bound_retuned"),
    ]
