"""The ratings page's comparison of an arena's ratings with the human labels and automatic
metrics of its battle dialogues (docs/arena.md, "Studies from battles"). Reads only.

The studies are those created from the arena's battles (`annotation/arena_studies.py`, their
`config.arena_id`), shown to their author and staff, and to everyone when the study is public
(as its metric leaderboard is). Human side: a numeric dialogue-level field of the study (FACE's
overall impression by default); the automatic side: the newest finished run of each evaluator
on the study's battle-dialogue submissions (its per-system means and CIs as stored).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from django.db.models import Q

from annotation.access import can_manage_study
from annotation.models import Study
from annotation.report_selectors import latest_runs, study_label_table
from evaluation.lib.stats.results import Correlation
from evaluation.models import Arena, MetricSummary
from leaderboard.lib.arena_agreement import (
    choice_labels,
    human_means,
    label_choices,
    rank_agreement,
)

PREFERRED_FIELDS = ("face.overall", "core.overall", "satisfaction=satisfied")


@dataclass
class ArenaAgreement:
    study: Study
    studies: list[Study]
    choices: list[dict]  # the labels the page can compare: {key, title, field, category}
    field: str  # the chosen one's key
    rows: list[dict]  # per system: name, rating, ci, human (Estimate), metrics {key: summary}
    metrics: list[tuple[str, str]]  # (evaluator, metric) columns
    human_agreement: dict[str, Correlation]
    metric_agreement: list[dict] = field(default_factory=list)


def arena_studies_for_user(arena: Arena, user) -> list[Study]:
    """Studies made from the arena's battles, and the imported studies of the data set its votes
    came from (CRSArena-Dial's satisfaction labels on its own conversations)."""
    made = Q(config__arena_id=arena.pk, source="native")
    if arena.benchmark_id is not None:
        made |= Q(benchmark_id=arena.benchmark_id, source__startswith="imported:")
    studies = (Study.objects.filter(made).select_related("benchmark")
               .order_by("-created_at", "-pk"))
    return [s for s in studies if s.is_public or can_manage_study(user, s)]


def _metric_summaries(study: Study, include_private: bool) -> dict[str, dict]:
    """System name -> {(evaluator, metric): MetricSummary} of the newest runs."""
    runs = {run.pk: run for run in latest_runs(benchmark=study.benchmark,
                                               include_private=include_private)}
    found: dict[str, dict] = {}
    for summary in MetricSummary.objects.filter(run_id__in=runs).order_by("metric"):
        run = runs[summary.run_id]
        found.setdefault(run.submission.system.name, {})[(run.evaluator, summary.metric)] = \
            summary
    return found


def arena_agreement(*, arena: Arena, board_rows: list[dict], user, study_slug: str = "",
                    field_name: str = "") -> ArenaAgreement | None:
    """None when the viewer may see no study of this arena's battles."""
    studies = arena_studies_for_user(arena, user)
    if not studies:
        return None
    study = next((s for s in studies if s.slug == study_slug), studies[0])
    table = study_label_table(study=study)
    categories: dict[str, set] = {}
    for row in table.rows:
        if row.unit_type == "dialogue" and not table.fields[row.field].is_numeric:
            categories.setdefault(row.field, set()).add(str(row.value))
    choices = label_choices([(f.name, f.title, f.unit_type, f.is_numeric)
                             for f in table.fields.values()], categories)
    keys = [c["key"] for c in choices]
    chosen = field_name if field_name in keys else next(
        (key for key in PREFERRED_FIELDS if key in keys), keys[0] if keys else "")
    choice = next((c for c in choices if c["key"] == chosen), None)
    labels = choice_labels([(r.system, r.dialogue_id, r.field, r.value) for r in table.rows],
                           choice) if choice else []
    spec = table.fields.get(choice["field"]) if choice else None
    bounds = (0.0, 1.0) if choice and choice["category"] is not None else (
        (spec.scale_min, spec.scale_max) if spec else None)
    means = human_means(labels, chosen, bounds=bounds)
    metrics = _metric_summaries(study, include_private=can_manage_study(user, study))
    columns = sorted({key for per_system in metrics.values() for key in per_system})
    rated = {row["system"]: row for row in board_rows}
    systems = [row["system"] for row in board_rows]
    systems += sorted((set(means) | set(metrics)) - set(rated))
    rows = [{"system": name, "rating": rated.get(name, {}).get("rating"),
             "ci_low": rated.get(name, {}).get("ci_low"),
             "ci_high": rated.get(name, {}).get("ci_high"),
             "human": means.get(name),  # None: no label yet
             "metrics": [metrics.get(name, {}).get(key) for key in columns]}
            for name in systems]
    ratings = {row["system"]: row["rating"] for row in rows}
    metric_agreement = []
    for n, (evaluator, metric) in enumerate(columns):
        values = {row["system"]: None if row["metrics"][n] is None else row["metrics"][n].value
                  for row in rows}
        metric_agreement.append({"evaluator": evaluator, "metric": metric,
                                 **rank_agreement(ratings, values)})
    return ArenaAgreement(
        study=study, studies=studies, choices=choices, field=chosen, rows=rows, metrics=columns,
        human_agreement=rank_agreement(ratings, {s: e.value for s, e in means.items()}),
        metric_agreement=metric_agreement)
