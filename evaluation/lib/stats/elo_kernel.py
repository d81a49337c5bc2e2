"""The inner loop of the Elo bootstrap, compiled (numba): every replicate replays its drawn
votes in cast order, one scalar update per vote.

Why compiled: 1,000 replicates × 100,000 votes are 10^8 sequential updates, which numpy can
only batch across replicates (one step of all replicates at a time, ~20 µs of Python and call
overhead per step: 2.0 s of the 3.3 s the bootstrap took on the reference machine). Compiled,
`replay_drawn` makes each replicate's sorted draws block by block (Rényi's representation, see
`sorted_draw_block`) into a buffer that stays in the CPU's first-level cache and replays them at
once; it releases the GIL, so `arena._elo_replicates` splits the replicates between threads
while it draws the next block's exponentials. Issue 15 asks for the ratings with 1,000
bootstrap rounds over 100,000 votes in under 2 s (docs/performance-history.md, "Arena ratings"). The
loop is CRS Arena's Elo update, once per replicate, in natural-log units.

`sorted_draw_block` is the draws alone (`arena._sorted_draws`: what the tests check the draws'
distribution on). Imported only by `arena`'s Elo functions, so that numba (and llvmlite) load
only when Elo intervals are computed; `cache=True` keeps the compiled code beside this file
between processes.
"""

import math

import numba
import numpy as np


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


@numba.njit(cache=True, nogil=True)
def replay_drawn(first, second, target, spacing, divisor, offset, n, theta, step):
    """One block of votes for each replicate r (a row of SPACING, THETA and OFFSET): its sorted
    draws exactly as `sorted_draw_block` makes them (advancing OFFSET[r]), then each drawn vote
    v between FIRST[v] and SECOND[v] moves the first system's log-strength by
    TARGET[v] − STEP · expit(θ_first − θ_second) and the second's by the opposite. Rows are
    independent, so callers may split them between threads (the GIL is released)."""
    draws = np.empty(spacing.shape[1], np.int64)  # one replicate's block: stays in L1
    for r in range(spacing.shape[0]):
        total = offset[r]
        for t in range(spacing.shape[1]):
            total += spacing[r, t] * divisor[t]
            draws[t] = min(int(-math.expm1(-total) * n), n - 1)
        offset[r] = total
        row = theta[r]
        for vote in draws:
            i, j = first[vote], second[vote]
            change = target[vote] - step / (1.0 + math.exp(row[j] - row[i]))
            row[i] += change
            row[j] -= change
