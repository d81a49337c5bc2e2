"""Writes for benchmarks (import a validated bundle atomically, export it back) and for
evaluation runs (create, execute with progress, upsert results) and reference baselines."""

import logging
import tempfile
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path

import numpy as np
from django.conf import settings
from django.db import transaction

from leaderboard.models import Submission
from leaderboard.services import (
    rank_refresh_enqueue,
    submission_create,
    system_get_or_create_baseline,
)

from .baselines import BASELINES, EmbeddingsUnavailable, baseline_class, generate_submission
from .formats.bundle import Bundle, read_bundle, write_bundle
from .formats.errors import FormatError, FormatIssue
from .formats.submission import (
    item_infos,
    read_turn_submission,
    reference_dialogue,
    review_infos,
    write_turn_submission,
)
from .jobs import job_begin, job_create, job_finish, job_progress
from .llm.names import LLM_EVALUATOR_NAMES
from .metrics.entailment import load_nli_model
from .metrics.suite import SUITE_NAME, SUITE_VERSION, evaluate_submission, metric_specs
from .metrics.types import Unavailable
from .models import (
    BENCHMARK_FIELDS,
    ITEM_FIELDS,
    Benchmark,
    Citation,
    Dialogue,
    DialogueItem,
    Item,
    Job,
    MetricSummary,
    Review,
    Run,
    Turn,
    TurnItem,
    UnitScore,
)
from .runconfig import config_hash, run_config, suite_config_from_options
from .selectors import benchmark_bundle, latest_run, submission_splits
from .stats.bootstrap import (
    DEFAULT_CONFIDENCE,
    DEFAULT_RESAMPLES,
    DEFAULT_SEED,
    cluster_bootstrap_mean,
)

logger = logging.getLogger(__name__)

Progress = Callable[[str, int, int], None]


def _no_progress(stage: str, done: int, total: int) -> None:
    return None


def benchmark_import(*, path: Path, replace: bool = False, owner=None,
                     progress: Progress = _no_progress) -> Benchmark:
    """Validate the bundle at PATH fully, then store all of it in one transaction."""
    bundle = read_bundle(Path(path), max_bytes=settings.MAX_UPLOAD_BYTES)
    return benchmark_create_from_bundle(bundle=bundle, replace=replace, owner=owner,
                                        progress=progress)


@transaction.atomic
def benchmark_create_from_bundle(*, bundle: Bundle, replace: bool = False, owner=None,
                                 progress: Progress = _no_progress) -> Benchmark:
    meta = bundle.benchmark
    existing = Benchmark.objects.select_for_update().filter(slug=meta["slug"]).first()
    if existing and not replace:
        raise FormatError([FormatIssue("benchmark.json", None, "$.slug",
                                       f"benchmark {meta['slug']!r} already exists "
                                       "(use --replace to overwrite it)")])
    if existing:
        existing.delete()
    benchmark = Benchmark.objects.create(
        slug=meta["slug"], owner=owner,
        **{key: meta.get(key, "") for key in BENCHMARK_FIELDS},
    )
    items = _create_items(benchmark, bundle.items)
    progress("items", len(items), len(items))
    reviews = _create_reviews(benchmark, bundle.reviews, items)
    progress("reviews", len(reviews), len(reviews))
    _create_dialogues(benchmark, bundle.dialogues, items, reviews, progress)
    return benchmark


def _create_items(benchmark, records) -> dict[str, int]:
    objs = Item.objects.bulk_create(
        [Item(benchmark=benchmark, external_id=r["id"], **{k: r.get(k) for k in ITEM_FIELDS})
         for r in records],
        batch_size=1000,
    )
    return {obj.external_id: obj.pk for obj in objs}


def _create_reviews(benchmark, records, items) -> dict[str, int]:
    objs = Review.objects.bulk_create(
        [Review(benchmark=benchmark, external_id=r["id"], item_id=items[r["item_id"]],
                text=r["text"], stars=r.get("stars")) for r in records],
        batch_size=1000,
    )
    return {obj.external_id: obj.pk for obj in objs}


