"""Reads for study reports: the label table, evaluator scores, and the cached report builders.

`study_label_table` is the one long-format table every report is computed from (native
annotations flattened per form, or a study's imported labels); excluded annotators are left out
and listed. `evaluator_score_sets` reads the latest succeeded run of every evaluator (built-in
or imported with `import_scores`) for every system on the study's benchmark. The `study_*`
functions call the pure builders of `reports` and cache the result until a label, an exclusion
or a run changes, so the page, the commands and the exports print the same numbers.
"""

from __future__ import annotations

import hashlib
import tomllib
from collections import defaultdict
from functools import lru_cache
from pathlib import Path

from django.conf import settings
from django.core.cache import cache
from django.db.models import Count, Max, Q
from django.utils import timezone

from annotation.lib import anchored, anchored_active, form_registry, label_plan, reports, taskforms
from annotation.lib.labels import (
    REFERENCE,
    FieldSpec,
    LabelRow,
    LabelTable,
    NativeItem,
    SystemLabels,
    imported_value,
    native_fields,
    native_rows,
)
from evaluation.lib.llm.registry import is_llm_evaluator
from evaluation.lib.stats import judge_probes
from evaluation.lib.stats.methods import interval_versions_key
from evaluation.models import Dialogue, Job, Run, UnitScore
from evaluation.selectors.judge_probes import judge_models

from .models import (
    Annotation,
    HandoutDraw,
    HandoutWave,
    ImportedField,
    ImportedLabel,
    Study,
    StudyItem,
    StudyMember,
)
from .selectors import gold_accuracy

REPORT_CACHE_SECONDS = 3600
SYSTEM_GROUP = "system"


@lru_cache(maxsize=1)
def concord_version() -> str:
    try:
        with (Path(settings.BASE_DIR) / "pyproject.toml").open("rb") as handle:
            return tomllib.load(handle)["project"]["version"]
    except (OSError, KeyError, tomllib.TOMLDecodeError):
        return "unknown"


def reference_system_name(benchmark) -> str:
    """The system that owns a benchmark's units when they have none of their own (AB-ReDial's
    dialogues, a benchmark's reference turns): metric scores on them are runs of this system."""
    return f"{benchmark.name} reference"


# --- the label table -------------------------------------------------------------------------


def study_field_specs(*, study: Study) -> dict[str, FieldSpec]:
    if study.is_imported:
        return {f.name: FieldSpec(f.name, f.unit_type, f.level, f.scale_min, f.scale_max,
                                  label=f.name.replace("_", " "), description=f.description,
                                  group="imported")
                for f in ImportedField.objects.filter(study=study).order_by("pk")}
    return native_fields(study.forms, study.likert_scales)


def _excluded(study: Study) -> list[dict]:
    return [{"annotator": m.user.get_username(), "reason": m.exclusion_reason,
             "excluded_at": m.excluded_at.isoformat() if m.excluded_at else ""}
            for m in study.members.filter(excluded=True).select_related("user")]


def study_label_table(*, study: Study) -> LabelTable:
    """Every label that counts in STUDY's reports, one row per unit × annotator × field."""
    fields = study_field_specs(study=study)
    rows: list[LabelRow] = []
    if study.is_imported:
        levels = {name: spec.level for name, spec in fields.items()}
        for unit_type, unit_id, dialogue_id, system, annotator, name, num, text in (
                ImportedLabel.objects.filter(study=study).order_by("pk").values_list(
                    "unit_type", "unit_id", "dialogue_id", "system", "annotator", "field",
                    "value_num", "value_text").iterator(chunk_size=5000)):
            if name in levels:
                rows.append(LabelRow(unit_type, unit_id, dialogue_id, system, annotator, name,
                                     imported_value(levels[name], num, text)))
        return LabelTable(rows, fields, [])
    annotations = (Annotation.objects
                   .filter(item__study=study, item__kind=StudyItem.Kind.NORMAL,
                           assignment__member__excluded=False)
                   .order_by("item__position", "annotator__username")
                   .values_list("values", "annotator__username", "item__mode",
                                "item__turn_index", "item__dialogue__external_id",
                                "item__system__name", "item__system_b__name"))
    for values, username, mode, turn, dialogue, system, system_b in annotations:
        item = NativeItem(mode, dialogue, turn, system or REFERENCE, system_b or REFERENCE)
        rows += [row for row in native_rows(values, item, username) if row.field in fields]
    return LabelTable(rows, fields, _excluded(study))


