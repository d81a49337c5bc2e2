"""The demo study on the demo benchmark (`load_demo`)."""

from __future__ import annotations

from collections.abc import Iterable

from annotation.lib import sampling, taskforms
from evaluation.models import (
    Benchmark,
    Submission,
)

from ..models import (
    Annotation,
    Study,
)
from .members import study_member_add
from .sources import REFERENCE
from .studies import StudySpec, study_create

DEMO_STUDY_SLUG = "demo-tourism-study"


# Three contrasting baselines, like Trace's three-system human study: lexical, dense, popularity.
DEMO_BASELINES = ("baseline-tfidf", "baseline-dense", "baseline-popularity")


def _latest_baselines(benchmark: Benchmark, *, limit: int) -> tuple[int, ...]:
    """The newest turn-protocol submission of each baseline system (at most LIMIT systems)."""
    newest: dict[str, int] = {}
    for pk, slug in (Submission.objects.filter(
            benchmark=benchmark, protocol=Submission.Protocol.TURN, system__is_baseline=True)
            .order_by("system__name", "-created_at").values_list("pk", "system__slug")):
        newest.setdefault(slug, pk)
    preferred = sorted(newest, key=lambda slug: (
        DEMO_BASELINES.index(slug) if slug in DEMO_BASELINES else len(DEMO_BASELINES), slug))
    return tuple(newest[slug] for slug in preferred[:limit])


def demo_study_create(*, benchmark: Benchmark, author, annotators: Iterable,
                      sample_size: int = 10, seed: int = 7) -> Study:
    """The demo study: Trace Task 1 + blind recommendation on the demo benchmark (idempotent).

    Built from the benchmark's reference turns and the turn-protocol baseline submissions that
    exist when it runs. Run again after baselines appear, it rebuilds the study as long as
    nobody has labelled anything yet; the demo annotators are members, the demo author owns it.
    """
    baselines = _latest_baselines(benchmark, limit=3)
    sources = sorted([REFERENCE, *(f"submission:{pk}" for pk in baselines)])
    study = Study.objects.filter(slug=DEMO_STUDY_SLUG).first()
    if study is not None and sorted(study.config.get("sources", [])) != sources \
            and not Annotation.objects.filter(item__study=study).exists():
        study.delete()
        study = None
    if study is None:
        spec = StudySpec(
            forms=(taskforms.CITATION, taskforms.CHECKLIST, taskforms.LIKERT,
                   taskforms.RECOMMEND),
            include_reference=True, submission_ids=baselines, sample_size=sample_size,
            seed=seed, stratify=sampling.DIFFICULTY, calibration_count=1, gold_count=2)
        study = study_create(benchmark=benchmark, author=author, spec=spec, overlap_k=2,
                             title="Demo: citations, errors and blind recommendations",
                             slug=DEMO_STUDY_SLUG, seconds_per_item=60)
    for user in annotators:
        study_member_add(study=study, user=user)
    return study