def _create_dialogues(benchmark, records, items, reviews, progress: Progress) -> None:
    batch = 200
    for offset in range(0, len(records), batch):
        chunk = records[offset:offset + batch]
        dialogues = Dialogue.objects.bulk_create([
            Dialogue(benchmark=benchmark, external_id=r["id"], split=r["split"],
                     scenario=r.get("scenario", {}),
                     difficulty=_difficulty(r.get("scenario", {})))
            for r in chunk
        ])
        links, turns, turn_records = [], [], []
        for dialogue, record in zip(dialogues, chunk, strict=True):
            for role, key in (("candidate", "candidate_item_ids"), ("target", "target_item_ids"),
                              ("seen", "seen_item_ids")):
                links += [DialogueItem(dialogue=dialogue, item_id=items[item_id], role=role,
                                       position=position)
                          for position, item_id in enumerate(record.get(key, []))]
            for turn in record["turns"]:
                turns.append(Turn(dialogue=dialogue, index=turn["index"], role=turn["role"],
                                  text=turn["text"], action=turn["action"]))
                turn_records.append(turn)
        DialogueItem.objects.bulk_create(links, batch_size=2000)
        Turn.objects.bulk_create(turns, batch_size=2000)
        _create_turn_links(turns, turn_records, items, reviews)
        progress("dialogues", offset + len(chunk), len(records))


def _create_turn_links(turns, turn_records, items, reviews) -> None:
    links, citations = [], []
    for turn, record in zip(turns, turn_records, strict=True):
        for role, key in (("referenced", "referenced_item_ids"), ("gold", "gold_item_ids"),
                          ("alternative", "alternative_item_ids")):
            links += [TurnItem(turn=turn, item_id=items[item_id], role=role, position=position)
                      for position, item_id in enumerate(record.get(key, []))]
        citations += [Citation(turn=turn, position=position, label=c["label"],
                               review_id=reviews[c["review_id"]], quote=c["quote"],
                               start=c["start"], end=c["end"])
                      for position, c in enumerate(record.get("citations", []))]
    TurnItem.objects.bulk_create(links, batch_size=2000)
    Citation.objects.bulk_create(citations, batch_size=2000)


def _difficulty(scenario: dict) -> str | None:
    value = scenario.get("difficulty") or scenario.get("difficulty_tier")
    return str(value)[:30] if value is not None else None


def benchmark_export(*, benchmark: Benchmark, directory: Path) -> None:
    write_bundle(benchmark_bundle(benchmark=benchmark), Path(directory))


# --- evaluation runs (metrics.md §A; formats.md §2–3; statistics.md "Comparing systems") ----

# Dialogues are scored in chunks of about this many answered turns: each chunk's values are
# upserted in one transaction and reported as progress, so a retried run redoes little work.
CHUNK_TURNS = 2000
_NLI_MODELS: dict[str, object] = {}


def _enqueue_evaluation(job_id: int) -> None:
    from .tasks import evaluate_run_job  # tasks import this module

    evaluate_run_job.delay(job_id)


def run_create(*, submission, user=None, suite_options: dict | None = None,
               splits: list[str] | None = None, use_nli: bool = True,
               enqueue: bool = True) -> Run:
    """A queued Trace run of a `turn` SUBMISSION on SPLITS (default: the splits it answers).

    With `enqueue`, its Celery task is sent when the surrounding transaction commits; without,
    the caller runs it in-process with `run_process` (the command line's default).
    """
    if submission.protocol != "turn":
        raise ValueError("the Trace suite evaluates protocol `turn` submissions only")
    suite_options = dict(suite_options or {})
    splits = sorted(splits) if splits else submission_splits(submission=submission)
    config = run_config(suite_options=suite_options, splits=splits, nli_enabled=use_nli,
                        nli_model_path=settings.NLI_MODEL_PATH)
    with transaction.atomic():
        job = job_create(kind=Job.Kind.EVALUATION, user=user,
                         params={"submission": submission.pk, "splits": splits},
                         enqueue=_enqueue_evaluation if enqueue else (lambda job_id: None))
        run = Run.objects.create(submission=submission, evaluator=SUITE_NAME,
                                 evaluator_version=SUITE_VERSION, config=config,
                                 config_hash=config_hash(config), job=job)
    return run