def study_recommend_gold(*, study: Study) -> dict:
    """Blind-recommendation unit -> its gold and acceptable alternative items."""
    gold = {}
    for dialogue, turn, reference in (StudyItem.objects.filter(
            study=study, mode=StudyItem.Mode.RECOMMEND, kind=StudyItem.Kind.NORMAL)
            .values_list("dialogue__external_id", "turn_index", "reference")):
        items = (reference or {}).get("gold_item_ids", []) + (reference or {}).get(
            "alternative_item_ids", [])
        gold[(REFERENCE, f"{dialogue}#{turn}")] = items
    return gold


def study_gold_by_username(*, study: Study) -> dict[str, tuple[int, int]]:
    names = dict(StudyMember.objects.filter(study=study).values_list("user_id",
                                                                     "user__username"))
    return {names.get(user_id, str(user_id)): counts
            for user_id, counts in gold_accuracy(study=study).items()}


def study_snapshot(*, study: Study, table: LabelTable) -> dict:
    """What the numbers were computed from (recorded in every export)."""
    aggregated = sum(1 for row in table.rows if not row.annotator)
    counts = {"labels": len(table.rows), "aggregated_labels": aggregated,
              "units": len(table.units()), "annotators": len(table.annotators()),
              "fields": len({row.field for row in table.rows})}
    if not study.is_imported:
        counts.update(items=study.items.filter(kind=StudyItem.Kind.NORMAL).count(),
                      annotations=Annotation.objects.filter(item__study=study).count())
    return {"study": study.slug, "title": study.title, "source": study.source,
            "benchmark": study.benchmark.slug, "benchmark_name": study.benchmark.name,
            "author": study.author.get_username(),
            "generated_at": timezone.now().isoformat(timespec="seconds"),
            "concord_version": concord_version(), "counts": counts,
            "excluded": table.excluded}


# --- evaluator scores ------------------------------------------------------------------------

TRAINED_SUFFIX = reports.TRAINED  # the units an evaluator's instructions were optimized on


def _latest_runs(benchmark, *, include_private: bool, evaluators=None) -> list[Run]:
    # Smoke tests (runs of a model that is not evaluation-grade) never reach a metric
    # leaderboard, hence the trust column built from its rows.
    runs = (Run.objects.publishable()
            .filter(submission__benchmark=benchmark, job__status=Job.Status.SUCCEEDED)
            .select_related("submission__system").order_by("-created_at", "-pk"))
    if not include_private:
        runs = runs.filter(submission__is_public=True)
    if evaluators is not None:
        runs = runs.filter(evaluator__in=list(evaluators))
    latest: dict[tuple, Run] = {}
    for run in runs:
        # A Trace run of a system's simulated dialogues scores other units than its run on
        # the benchmark's turns: the newer one must not hide the other.
        latest.setdefault((run.submission.system_id, run.evaluator,
                           bool(run.config.get("simulation"))), run)
    return list(latest.values())


def _has_private_runs(benchmark) -> bool:
    """Whether a finished run of BENCHMARK that a metric leaderboard reads is not public (the
    public scope's boards read fewer runs than the full scope's)."""
    return (Run.objects.publishable()
            .filter(submission__benchmark=benchmark, job__status=Job.Status.SUCCEEDED,
                    submission__is_public=False).exists())


def latest_runs(*, benchmark, include_private: bool) -> list[Run]:
    """The newest finished run of each (system, evaluator) on BENCHMARK."""
    return _latest_runs(benchmark, include_private=include_private)


def evaluator_names(*, benchmark, include_private: bool = True) -> list[str]:
    return sorted({run.evaluator for run in _latest_runs(benchmark,
                                                         include_private=include_private)})


def study_evaluators(*, study: Study) -> list[str]:
    """The evaluators that scored some of STUDY's labelled units, the one with the most such
    units first (ties by name): the report's evaluator choices. An evaluator with no shared
    unit has nothing to correlate and is not offered."""
    def build():
        units = list(_labelled_units(_table(study)))
        runs = {run.pk: run.evaluator for run in _latest_runs(study.benchmark,
                                                              include_private=True)}
        shared: dict[str, int] = defaultdict(int)
        for run_id, n in (UnitScore.objects.filter(run_id__in=list(runs)).exclude(value=None)
                          .filter(Q(unit_id__in=units) | Q(unit_type="dialogue",
                                                           dialogue_id__in=units))
                          .values_list("run_id").annotate(n=Count("unit_id", distinct=True))):
            shared[runs[run_id]] += n
        return sorted((name for name, n in shared.items() if n), key=lambda n: (-shared[n], n))
    return _cached(study, "evaluators", (), build, runs=True)


