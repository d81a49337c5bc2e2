"""A synthetic leaderboard for the benchmark script and the query-count tests: N systems with
one succeeded run each of a made-up evaluator with M metrics over D dialogues.

Everything is bulk-inserted; the rows look exactly like real ones to the leaderboard (systems,
published submissions, succeeded jobs, runs, metric summaries and dialogue-level unit values).
"""

import math
from uuid import uuid4

import numpy as np
from django.utils import timezone

from evaluation.lib.runconfig import BOOTSTRAP
from evaluation.models import Benchmark, Job, MetricSummary, Run, Submission, System, UnitScore

EVALUATOR = "synthetic"
AXES = ("Accuracy", "Grounding", "Recovery", "Practical value", "Text")


def metric_names(count: int) -> list[tuple[str, str, str]]:
    """(name, axis, direction): every fifth metric is lower-is-better."""
    return [(f"m{i + 1:02d}", AXES[i * len(AXES) // count], "lower" if i % 5 == 4 else "higher")
            for i in range(count)]


def synthetic_leaderboard(*, slug: str = "bench-leaderboard", systems: int = 100,
                          metrics: int = 30, dialogues: int = 200, seed: int = 0,
                          unit_values: bool = True) -> Benchmark:
    rng = np.random.default_rng(seed)
    benchmark = Benchmark.objects.create(slug=slug, name=f"Synthetic ({systems} systems)",
                                         version="1", domain="synthetic", protocols=["turn"],
                                         splits=["test"])
    names = metric_names(metrics)
    system_rows = System.objects.bulk_create([
        System(slug=f"{slug}-s{i:03d}", name=f"System {i:03d}", family=("LLM", "dense",
               "retrieval")[i % 3], is_baseline=i % 10 == 0) for i in range(systems)])
    now = timezone.now()
    jobs = Job.objects.bulk_create([
        Job(kind=Job.Kind.EVALUATION, status=Job.Status.SUCCEEDED, done=1, total=1,
            finished_at=now) for _ in system_rows])
    submissions = Submission.objects.bulk_create([
        Submission(uuid=uuid4(), system=system, benchmark=benchmark,
                   protocol="turn", file=f"synthetic/{i}.jsonl", is_public=True)
        for i, system in enumerate(system_rows)])
    runs = Run.objects.bulk_create([
        Run(submission=submission, evaluator=EVALUATOR, evaluator_version="1",
            config={"bootstrap": dict(BOOTSTRAP)}, config_hash=f"{i:064x}", job=job)
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
