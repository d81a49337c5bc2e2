"""The inner loop of the Elo bootstrap, compiled (numba): every replicate replays its drawn
votes in cast order, one scalar update per vote.

Why compiled: 1,000 replicates × 100,000 votes are 10^8 sequential updates, which numpy can
only batch across replicates (one step of all replicates at a time, ~20 µs of Python and call
overhead per step: 2.0 s of the 3.3 s the bootstrap took on the reference machine). Compiled,
the updates take ~0.3 s and the sorted draws they replay ~0.2 s (`sorted_draw_block`: one
pass instead of numpy's five over 10^8 values); issue 15 asks for the ratings with 1,000
bootstrap rounds over 100,000 votes in under 2 s (docs/performance.md, "Arena ratings"). The
loop is CRS Arena's Elo update, once per replicate, in natural-log units
(`arena._elo_replicates`).

Imported only by `arena._elo_replicates`, so that numba (and llvmlite) load only when Elo
intervals are computed; `cache=True` keeps the compiled code beside this file between
processes.
"""

import math

import numba
import numpy as np


@numba.njit(cache=True, nogil=True)
def replay(first, second, target, draws, theta, step):
    """For each replicate r (a row of DRAWS and of THETA), apply the votes DRAWS[r] in order:
    vote v between FIRST[v] and SECOND[v] moves the first system's log-strength by
    TARGET[v] − STEP · expit(θ_first − θ_second) and the second's by the opposite."""
    for r in range(draws.shape[0]):
        row = theta[r]
        for t in range(draws.shape[1]):
            vote = draws[r, t]
            i, j = first[vote], second[vote]
            change = target[vote] - step / (1.0 + math.exp(row[j] - row[i]))
            row[i] += change
            row[j] -= change


@numba.njit(cache=True, nogil=True)
def sorted_draw_block(spacing, divisor, offset, n):
    """One block of sorted draws from range(N) per replicate (rows), by Rényi's
    representation: the running sum Σ E_m / (N − m + 1) of SPACING (exponentials) times
    DIVISOR gives U_(k) = 1 − exp(−sum), the draw ⌊N U_(k)⌋. OFFSET holds each replicate's
    running sum and is advanced in place, so consecutive blocks continue one sequence."""
    draws = np.empty(spacing.shape, np.int64)
    for r in range(spacing.shape[0]):
        total = offset[r]
        for t in range(spacing.shape[1]):
            total += spacing[r, t] * divisor[t]
            draws[r, t] = min(int(-math.expm1(-total) * n), n - 1)
        offset[r] = total
    return draws