def evaluator_score_sets(*, benchmark, evaluators=None, include_private: bool = True,
                         unit_type: str | None = None, metric_names=None,
                         units: set[str] | None = None, with_uncertainty: bool = False
                         ) -> dict[str, list[reports.ScoreSet]]:
    """evaluator -> one ScoreSet per metric, keyed (system, unit id) like the label table.

    Dialogue-level scores of a `log` run are keyed by the dialogue the log names (its
    `dialogue_id`), so a judge's per-log score meets the humans' label of that dialogue.

    A run whose evaluator was trained on some dialogues (FACE's optimized instructions name
    them in `config["train_dialogues"]`) reports those units apart, as evaluator
    `<name>:train`, so a trained-on correlation is never read as a held-out one.

    UNITS (unit ids, a log's by the dialogue it names) reads only the values of those units:
    what a comparison with human labels can use. Every (evaluator, metric, unit type) is still
    listed, with no values where none of its units is among them, so the result equals the
    full read restricted to UNITS. Values are read in primary-key order (the order a join
    keeps, which seeds the sample-efficiency draws), with or without UNITS. WITH_UNCERTAINTY
    also reads the judge's own uncertainty per unit where it stored one
    (`detail["uncertainty"]["sd"]`, FACE's; the label plan's error predictor).
    """
    reference = reference_system_name(benchmark)
    runs = {run.pk: run for run in _latest_runs(benchmark, include_private=include_private,
                                                evaluators=evaluators)}
    sets: dict[tuple[str, str, str], reports.ScoreSet] = {}
    scores = UnitScore.objects.filter(run_id__in=list(runs)).exclude(value=None)
    if unit_type is not None:
        scores = scores.filter(unit_type=unit_type)
    if metric_names is not None:  # a predicate on metric names: read only what is needed
        names = set(scores.values_list("metric", flat=True).distinct())
        scores = scores.filter(metric__in=[name for name in names if metric_names(name)])
    trained = {pk: frozenset(run.config.get("train_dialogues") or ()) for pk, run in runs.items()}
    if units is not None:
        every = scores.filter(run_id__in=[pk for pk in runs if not trained[pk]])
        for run_id, metric, kind in every.values_list("run_id", "metric", "unit_type").distinct():
            _score_set(sets, runs[run_id].evaluator, metric, kind)
        units = list(units)
        scores = scores.filter(Q(unit_id__in=units) | Q(unit_type="dialogue",
                                                          dialogue_id__in=units)
                               | Q(run_id__in=[pk for pk in runs if trained[pk]]))
    columns = ["run_id", "metric", "unit_type", "unit_id", "dialogue_id", "value"]
    if with_uncertainty:
        columns.append("detail__uncertainty__sd")
    rows = scores.order_by("pk").values_list(*columns).iterator(chunk_size=10000)
    systems = {pk: REFERENCE if run.submission.system.name == reference
               else run.submission.system.name for pk, run in runs.items()}
    for run_id, metric, unit_type, unit_id, dialogue_id, value, *sd in rows:
        run = runs[run_id]
        if unit_type == "dialogue" and dialogue_id:
            unit_id = dialogue_id  # a log's scores belong to the dialogue it names
        system = systems[run_id]
        name = f"{run.evaluator}{TRAINED_SUFFIX}" if dialogue_id in trained[run_id] else \
            run.evaluator
        score = _score_set(sets, name, metric, unit_type)
        score.values[(system, unit_id)] = value
        if sd and isinstance(sd[0], int | float) and not isinstance(sd[0], bool):
            score.uncertainty[(system, unit_id)] = float(sd[0])
    grouped: dict[str, list[reports.ScoreSet]] = defaultdict(list)
    for (evaluator, _, _), score in sorted(sets.items()):
        grouped[evaluator].append(score)
    return dict(grouped)


