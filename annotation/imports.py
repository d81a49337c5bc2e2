"""Writes that bring external material in (formats.md §4–5; annotation.md, "A study can also be
created by importing finished human labels").

- `public_dataset_import`: a public data set (CRSArena-Eval, AB-ReDial, CRSArena-Dial, USR) as a
  `log` benchmark, one System and public `log` Submission per system of the data set, and an
  imported study (no items) holding its human labels; all or nothing.
- `judgments_import`: human judgments (per annotator or aggregated) as an imported study.
- `scores_import`: any metric's unit scores as runs of the evaluator `external:<name>`, one run
  per system the units belong to, each with a finished job, unit scores and system summaries
  with dialogue-clustered jackknife-t CIs (`cluster_mean`), so they take part in correlation
  reports and the metric leaderboard exactly like built-in runs. Units without a system of their own
  (AB-ReDial's dialogues, a benchmark's reference turns) belong to the system
  "<benchmark> reference", whose `log` submission holds the benchmark's (non-hidden) dialogues.
"""

from __future__ import annotations

import hashlib
import json
import secrets
import tempfile
from collections import defaultdict
from collections.abc import Iterable
from pathlib import Path

import numpy as np
from django.conf import settings
from django.db import transaction
from django.utils import timezone

from evaluation.lib.formats.errors import FormatError, FormatIssue
from evaluation.lib.formats.judgments import read_judgments, read_scores
from evaluation.lib.formats.public import import_public
from evaluation.lib.formats.submission import LOG, iter_log_records
from evaluation.lib.metrics import reference_free
from evaluation.lib.rankers.embeddings import shared_encoder
from evaluation.lib.stats.clustered import cluster_mean
from evaluation.models import (
    Benchmark,
    Job,
    MetricSummary,
    Run,
    Split,
    Submission,
    System,
    UnitScore,
)
from evaluation.selectors.benchmarks import benchmark_bundle
from evaluation.services.arena import arena_import_votes
from evaluation.services.benchmarks import benchmark_create_from_bundle
from evaluation.services.jobs import QueueUnavailable, job_create
from evaluation.services.submissions import submission_create, system_create

from .models import FIELD_LEVELS, ImportedField, ImportedLabel, Study
from .report_selectors import reference_system_name
from .services.studies import unique_study_slug
from .services.validation import study_validations_refresh_enqueue, validations_refresh_enqueue

EXTERNAL_PREFIX = "external:"
EXTERNAL_AXIS = "external"
EMBEDDING_TASK = "annotation.tasks.reference_free_embedding_job"
UNIT_KEYS = ("unit_type", "unit_id", "dialogue_id", "turn_index", "system")


# --- systems and log submissions -----------------------------------------------------------------


def _data_set_system(name: str, description: str) -> System:
    """The System of a public data set's CRS: reused by name across data sets (CRSArena-Eval
    and CRSArena-Dial share their nine systems), never one a researcher owns."""
    existing = System.objects.filter(name=name, owner__isnull=True, is_baseline=False).first()
    return existing or system_create(name=name, description=description, family="public data")


def log_submission_store(*, system: System, benchmark: Benchmark, logs: list[dict], user,
                         note: str, created: list[Submission]) -> Submission:
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "logs.jsonl"
        with path.open("w", encoding="utf-8") as handle:
            for log in logs:
                handle.write(json.dumps(log, ensure_ascii=False) + "\n")
        submission = submission_create(system=system, benchmark=benchmark, path_or_file=path,
                                       user=user, protocol=LOG, note=note[:300])
    created.append(submission)
    # Logs of public data (or a benchmark's own reference dialogues) are public from the start
    # (an arena study's battle dialogues too: their benchmark is private to the study's author).
    Submission.objects.filter(pk=submission.pk).update(is_public=True)
    submission.is_public = True
    return submission


def submission_files_delete(submissions: Iterable[Submission]) -> None:
    for submission in submissions:
        submission.file.delete(save=False)


