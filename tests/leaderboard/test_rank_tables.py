"""Leaderboard ranks from per-dialogue sums equal evaluation.lib.stats' tie-aware ranks."""

import numpy as np
import pytest

from evaluation.lib.stats.clustered import rank_systems_by_metric
from leaderboard.lib.rank_tables import (
    ClusterTable,
    better_matrices,
    cluster_tables,
    pack,
    ranks,
    unpack,
)


def _long_format(rng, n_systems=5, n_dialogues=40, turns=3):
    values, systems, clusters = {"m1": [], "m2": []}, [], []
    for s in range(n_systems):
        for d in range(n_dialogues):
            for _ in range(turns):
                systems.append(f"s{s}")
                clusters.append(f"d{d:03d}")
                values["m1"].append(rng.normal(0.1 * s, 0.3))
                values["m2"].append(rng.uniform(0, 1) if (s + d) % 7 else None)
    return values, systems, clusters


def _tables(values, systems, clusters):
    rows = {}
    for metric, column in values.items():
        for value, system, cluster in zip(column, systems, clusters, strict=True):
            if value is None:
                continue
            total, count = rows.get((system, metric, cluster), (0.0, 0))
            rows[(system, metric, cluster)] = (total + value, count + 1)
    flat = [(s, m, c, total, n) for (s, m, c), (total, n) in rows.items()]
    names = sorted(set(systems))
    return names, cluster_tables(flat, names)


def test_ranks_equal_rank_systems_by_metric():
    values, systems, clusters = _long_format(np.random.default_rng(7))
    expected = rank_systems_by_metric(values, systems, clusters,
                                      higher_is_better={"m1": True, "m2": False})
    names, tables = _tables(values, systems, clusters)
    better = better_matrices([tables[n] for n in names], ["m1", "m2"],
                             {"m1": True, "m2": False})
    for m, metric in enumerate(["m1", "m2"]):
        got = dict(zip(names, ranks(better[m], list(range(len(names)))), strict=True))
        assert got == {row.system: row.rank for row in expected[metric]}
    assert better[0].any(), "the spread in m1 makes some systems significantly better"


def test_ranks_of_a_subset_count_only_the_subset():
    # s0 < s1 < s2 clearly: ranks 3, 2, 1; without s2, s1 becomes first.
    better = np.array([[False, True, True], [False, False, True], [False, False, False]])
    assert ranks(better, [0, 1, 2]) == [3, 2, 1]
    assert ranks(better, [0, 1]) == [2, 1]
    assert ranks(better, []) == []


def test_a_run_without_values_beats_nobody_and_loses_to_nobody():
    full = ClusterTable(["m"], ["d1", "d2"], np.array([[1.0, 1.0]]), np.array([[1.0, 1.0]]))
    low = ClusterTable(["m"], ["d1", "d2"], np.array([[0.0, 0.0]]), np.array([[1.0, 1.0]]))
    better = better_matrices([full, low, ClusterTable.empty()], ["m"], {"m": True})
    assert better[0].tolist() == [[False, False, False], [True, False, False],
                                  [False, False, False]]


def test_pack_round_trip():
    bits = np.random.default_rng(1).random((3, 7, 7)) > 0.5
    assert (unpack(pack(bits), 3, 7) == bits).all()


@pytest.mark.parametrize("n", [1, 2])
def test_fewer_than_two_runs_have_no_comparisons(n):
    table = ClusterTable(["m"], ["d"], np.array([[1.0]]), np.array([[1.0]]))
    assert not better_matrices([table] * n, ["m"], {"m": True}).any()


def test_a_table_from_its_metrics_slices_is_its_selection_to_the_bit():
    rng = np.random.default_rng(3)
    table = ClusterTable(["a", "b", "c"], ["d1", "d2", "d3", "d4"], rng.random((3, 4)),
                         rng.integers(0, 4, (3, 4)).astype(float))
    row_bytes = {m: (table.sums[i].tobytes(), table.counts[i].tobytes())
                 for i, m in enumerate(table.metrics)}
    for wanted in (["c", "a"], ["b"], ["a", "b", "c"], ["x", "b"], []):
        sliced = ClusterTable.from_slices(table.metrics, table.clusters,
                                          {m: row_bytes.get(m) for m in wanted})
        selected = table.select(wanted)
        assert sliced.metrics == selected.metrics == [m for m in table.metrics if m in wanted]
        assert sliced.clusters == selected.clusters == table.clusters
        assert sliced.sums.tobytes() == selected.sums.tobytes()
        assert sliced.counts.tobytes() == selected.counts.tobytes()
        assert sliced.sums.shape == (len(sliced.metrics), 4)