def _score_set(sets: dict, evaluator: str, metric: str, unit_type: str) -> reports.ScoreSet:
    key = (evaluator, metric, unit_type)
    if key not in sets:
        sets[key] = reports.ScoreSet(evaluator, metric, unit_type)
    return sets[key]


# --- subsets (--by) --------------------------------------------------------------------------


# A scenario key splits a report only if it names a few groups: free text (a persona's
# description, one value per dialogue) would make as many subsets as dialogues.
MAX_GROUPS = 30
MAX_GROUP_LABEL = 60


def grouping_keys(*, benchmark) -> list[str]:
    """What `--by` accepts: `system` and every scenario key with scalar values that name at
    most MAX_GROUPS groups of at most MAX_GROUP_LABEL characters (not free text)."""
    values: dict[str, set] = defaultdict(set)
    for scenario in Dialogue.objects.filter(benchmark=benchmark).values_list("scenario",
                                                                             flat=True)[:2000]:
        for key, value in (scenario or {}).items():
            if isinstance(value, str | int | float) and not isinstance(value, bool):
                values[key].add(value)
            elif isinstance(value, bool):
                values[key].add(str(value))
    keys = {key for key, seen in values.items() if len(seen) <= MAX_GROUPS
            and all(len(str(value)) <= MAX_GROUP_LABEL for value in seen)}
    return [SYSTEM_GROUP, *sorted(keys - {SYSTEM_GROUP})]


def resolve_grouping(*, benchmark, by: str) -> str:
    """BY as a grouping key: `system`, a scenario key, or its `source_` form (`dataset` means
    `source_dataset`, the source data set the public importers record)."""
    if not by:
        return ""
    keys = grouping_keys(benchmark=benchmark)
    for candidate in (by, f"source_{by}"):
        if candidate in keys:
            return candidate
    raise ValueError(f"split by one of: {', '.join(keys)} (not {by!r})")


def resolve_evaluator(*, benchmark, name: str) -> str:
    """NAME as an evaluator with finished runs on BENCHMARK (`face` finds `external:face`)."""
    names = evaluator_names(benchmark=benchmark)
    for candidate in (name, f"external:{name}"):
        if candidate in names:
            return candidate
    raise ValueError(f"no finished run of {name!r} on {benchmark.slug} (evaluators: "
                     f"{', '.join(names) or 'none'})")


def unit_groups(*, study: Study, table: LabelTable, by: str) -> dict | None:
    """unit -> its subset: the system, or the dialogue's scenario value for key BY."""
    if not by:
        return None
    units = table.units()
    if by == SYSTEM_GROUP:
        return {key: key[0] or "reference" for key in units}
    dialogue_ids = {unit["dialogue_id"] for unit in units.values()}
    scenario = {}
    for external_id, values in (Dialogue.objects.filter(benchmark=study.benchmark,
                                                        external_id__in=dialogue_ids)
                                .values_list("external_id", "scenario")):
        value = (values or {}).get(by)
        if isinstance(value, str | int | float):
            scenario[external_id] = str(value)
    return {key: scenario[unit["dialogue_id"]] for key, unit in units.items()
            if unit["dialogue_id"] in scenario}


# --- cached builders -------------------------------------------------------------------------


def _label_parts(study: Study, labels: dict, excluded: list, waves: int | None) -> list:
    """What a fingerprint holds of STUDY's labels (LABELS: their count and last key),
    exclusions, hand-out policy (and WAVES, an active study's drawn waves), and the methods'
    versions: a report cached before a statistical method changed is not served."""
    return [concord_version(), interval_versions_key(), study.pk, study.created_at,
            study.source, labels["n"], labels["last"], excluded, study.handout_policy,
            study.handout_evaluator, study.handout_metric, study.handout_budget, waves]


def _fingerprint(study: Study, *, runs: bool) -> str:
    if study.is_imported:
        labels = ImportedLabel.objects.filter(study=study).aggregate(n=Count("pk"), last=Max("pk"))
    else:
        labels = Annotation.objects.filter(item__study=study).aggregate(
            n=Count("pk"), last=Max("updated_at"))
    excluded = list(study.members.filter(excluded=True).values_list("pk", flat=True))
    waves = (HandoutWave.objects.filter(study=study).count() if study.is_active_handout
             else None)  # an active study's new wave of draws
    parts = _label_parts(study, labels, excluded, waves)
    if runs:  # a run finishing (again), a new run, a submission published or withdrawn
        succeeded = Q(job__status=Job.Status.SUCCEEDED)
        parts.append(Run.objects.filter(submission__benchmark=study.benchmark).aggregate(
            n=Count("pk", filter=succeeded), last=Max("pk"),
            finished=Max("job__finished_at", filter=succeeded),
            public=Count("pk", filter=succeeded & Q(submission__is_public=True))))
    return hashlib.sha256(repr(parts).encode()).hexdigest()[:24]


