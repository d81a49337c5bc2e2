"""`cluster_tables_read(metrics=…)`: the shown metrics' slices of the stored per-dialogue sums,
read by the database in one statement, are the whole row's tables restricted to those metrics,
to the bit (docs/performance-history.md, "Pages at that size")."""

import numpy as np
import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from evaluation.lib.columns import headline
from leaderboard.models import RunClusterStats
from leaderboard.selectors.ranks import cluster_tables_read
from leaderboard.selectors.systems import dialogue_metrics, tier_metrics
from leaderboard.services import run_cluster_stats_ensure


def _same(sliced, whole):
    assert sliced.metrics == whole.metrics
    assert sliced.clusters == whole.clusters
    assert sliced.sums.shape == whole.sums.shape == (len(whole.metrics), len(whole.clusters))
    assert sliced.sums.tobytes() == whole.sums.tobytes()
    assert sliced.counts.tobytes() == whole.counts.tobytes()


@pytest.fixture
def stored(board_world):
    """Echo's and the baseline's stored sums, and Draft's stored without 'gs' and 'mrr' (a run
    that lacks metrics others have); run ids in that order."""
    runs = [board_world["runs"][name][1].pk for name in ("echo", "base", "draft")]
    run_cluster_stats_ensure(run_ids=runs)
    draft = RunClusterStats.objects.get(run_id=runs[2])
    table = cluster_tables_read(run_ids=[runs[2]])[runs[2]]
    kept = table.select([m for m in table.metrics if m not in ("gs", "mrr")])
    draft.metrics, draft.sums, draft.counts = kept.metrics, kept.sums.tobytes(), \
        kept.counts.tobytes()
    draft.save()
    return runs


SUBSETS = {
    "one": ["gs"],
    "the system page's": [*tier_metrics(), *dialogue_metrics()],
    "headline": list(headline("trace")),
    "reversed, with absent ones": ["no-such-metric", "rouge_l", "mrr", "gs", "recall@1"],
    "none": [],
}


@pytest.mark.django_db
@pytest.mark.parametrize("subset", SUBSETS.values(), ids=SUBSETS.keys())
def test_sliced_tables_are_the_whole_tables_restricted_in_one_statement(stored, subset):
    whole = cluster_tables_read(run_ids=stored)
    assert "gs" in whole[stored[0]].metrics and "gs" not in whole[stored[2]].metrics
    with CaptureQueriesContext(connection) as queries:
        sliced = cluster_tables_read(run_ids=stored, metrics=subset)
    assert len(queries) == 1
    assert set(sliced) == set(stored)
    for run_id in stored:
        _same(sliced[run_id], whole[run_id].select(subset))
    every = sorted({m for table in whole.values() for m in table.metrics})
    assert len(every) > 40
    everything = cluster_tables_read(run_ids=stored, metrics=every)
    for run_id in stored:
        _same(everything[run_id], whole[run_id])


@pytest.mark.django_db
def test_a_run_without_stored_sums_is_aggregated_then_restricted(board_world):
    run_id = board_world["runs"]["echo"][1].pk
    assert not RunClusterStats.objects.filter(run_id=run_id).exists()
    whole = cluster_tables_read(run_ids=[run_id])[run_id]
    subset = ["rouge_l", "gs", "no-such-metric"]
    _same(cluster_tables_read(run_ids=[run_id], metrics=subset)[run_id], whole.select(subset))
    run_cluster_stats_ensure(run_ids=[run_id])
    _same(cluster_tables_read(run_ids=[run_id], metrics=subset)[run_id], whole.select(subset))


@pytest.mark.django_db
def test_stored_arrays_are_not_compressed_so_a_slice_reads_only_its_bytes(board_world):
    if connection.vendor != "postgresql":
        pytest.skip("SQLite stores blobs as they are")
    run_id = board_world["runs"]["echo"][1].pk
    ones = np.ones((53, 2000)).tobytes()  # 848 kB that pglz would shrink ~100×
    RunClusterStats.objects.create(run_id=run_id, metrics=[f"m{i}" for i in range(53)],
                                   clusters=[f"d{i}" for i in range(2000)], sums=ones,
                                   counts=ones)
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_column_compression(sums), pg_column_compression(counts), "
                       "pg_column_size(counts) FROM leaderboard_runclusterstats "
                       "WHERE run_id = %s", [run_id])
        assert cursor.fetchone() == (None, None, len(ones))
    table = cluster_tables_read(run_ids=[run_id], metrics=["m52", "m0"])[run_id]
    assert table.metrics == ["m0", "m52"] and table.counts.shape == (2, 2000)