def reference_submission(*, benchmark: Benchmark, user=None,
                         created: list | None = None) -> Submission:
    """The `log` submission of "<benchmark> reference": the benchmark's non-hidden dialogues."""
    name = reference_system_name(benchmark)
    found = (Submission.objects.filter(benchmark=benchmark, system__name=name)
             .order_by("-created_at").first())
    if found is not None:
        return found
    system = System.objects.filter(name=name, owner__isnull=True).first() or system_create(
        name=name, family="reference",
        description=f"The units of {benchmark.name} that belong to no system of their own "
                    "(its reference dialogues); imported metric scores on them are its runs.")
    logs = []
    for dialogue in benchmark.dialogues.exclude(split=Split.HIDDEN).prefetch_related("turns"):
        turns = [{"role": t.role, "text": t.text} for t in dialogue.turns.all()]
        if turns:
            logs.append({"log_id": dialogue.external_id, "dialogue_id": dialogue.external_id,
                         "turns": turns})
    return log_submission_store(system=system, benchmark=benchmark, logs=logs, user=user,
                                note=f"reference dialogues of {benchmark.slug}",
                                created=created if created is not None else [])


# --- studies of imported labels ------------------------------------------------------------------


def _study(*, benchmark: Benchmark, author, slug: str, title: str, source: str,
           description: str, public: bool, config: dict) -> Study:
    return Study.objects.create(
        slug=slug, title=title, benchmark=benchmark, author=author, instructions=description,
        forms=[], likert_scales=[], overlap_k=1, gold_rate=0,
        invite_token=secrets.token_urlsafe(18), is_open=False, source=source, is_public=public,
        config=config)


def _store_fields(study: Study, fields: dict[str, dict]) -> None:
    ImportedField.objects.bulk_create([
        ImportedField(study=study, name=name, unit_type=spec["unit_type"],
                      scale_min=spec.get("scale_min"), scale_max=spec.get("scale_max"),
                      level=spec.get("level", "interval"),
                      description=spec.get("description") or "")
        for name, spec in fields.items()])


def _store_labels(study: Study, labels: list[dict], where: dict) -> int:
    """WHERE: (unit_type, unit_id) -> (dialogue_id, system)."""
    rows = []
    for label in labels:
        dialogue_id, system = where.get((label["unit_type"], label["unit_id"]), ("", ""))
        value = label["value"]
        numeric = isinstance(value, int | float) and not isinstance(value, bool)
        rows.append(ImportedLabel(
            study=study, unit_type=label["unit_type"], unit_id=label["unit_id"],
            dialogue_id=dialogue_id, system=system or "", annotator=label["annotator_id"] or "",
            field=label["field"], value_num=float(value) if numeric else None,
            value_text="" if numeric else str(value)[:500]))
    ImportedLabel.objects.bulk_create(rows, batch_size=5000)
    return len(rows)


