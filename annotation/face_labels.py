"""Reads: a study's human labels of one FACE aspect and the conversations they were given on,
for FACE's instruction optimization in `evaluation` (FACE §2.3: the human evaluations H).

`evaluation` cannot import this app, so `annotation.apps` registers these functions in
`evaluation.ports` at start-up. Labels come from the study's label table, so they count exactly
as in its reports (excluded annotators, calibration and gold items left out); a unit's label is
the mean over its annotators.

Conversations: an imported study's units are the benchmark's own dialogues (each conversation
was imported as a dialogue, CRSArena-Eval); a native study's conversation items carry the turns
the annotators saw (`StudyItem.context`).
"""

from collections import defaultdict

from evaluation.models import Turn

from .access import can_manage_study
from .lib.labels import REFERENCE
from .models import Study, StudyItem
from .report_selectors import study_label_table


def face_labels(*, slug: str, fields) -> dict | None:
    study = Study.objects.filter(slug=slug).select_related("benchmark").first()
    if study is None:
        return None
    table = study_label_table(study=study)
    field = next((name for name in fields if name in table.fields), None)
    result = {"study": study.slug, "benchmark_id": study.benchmark_id, "field": field,
              "unit_type": table.fields[field].unit_type if field else None, "units": [],
              "conversations": {}}
    if field is None:
        return result
    means = table.human_means(field)
    units = table.units()
    for key, label in sorted(means.items()):
        unit = units[key]
        entry = {"system": key[0], "unit_id": unit["unit_id"], "dialogue_id": unit["dialogue_id"],
                 "label": label}
        if unit["unit_type"] == "turn":
            entry["turn_index"] = int(unit["unit_id"].rsplit("#", 1)[1])
        result["units"].append(entry)
    wanted = {(u["system"], u["dialogue_id"]) for u in result["units"]}
    result["conversations"] = (_imported_conversations(study, wanted) if study.is_imported
                               else _native_conversations(study, wanted))
    return result


def _imported_conversations(study: Study, wanted) -> dict:
    by_dialogue: dict[str, list] = defaultdict(list)
    for dialogue_id, role, text in (Turn.objects
                                    .filter(dialogue__benchmark=study.benchmark,
                                            dialogue__external_id__in={d for _, d in wanted})
                                    .order_by("dialogue_id", "index")
                                    .values_list("dialogue__external_id", "role", "text")):
        by_dialogue[dialogue_id].append((role, text))
    return {(system, dialogue): by_dialogue[dialogue] for system, dialogue in wanted
            if dialogue in by_dialogue}


def _native_conversations(study: Study, wanted) -> dict:
    conversations = {}
    items = (StudyItem.objects.filter(study=study, mode="conversation", kind="normal")
             .select_related("dialogue", "system").order_by("position"))
    for item in items:
        key = (item.system.name if item.system else REFERENCE, item.dialogue.external_id)
        if key not in wanted or key in conversations:
            continue
        shown = {t["index"]: (t["role"], t["text"]) for t in item.context
                 if t.get("role") in ("user", "system")}
        # Positions are turn indices (unit ids name them); a turn not shown stays empty.
        conversations[key] = [shown.get(i, ("user", "")) for i in range(max(shown, default=-1) + 1)]
    return conversations


def can_author(user, slug: str) -> bool:
    study = Study.objects.filter(slug=slug).first()
    return study is not None and can_manage_study(user, study)
