"""Writes for evaluation runs: create, execute with progress, upsert results (metrics.md §A)."""

import io
import json
import logging
import math
from collections import defaultdict

from django.conf import settings
from django.core.exceptions import PermissionDenied
from django.db import transaction
from django.utils import timezone

from evaluation.lib.formats.errors import FormatError
from evaluation.lib.formats.submission import (
    item_infos,
    read_turn_submission,
    reference_dialogue,
    review_infos,
)
from evaluation.lib.llm.registry import is_llm_evaluator
from evaluation.lib.metrics.entailment import load_nli_model
from evaluation.lib.metrics.suite import (
    SUITE_NAME,
    SUITE_VERSION,
    evaluate_submission,
    metric_specs,
)
from evaluation.lib.metrics.types import Unavailable
from evaluation.lib.progress import Progress
from evaluation.lib.runconfig import config_hash, run_config, suite_config_from_options
from evaluation.lib.stats.cluster_sums import ClusterSums, cluster_sums
from evaluation.models import Benchmark, Job, Run, RunChunk, Split, Submission
from evaluation.selectors.benchmarks import scored_splits, submission_splits
from evaluation.selectors.run_chunks import (
    dialogue_records,
    item_records,
    review_records,
    run_cluster_sums,
    run_dialogues,
)
from evaluation.services.jobs import (
    ExpectedFailure,
    job_begin,
    job_create,
    job_finish,
    job_heartbeat,
    job_progress,
    job_stopped,
    task_enqueue,
)
from evaluation.services.results import summaries_upsert_from_sums, unit_scores_upsert
from evaluation.signals import results_changed_notify

logger = logging.getLogger(__name__)


# --- evaluation runs (metrics.md §A; formats.md §2–3; statistics.md "Comparing systems") ----

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
    splits = sorted(splits) if splits else scored_splits(submission=submission)
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


def benchmark_hidden_release(*, benchmark: Benchmark, user) -> list[Run]:
    """End the hidden phase: from now on runs include the hidden split, and every `turn`
    submission that answered it gets a queued run over all the splits it answers (the newest
    run is what its pages and the leaderboards show). Costs no one quota. Owner or staff."""
    if not (user.is_staff or benchmark.owner_id == user.pk):
        raise PermissionDenied("Only the benchmark's owner (or staff) can release its hidden "
                               "scores.")
    with transaction.atomic():
        locked = Benchmark.objects.select_for_update().get(pk=benchmark.pk)
        if locked.hidden_released_at is not None:
            raise ValueError(f"The hidden scores of {benchmark.slug} were released on "
                             f"{locked.hidden_released_at:%Y-%m-%d %H:%M} UTC.")
        locked.hidden_released_at = benchmark.hidden_released_at = timezone.now()
        locked.save(update_fields=["hidden_released_at"])
        runs = []
        submissions = (Submission.objects.filter(benchmark=benchmark, protocol="turn")
                       .select_related("benchmark").order_by("pk"))
        for submission in submissions:
            submission.benchmark = locked
            covered = Run.objects.filter(submission=submission, evaluator=SUITE_NAME)
            if any(Split.HIDDEN in run.config.get("splits", ()) for run in covered):
                continue  # a reference baseline, already scored on hidden by the server
            splits = submission_splits(submission=submission)
            if Split.HIDDEN in splits:
                runs.append(run_create(submission=submission, user=user, splits=splits))
    return runs


