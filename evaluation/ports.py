"""What `evaluation` needs from the apps above it, supplied by them at start-up.

`evaluation` imports no other app (docs/architecture.md). Where it needs something only an app
above it has, it declares the need here and that app fills it in from its `AppConfig.ready()`.

- `human_core_ratings`: CoRE's mixture of evaluators (CoRE, Appendix F) routes each factor to
  the judge that agrees best with human ratings, which the annotation app collects. Without it
  (the annotation app not installed) there are no human ratings and one judge scores every
  factor.
- `face_study_labels`: FACE's instruction optimization (FACE §2.3) learns from a study's human
  labels of one aspect and the conversations they were given on. Without it no study can train
  FACE (FACE still runs with its initial instructions).
"""

from collections.abc import Callable
from dataclasses import dataclass


@dataclass(frozen=True)
class HumanCoreRatings:
    find_study: Callable[..., object]  # (*, benchmark, slug=None) -> a study or None
    factor_scores: Callable[..., dict[str, dict[str, int]]]  # (*, study) -> {factor: {unit: 0-4}}
    conversation_logs: Callable[..., dict[str, dict]]  # (*, study, unit_ids) -> {unit: log}


human_core_ratings: HumanCoreRatings | None = None


def human_core_ratings_register(source: HumanCoreRatings) -> None:
    global human_core_ratings
    human_core_ratings = source


@dataclass(frozen=True)
class FaceStudyLabels:
    """A study's labels of one FACE aspect, for instruction optimization.

    `labels(slug=…, fields=(…))` returns None when there is no such study, else
    {"study": slug, "benchmark_id": int, "field": the first of FIELDS the study has (or None),
    "unit_type": "turn" | "dialogue", "units": [{"system", "unit_id", "dialogue_id",
    "turn_index" (turn units), "label": the mean over annotators}],
    "conversations": {(system, dialogue_id): [(role, text), …] (position = turn index)}}.
    `can_author(user, slug)` tells whether USER may train on the study from its page.
    """

    labels: Callable[..., dict | None]
    can_author: Callable[..., bool]


face_study_labels: FaceStudyLabels | None = None


def face_study_labels_register(source: FaceStudyLabels) -> None:
    global face_study_labels
    face_study_labels = source