def study_fingerprint(*, study: Study) -> str:
    """What STUDY's reports are computed from: its labels, exclusions and the benchmark's
    finished runs (changes whenever any of them does)."""
    return _fingerprint(study, runs=True)


def _cached(study: Study, name: str, args: tuple, build, *, runs: bool):
    """BUILD's value, kept in Django's cache under a key that holds a fingerprint of everything
    it is computed from (the labels, the exclusions and, with RUNS, the benchmark's runs): a
    new or edited label, an exclusion or a finished run makes a new key, so a stale value is
    never served, in any web process, and nothing is written to the database. The fingerprint
    is read once per request (kept on the STUDY instance)."""
    memo = study.__dict__.setdefault("_report_fingerprints", {})
    if runs not in memo:
        memo[runs] = _fingerprint(study, runs=runs)
    key = f"annotation:report:{name}:{study.pk}:{memo[runs]}:" + \
        hashlib.sha256(repr(args).encode()).hexdigest()[:16]
    found = cache.get(key)
    if found is None:
        found = build()
        cache.set(key, found, REPORT_CACHE_SECONDS)
    return found


def study_agreement(*, study: Study) -> dict:
    """The agreement report of STUDY (reports.build_agreement), cached."""
    def build():
        table = _table(study)
        return reports.build_agreement(
            table, snapshot=study_snapshot(study=study, table=table),
            gold_accuracy=study_gold_by_username(study=study),
            recommend_gold=study_recommend_gold(study=study))
    return _cached(study, "agreement", (), build, runs=False)


def _table(study: Study) -> LabelTable:
    """The label table, read once per request however many reports a page builds (kept on the
    STUDY instance, like the fingerprint)."""
    if "_report_label_table" not in study.__dict__:
        study.__dict__["_report_label_table"] = study_label_table(study=study)
    return study.__dict__["_report_label_table"]


def _labelled_units(table: LabelTable) -> set[str]:
    return {unit_id for _, unit_id in table.units()}


def _labelled_scores(study: Study, evaluator: str) -> list[reports.ScoreSet]:
    """EVALUATOR's score sets on the labelled units, read once per request (on the STUDY)."""
    memo = study.__dict__.setdefault("_report_scores", {})
    if evaluator not in memo:
        memo[evaluator] = evaluator_score_sets(
            benchmark=study.benchmark, evaluators=[evaluator],
            units=_labelled_units(_table(study))).get(evaluator, [])
    return memo[evaluator]


def study_correlation(*, study: Study, evaluator: str, by: str = "",
                      with_points: bool = False) -> dict:
    """Metric–human correlation of EVALUATOR on STUDY's labels, optionally split BY."""
    def build():
        table = _table(study)
        return reports.build_correlation(
            table, _labelled_scores(study, evaluator), evaluator=evaluator, by=by,
            groups=unit_groups(study=study, table=table, by=by),
            snapshot=study_snapshot(study=study, table=table), with_points=with_points)
    return _cached(study, "correlation", (evaluator, by, with_points), build, runs=True)


def study_correlation_headline(*, study: Study, evaluator: str, aspect: str = "") -> dict:
    """The rows of EVALUATOR's correlation that the report page shows first: its headline
    metrics against ASPECT (default: an "overall" one), on all units
    (reports.build_correlation_headline; the same numbers as `study_correlation`'s rows)."""
    fields = study_field_specs(study=study)
    aspect = aspect if aspect in fields else ""

    def build():
        return reports.build_correlation_headline(
            _table(study), _labelled_scores(study, evaluator), evaluator=evaluator,
            aspect=aspect)
    return _cached(study, "correlation-headline", (evaluator, aspect), build, runs=True)


