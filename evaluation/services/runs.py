"""Writes for evaluation runs: create, execute with progress, upsert results (metrics.md §A)."""

import logging
from collections import defaultdict

from django.conf import settings
from django.db import transaction

from evaluation.lib.formats.errors import FormatError
from evaluation.lib.formats.submission import (
    item_infos,
    read_turn_submission,
    reference_dialogue,
    review_infos,
)
from evaluation.lib.llm.names import LLM_EVALUATOR_NAMES
from evaluation.lib.metrics.entailment import load_nli_model
from evaluation.lib.metrics.suite import (
    SUITE_NAME,
    SUITE_VERSION,
    evaluate_submission,
    metric_specs,
)
from evaluation.lib.metrics.types import Unavailable
from evaluation.lib.progress import Progress, no_progress
from evaluation.lib.runconfig import config_hash, run_config, suite_config_from_options
from evaluation.models import (
    Job,
    Run,
)
from evaluation.selectors.benchmarks import benchmark_bundle, submission_splits
from evaluation.services.jobs import job_begin, job_create, job_finish, job_progress
from evaluation.services.results import summaries_upsert, unit_scores_upsert
from evaluation.signals import results_changed_notify

logger = logging.getLogger(__name__)


# --- evaluation runs (metrics.md §A; formats.md §2–3; statistics.md "Comparing systems") ----

# Dialogues are scored in chunks of about this many answered turns: each chunk's values are
# upserted in one transaction and reported as progress, so a retried run redoes little work.
CHUNK_TURNS = 2000
_NLI_MODELS: dict[str, object] = {}


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
                         task="evaluation.tasks.evaluate_run_job" if enqueue else None)
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
        from evaluation.services.llm_runs import llm_run_execute as execute
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
        results_changed_notify(benchmark_id=run.submission.benchmark_id,
                               protocol=run.submission.protocol)
    return run


def run_execute(*, run: Run, progress: Progress = no_progress) -> dict:
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
        unit_scores_upsert(run, result.values)
        for value in result.values:
            collected[value.metric][0].append(value.value)
            collected[value.metric][1].append(value.dialogue_id)
        unavailable.update(result.unavailable)
        missing += len(result.missing_turns)
        progress("score", done, len(dialogues))
    specs = metric_specs(config)
    summaries_upsert(run, specs, collected, unavailable, progress)
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
