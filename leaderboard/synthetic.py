"""Synthetic leaderboards for the benchmark script and the query-count tests.

`synthetic_leaderboard`: N systems with one succeeded run each of a made-up evaluator with M
metrics over D dialogues (no benchmark content). `synthetic_scale_board`: N Trace runs on a real
generated benchmark of D dialogues, every page of it (`bench_leaderboard`, docs/performance.md
"Pages at that size"). Everything is bulk-inserted; the rows look exactly like real ones to the
pages (systems, published submissions, succeeded jobs, runs, metric summaries, unit values).
"""

import math
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from uuid import uuid4

import numpy as np
from django.core.files import File
from django.utils import timezone

from evaluation.lib.demo import generate_demo_bundle
from evaluation.lib.formats.bundle import Bundle
from evaluation.lib.formats.submission import write_turn_submission
from evaluation.lib.metrics.suite import (
    NLI_PREFIXES,
    SUITE_NAME,
    SUITE_VERSION,
    MetricValue,
    metric_specs,
)
from evaluation.lib.metrics.types import turn_unit_id
from evaluation.lib.rankers import generate_submission
from evaluation.lib.runconfig import config_hash, run_config
from evaluation.models import (
    EVALUATED_ACTIONS,
    Benchmark,
    Job,
    MetricSummary,
    Run,
    Split,
    Submission,
    System,
    UnitScore,
)
from evaluation.services.benchmarks import benchmark_create_from_bundle
from evaluation.services.results import unit_scores_upsert
from evaluation.services.runs import run_plan

from .models import RunClusterStats

EVALUATOR = "synthetic"
AXES = ("Accuracy", "Grounding", "Recovery", "Practical value", "Text")


