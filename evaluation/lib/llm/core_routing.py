"""CoRE's mixture of evaluators (Chen et al., "Evaluating Conversational Recommender Systems with
Large Language Models: A User-Centric Evaluation Framework", Appendix F, Table 22): the
per-factor agreement (QWK) of judge models with humans, and, per factor, the judge model that
agrees best with them.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from evaluation.lib.llm.core_factors import FACTOR_SCORE_RANGE
from evaluation.lib.llm.core_rubrics import FACTOR_KEYS
from evaluation.lib.llm.gateway import ModelConfig
from evaluation.lib.stats.correlation import quadratic_weighted_kappa

# the declared scale QWK is computed over (Appendix F), every point whether used or not
FACTOR_SCALE = tuple(range(FACTOR_SCORE_RANGE[0], FACTOR_SCORE_RANGE[1] + 1))


def qwk_by_factor(
    human: Mapping[str, Mapping[str, int | None]],
    judges: Mapping[str, Mapping[str, Mapping[str, int | None]]],
    *,
    factors: Sequence[str] = FACTOR_KEYS,
) -> dict[str, dict[str, float | None]]:
    """QWK per factor and judge model. ``human[unit][factor]``, ``judges[model][unit][factor]``.

    Human ratings are the (e.g. rounded mean) label per unit; units missing on either side are
    skipped.
    """
    table: dict[str, dict[str, float | None]] = {}
    for factor in factors:
        table[factor] = {}
        for model, ratings in judges.items():
            units = [u for u in human if u in ratings]
            table[factor][model] = quadratic_weighted_kappa(
                [human[u].get(factor) for u in units], [ratings[u].get(factor) for u in units],
                labels=FACTOR_SCALE,
            ).value
    return table


@dataclass(frozen=True)
class JudgeChoice:
    factor: str
    model: str | None
    qwk: float | None
    reason: str
    tied_with: tuple[str, ...] = ()


def choose_judge_per_factor(
    qwk: Mapping[str, Mapping[str, float | None]],
    *,
    preference: Sequence[str] = (),
    default_model: str | None = None,
) -> dict[str, JudgeChoice]:
    """For each factor, the model with the highest QWK.

    Missing or NaN values are ignored. Ties go to the model listed first in ``preference``
    (then alphabetical order) and are reported. A factor with no usable QWK gets
    ``default_model`` (which may be None) and says so.
    """
    rank = {model: i for i, model in enumerate(preference)}
    choices = {}
    for factor, by_model in qwk.items():
        usable = {m: v for m, v in by_model.items() if v is not None and not math.isnan(v)}
        if not usable:
            choices[factor] = JudgeChoice(factor, default_model, None, "no QWK available: default")
            continue
        best = max(usable.values())
        tied = sorted(
            (m for m, v in usable.items() if v == best), key=lambda m: (rank.get(m, len(rank)), m)
        )
        reason = "highest QWK" if len(tied) == 1 else "tie on highest QWK, broken by preference"
        choices[factor] = JudgeChoice(factor, tied[0], best, reason, tuple(tied[1:]))
    return choices


def configs_for_choices(
    choices: Mapping[str, JudgeChoice],
    configs_by_model: Mapping[str, ModelConfig],
    *,
    fallback: ModelConfig,
) -> dict[str, ModelConfig]:
    """Per-factor ``ModelConfig`` for ``score_factors`` from the chosen judge names."""
    configs = {}
    for factor in FACTOR_KEYS:
        choice = choices.get(factor)
        model = choice.model if choice else None
        configs[factor] = configs_by_model.get(model, fallback) if model else fallback
    return configs