def study_scatter(*, study: Study, evaluator: str, aspect: str, metrics=None,
                  by: str = "") -> list[dict]:
    """The scatter points and sample-efficiency curves of EVALUATOR's metrics (METRICS only,
    when given) against the human ASPECT: `study_correlation(with_points=True)`'s, for the
    plots a page shows."""
    def build():
        table = _table(study)
        return reports.build_scatter(
            table, _labelled_scores(study, evaluator), aspect=aspect, metrics=metrics,
            groups=unit_groups(study=study, table=table, by=by))
    return _cached(study, "scatter", (evaluator, aspect,
                                      None if metrics is None else tuple(metrics), by),
                   build, runs=True)


def study_coupling(*, study: Study) -> dict:
    """Factor coupling of the humans and of every evaluator named like the factors."""
    def build():
        table = _table(study)
        factors = {spec.name.rsplit(".", 1)[-1] for spec in reports.coupling_fields(table.fields)}
        judges = evaluator_score_sets(
            benchmark=study.benchmark, unit_type="dialogue",
            metric_names=lambda name: name.rsplit(".", 1)[-1] in factors)
        return reports.build_coupling(table, judges)
    return _cached(study, "coupling", (), build, runs=True)


def study_metric_leaderboard(*, study: Study, aspect: str, include_private: bool) -> dict:
    if not include_private and not _has_private_runs(study.benchmark):
        include_private = True  # the same runs either way: one board, one cache entry

    def build():
        table = _table(study)
        scores = evaluator_score_sets(benchmark=study.benchmark, include_private=include_private,
                                      unit_type=table.fields[aspect].unit_type,
                                      units=_labelled_units(table))
        flat = [score for sets in scores.values() for score in sets]
        board = reports.build_metric_leaderboard(table, flat, aspect)
        _judge_flags(study, board, include_private)
        return board
    return _cached(study, "metric-board", (aspect, include_private), build, runs=True)


def _judge_flags(study: Study, board: dict, include_private: bool) -> None:
    """Beside each LLM evaluator of BOARD, its self-preference flag (judge_probes): a judge model
    of its runs shares its family with a system the board ranks. The length probe is on each
    run's page."""
    names = {row["evaluator"] for row in board["rows"] if is_llm_evaluator(row["evaluator"])}
    if not names:
        return
    runs = _latest_runs(study.benchmark, include_private=include_private, evaluators=names)
    systems = {run.submission.system.name: run.submission.system for run in runs}
    ranked = [(name, " ".join([s.name, s.description, s.family, s.team]))
              for name, s in sorted(systems.items())]
    models: dict[str, set] = {}
    for run in runs:
        models.setdefault(run.evaluator, set()).update(judge_models(run.config))
    for row in board["rows"]:
        if row["evaluator"] in models:
            checks = [{"model": m, **judge_probes.self_preference(m, ranked)}
                      for m in sorted(models[row["evaluator"]])]
            row["self_preference"] = {"flag": any(c["flag"] for c in checks), "checks": checks}


def _metric_scores(study: Study, evaluator: str, unit_type: str,
                   include_private: bool = True) -> list[reports.ScoreSet]:
    """EVALUATOR's score sets of UNIT_TYPE on every unit it scored (labelled or not), with the
    judge's own uncertainty where it stored one."""
    return evaluator_score_sets(benchmark=study.benchmark, evaluators=[evaluator],
                                unit_type=unit_type, include_private=include_private,
                                with_uncertainty=True).get(evaluator, [])


def _metric_names(study: Study, evaluator: str) -> list[reports.ScoreSet]:
    """EVALUATOR's score sets without their values: which metrics it has, of which unit type."""
    return evaluator_score_sets(benchmark=study.benchmark, evaluators=[evaluator],
                                units=set()).get(evaluator, [])


def anchored_choice(*, study: Study, evaluator: str, aspect: str, metric: str = "",
                    level: str = "") -> tuple[str, str]:
    """The human field ASPECT (checked: numeric, at LEVEL when given) and the metric of
    EVALUATOR it is anchored with (METRIC, else the one named like ASPECT); a ValueError
    naming the choices otherwise."""
    table = _table(study)
    numeric = [name for name, spec in table.fields.items() if spec.is_numeric
               and (not level or spec.unit_type == level)]
    if aspect not in numeric:
        raise ValueError(f"no numeric {level + '-level ' if level else ''}human field "
                         f"{aspect!r} (fields: {', '.join(numeric) or 'none'})")
    return aspect, anchored.choose_metric(_metric_names(study, evaluator), table, aspect, metric)


