"""Stored intervals computed with an older method (docs/statistics.md, "Stored intervals and
their method"): run summaries, rank snapshots and the trust column's metric–human correlations
whose recorded method or version differs from today's (`methods.INTERVAL_VERSIONS`).
`manage.py recompute_intervals` recomputes them; until then pages mark them or, for ranks,
compute them for the request."""

from __future__ import annotations

from dataclasses import dataclass

from django.db.models import Q

from annotation.models import VALIDATION_INTERVAL, MetricValidation
from evaluation.lib.stats.clustered import BOUNDED_MEAN_METHOD, MEAN_METHOD, RANK_METHOD
from evaluation.lib.stats.methods import interval_version
from evaluation.models import MetricSummary

from ..models import RankSnapshot


@dataclass(frozen=True)
class StaleIntervals:
    run_ids: list[int]  # runs with a summary of another interval version
    study_ids: list[int]  # studies with a stored correlation of another version
    snapshot_ids: list[int]  # rank snapshots of another test version

    @property
    def total(self) -> int:
        return len(self.run_ids) + len(self.study_ids) + len(self.snapshot_ids)


def stale_intervals() -> StaleIntervals:
    """What `recompute_intervals` has to do: three grouped queries."""
    current = Q()
    for method in (MEAN_METHOD, BOUNDED_MEAN_METHOD):
        current |= Q(ci_method=method, ci_version=interval_version(method))
    summaries = MetricSummary.objects.exclude(current)
    validations = MetricValidation.objects.exclude(
        ci_method=VALIDATION_INTERVAL, ci_version=interval_version(VALIDATION_INTERVAL))
    snapshots = RankSnapshot.objects.exclude(method=RANK_METHOD,
                                             method_version=interval_version(RANK_METHOD))
    return StaleIntervals(
        sorted(set(summaries.values_list("run_id", flat=True))),
        sorted(set(validations.values_list("study_id", flat=True))),
        sorted(snapshots.values_list("pk", flat=True)))