@transaction.atomic
def public_dataset_import(*, name: str, path: Path, author, benchmark_slug: str | None = None,
                          study_slug: str | None = None) -> tuple[Benchmark, Study, dict]:
    """Benchmark, systems with their log submissions, and the study of a public data set."""
    result = import_public(name, Path(path), max_bytes=settings.MAX_UPLOAD_BYTES)
    bundle = result.bundle
    if benchmark_slug:
        bundle.benchmark["slug"] = benchmark_slug
    created: list[Submission] = []
    try:
        benchmark = benchmark_create_from_bundle(bundle=bundle, owner=author)
        for system_name in result.systems():
            system = _data_set_system(system_name, f"A system of the public data set {name}.")
            log_submission_store(system=system, benchmark=benchmark,
                                 logs=result.logs[system_name], user=author,
                                 note=f"imported from the public data set {name}",
                                 created=created)
        where = {(u["unit_type"], u["unit_id"]): (u["dialogue_id"], u.get("system") or "")
                 for u in result.units}
        study = _study(
            benchmark=benchmark, author=author,
            slug=study_slug or unique_study_slug(f"{benchmark.slug}-labels"),
            title=f"{benchmark.name}: human labels", source=f"imported:{name}",
            description=f"{bundle.benchmark.get('description', '')}\n\n"
                        + "\n".join(f"- {note}" for note in result.notes),
            public=benchmark.is_public,
            config={"imported": {"dataset": name, "file": Path(path).name,
                                 "labels": len(result.labels),
                                 "annotators": len(result.annotators()),
                                 "comments": len(result.comments), "notes": result.notes}})
        _store_fields(study, result.fields)
        labels = _store_labels(study, result.labels, where)
        baselines, embedding_job = reference_free_runs_store(
            benchmark=benchmark, units=result.units, dialogues=bundle.dialogues, user=author)
        arena = None
        if result.votes:
            arena = arena_import_votes(
                benchmark=benchmark, votes=result.votes,
                system_for=lambda system_name: _data_set_system(
                    system_name, f"A system of the public data set {name}."))
    except BaseException:
        submission_files_delete(created)
        raise
    summary = {"dialogues": len(bundle.dialogues), "systems": len(result.logs),
               "submissions": len(created), "labels": labels, "fields": len(result.fields),
               "annotators": len(result.annotators()), "notes": result.notes,
               "arena": arena.slug if arena else None, "votes": len(result.votes),
               "reference_free_runs": len(baselines),
               "embedding_job": embedding_job.pk if embedding_job else None}
    study_validations_refresh_enqueue(study=study)  # the trust column's numbers
    return benchmark, study, summary


# --- where a unit of a benchmark belongs ---------------------------------------------------------


class UnitIndex:
    """The units of a benchmark (dialogues, their turns, items, labelled units of its imported
    studies), and for each its dialogue and the system it belongs to."""

    def __init__(self, benchmark: Benchmark):
        self.benchmark = benchmark
        self.dialogues = dict(benchmark.dialogues.values_list("external_id", "scenario"))
        self.known: dict[str, set[str]] = {"dialogue": set(self.dialogues), "turn": set(),
                                           "item": set(benchmark.items.values_list(
                                               "external_id", flat=True))}
        for dialogue_id, index in benchmark.dialogues.values_list("external_id",
                                                                  "turns__index"):
            if index is not None:
                self.known["turn"].add(f"{dialogue_id}#{index}")
        self.labelled: dict[tuple[str, str], tuple[str, str]] = {}
        for unit_type, unit_id, dialogue_id, system in (
                ImportedLabel.objects.filter(study__benchmark=benchmark)
                .values_list("unit_type", "unit_id", "dialogue_id", "system").distinct()):
            self.known.setdefault(unit_type, set()).add(unit_id)
            self.labelled[(unit_type, unit_id)] = (dialogue_id, system)
        self.submissions = {}
        for submission in (Submission.objects.filter(benchmark=benchmark)
                           .select_related("system").order_by("created_at", "pk")):
            for key in (submission.system.name, submission.system.slug):
                self.submissions[key] = submission  # the newest wins
        self._log_systems: dict[str, str] | None = None

    def dialogue_of(self, unit_type: str, unit_id: str) -> str:
        if (unit_type, unit_id) in self.labelled:
            return self.labelled[(unit_type, unit_id)][0]
        if unit_type == "dialogue":
            return unit_id
        if unit_type == "turn":
            return unit_id.rsplit("#", 1)[0]
        return ""

    def _from_logs(self, dialogue_id: str) -> str:
        if self._log_systems is None:
            self._log_systems = {}
            for submission in self.submissions.values():
                if submission.protocol != LOG:
                    continue
                with submission.file.open("rb") as handle:
                    for record in iter_log_records(handle, max_bytes=settings.MAX_UPLOAD_BYTES):
                        if "dialogue_id" in record:
                            self._log_systems.setdefault(record["dialogue_id"],
                                                         submission.system.name)
        return self._log_systems.get(dialogue_id, "")

    def system_of(self, unit_type: str, unit_id: str, dialogue_id: str) -> str:
        """The unit's system name ("" when it has none): its labels' system, the dialogue's
        scenario `system`, else the system whose log holds the dialogue."""
        labelled = self.labelled.get((unit_type, unit_id), ("", ""))[1]
        if labelled:
            return labelled
        scenario = self.dialogues.get(dialogue_id) or {}
        named = scenario.get("system")
        if isinstance(named, str) and named in self.submissions:
            return self.submissions[named].system.name
        return self._from_logs(dialogue_id) if dialogue_id else ""


