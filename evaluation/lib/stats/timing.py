"""Timing of Krippendorff's alpha at study scale (spec: statistics.md "Inter-annotator agreement";
performance target: 100,000 units × 10 annotators, interval level, under 2 seconds).

    python -m evaluation.lib.stats.timing [--units 100000] [--annotators 10] [--repeats 3]

Times Concord's implementation and the ``krippendorff`` package on the same data: 1–5 Likert
ratings and 0–100 scores with two decimals, each with about 10% of the ratings missing. The
package is skipped where its units × values × values array would not fit in memory. Also times
a jackknife CI of alpha for a study and the tie-aware ranks of a large leaderboard.
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from evaluation.lib.stats.agreement import compute_alpha

PACKAGE_MEMORY_LIMIT_BYTES = 4 * 1024**3


def _data(kind: str, units: int, annotators: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    truth = rng.normal(size=units)
    noisy = truth[None, :] + rng.normal(scale=0.8, size=(annotators, units))
    if kind == "likert":
        matrix = np.clip(np.round(3 + noisy), 1, 5)
    else:
        matrix = np.round(np.clip(50 + 15 * noisy, 0, 100), 2)
    matrix[rng.random(matrix.shape) < 0.1] = np.nan
    return matrix


def _best_time(function, repeats: int) -> tuple[float, float]:
    best, value = float("inf"), float("nan")
    for _ in range(repeats):
        start = time.perf_counter()
        value = function()
        best = min(best, time.perf_counter() - start)
    return best, value


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--units", type=int, default=100_000)
    parser.add_argument("--annotators", type=int, default=10)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--levels", default="interval,ordinal,nominal")
    args = parser.parse_args(argv)
    print(
        f"{args.units:,} units × {args.annotators} annotators, ~10% missing; best of {args.repeats}"
    )
    for kind in ("likert", "0-100"):
        matrix = _data(kind, args.units, args.annotators, seed=7)
        distinct = len(np.unique(matrix[~np.isnan(matrix)]))
        print(f"\n{kind} ratings ({distinct} distinct values)")
        for level in args.levels.split(","):
            if kind != "likert" and level == "nominal":
                continue
            seconds, value = _best_time(
                lambda m=matrix, lv=level: compute_alpha(m, lv).value, args.repeats
            )
            print(f"  concord   {level:<9} alpha={value:.6f}  {seconds:8.3f} s")
            _time_package(matrix, level, distinct, args.repeats)
    _time_bootstraps()


def _time_bootstraps() -> None:
    """The other heavy paths: an alpha CI for a study, and a full leaderboard's ranks."""
    from evaluation.lib.stats.agreement import alpha_with_ci
    from evaluation.lib.stats.clustered import rank_systems_by_metric

    study = _data("likert", 90, 5, seed=3)
    seconds, _ = _best_time(lambda: alpha_with_ci(study, "interval"), 1)
    print(f"\nalpha with jackknife-t CI (90 units × 5 annotators, 90 leave-outs): "
          f"{seconds:.3f} s")
    rng = np.random.default_rng(5)
    systems = np.repeat(np.arange(100), 1000)  # 100 systems × 200 dialogues × 5 turns
    dialogues = np.tile(np.repeat(np.arange(200), 5), 100)
    values = {f"m{m}": rng.random(systems.size) + systems * 0.001 for m in range(30)}
    seconds, _ = _best_time(lambda: rank_systems_by_metric(values, systems, dialogues), 1)
    print("leaderboard ranks (100 systems × 30 metrics × 200 dialogues, jackknife-t + Holm): "
          f"{seconds:.3f} s")


def _time_package(matrix: np.ndarray, level: str, distinct: int, repeats: int) -> None:
    import krippendorff

    needed = matrix.shape[1] * distinct * distinct * 8
    if needed > PACKAGE_MEMORY_LIMIT_BYTES:
        print(f"  package   {level:<9} skipped: needs a {needed / 1024**3:,.0f} GB array")
        return
    seconds, value = _best_time(
        lambda: krippendorff.alpha(reliability_data=matrix, level_of_measurement=level), repeats
    )
    print(f"  package   {level:<9} alpha={value:.6f}  {seconds:8.3f} s")


if __name__ == "__main__":
    main()