def run_process(*, job_id: int, progress: Progress | None = None) -> Run | None:
    """Claim the run's job, evaluate, record progress and the outcome (the task's body).

    Returns None when the job was already finished (a duplicate delivery). Any failure is
    recorded on the job with its reason; the run is then failed, never left running.
    """
    job = job_begin(job_id)
    if job is None:
        return None
    run = Run.objects.select_related("submission__benchmark", "submission__system").get(
        job_id=job_id)

    def report(stage: str, done: int, total: int) -> None:
        job_progress(job_id, stage, done, total)
        if progress is not None:
            progress(stage, done, total)

    execute = run_execute
    if run.evaluator in LLM_EVALUATOR_NAMES:
        # Imported here: the LLM layer loads litellm, which takes seconds to import.
        from .llm_runs import llm_run_execute as execute
    try:
        result = execute(run=run, progress=report)
    except FormatError as exc:
        job_finish(job_id, error=f"The stored submission is not readable: {exc}")
    except Exception as exc:  # noqa: BLE001 - recorded on the job, the worker stays up
        logger.exception("evaluation run %s failed", run.pk)
        job_finish(job_id, error=f"{type(exc).__name__}: {exc}")
    else:
        job_finish(job_id, result=result)
        # A new result can change who is significantly better than whom on the leaderboard.
        rank_refresh_enqueue(benchmark_id=run.submission.benchmark_id,
                             protocol=run.submission.protocol)
    return run


def run_execute(*, run: Run, progress: Progress = _no_progress) -> dict:
    """Score the run's submission with the Trace suite; upsert unit values and summaries.

    Values are upserted on (run, metric, unit) and summaries on (run, metric), so executing a
    run twice leaves exactly the rows of executing it once.
    """
    config = suite_config_from_options(run.config.get("suite", {}))
    splits = set(run.config["splits"])
    progress("load", 0, 1)
    bundle = benchmark_bundle(benchmark=run.submission.benchmark)
    dialogues = [reference_dialogue(d) for d in bundle.dialogues if d["split"] in splits]
    items, reviews = item_infos(bundle.items), review_infos(bundle.reviews)
    with run.submission.file.open("rb") as handle:
        submitted = defaultdict(list)
        for turn in read_turn_submission(handle, max_bytes=settings.MAX_UPLOAD_BYTES):
            submitted[turn.dialogue_id].append(turn)
    nli = _nli_scorer(run.config.get("nli", {}))
    progress("load", 1, 1)
    collected: dict[str, tuple[list, list]] = defaultdict(lambda: ([], []))
    unavailable: dict[str, str] = {}
    missing = 0
    for done, chunk in _chunks(dialogues):
        turns = [turn for dialogue in chunk for turn in submitted.get(dialogue.id, ())]
        result = evaluate_submission(chunk, items, reviews, turns, config, nli)
        _upsert_unit_scores(run, result.values)
        for value in result.values:
            collected[value.metric][0].append(value.value)
            collected[value.metric][1].append(value.dialogue_id)
        unavailable.update(result.unavailable)
        missing += len(result.missing_turns)
        progress("score", done, len(dialogues))
    specs = metric_specs(config)
    _upsert_summaries(run, specs, collected, unavailable, progress)
    Run.objects.filter(pk=run.pk).update(unavailable=unavailable)
    run.unavailable = unavailable
    return {"dialogues": len(dialogues), "values": sum(len(v[0]) for v in collected.values()),
            "metrics": len(specs), "missing_turns": missing, "unavailable": sorted(unavailable)}


def _chunks(dialogues):
    chunk, turns, done = [], 0, 0
    for dialogue in dialogues:
        chunk.append(dialogue)
        turns += sum(1 for t in dialogue.turns if t.is_recommendation)
        if turns >= CHUNK_TURNS:
            done += len(chunk)
            yield done, chunk
            chunk, turns = [], 0
    if chunk or not dialogues:
        yield done + len(chunk), chunk


def _nli_scorer(nli: dict):
    """The configured NLI model (loaded once per process and path) or why there is none."""
    if not nli.get("enabled", True):
        return Unavailable("entailment grounding was switched off for this run")
    path = nli.get("model_path") or ""
    if not path:
        return Unavailable("no NLI model is configured (set NLI_MODEL_PATH to a local "
                           "DeBERTa-class NLI model folder)")
    if path not in _NLI_MODELS:
        model = load_nli_model(path)
        if isinstance(model, Unavailable):
            return model  # not cached: fixing the folder must not need a worker restart
        _NLI_MODELS[path] = model
    return _NLI_MODELS[path]


@transaction.atomic
def _upsert_unit_scores(run: Run, values) -> None:
    UnitScore.objects.bulk_create(
        [UnitScore(run=run, metric=v.metric, unit_type=v.unit_type, unit_id=v.unit_id,
                   dialogue_id=v.dialogue_id, value=v.value) for v in values],
        batch_size=2000, update_conflicts=True,
        unique_fields=["run", "metric", "unit_type", "unit_id"],
        update_fields=["value", "dialogue_id"],
    )