@transaction.atomic
def judgments_import(*, path: Path, benchmark: Benchmark, name: str, author,
                     public: bool = False, levels: dict[str, str] | None = None) -> Study:
    """Human judgments (formats.md §5) as an imported study called NAME on BENCHMARK.

    Field levels are inferred (numbers: interval, text: nominal) unless LEVELS says otherwise
    (e.g. {"relevance": "ordinal"}).
    """
    index = UnitIndex(benchmark)
    judgments = read_judgments(Path(path), known_units=index.known,
                               max_bytes=settings.MAX_UPLOAD_BYTES)
    for field_name, level in (levels or {}).items():
        if field_name not in judgments.fields:
            raise ValueError(f"--level names {field_name!r}, which the file does not label "
                             f"(fields: {', '.join(sorted(judgments.fields))})")
        if level not in FIELD_LEVELS:
            raise ValueError(f"level must be one of {', '.join(FIELD_LEVELS)}, not {level!r}")
        judgments.fields[field_name] = {**judgments.fields[field_name], "level": level}
    where = {}
    for label in judgments.labels:
        key = (label["unit_type"], label["unit_id"])
        if key not in where:
            dialogue = index.dialogue_of(*key)
            where[key] = (dialogue, index.system_of(*key, dialogue))
    study = _study(benchmark=benchmark, author=author, slug=unique_study_slug(name), title=name,
                   source=f"imported:{Path(path).name}"[:100],
                   description=f"Human judgments imported from {Path(path).name}.",
                   public=public and benchmark.is_public,
                   config={"imported": {"file": Path(path).name,
                                        "labels": len(judgments.labels),
                                        "annotators": len(judgments.annotators())}})
    _store_fields(study, judgments.fields)
    _store_labels(study, judgments.labels, where)
    study_validations_refresh_enqueue(study=study)  # the trust column's numbers
    return study


# --- metric scores as runs -----------------------------------------------------------------------


def external_evaluator(name: str) -> str:
    name = name.strip()
    if name.startswith(EXTERNAL_PREFIX):
        name = name[len(EXTERNAL_PREFIX):]
    if not name or len(name) > 80 or any(c.isspace() for c in name):
        raise ValueError("an evaluator name is 1–80 characters without spaces")
    return EXTERNAL_PREFIX + name


def _group_by_submission(records: list[dict], index: UnitIndex, benchmark: Benchmark,
                         user, created: list, file: str) -> dict[int, tuple[Submission, list]]:
    issues, groups = [], {}
    for line, record in enumerate(records, 1):
        if record.get("benchmark") not in (None, benchmark.slug):
            issues.append(FormatIssue(file, line, "$.benchmark", f"this file is for benchmark "
                                      f"{record['benchmark']!r}, not {benchmark.slug!r}"))
            continue
        if record["unit_type"] == "item":
            issues.append(FormatIssue(file, line, "$.unit_type", "item scores cannot become a "
                                      "run: runs score turns and dialogues"))
            continue
        dialogue = index.dialogue_of(record["unit_type"], record["unit_id"])
        named = record.get("system")
        if named is not None and named not in index.submissions:
            issues.append(FormatIssue(file, line, "$.system", f"no system {named!r} has a "
                                      f"submission on {benchmark.slug}"))
            continue
        system = named or index.system_of(record["unit_type"], record["unit_id"], dialogue)
        if system and system not in index.submissions:
            issues.append(FormatIssue(file, line, "$.unit_id", f"the unit belongs to system "
                                      f"{system!r}, which has no submission on {benchmark.slug}"))
            continue
        if system:
            submission = index.submissions[system]
        else:
            submission = reference_submission(benchmark=benchmark, user=user, created=created)
            index.submissions[submission.system.name] = submission
        groups.setdefault(submission.pk, (submission, []))[1].append({**record,
                                                                      "dialogue_id": dialogue})
    if issues:
        raise FormatError(issues)
    return groups


