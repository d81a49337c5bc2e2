"""Writes for the reference baselines: the Trace paper's rankers (Appendix F) stored and run as
Concord's own public submissions."""

import logging
import tempfile
from pathlib import Path

from evaluation.lib.demo import loose_quotes
from evaluation.lib.formats.submission import (
    write_turn_submission,
)
from evaluation.lib.progress import Progress, no_progress
from evaluation.lib.rankers import (
    BASELINES,
    EmbeddingsUnavailable,
    baseline_class,
    generate_submission,
)
from evaluation.models import (
    Benchmark,
    Run,
    Submission,
)
from evaluation.selectors.benchmarks import baselines_job_latest, benchmark_bundle, latest_run
from evaluation.services.runs import run_create, run_process
from evaluation.services.submissions import (
    submission_create,
    system_create,
    system_get_or_create_baseline,
)

logger = logging.getLogger(__name__)


def baseline_submission_create(*, benchmark: Benchmark, name: str,
                               splits: list[str] | None = None, user=None,
                               progress: Progress = no_progress) -> Submission:
    """Run reference baseline NAME on BENCHMARK and store its output as a submission of the
    baseline's system (`is_baseline`, family set)."""
    baseline = baseline_class(name)
    bundle = benchmark_bundle(benchmark=benchmark)
    lines = generate_submission(
        baseline.key, items=bundle.items, reviews=bundle.reviews, dialogues=bundle.dialogues,
        splits=splits,
        progress=lambda done, total: progress(f"{baseline.key} answers", done, total),
        prepare_progress=lambda done, total: progress(f"{baseline.key} embeddings", done,
                                                      total),
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
                     progress: Progress = no_progress) -> list[tuple[str, Run, bool]]:
    """Every named baseline (default: all) has a succeeded Trace run on BENCHMARK.

    Idempotent: a baseline whose system already has one is left alone. New runs execute
    in-process. Leaderboards rank only runs evaluated on the same splits (`test` by default),
    so when the run covers more than the `test` split, the same submission also gets a run on
    `test` alone (cheap: no new answers, a subset of the dialogues). Returns (baseline name,
    run, created) per baseline; the run is None for a baseline that cannot run here (no
    sentence-embedding model for Dense).
    """
    from evaluation.models import System

    out = []
    for name in names or list(BASELINES):
        baseline = baseline_class(name)
        system = System.objects.filter(slug=f"baseline-{baseline.key}").first()
        run = _main_run(benchmark=benchmark, system=system) if system else None
        if run is not None:
            _test_run_ensure(run=run, suite_options=suite_options, progress=progress)
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
        _test_run_ensure(run=run, suite_options=suite_options, progress=progress)
        out.append((baseline.name, run, True))
    return out


def demo_entrant_ensure(*, benchmark: Benchmark, progress: Progress = no_progress
                       ) -> tuple[Run, dict | None]:
    """The demo's entrant whose quotes are not always faithful (`lib/demo/loose_quotes.py`):
    the TF-IDF baseline's answers with some quotes loosened, a public submission of its own
    system with a Trace run, so the demo's grounding axis is not 1.000 for everyone.
    Idempotent: (its run, None) when it already has one, else (the new run, quote counts)."""
    from evaluation.models import System

    system = System.objects.filter(name=loose_quotes.SYSTEM_NAME, owner__isnull=True,
                                   is_baseline=False).first()
    run = _main_run(benchmark=benchmark, system=system) if system else None
    if run is not None:
        _test_run_ensure(run=run, suite_options=None, progress=progress)
        return run, None
    bundle = benchmark_bundle(benchmark=benchmark)
    lines = generate_submission(
        "tfidf", items=bundle.items, reviews=bundle.reviews, dialogues=bundle.dialogues,
        progress=lambda done, total: progress("loose quoter answers", done, total))
    lines, counts = loose_quotes.loosen(lines, loose_quotes.quotable_sentences(bundle.reviews))
    system = system or system_create(name=loose_quotes.SYSTEM_NAME, family="demo entrant",
                                     description=loose_quotes.DESCRIPTION)
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "loose-quoter.jsonl"
        write_turn_submission(lines, path)
        submission = submission_create(system=system, benchmark=benchmark, path_or_file=path,
                                       user=None, note="demo entrant: loosened quotes")
    submission.is_public = True
    submission.save(update_fields=["is_public"])
    run = run_create(submission=submission, enqueue=False)
    run_process(job_id=run.job_id, progress=progress)
    run.job.refresh_from_db()
    _test_run_ensure(run=run, suite_options=None, progress=progress)
    return run, counts


