"""Reads: the human CoRE ratings that route CoRE's judges per factor (CoRE, Appendix F,
"mixture of evaluators"), for `evaluation`'s LLM runs.

CoRE-form annotations store `values["core"][factor]` with the factor keys of
`evaluation.lib.llm.core_rubrics`. `evaluation` cannot import this app, so `annotation.apps`
registers these functions in `evaluation.ports` at start-up.
"""

import math
from collections import defaultdict

from evaluation.lib.llm.core_rubrics import FACTOR_KEYS
from evaluation.models import DialogueItem
from evaluation.ports import HumanCoreRatings

from .models import Annotation, Study, StudyItem

CORE_FORM = "core"


def core_human_study(*, benchmark, slug: str | None = None):
    """The study whose CoRE ratings route the judges: the one called SLUG on BENCHMARK, else
    the newest study on BENCHMARK with the CoRE form; None when there is none."""
    studies = Study.objects.filter(benchmark=benchmark)
    if slug:
        return studies.filter(slug=slug).first()
    return next((s for s in studies.order_by("-created_at", "-pk") if CORE_FORM in s.forms), None)


def study_unit_id(item_pk: int) -> str:
    return f"study-item-{item_pk}"


def human_factor_scores(*, study) -> dict[str, dict[str, int]]:
    """{factor: {unit id: score}}: per CoRE factor (core_rubrics keys), the humans' 0–4 score
    of each rated conversation of STUDY, the mean over its annotators rounded half up.

    Only normal conversation items count (not calibration or gold), and only annotators the
    author has not excluded.
    """
    rows = (Annotation.objects.filter(item__study=study, item__mode="conversation",
                                      item__kind="normal", assignment__member__excluded=False)
            .values_list("item_id", "values"))
    ratings: dict[str, dict[str, list[int]]] = defaultdict(lambda: defaultdict(list))
    for item_id, values in rows:
        for factor, score in ((values or {}).get(CORE_FORM) or {}).items():
            if factor in FACTOR_KEYS and isinstance(score, int | float):
                ratings[factor][study_unit_id(item_id)].append(score)
    return {factor: {unit: math.floor(sum(scores) / len(scores) + 0.5)
                     for unit, scores in units.items()}
            for factor, units in ratings.items()}


def study_conversation_logs(*, study, unit_ids) -> dict[str, dict]:
    """{unit id: log}: the conversations of STUDY's items as `log` records (formats.md §2).

    Turns before the first rated turn are the log's history; the dialogue's target items are
    its ground truth.
    """
    wanted = {unit: int(unit.rsplit("-", 1)[1]) for unit in unit_ids}
    items = StudyItem.objects.filter(study=study, pk__in=wanted.values()).select_related(
        "dialogue")
    targets = defaultdict(list)
    for dialogue_id, item_id in (DialogueItem.objects
                                 .filter(dialogue__in=[i.dialogue_id for i in items],
                                         role=DialogueItem.Role.TARGET)
                                 .order_by("position")
                                 .values_list("dialogue_id", "item__external_id")):
        targets[dialogue_id].append(item_id)
    logs = {}
    for item in items:
        turns = [t for t in item.context if t.get("role") in ("user", "system")]
        first_rated = next((n for n, t in enumerate(turns) if t.get("rated")), 0)
        logs[study_unit_id(item.pk)] = {
            "log_id": study_unit_id(item.pk), "dialogue_id": item.dialogue.external_id,
            "turns": [{"role": t["role"], "text": t["text"]} for t in turns],
            "ground_truth_item_ids": targets[item.dialogue_id],
            "metadata": {"history_turns": first_rated},
        }
    return {unit: logs[unit] for unit in unit_ids if unit in logs}


HUMAN_CORE_RATINGS = HumanCoreRatings(find_study=core_human_study,
                                      factor_scores=human_factor_scores,
                                      conversation_logs=study_conversation_logs)
