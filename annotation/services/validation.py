"""The leaderboards' trust column: every study's metric-leaderboard rows, stored.

A leaderboard column (an evaluator's metric on a benchmark) shows its best measured agreement
with human labels on that benchmark. Those numbers are the metric leaderboards' own rows
(`report_selectors.study_metric_leaderboard`: Spearman ρ, dialogue-jackknife CI, Holm ranks),
computed here in the background and stored as `MetricValidation` rows, so a leaderboard reads
them in one statement and never computes or writes anything.

Refreshed when labels or runs change: `evaluation.signals.results_changed` (a run finished, a
submission was published or withdrawn) refreshes every study of the benchmark; a submitted
annotation, an excluded annotator and the import commands refresh their study. A refresh whose
study has the same labels and runs as last time (`StudyValidationState.fingerprint`) does
nothing.
"""

from __future__ import annotations

from django.core.cache import cache
from django.db import transaction
from django.utils import timezone

from evaluation.services.jobs import task_enqueue

from ..models import (
    VALIDATION_INTERVAL,
    MetricValidation,
    Study,
    StudyValidationState,
    validation_interval_version,
)
from ..report_selectors import (
    TRAINED_SUFFIX,
    study_field_specs,
    study_fingerprint,
    study_metric_leaderboard,
)

TASK = "annotation.tasks.refresh_validations_job"
# A study under annotation changes with every submission: its refresh waits this long, and the
# submissions meanwhile join it (one refresh per study and web process per window).
LABEL_REFRESH_DELAY_SECONDS = 60


def metric_validations_refresh(*, study: Study, force: bool = False) -> int | None:
    """Recompute and store STUDY's metric-leaderboard rows for both scopes (public runs, all
    runs); None when its labels and runs have not changed since the last refresh."""
    fingerprint = study_fingerprint(study=study)
    state = StudyValidationState.objects.filter(study=study).first()
    if not force and state is not None and state.fingerprint == fingerprint:
        return None
    now = timezone.now()
    rows = []
    aspects = [spec for spec in study_field_specs(study=study).values() if spec.is_numeric]
    for scope, include_private in ((MetricValidation.Scope.PUBLIC, False),
                                   (MetricValidation.Scope.ALL, True)):
        for spec in aspects:
            board = study_metric_leaderboard(study=study, aspect=spec.name,
                                             include_private=include_private)
            for row in board.get("rows", []):
                if (row["value"] is None or row["ci_low"] is None or row["ci_high"] is None
                        or row["evaluator"].endswith(TRAINED_SUFFIX)):
                    continue
                rows.append(MetricValidation(
                    study=study, benchmark_id=study.benchmark_id, scope=scope,
                    evaluator=row["evaluator"][:100], metric=row["metric"][:100],
                    aspect=spec.name[:100], aspect_label=spec.title[:200],
                    method=board["method"], value=row["value"], ci_low=row["ci_low"],
                    ci_high=row["ci_high"], units=row["n"]["units"],
                    clusters=row["n"]["clusters"], rank=row["rank"], computed_at=now,
                    ci_method=VALIDATION_INTERVAL, ci_version=validation_interval_version()))
    with transaction.atomic():
        MetricValidation.objects.filter(study=study).delete()
        MetricValidation.objects.bulk_create(rows)
        StudyValidationState.objects.update_or_create(
            study=study, defaults={"fingerprint": fingerprint, "computed_at": now})
    return len(rows)


def benchmark_validations_refresh(*, benchmark_id: int) -> int:
    """Refresh every study on the benchmark; the number of rows stored."""
    stored = 0
    for study in Study.objects.filter(benchmark_id=benchmark_id).select_related("benchmark"):
        stored += metric_validations_refresh(study=study) or 0
    return stored


def validations_refresh_enqueue(*, benchmark_id: int, **_signal) -> None:
    """Refresh the benchmark's studies in the background once the transaction commits (also
    the receiver of `evaluation.signals.results_changed`); a benchmark no study labels has
    nothing to refresh, so nothing is queued."""
    if Study.objects.filter(benchmark_id=benchmark_id).exists():
        task_enqueue(TASK, benchmark_id, None)


def study_validations_refresh_enqueue(*, study: Study, soon: bool = False) -> None:
    """Refresh STUDY in the background; SOON (a submitted annotation) waits
    LABEL_REFRESH_DELAY_SECONDS so that a burst of submissions is one refresh."""
    if not soon:
        task_enqueue(TASK, None, study.pk)
        return
    if cache.add(f"annotation:validation-pending:{study.pk}", 1, LABEL_REFRESH_DELAY_SECONDS):
        task_enqueue(TASK, None, study.pk, countdown=LABEL_REFRESH_DELAY_SECONDS + 5)