def run_process(*, job_id: int, progress: Progress | None = None,
                fan_out: bool = False) -> Run | None:
    """Claim the run's job and evaluate it (the body of `evaluate_run_job`).

    A Trace run is planned as chunks of dialogues (`RunChunk`). With FAN_OUT (a worker), one
    Celery task per chunk is queued and this task ends; the chunk that finds every chunk
    finished queues `finalize_run_job` (docs/operations.md, "Runs over several workers").
    Without (the command line), the same chunk and final steps run here, one after another.
    LLM evaluator runs execute in this one task.

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

    if not is_llm_evaluator(run.evaluator):
        return _trace_run_process(run, report, fan_out)
    # Imported here: the LLM layer loads litellm, which takes seconds to import.
    from evaluation.services.llm_runs import llm_run_execute

    try:
        result = llm_run_execute(run=run, progress=report)
    except Exception as exc:  # noqa: BLE001 - recorded on the job, the worker stays up
        _run_failed(run, exc)
    else:
        _run_succeeded(run, result)
    return run


def _run_failed(run: Run, exc: Exception) -> None:
    if isinstance(exc, FormatError):
        job_finish(run.job_id, error=f"The stored submission is not readable: {exc}")
        return
    if isinstance(exc, ExpectedFailure):
        logger.warning("evaluation run %s failed: %s", run.pk, exc)
    else:
        logger.error("evaluation run %s failed", run.pk, exc_info=exc)
    job_finish(run.job_id, error=f"{type(exc).__name__}: {exc}")


def _run_succeeded(run: Run, result: dict) -> None:
    job_finish(run.job_id, result=result)
    # A new result can change who is significantly better than whom on the leaderboard.
    results_changed_notify(benchmark_id=run.submission.benchmark_id,
                           protocol=run.submission.protocol)


def _trace_run_process(run: Run, report: Progress, fan_out: bool) -> Run:
    try:
        report("load", 0, 1)
        chunks = run_plan(run=run)
        report("score", RunChunk.objects.filter(run=run, finished_at__isnull=False).count(),
               len(chunks))
    except Exception as exc:  # noqa: BLE001 - recorded on the job, the worker stays up
        _run_failed(run, exc)
        return run
    if fan_out:
        # A redelivered first task queues the unfinished chunks again: harmless, a chunk
        # that is already finished does nothing (and its values are upserted anyway).
        for chunk in chunks:
            if chunk.finished_at is None:
                task_enqueue(CHUNK_TASK, run.pk, chunk.index)
        if not chunks:
            task_enqueue(FINALIZE_TASK, run.pk)
        return run
    for chunk in chunks:
        run_chunk_process(run_id=run.pk, index=chunk.index, progress=report, finalize=False)
    run_finalize(run_id=run.pk, progress=report)
    return run


CHUNK_TASK = "evaluation.tasks.evaluate_run_chunk_job"
FINALIZE_TASK = "evaluation.tasks.finalize_run_job"


def run_plan(*, run: Run) -> list[RunChunk]:
    """The run's chunks, planned once: dialogues of its splits in bundle order, cut every
    `RUN_CHUNK_TURNS` answered turns, each with the byte ranges of its submission lines, so a
    chunk task reads only its own part of the file (never the whole bundle or submission)."""
    existing = list(run.chunks.defer("cluster_sums").order_by("index"))
    if existing:
        return existing
    dialogues = run_dialogues(benchmark=run.submission.benchmark, splits=run.config["splits"])
    lines = _line_ranges_by_dialogue(run.submission)
    chunks, current, turns = [], [], 0
    for pk, external_id, answered in dialogues:
        current.append((pk, external_id))
        turns += answered
        if turns >= settings.RUN_CHUNK_TURNS:
            chunks.append((current, turns))
            current, turns = [], 0
    if current:
        chunks.append((current, turns))
    rows = [RunChunk(run=run, index=index, dialogue_ids=[pk for pk, _ in members],
                     answered_turns=turns,
                     line_ranges=_coalesce(r for _, external_id in members
                                           for r in lines.get(external_id, ())))
            for index, (members, turns) in enumerate(chunks)]
    RunChunk.objects.bulk_create(rows, ignore_conflicts=True)  # a concurrent planner: same rows
    return list(run.chunks.defer("cluster_sums").order_by("index"))


def _line_ranges_by_dialogue(submission) -> dict[str, list[tuple[int, int]]]:
    ranges: dict[str, list[tuple[int, int]]] = defaultdict(list)
    offset = 0
    with submission.file.open("rb") as handle:
        for line in handle:
            if line.strip():
                dialogue_id = json.loads(line).get("dialogue_id")
                if isinstance(dialogue_id, str):
                    ranges[dialogue_id].append((offset, offset + len(line)))
            offset += len(line)
    return ranges


def _coalesce(ranges) -> list[list[int]]:
    merged: list[list[int]] = []
    for start, end in sorted(ranges):
        if merged and merged[-1][1] == start:
            merged[-1][1] = end
        else:
            merged.append([start, end])
    return merged


def run_chunk_process(*, run_id: int, index: int, progress: Progress | None = None,
                      finalize: bool = True) -> None:
    """Score one chunk, upsert its values, count it finished (the body of
    `evaluate_run_chunk_job`); safe to run twice and after a worker died mid-chunk.

    With FINALIZE, the chunk that finds every chunk finished queues the run's final task.
    """
    chunk = RunChunk.objects.select_related("run__job", "run__submission__benchmark").get(
        run_id=run_id, index=index)
    run = chunk.run
    if job_stopped(run.job_id):
        return  # failed meanwhile (another chunk's error, the stale sweep): nothing to add
    if chunk.finished_at is None:
        try:
            with job_heartbeat(run.job_id):  # the run's job is alive while a chunk scores
                result = _score_chunk(run, chunk)
        except Exception as exc:  # noqa: BLE001 - recorded on the job, the worker stays up
            _run_failed(run, exc)
            return
        with transaction.atomic():
            # The values and the "finished" mark commit together: a chunk either counts with
            # all its values or is redone (and its values are upserted, never duplicated).
            unit_scores_upsert(run, result.values)
            RunChunk.objects.filter(pk=chunk.pk, finished_at=None).update(
                finished_at=timezone.now(), values=len(result.values),
                missing_turns=len(result.missing_turns), unavailable=dict(result.unavailable),
                cluster_sums=_storable(cluster_sums(
                    (v.metric, v.dialogue_id, v.value) for v in result.values)))
    with transaction.atomic():
        # The job's row lock orders the chunks' last steps: the one that sees every chunk
        # finished is the last, whatever worker or machine ran the others.
        if job_stopped(run.job_id, lock=True):
            return
        total = RunChunk.objects.filter(run_id=run_id).count()
        done = RunChunk.objects.filter(run_id=run_id, finished_at__isnull=False).count()
        job_progress(run.job_id, "score", done, total)
        if done == total and finalize:
            task_enqueue(FINALIZE_TASK, run.pk)
    if progress is not None:
        progress("score", done, total)


def _score_chunk(run: Run, chunk: RunChunk):
    config = suite_config_from_options(run.config.get("suite", {}))
    benchmark = run.submission.benchmark
    dialogues = [reference_dialogue(record)
                 for record in dialogue_records(dialogue_pks=chunk.dialogue_ids)]
    submitted = _chunk_turns(run.submission, chunk.line_ranges)
    cited = {citation.review_id for turn in submitted for citation in turn.citations}
    items = item_infos(item_records(benchmark=benchmark))
    reviews = review_infos(review_records(benchmark=benchmark, external_ids=cited))
    return evaluate_submission(dialogues, items, reviews, submitted, config,
                               _nli_scorer(run.config.get("nli", {})))


def _storable(sums: ClusterSums) -> ClusterSums | None:
    """SUMS, or None when a value is not finite (JSON has no NaN; the final task then reduces
    the stored unit values instead)."""
    finite = all(math.isfinite(x) for _, totals, _, square_sum in sums.values()
                 for x in (*totals, square_sum))
    return sums if finite else None


def _chunk_turns(submission, line_ranges) -> list:
    """The chunk's lines of the stored submission, read by byte range and checked again."""
    buffer = io.BytesIO()
    with submission.file.open("rb") as handle:
        for start, end in line_ranges:
            handle.seek(start)
            buffer.write(handle.read(end - start))
    buffer.seek(0)
    return read_turn_submission(buffer, max_bytes=settings.MAX_UPLOAD_BYTES)