def metric_names(count: int) -> list[tuple[str, str, str]]:
    """(name, axis, direction): every fifth metric is lower-is-better."""
    return [(f"m{i + 1:02d}", AXES[i * len(AXES) // count], "lower" if i % 5 == 4 else "higher")
            for i in range(count)]


def _systems_with_jobs(slug: str, systems: int, *, baseline_remainder: int):
    """SYSTEMS synthetic systems (every tenth, counting from BASELINE_REMAINDER, a baseline)
    and one succeeded evaluation job for each."""
    rows = System.objects.bulk_create([
        System(slug=f"{slug}-s{i:03d}", name=f"System {i:03d}", family=("LLM", "dense",
               "retrieval")[i % 3], is_baseline=i % 10 == baseline_remainder)
        for i in range(systems)])
    jobs = Job.objects.bulk_create([
        Job(kind=Job.Kind.EVALUATION, status=Job.Status.SUCCEEDED, done=1, total=1,
            finished_at=timezone.now()) for _ in rows])
    return rows, jobs


def synthetic_leaderboard(*, slug: str = "bench-leaderboard", systems: int = 100,
                          metrics: int = 30, dialogues: int = 200, seed: int = 0,
                          unit_values: bool = True) -> Benchmark:
    rng = np.random.default_rng(seed)
    benchmark = Benchmark.objects.create(slug=slug, name=f"Synthetic ({systems} systems)",
                                         version="1", domain="synthetic", protocols=["turn"],
                                         splits=["test"])
    names = metric_names(metrics)
    system_rows, jobs = _systems_with_jobs(slug, systems, baseline_remainder=0)
    submissions = Submission.objects.bulk_create([
        Submission(uuid=uuid4(), system=system, benchmark=benchmark,
                   protocol="turn", file=f"synthetic/{i}.jsonl", is_public=True)
        for i, system in enumerate(system_rows)])
    runs = Run.objects.bulk_create([
        Run(submission=submission, evaluator=EVALUATOR, evaluator_version="1",
            config={}, config_hash=f"{i:064x}", job=job)
        for i, (submission, job) in enumerate(zip(submissions, jobs, strict=True))])
    quality = np.linspace(0.2, 0.8, systems)
    summaries, units = [], []
    clusters = [f"dlg-{d:04d}" for d in range(dialogues)]
    for s, run in enumerate(runs):
        for name, axis, direction in names:
            centre = quality[s] if direction == "higher" else 1 - quality[s]
            values = np.clip(centre + rng.normal(0, 0.25, dialogues), 0, 1)
            half = 1.96 * values.std(ddof=1) / math.sqrt(dialogues)
            summaries.append(MetricSummary(
                run=run, metric=name, axis=axis, direction=direction, value=values.mean(),
                ci_low=values.mean() - half, ci_high=values.mean() + half,
                std=values.std(ddof=1), n=dialogues))
            if unit_values:
                units += [UnitScore(run=run, metric=name, unit_type="dialogue", unit_id=c,
                                    dialogue_id=c, value=float(v))
                          for c, v in zip(clusters, values, strict=True)]
    MetricSummary.objects.bulk_create(summaries, batch_size=5000)
    UnitScore.objects.bulk_create(units, batch_size=10000)
    return benchmark


# --- a leaderboard at scale: every page of it (issue 16, item 4) -----------------------------


@dataclass
class ScaleBoard:
    """What `synthetic_scale_board` made: the pages the bench requests are those of
    `systems[0]` (its system page and the drill-down of `dialogue` in `submission`) and the
    comparison of `systems[0]` with `systems[1]`."""

    benchmark: Benchmark
    systems: list[str]
    submission: Submission
    dialogue: str
    values: int
    files: list[Submission] = field(default_factory=list)

    def delete_files(self) -> None:
        """Stored files are not rolled back with the database: the caller deletes them."""
        for submission in self.files:
            submission.file.delete(save=False)


def _suite_metrics() -> list:
    """The Trace suite's metrics of a run without NLI (those of entailment are unavailable)."""
    return [s for s in metric_specs() if not s.name.startswith(NLI_PREFIXES)]


def _draws(rng, centre: float, spec, size: int) -> np.ndarray:
    if spec.range[1] is None:  # open range (route km, turns to recommend)
        return np.abs(rng.normal(2 + 10 * centre, 2.0, size))
    return np.clip(centre + rng.normal(0, 0.25, size), 0, 1)


def synthetic_scale_board(*, slug: str, systems: int, dialogues: int, seed: int = 0,
                          full_runs: int = 2, summary_clusters: int = 100) -> ScaleBoard:
    """A `turn` leaderboard of SYSTEMS Trace runs on a generated benchmark of DIALOGUES
    dialogues (`make_demo_benchmark --dialogues N`, imported for real), bounded in size.

    Every run has its metric summaries (what the leaderboard and the system page show). Only
    the first FULL_RUNS systems (the system page's and the two compared) have every unit value
    of every answered turn and dialogue of the splits a submitter's run is scored on (all but
    hidden; about 100 values a dialogue, as a Trace run without NLI stores), a real submission
    file (the popularity ranker's answers) and the chunks the run planned from it
    (`run_plan`: what the drill-down reads by byte range); their per-dialogue sums are
    aggregated from those values by the rank refresh. The other runs store per-dialogue sums
    (`RunClusterStats`) over the first SUMMARY_CLUSTERS scored dialogues only, so that the rank
    snapshot can be computed without 200 × 10,000 × 50 unit values: the pages read the stored
    snapshot (systems² bits per metric), never those sums. No snapshot is stored: the caller
    runs `rank_snapshots_refresh`, as the refresh task does after a run.
    """
    rng = np.random.default_rng(seed)
    data = generate_demo_bundle(seed=seed, dialogues=dialogues)
    data["benchmark"] = {**data["benchmark"], "slug": slug,
                         "name": f"Scale bench ({systems} systems, {dialogues} dialogues)"}
    benchmark = benchmark_create_from_bundle(bundle=Bundle(**data))
    # scored as a submitter's run is: on every split the file answers but the hidden one
    splits = sorted({d["split"] for d in data["dialogues"]} - {Split.HIDDEN})
    tested = [d for d in data["dialogues"] if d["split"] in splits]
    answered = [(d["id"], turn_unit_id(d["id"], t["index"])) for d in tested
                for t in d["turns"] if t["role"] == "system" and t["action"] in EVALUATED_ACTIONS]
    lines = generate_submission("popularity", items=data["items"], reviews=data["reviews"],
                                dialogues=data["dialogues"])
    del data
    specs = _suite_metrics()
    system_rows, jobs = _systems_with_jobs(slug, systems, baseline_remainder=9)
    submissions = [Submission(uuid=uuid4(), system=system, benchmark=benchmark, protocol="turn",
                              file=f"synthetic/{i}.jsonl", is_public=True, line_count=len(lines))
                   for i, system in enumerate(system_rows)]
    stored: list[Submission] = []
    with tempfile.TemporaryDirectory(prefix="bench-leaderboard-") as folder:
        path = Path(folder) / "submission.jsonl"
        write_turn_submission(lines, path)
        for submission in submissions[:full_runs]:
            with path.open("rb") as handle:
                submission.file.save("submission.jsonl", File(handle), save=False)
            stored.append(submission)
    Submission.objects.bulk_create(submissions)
    config = run_config(suite_options={}, splits=splits, nli_enabled=False, nli_model_path=None)
    runs = Run.objects.bulk_create([
        Run(submission=submission, evaluator=SUITE_NAME, evaluator_version=SUITE_VERSION,
            config=config, config_hash=config_hash(config), job=job)
        for submission, job in zip(submissions, jobs, strict=True)])
    quality = np.linspace(0.2, 0.8, systems)
    summaries, stats = [], []
    clusters = [d["id"] for d in tested[:summary_clusters]]
    values = 0
    for s, run in enumerate(runs):
        sums = []
        for spec in specs:
            centre = quality[s] if spec.direction == "higher" else 1 - quality[s]
            drawn = _draws(rng, centre, spec, len(tested))
            half = 1.96 * drawn.std(ddof=1) / math.sqrt(len(tested))
            summaries.append(MetricSummary(
                run=run, metric=spec.name, axis=spec.axis, direction=spec.direction,
                value=drawn.mean(), ci_low=drawn.mean() - half, ci_high=drawn.mean() + half,
                std=drawn.std(ddof=1), n=len(tested)))
            sums.append(drawn[:len(clusters)])
        if s < full_runs:
            values += _store_unit_values(run, rng, specs, quality[s], tested, answered)
        else:
            stats.append(RunClusterStats(
                run=run, metrics=[spec.name for spec in specs], clusters=clusters,
                sums=np.array(sums, dtype=np.float64).tobytes(),
                counts=np.ones((len(specs), len(clusters)), dtype=np.float64).tobytes()))
    MetricSummary.objects.bulk_create(summaries, batch_size=5000)
    RunClusterStats.objects.bulk_create(stats, batch_size=50)
    for run in runs[:full_runs]:
        run_plan(run=run)
    return ScaleBoard(benchmark=benchmark, systems=[s.slug for s in system_rows],
                      submission=submissions[0], dialogue=answered[0][0], values=values,
                      files=stored)


def _store_unit_values(run, rng, specs, quality: float, tested, answered) -> int:
    """Every value of a finished run without NLI: one per turn metric and answered turn, one
    per dialogue metric and dialogue (stored by COPY, as the chunk tasks store theirs)."""
    rows = []
    for spec in specs:
        centre = quality if spec.direction == "higher" else 1 - quality
        units = answered if spec.unit == "turn" else [(d["id"], d["id"]) for d in tested]
        drawn = _draws(rng, centre, spec, len(units))
        rows += [MetricValue(spec.name, spec.unit, unit_id, dialogue_id, float(value))
                 for (dialogue_id, unit_id), value in zip(units, drawn, strict=True)]
    unit_scores_upsert(run, rows)
    return len(rows)
