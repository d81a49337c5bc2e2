"""What `evaluation` needs from the apps above it, supplied by them at start-up.

`evaluation` imports no other app (docs/architecture.md). Where it needs something only an app
above it has, it declares the need here and that app fills it in from its `AppConfig.ready()`.

- `human_core_ratings`: CoRE's mixture of evaluators (CoRE, Appendix F) routes each factor to
  the judge that agrees best with human ratings, which the annotation app collects. Without it
  (the annotation app not installed) there are no human ratings and one judge scores every
  factor.
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