def study_anchored(*, study: Study, evaluator: str, aspect: str, metric: str,
                   labelled_fraction: float | None = None, seed: int = 0,
                   include_private: bool = True) -> dict:
    """The human-anchored (PPI++) report of EVALUATOR's METRIC against the human ASPECT
    (anchored.build_anchored), cached like the other reports; without INCLUDE_PRIVATE only
    published submissions' runs (the public view from a leaderboard)."""
    def build():
        table = _table(study)
        scores = _metric_scores(study, evaluator, table.fields[aspect].unit_type,
                                include_private)
        score = next((s for s in scores if s.metric == metric), None)
        if score is None:
            raise ValueError(f"{evaluator} has no metric {metric!r}")
        named = metric in anchored.named_metrics(_metric_names(study, evaluator), table, aspect)
        draws = (study_handout_draws(study=study)
                 if study.is_active_handout and labelled_fraction is None else [])
        if draws and _unit_type(draws) == score.unit_type and aspect in study_aspect_fields(
                study, POOL_MODES[score.unit_type]):  # labels of items drawn by the policy
            report = anchored_active.build_active_anchored(table, score, aspect, draws,
                                                           matched_by_name=named)
        else:
            report = anchored.build_anchored(table, score, aspect, seed=seed,
                                             labelled_fraction=labelled_fraction,
                                             matched_by_name=named)
            report["policy"] = "uniform"
        plan = {**label_plan.build_label_plan(table, score, aspect, report),
                "study_policy": study_handout_summary(study=study)}
        return {**report, "label_plan": plan, "study": study_snapshot(study=study, table=table)}
    return _cached(study, "anchored", (evaluator, aspect, metric, labelled_fraction, seed,
                                       include_private), build, runs=True)


POOL_MODES = {"turn": StudyItem.Mode.RESPONSE, "dialogue": StudyItem.Mode.CONVERSATION}


def study_aspect_fields(study: Study, mode: str | None = None) -> dict[str, FieldSpec]:
    """The numeric human fields of STUDY's forms (of MODE's forms only, when given): the fields
    an active handout's error can be measured on, and whose labels its draws weight."""
    layout = form_registry.Layout(forms=tuple(study.forms or ()),
                                  likert_scales=tuple(study.likert_scales or ()))
    return {spec.name: spec for form in taskforms.enabled(layout.forms)
            if mode is None or form.mode == mode
            for spec in form.fields(layout) if spec.is_numeric}


def study_handout_draws(*, study: Study) -> list[anchored_active.DrawRow]:
    """Every pool item of an active study's drawn waves: its unit, wave, π and whether it was
    drawn (annotation.services.handout_policy)."""
    rows = (HandoutDraw.objects.filter(wave__study=study)
            .values_list("item__system__name", "item__mode", "item__dialogue__external_id",
                         "item__turn_index", "wave__number", "pi", "drawn"))
    return [anchored_active.DrawRow(system or REFERENCE, dialogue if mode == "conversation"
                                    else f"{dialogue}#{turn}", wave, pi, drawn,
                                    "dialogue" if mode == "conversation" else "turn")
            for system, mode, dialogue, turn, wave, pi, drawn in rows]


def _unit_type(draws: list[anchored_active.DrawRow]) -> str:
    return draws[0].unit_type


def study_handout_summary(*, study: Study) -> dict:
    """How STUDY hands items out, in words for the report's "Label these next"."""
    if not study.is_active_handout:
        return {"policy": "uniform", "text": "uniform: every item to its overlap target, in "
                                             "each annotator's random order"}
    return {"policy": "active", "evaluator": study.handout_evaluator,
            "metric": study.handout_metric, "aspect": study.handout_aspect,
            "budget": study.handout_budget,
            "text": f"active: a budget of {study.handout_budget} items drawn in waves with "
                    f"probabilities from {study.handout_evaluator} · {study.handout_metric}'s "
                    f"predicted error on {study.handout_aspect}"}


def study_anchored_pairs(*, study: Study, evaluator: str) -> list[tuple[str, str]]:
    """(metric, aspect) pairs of EVALUATOR whose metric is named like a numeric human field:
    the pairs the paper bundle exports human-anchored scores for."""
    pairs, by_name = reports.match_aspects(_metric_names(study, evaluator),
                                           _table(study).fields)
    return sorted({(score.metric, spec.name) for score, spec in pairs}) if by_name else []


