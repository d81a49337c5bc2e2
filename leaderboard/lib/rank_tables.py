"""Tie-aware leaderboard ranks from per-dialogue sums (statistics.md "Comparing systems").

A system's rank on a metric is 1 + the number of systems significantly better than it. Each pair
is tested with the studentized cluster (delete-one-dialogue jackknife, t with G − 1 df) test of the
difference of means (evaluation/lib/stats/clustered.py), and "significantly" is decided by Holm's
procedure over *all* pairs of runs of the leaderboard, so the chance that any two equally good
runs are ranked apart is at most 5% (family-wise), not 5% per pair. The tests need only each
dialogue's sum and count of unit values, so a finished run is reduced once to a `ClusterTable`.

`better_matrices` computes, per metric, the full "j beats i" matrix over every run a leaderboard
might show (Holm over that whole family); `ranks` then answers for any subset of those runs (a
viewer sees public runs plus their own). Restricting a Holm family to a subset keeps its
family-wise error ≤ 5% (it is only conservative), so no viewer sees an uncorrected rank.
Pure numpy: nothing here imports Django.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from evaluation.lib.stats.clustered import MULTIPLICITY, better_from_tests, pairwise_tests


@dataclass(frozen=True)
class ClusterTable:
    """One run's unit values reduced to per-(metric, dialogue) sums and counts."""

    metrics: list[str]
    clusters: list[str]
    sums: np.ndarray  # (len(metrics), len(clusters)) float64
    counts: np.ndarray  # same shape, float64

    @classmethod
    def empty(cls) -> ClusterTable:
        return cls([], [], np.zeros((0, 0)), np.zeros((0, 0)))

    @classmethod
    def from_bytes(cls, metrics, clusters, sums: bytes, counts: bytes) -> ClusterTable:
        shape = (len(metrics), len(clusters))
        return cls(list(metrics), list(clusters),
                   np.frombuffer(bytes(sums), dtype=np.float64).reshape(shape),
                   np.frombuffer(bytes(counts), dtype=np.float64).reshape(shape))

    @classmethod
    def from_slices(cls, metrics, clusters,
                    slices: Mapping[str, tuple[bytes, bytes] | None]) -> ClusterTable:
        """The table of the metrics SLICES has, each from its own slices of a stored table's
        `sums` and `counts` (a metric's values are one contiguous row of the C-order float64
        arrays; None: the stored table has no such metric), in METRICS' (the stored table's)
        order: the stored table's `select` of those metrics, to the bit."""
        kept = [metric for metric in metrics if slices.get(metric) is not None]
        return cls.from_bytes(kept, clusters,
                              b"".join(bytes(slices[metric][0]) for metric in kept),
                              b"".join(bytes(slices[metric][1]) for metric in kept))

    def select(self, metrics: Iterable[str]) -> ClusterTable:
        """The same table with only those of METRICS it has, in its own order."""
        wanted = set(metrics)
        rows = [i for i, metric in enumerate(self.metrics) if metric in wanted]
        return ClusterTable([self.metrics[i] for i in rows], list(self.clusters),
                            self.sums[rows], self.counts[rows])


def cluster_tables(rows: Iterable[tuple], run_ids: Sequence[int]) -> dict[int, ClusterTable]:
    """Tables from grouped rows `(run_id, metric, dialogue_id, sum, count)`, one per run id
    (a run without values gets an empty table)."""
    grouped: dict[int, list[tuple]] = defaultdict(list)
    for run_id, metric, dialogue_id, total, count in rows:
        grouped[run_id].append((metric, dialogue_id, float(total), float(count)))
    tables = {}
    for run_id in run_ids:
        entries = grouped.get(run_id, [])
        metrics = sorted({e[0] for e in entries})
        clusters = sorted({e[1] for e in entries})
        m_index = {m: i for i, m in enumerate(metrics)}
        c_index = {c: i for i, c in enumerate(clusters)}
        sums = np.zeros((len(metrics), len(clusters)))
        counts = np.zeros((len(metrics), len(clusters)))
        for metric, dialogue_id, total, count in entries:
            sums[m_index[metric], c_index[dialogue_id]] = total
            counts[m_index[metric], c_index[dialogue_id]] = count
        tables[run_id] = ClusterTable(metrics, clusters, sums, counts)
    return tables


def better_matrices(tables: Sequence[ClusterTable], metrics: Sequence[str],
                    higher_is_better: Mapping[str, bool], *, confidence: float = 0.95,
                    correction: str = MULTIPLICITY, **_legacy) -> np.ndarray:
    """A (metrics, runs, runs) bool array: [m, i, j] is True when run j is significantly better
    than run i on metric m (Holm over all pairs of runs with a value on m). Runs without a value
    on a metric beat nobody and lose to nobody. ``_legacy`` swallows the bootstrap's old
    ``n_resamples``/``seed`` settings, which no longer matter."""
    n_runs = len(tables)
    clusters = sorted({c for table in tables for c in table.clusters})
    c_index = {c: i for i, c in enumerate(clusters)}
    columns = [np.fromiter((c_index[c] for c in t.clusters), np.int64, len(t.clusters))
               for t in tables]
    out = np.zeros((len(metrics), n_runs, n_runs), dtype=bool)
    for m, metric in enumerate(metrics):
        sums = np.zeros((n_runs, len(clusters)))
        counts = np.zeros((n_runs, len(clusters)))
        for r, table in enumerate(tables):
            if metric in table.metrics:
                row = table.metrics.index(metric)
                sums[r, columns[r]] = table.sums[row]
                counts[r, columns[r]] = table.counts[row]
        present = np.flatnonzero(counts.sum(axis=1) > 0)
        if len(present) < 2:
            continue
        difference, _, _, p_value = pairwise_tests(sums[present], counts[present])
        better = better_from_tests(difference, p_value, higher_is_better=higher_is_better[metric],
                                   alpha=1.0 - confidence, correction=correction)
        out[m][np.ix_(present, present)] = better
    return out


def pack(better: np.ndarray) -> bytes:
    return np.packbits(np.asarray(better, dtype=bool).ravel()).tobytes()


def unpack(data: bytes, n_metrics: int, n_runs: int) -> np.ndarray:
    size = n_metrics * n_runs * n_runs
    bits = np.unpackbits(np.frombuffer(bytes(data), dtype=np.uint8), count=size)
    return bits.reshape(n_metrics, n_runs, n_runs).astype(bool)


def ranks(better: np.ndarray, positions: Sequence[int]) -> list[int]:
    """Tie-aware ranks of the runs at POSITIONS among themselves (one metric's matrix)."""
    if not positions:
        return []
    index = np.asarray(positions, dtype=np.int64)
    return (1 + better[np.ix_(index, index)].sum(axis=1)).astype(int).tolist()