def _summaries(run: Run, records: list[dict], direction: str,
               axis: str) -> list[MetricSummary]:
    by_metric: dict[str, tuple[list, list]] = defaultdict(lambda: ([], []))
    for record in records:
        by_metric[record["metric"]][0].append(float(record["value"]))
        by_metric[record["metric"]][1].append(record["dialogue_id"])
    rows = []
    for metric, (values, clusters) in sorted(by_metric.items()):
        estimate = cluster_mean(values, clusters)
        rows.append(MetricSummary(
            run=run, metric=metric, axis=axis, direction=direction,
            value=estimate.value, ci_low=estimate.ci_low, ci_high=estimate.ci_high,
            std=float(np.std(values, ddof=1)) if len(values) > 1 else None, n=len(values),
            undefined_reason=(estimate.undefined_reason or "")[:300]))
    return rows


def _run_store(*, submission: Submission, evaluator: str, version: str, records: list[dict],
               user, direction: str, axis: str, config: dict, params: dict) -> Run:
    """RECORDS (unit scores of SUBMISSION) as a finished run of EVALUATOR, with its summaries
    (dialogue-clustered means with jackknife-t CIs, `cluster_mean`)."""
    metrics = sorted({r["metric"] for r in records})
    config = {**config, "metrics": metrics, "direction": direction, "units": len(records)}
    now = timezone.now()
    job = Job.objects.create(kind=Job.Kind.EVALUATION, status=Job.Status.SUCCEEDED,
                             params={"submission": submission.pk, **params},
                             result={"values": len(records), "metrics": len(metrics)},
                             stage="imported", done=len(records), total=len(records),
                             created_by=user, started_at=now, finished_at=now,
                             heartbeat_at=now, attempts=1)
    run = Run.objects.create(submission=submission, evaluator=evaluator,
                             evaluator_version=version, config=config,
                             config_hash=hashlib.sha256(json.dumps(
                                 config, sort_keys=True).encode()).hexdigest(), job=job)
    UnitScore.objects.bulk_create(
        [UnitScore(run=run, metric=r["metric"], unit_type=r["unit_type"],
                   unit_id=r["unit_id"], dialogue_id=r["dialogue_id"] or r["unit_id"],
                   value=float(r["value"])) for r in records], batch_size=5000)
    MetricSummary.objects.bulk_create(_summaries(run, records, direction, axis))
    return run


def _reference_free_units(units: list[dict]):
    turns = [reference_free.TurnUnit(u["unit_id"], u["dialogue_id"], u["turn_index"],
                                     u.get("system")) for u in units
             if u["unit_type"] == "turn" and u.get("turn_index") is not None]
    whole = [reference_free.DialogueUnit(u["unit_id"], u["dialogue_id"], u.get("system"))
             for u in units if u["unit_type"] == "dialogue"]
    return turns, whole