def _main_run(*, benchmark: Benchmark, system) -> Run | None:
    """The baseline's newest succeeded run, not counting the extra `test`-only ones."""
    from evaluation.models import Split

    run = latest_run(benchmark=benchmark, system=system)
    if run is None or run.config.get("splits") != [Split.TEST]:
        return run
    broader = (Run.objects.filter(submission__benchmark=benchmark, submission__system=system,
                                  evaluator=run.evaluator, job__status=run.job.Status.SUCCEEDED)
               .exclude(config__splits=[Split.TEST]).order_by("-created_at", "-pk").first())
    return broader or run


def _test_run_ensure(*, run: Run, suite_options: dict | None, progress: Progress) -> None:
    """A run of RUN's submission on the `test` split alone, unless RUN is one or one exists."""
    from evaluation.models import Job, Split

    splits = run.config.get("splits") or []
    if Split.TEST not in splits or list(splits) == [Split.TEST]:
        return
    if Run.objects.filter(submission=run.submission, evaluator=run.evaluator,
                          config__splits=[Split.TEST],
                          job__status=Job.Status.SUCCEEDED).exists():
        return
    test_run = run_create(submission=run.submission, suite_options=suite_options,
                          splits=[Split.TEST], enqueue=False)
    run_process(job_id=test_run.job_id, progress=progress)


# --- the heavy baselines on a worker (issue 34.6) ---------------------------------------------

BASELINES_TASK = "evaluation.tasks.baselines_job"


def heavy_baselines() -> list[str]:
    """The baselines that run a sentence-embedding model (Dense, Hybrid-RRF)."""
    return [key for key, cls in BASELINES.items() if cls.needs_encoder]


def baselines_enqueue(*, benchmark: Benchmark, names: list[str], user=None):
    """A worker job that answers and evaluates the named baselines on BENCHMARK (those without
    a succeeded run), with progress; the pending one if there is one; None when every named
    baseline is already evaluated. QueueUnavailable when the broker is down (nothing stored)."""
    from evaluation.models import Job, System
    from evaluation.services.jobs import job_create

    missing = []
    for name in names:
        baseline = baseline_class(name)
        system = System.objects.filter(slug=f"baseline-{baseline.key}").first()
        if system is None or _main_run(benchmark=benchmark, system=system) is None:
            missing.append(baseline.key)
    if not missing:
        return None
    pending = baselines_job_latest(benchmark=benchmark)
    if pending is not None and not pending.is_finished:
        return pending
    return job_create(kind=Job.Kind.EVALUATION, user=user, task=BASELINES_TASK,
                      params={"baselines": benchmark.pk, "names": missing})


def baselines_job_process(*, job, progress: Progress) -> dict:
    """The job `baselines_enqueue` queued: each baseline answered and evaluated in turn, the
    progress bar saying which ("baseline 1 of 2: dense answers")."""
    benchmark = Benchmark.objects.filter(pk=job.params["baselines"]).first()
    if benchmark is None:
        raise ValueError("the benchmark no longer exists")
    names = job.params["names"]
    done = []
    for position, name in enumerate(names, 1):
        def step(stage, count, total, position=position):
            progress(f"baseline {position} of {len(names)}: {stage}"[:100], count, total)

        for shown, run, _created in baselines_ensure(benchmark=benchmark, names=[name],
                                                     progress=step):
            done.append({"baseline": shown, "run": run.pk if run else None})
    return {"baselines": done}