def run_finalize(*, run_id: int, progress: Progress | None = None) -> None:
    """Summaries with studentized cluster CIs from the stored values, then the run succeeds and
    the leaderboard's ranks are refreshed (the body of `finalize_run_job`).

    Runs under the job's row lock, so a duplicate final task waits and then finds the job
    finished; the summaries are upserted anyway.
    """
    run = Run.objects.select_related("submission").get(pk=run_id)

    def report(stage: str, done: int, total: int) -> None:
        job_progress(run.job_id, stage, done, total)
        if progress is not None:
            progress(stage, done, total)

    with job_heartbeat(run.job_id):
        try:
            with transaction.atomic():
                stopped = job_stopped(run.job_id, lock=True)
                chunks = list(run.chunks.defer("cluster_sums"))
                if stopped or any(chunk.finished_at is None for chunk in chunks):
                    return
                unavailable: dict[str, str] = {}
                for chunk in sorted(chunks, key=lambda c: c.index):
                    unavailable.update(chunk.unavailable)
                specs = metric_specs(suite_config_from_options(run.config.get("suite", {})))
                summaries_upsert_from_sums(run, specs, run_cluster_sums(run=run), unavailable,
                                           report)
                Run.objects.filter(pk=run.pk).update(unavailable=unavailable)
                result = {"dialogues": sum(len(c.dialogue_ids) for c in chunks),
                          "values": sum(c.values for c in chunks), "metrics": len(specs),
                          "missing_turns": sum(c.missing_turns for c in chunks),
                          "chunks": len(chunks), "unavailable": sorted(unavailable)}
                _run_succeeded(run, result)
        except Exception as exc:  # noqa: BLE001 - recorded on the job, the worker stays up
            _run_failed(run, exc)


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