def _reference_free_store(*, benchmark: Benchmark, records: list[dict], evaluator: str,
                          user, config: dict) -> list[Run]:
    if not records:
        return []
    groups = _group_by_submission(records, UnitIndex(benchmark), benchmark, user, [], evaluator)
    return [_run_store(submission=submission, evaluator=evaluator,
                       version=reference_free.VERSION, records=mine, user=user,
                       direction=MetricSummary.Direction.HIGHER, axis=reference_free.EVALUATOR,
                       config=config, params={"reference_free": evaluator})
            for submission, mine in groups.values()]


def reference_free_runs_store(*, benchmark: Benchmark, units: list[dict],
                              dialogues: list[dict], user) -> tuple[list[Run], Job | None]:
    """The reference-free baselines (`evaluation.lib.metrics.reference_free`) on every labelled
    unit of an imported data set, one run per system, so its metric leaderboard and the trust
    column rank them against the human labels from the start: the lexical ones now, the
    embedding one in a worker job (it runs a sentence model on every answer), returned here;
    None when the queue is unavailable (the import goes on without it)."""
    turns, whole = _reference_free_units(units)
    records = reference_free.lexical_records({d["id"]: d for d in dialogues}, turns, whole)
    runs = _reference_free_store(benchmark=benchmark, records=records, user=user,
                                 evaluator=reference_free.EVALUATOR, config={})
    if not records:
        return runs, None
    scored = [u for u in units if u["unit_type"] == "dialogue" or u.get("turn_index") is not None]
    try:
        job = job_create(kind=Job.Kind.EVALUATION, user=user, task=EMBEDDING_TASK, params={
            "reference_free_embedding": benchmark.pk,
            "units": [{key: u.get(key) for key in UNIT_KEYS} for u in scored]})
    except QueueUnavailable:
        job = None
    return runs, job


def reference_free_embedding_process(*, job: Job, progress) -> dict:
    """The embedding baseline of an import (`reference_free_runs_store`) as runs."""
    benchmark = Benchmark.objects.filter(pk=job.params["reference_free_embedding"]).first()
    if benchmark is None:
        raise ValueError("the benchmark no longer exists")
    turns, whole = _reference_free_units(job.params["units"])
    dialogues = {d["id"]: d for d in benchmark_bundle(benchmark=benchmark).dialogues}
    records = reference_free.embedding_records(
        dialogues, turns, whole, shared_encoder(),
        progress=lambda done, total: progress("embeddings", done, total))
    with transaction.atomic():
        runs = _reference_free_store(
            benchmark=benchmark, records=records, user=job.created_by,
            evaluator=reference_free.EMBEDDING_EVALUATOR,
            config={"embedding_model": "all-MiniLM-L6-v2"})
        validations_refresh_enqueue(benchmark_id=benchmark.pk)
    return {"runs": len(runs), "values": len(records)}


@transaction.atomic
def scores_import(*, path: Path, benchmark: Benchmark, evaluator: str, user=None,
                  direction: str = MetricSummary.Direction.HIGHER) -> list[Run]:
    """A metric's unit scores (formats.md §5) as finished runs of `external:<evaluator>`."""
    evaluator = external_evaluator(evaluator)
    path = Path(path)
    raw = path.read_bytes() if path.is_file() else b""
    index = UnitIndex(benchmark)
    records = read_scores(path, known_units=index.known, max_bytes=settings.MAX_UPLOAD_BYTES)
    if not records:
        raise FormatError([FormatIssue(path.name, None, "$", "the file has no scores")])
    created: list[Submission] = []
    try:
        groups = _group_by_submission(records, index, benchmark, user, created, path.name)
    except BaseException:
        submission_files_delete(created)
        raise
    digest = hashlib.sha256(raw).hexdigest()
    runs = [_run_store(submission=submission, evaluator=evaluator, version=digest[:12],
                       records=mine, user=user, direction=direction, axis=EXTERNAL_AXIS,
                       config={"imported_from": path.name, "sha256": digest},
                       params={"imported_scores": path.name})
            for submission, mine in groups.values()]
    validations_refresh_enqueue(benchmark_id=benchmark.pk)  # new scores: the trust column
    return runs