# --- who sees which metric leaderboard -------------------------------------------------------


def metric_board_is_public(study: Study) -> bool:
    return study.is_public and study.benchmark.is_public


def metric_board_visible(user) -> Q:
    """The studies whose metric leaderboard (and labels per system) USER may read: public
    ones on a public benchmark, and their own; staff every one."""
    if user.is_authenticated and user.is_staff:
        return Q()
    visible = Q(is_public=True, benchmark__is_public=True)
    if user.is_authenticated:
        visible |= Q(author=user)
    return visible


def metric_board_studies(*, user) -> list[Study]:
    """Studies whose metric leaderboard USER may open: public ones, and their own."""
    return list(Study.objects.select_related("benchmark").filter(metric_board_visible(user))
                .order_by("benchmark__name", "title"))


# --- labels per system: the human reference of simulator validity ---------------------------


def _label_fingerprints(studies: list[Study]) -> None:
    """Read the label fingerprints of STUDIES (`_fingerprint(runs=False)`, kept on each
    instance as `_cached` keeps it) in at most three statements for all of them."""
    studies = [s for s in studies if False not in s.__dict__.get("_report_fingerprints", {})]
    if not studies:
        return
    found: dict[int, dict] = {}
    imported = [s.pk for s in studies if s.is_imported]
    native = [s.pk for s in studies if not s.is_imported]
    if imported:
        for row in (ImportedLabel.objects.filter(study_id__in=imported).values("study")
                    .annotate(n=Count("pk"), last=Max("pk")).order_by()):
            found[row["study"]] = row
    if native:
        for row in (Annotation.objects.filter(item__study_id__in=native).values("item__study")
                    .annotate(n=Count("pk"), last=Max("updated_at")).order_by()):
            found[row["item__study"]] = row
    excluded: dict[int, list] = defaultdict(list)
    for study_id, pk in (StudyMember.objects.filter(study_id__in=[s.pk for s in studies],
                                                    excluded=True)
                         .order_by("study", "joined_at").values_list("study_id", "pk")):
        excluded[study_id].append(pk)
    active = [s.pk for s in studies if s.is_active_handout]
    waves = dict(HandoutWave.objects.filter(study_id__in=active).values("study")
                 .annotate(n=Count("pk")).order_by().values_list("study", "n")) if active else {}
    for study in studies:
        labels = found.get(study.pk, {"n": 0, "last": None})
        parts = _label_parts(study, labels, excluded[study.pk],
                             waves.get(study.pk, 0) if study.is_active_handout else None)
        study.__dict__.setdefault("_report_fingerprints", {})[False] = hashlib.sha256(
            repr(parts).encode()).hexdigest()[:24]


def study_system_labels(*, study: Study) -> dict[str, tuple[str, str, dict]]:
    """Numeric field -> (title, unit type, {system: [(dialogue id, value)]}) of STUDY's
    labels (`LabelTable.system_labels`: the fields the metric leaderboards correlate with,
    every label that counts in the reports), the fields nobody labelled left out; cached like
    the reports until a label or an exclusion changes."""
    def build():
        table = _table(study)
        out = {}
        for name, spec in table.fields.items():
            labels = table.system_labels(name) if spec.is_numeric else {}
            if labels:
                out[name] = (spec.title, spec.unit_type, labels)
        return out
    return _cached(study, "system-labels", (), build, runs=False)


def benchmark_system_labels(*, benchmark, user) -> list[SystemLabels]:
    """Every numeric field's labels per system in the studies of BENCHMARK that USER may read
    (`metric_board_visible`), native or imported: the human references a simulated board's
    ranking is compared with. Four statements when every study's labels are cached, whatever
    the number of studies (the studies, their label counts, exclusions)."""
    studies = list(Study.objects.filter(metric_board_visible(user), benchmark=benchmark)
                   .select_related("benchmark").order_by("slug"))
    _label_fingerprints(studies)
    return [SystemLabels(study.slug, study.title,
                         bool((study.config or {}).get("simulated_annotators")), name, title,
                         unit_type, labels)
            for study in studies
            for name, (title, unit_type, labels) in study_system_labels(study=study).items()]