def _upsert_summaries(run: Run, specs, collected, unavailable, progress: Progress) -> None:
    bootstrap = run.config.get("bootstrap", {})
    rows = []
    for done, spec in enumerate(specs, start=1):
        values, clusters = collected.get(spec.name, ([], []))
        estimate, reason = None, unavailable.get(spec.name, "")
        if not reason and not values:
            reason = "no evaluated unit has a value for this metric"
        if not reason:
            estimate = cluster_bootstrap_mean(
                values, clusters, n_resamples=bootstrap.get("n_resamples", DEFAULT_RESAMPLES),
                seed=bootstrap.get("seed", DEFAULT_SEED),
                confidence=bootstrap.get("confidence", DEFAULT_CONFIDENCE))
        rows.append(MetricSummary(
            run=run, metric=spec.name, axis=spec.axis, direction=spec.direction,
            value=estimate.value if estimate else None,
            ci_low=estimate.ci_low if estimate else None,
            ci_high=estimate.ci_high if estimate else None,
            std=float(np.std(values, ddof=1)) if len(values) > 1 and estimate else None,
            n=len(values) if estimate else 0, undefined_reason=reason[:300],
        ))
        if done % 10 == 0 or done == len(specs):
            progress("bootstrap", done, len(specs))
    MetricSummary.objects.bulk_create(
        rows, update_conflicts=True, unique_fields=["run", "metric"],
        update_fields=["axis", "direction", "value", "ci_low", "ci_high", "std", "n",
                       "undefined_reason"],
    )


# --- reference baselines (Trace Appendix F) --------------------------------------------------


def baseline_submission_create(*, benchmark: Benchmark, name: str,
                               splits: list[str] | None = None, user=None,
                               progress: Progress = _no_progress) -> Submission:
    """Run reference baseline NAME on BENCHMARK and store its output as a submission of the
    baseline's system (`is_baseline`, family set)."""
    baseline = baseline_class(name)
    bundle = benchmark_bundle(benchmark=benchmark)
    lines = generate_submission(
        baseline.key, items=bundle.items, reviews=bundle.reviews, dialogues=bundle.dialogues,
        splits=splits,
        progress=lambda done, total: progress(f"{baseline.key} answers", done, total),
    )
    system = system_get_or_create_baseline(key=baseline.key, name=baseline.name,
                                           family=baseline.family,
                                           description=baseline.description)
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / f"{baseline.key}.jsonl"
        write_turn_submission(lines, path)
        submission = submission_create(system=system, benchmark=benchmark, path_or_file=path,
                                       user=user, splits=splits,
                                       note=f"Concord reference baseline {baseline.name}")
    # Reference baselines are Concord's own rows: public from the start, nobody publishes them.
    submission.is_public = True
    submission.save(update_fields=["is_public"])
    return submission


def baselines_ensure(*, benchmark: Benchmark, names: list[str] | None = None,
                     splits: list[str] | None = None, suite_options: dict | None = None,
                     progress: Progress = _no_progress) -> list[tuple[str, Run, bool]]:
    """Every named baseline (default: all) has a succeeded Trace run on BENCHMARK.

    Idempotent: a baseline whose system already has one is left alone. New runs execute
    in-process. Returns (baseline name, run, created) per baseline; the run is None for a
    baseline that cannot run here (no sentence-embedding model for Dense).
    """
    from leaderboard.models import System

    out = []
    for name in names or list(BASELINES):
        baseline = baseline_class(name)
        system = System.objects.filter(slug=f"baseline-{baseline.key}").first()
        run = latest_run(benchmark=benchmark, system=system) if system else None
        if run is not None:
            out.append((baseline.name, run, False))
            continue
        try:
            submission = baseline_submission_create(benchmark=benchmark, name=baseline.key,
                                                    splits=splits, progress=progress)
        except EmbeddingsUnavailable as exc:
            logger.warning("baseline %s skipped: %s", baseline.name, exc)
            out.append((baseline.name, None, False))
            continue
        run = run_create(submission=submission, suite_options=suite_options, splits=splits,
                         enqueue=False)
        run_process(job_id=run.job_id, progress=progress)
        run.job.refresh_from_db()
        out.append((baseline.name, run, True))
    return out
