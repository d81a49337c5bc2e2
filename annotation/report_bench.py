"""Data for `manage.py bench_report`: a generated study of N human labels on a generated
benchmark, with the runs of two evaluators to correlate them with.

- S systems, each with one published submission and one succeeded run of the Trace suite
  (every metric of `metric_specs()`, headline metrics and sensitivity variants, at its own unit
  type) and one of an LLM judge whose metrics are named like the human fields;
- the units: dialogues of T turns per system (unit ids unique per system, as in a public data
  set); the evaluators score every unit, the humans a sample of them (`--scored-factor` times
  fewer), like a study that labels a sample of a benchmark;
- an imported study (public, so its metric leaderboard is public too): F fields on a 1–5 scale
  (turn level and one dialogue-level field), A annotators per unit, about 10% of labels
  missing; each unit has a latent quality that the humans and the metrics see through noise of
  their own, so the correlations are neither 0 nor 1.

Everything is bulk-inserted; the rows look exactly like real ones to the report and the
metric leaderboard. Generated from a seed, never stored in the repository.
"""

from __future__ import annotations

import math
import secrets
from uuid import uuid4

import numpy as np
from django.utils import timezone

from evaluation.lib.metrics.suite import SUITE_NAME, metric_specs
from evaluation.models import Benchmark, Job, Run, Submission, System, UnitScore

from .models import ImportedField, ImportedLabel, Study

TURN_FIELDS = ("relevance", "informativeness", "overall")
DIALOGUE_FIELDS = ("satisfaction",)
JUDGE = "external:judge"
TURNS_PER_DIALOGUE = 4


def synthetic_report_study(*, slug: str, author, labels: int = 5000, systems: int = 8,
                           annotators: int = 4, scored_factor: int = 4, seed: int = 0) -> Study:
    """A public imported study of about LABELS labels and the runs to correlate them with."""
    rng = np.random.default_rng(seed)
    fields = [(name, "turn") for name in TURN_FIELDS] + [(n, "dialogue") for n in DIALOGUE_FIELDS]
    # Labels per labelled dialogue: annotators × (turn fields × turns + dialogue fields), ~90%.
    per_dialogue = 0.9 * annotators * (len(TURN_FIELDS) * TURNS_PER_DIALOGUE
                                       + len(DIALOGUE_FIELDS))
    labelled = max(systems, math.ceil(labels / per_dialogue))
    dialogues_per_system = math.ceil(labelled * scored_factor / systems)
    benchmark = Benchmark.objects.create(slug=slug, name=f"Generated ({labels} labels)",
                                         version="1", domain="synthetic", protocols=["turn"],
                                         splits=["test"])
    runs = _runs(benchmark, slug, systems)
    quality = {}  # (system, unit id) -> latent quality
    units = []  # (system index, unit type, unit id, dialogue id)
    for s in range(systems):
        for d in range(dialogues_per_system):
            dialogue = f"s{s:02d}-d{d:05d}"
            units.append((s, "dialogue", dialogue, dialogue))
            quality[(s, dialogue)] = rng.normal(0.15 * s, 1.0)
            for t in range(TURNS_PER_DIALOGUE):
                unit = f"{dialogue}#{2 * t + 1}"
                units.append((s, "turn", unit, dialogue))
                quality[(s, unit)] = quality[(s, dialogue)] + rng.normal(0, 0.7)
    _scores(runs, units, quality, rng)
    study = Study.objects.create(
        slug=slug, title=f"Generated study ({labels} labels)", benchmark=benchmark,
        author=author, forms=[], likert_scales=[], overlap_k=1, gold_rate=0,
        invite_token=secrets.token_urlsafe(18), is_open=False, source="imported:generated",
        is_public=True, config={"generated": {"labels": labels, "seed": seed}})
    ImportedField.objects.bulk_create([
        ImportedField(study=study, name=name, unit_type=kind, scale_min=1, scale_max=5,
                      level="ordinal", description=f"generated {name} (1-5)")
        for name, kind in fields])
    chosen = set(rng.permutation(len(units) // (1 + TURNS_PER_DIALOGUE))[:labelled].tolist())
    rows = []
    for index, (s, kind, unit, dialogue) in enumerate(units):
        if index // (1 + TURNS_PER_DIALOGUE) not in chosen:
            continue
        for name, field_kind in fields:
            if field_kind != kind:
                continue
            for a in range(annotators):
                if rng.random() < 0.1 or len(rows) >= labels:
                    continue
                value = 3 + quality[(s, unit)] + rng.normal(0, 0.8 + 0.2 * a)
                rows.append(ImportedLabel(
                    study=study, unit_type=kind, unit_id=unit, dialogue_id=dialogue,
                    system=f"Generated system {s:02d}", annotator=f"annotator-{a + 1}",
                    field=name, value_num=float(min(5, max(1, round(value))))))
    ImportedLabel.objects.bulk_create(rows, batch_size=5000)
    return study


def _runs(benchmark: Benchmark, slug: str, systems: int) -> dict[tuple[int, str], Run]:
    system_rows = System.objects.bulk_create([
        System(slug=f"{slug}-s{s:02d}", name=f"Generated system {s:02d}", family="generated")
        for s in range(systems)])
    submissions = Submission.objects.bulk_create([
        Submission(uuid=uuid4(), system=system, benchmark=benchmark, protocol="turn",
                   file=f"generated/{slug}-{s}.jsonl", is_public=True)
        for s, system in enumerate(system_rows)])
    now = timezone.now()
    runs = {}
    for s, submission in enumerate(submissions):
        for evaluator in (SUITE_NAME, JUDGE):
            job = Job.objects.create(kind=Job.Kind.EVALUATION, status=Job.Status.SUCCEEDED,
                                     done=1, total=1, finished_at=now)
            runs[(s, evaluator)] = Run.objects.create(
                submission=submission, evaluator=evaluator, evaluator_version="1", config={},
                config_hash=f"{slug}-{s}-{evaluator}"[:64], job=job)
    return runs


def _scores(runs, units, quality, rng) -> None:
    """Every metric of both evaluators on every unit of its type: the latent quality seen with
    a metric-specific strength and noise."""
    metrics = [(SUITE_NAME, spec.name, spec.unit) for spec in metric_specs()]
    metrics += [(JUDGE, name, "turn") for name in TURN_FIELDS]
    metrics += [(JUDGE, name, "dialogue") for name in DIALOGUE_FIELDS]
    strength = {metric: rng.uniform(-0.3, 1.0) for metric in metrics}
    batch = []
    for s, kind, unit, dialogue in units:
        for metric in metrics:
            evaluator, name, unit_type = metric
            if unit_type != kind:
                continue
            value = strength[metric] * quality[(s, unit)] + rng.normal(0, 1.0)
            batch.append(UnitScore(run=runs[(s, evaluator)], metric=name, unit_type=kind,
                                   unit_id=unit, dialogue_id=dialogue, value=float(value)))
            if len(batch) >= 20000:
                UnitScore.objects.bulk_create(batch)
                batch = []
    UnitScore.objects.bulk_create(batch)
