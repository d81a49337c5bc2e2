"""CRSArena-Eval: 467 human–CRS conversations from 9 systems with aggregated human labels.

Source: `dataset/crs_arena_eval.json` of https://github.com/informagi/face (Joko & Hasibi,
"FACE: A Fine-grained Reference Free Evaluator for Conversational Recommender Systems",
arXiv:2506.00314, 2025), built on CRSArena-Dial (Bernard et al., WSDM 2025).
Licence: the repository's README states MIT; no licence file is published.

Published shape: a JSON list of {conv_id, dialogue: [{turn_ind, role: USER|ASST, utterance,
turn_level_aggregated (ASST only)}], dial_level_aggregated}, with `conv_id` =
`<crs>_<dataset>_<user uuid>` and dataset `redial` or `opendialkg` (the CRS's training data).

Imported as (formats.md §4): a `log` benchmark with one dialogue per conversation (id =
conv_id; scenario {source_dataset, system, crs, conv_id}), the conversations as `log`
submissions of their system (`<crs>_<dataset>`, as the README names the 9 CRSs), and the labels
with annotator_id None (the authors publish only aggregates). Unit ids follow the source:
dialogue `conv_id`, assistant turn `conv_id#turn_ind`.
"""

import re
from collections import Counter
from pathlib import Path

from evaluation.lib.formats.errors import IssueCollector
from evaluation.lib.formats.public.base import (
    DEFAULT_MAX_BYTES,
    ImportBuilder,
    PublicImport,
    expect,
    field_spec,
    load_json,
    locate,
)

FILE_NAME = "crs_arena_eval.json"
DATASETS = ("redial", "opendialkg")
# The CRS name may contain "_"; the dataset token and the user id after it may not.
CONV_ID = re.compile(r"^(?P<crs>[A-Za-z0-9][\w-]*?)_(?P<dataset>[a-z0-9]+)_(?P<user>[\w-]+)$")
ROLES = {"USER": "user", "ASST": "system"}

# Scales are those of the released data (checked on import), which the spec and FACE use:
# the README says relevance 0-3, but no released label exceeds 2.
FIELDS = {
    "relevance": field_spec(
        "turn", 0, 2, "ordinal",
        "Does the assistant's response make sense and meet the user's interests? (0-2)"),
    "interestingness": field_spec(
        "turn", 0, 2, "ordinal",
        "Does the response make the user want to continue the conversation? (0-2)"),
    "understanding": field_spec(
        "dialogue", 0, 2, "ordinal",
        "Does the assistant understand the user's request and try to fulfill it? (0-2)"),
    "task_completion": field_spec(
        "dialogue", 0, 2, "ordinal",
        "Does the assistant make recommendations that the user finally accepts? (0-2)"),
    "interest_arousal": field_spec(
        "dialogue", 0, 2, "ordinal",
        "Does the assistant try to spark the user's interest in something new? (0-2)"),
    "efficiency": field_spec(
        "dialogue", 0, 1, "ordinal",
        "Does the assistant suggest items matching the user's interests within the first "
        "three interactions? (0-1)"),
    "dialogue_overall": field_spec(
        "dialogue", 0, 4, "ordinal",
        "What is the overall impression of the assistant's performance? (0-4)"),
    "preference_elicitation": field_spec(
        "dialogue", 0, 2, "ordinal",
        "Extra label of the release (not described in its README): preference elicitation "
        "(0-2)"),
    "explanation": field_spec(
        "dialogue", 0, 2, "ordinal",
        "Extra label of the release (not described in its README): explanation (0-2)"),
}
TURN_FIELDS = tuple(name for name, spec in FIELDS.items() if spec["unit_type"] == "turn")
DIALOGUE_FIELDS = tuple(name for name, spec in FIELDS.items() if spec["unit_type"] == "dialogue")

BENCHMARK = {
    "name": "CRSArena-Eval",
    "slug": "crs-arena-eval",
    "version": "1.0",
    "domain": "movies",
    "description": "467 conversations between crowd workers and 9 conversational recommender "
                   "systems (CRS Arena), with aggregated human labels per assistant turn "
                   "(relevance, interestingness) and per dialogue (understanding, task "
                   "completion, interest arousal, efficiency, overall impression, preference "
                   "elicitation, explanation). Imported from informagi/face.",
    "license": "MIT (stated in the source README; no licence file)",
    "citation": "Hideaki Joko and Faegheh Hasibi. FACE: A Fine-grained Reference Free "
                "Evaluator for Conversational Recommender Systems. arXiv:2506.00314, 2025.",
}


def import_crs_arena_eval(path: Path, *, max_bytes: int = DEFAULT_MAX_BYTES) -> PublicImport:
    """PATH: `crs_arena_eval.json` (any name) or the folder holding it."""
    path = Path(path)
    source = locate(path, [FILE_NAME], dataset="CRSArena-Eval")
    file_path = next(iter(source.values()))
    file = file_path.name
    issues = IssueCollector()
    builder = ImportBuilder(BENCHMARK, dict(FIELDS), issues)
    data = load_json(file_path, max_bytes, issues)
    if data is None or not expect(data, "array", issues, file, "$"):
        issues.raise_if_any()
    stats: Counter = Counter()  # "empty turns" and missing labels per field
    for position, conversation in enumerate(data):
        _conversation(builder, conversation, file, f"$[{position}]", stats)
    result = builder.finish()
    datasets = {name: sum(1 for d in result.bundle.dialogues
                          if d["scenario"]["source_dataset"] == name) for name in DATASETS}
    result.notes += [
        f"{len(result.bundle.dialogues)} conversations of {len(result.logs)} systems "
        f"({', '.join(f'{n} {k}' for k, n in datasets.items())}); system = '<crs>_<dataset>' "
        "from conv_id.",
        "Labels are the authors' aggregates over annotators, imported with annotator_id None.",
        "Declared scales follow the released data: relevance 0-2 (the README says 0-3, but no "
        "label exceeds 2).",
        "preference_elicitation and explanation are imported as dialogue fields although the "
        "README does not describe them.",
    ]
    if stats["empty turns"]:
        result.notes.append(f"{stats['empty turns']} turns have an empty utterance; kept as "
                            "empty text.")
    for name in FIELDS:
        if stats[name]:
            result.notes.append(f"{stats[name]} {FIELDS[name]['unit_type']} units lack a "
                                f"{name} label in the source; imported as missing values.")
    return result


def _conversation(builder: ImportBuilder, conversation, file: str, path: str,
                  stats: Counter) -> None:
    issues = builder.issues
    if not expect(conversation, "object", issues, file, path):
        return
    for key, kind in (("conv_id", "string"), ("dialogue", "array"),
                      ("dial_level_aggregated", "object")):
        if key not in conversation:
            issues.add(file, None, f"{path}.{key}", "required field is missing")
            return
        if not expect(conversation[key], kind, issues, file, f"{path}.{key}"):
            return
    conv_id = conversation["conv_id"]
    match = CONV_ID.match(conv_id)
    if not match or match["dataset"] not in DATASETS:
        issues.add(file, None, f"{path}.conv_id", "expected <crs>_<dataset>_<user id> with "
                   f"dataset {' or '.join(DATASETS)}, got {conv_id!r}")
        return
    system = f"{match['crs']}_{match['dataset']}"
    turns, empty = _turns(issues, conversation["dialogue"], file, f"{path}.dialogue")
    if turns is None:
        return
    stats["empty turns"] += empty
    scenario = {"source_dataset": match["dataset"], "system": system, "crs": match["crs"],
                "conv_id": conv_id}
    dialogue = builder.dialogue(conv_id, [(role, text) for role, text, _ in turns], scenario,
                                file=file, path=f"{path}.conv_id")
    if dialogue is None:
        return
    builder.log(system, dialogue, {"source_dataset": match["dataset"], "conv_id": conv_id})
    unit = {"system": system, "source_dataset": match["dataset"]}
    builder.unit("dialogue", conv_id, conv_id, **unit)
    stats.update(_labels(builder, "dialogue", conv_id, conversation["dial_level_aggregated"],
                         DIALOGUE_FIELDS, file, f"{path}.dial_level_aggregated"))
    for index, (_role, _text, labels) in enumerate(turns):
        if labels is None:
            continue
        turn_id = f"{conv_id}#{index}"  # index == the source's turn_ind (checked in _turns)
        builder.unit("turn", turn_id, conv_id, turn_index=index, **unit)
        stats.update(_labels(builder, "turn", turn_id, labels, TURN_FIELDS, file,
                             f"{path}.dialogue[{index}].turn_level_aggregated"))


def _turns(issues, source: list, file: str, path: str):
    """[(role, text, turn labels or None)] and the number of empty utterances, or (None, 0)."""
    turns, empty, ok = [], 0, True
    if not source:
        issues.add(file, None, path, "expected at least 1 turn")
        return None, 0
    for index, turn in enumerate(source):
        where = f"{path}[{index}]"
        if not expect(turn, "object", issues, file, where):
            ok = False
            continue
        missing = [key for key in ("turn_ind", "role", "utterance") if key not in turn]
        for key in missing:
            issues.add(file, None, f"{where}.{key}", "required field is missing")
        if missing:
            ok = False
            continue
        if not (expect(turn["turn_ind"], "integer", issues, file, f"{where}.turn_ind")
                and expect(turn["utterance"], "string", issues, file, f"{where}.utterance")):
            ok = False
            continue
        # Unit ids use turn_ind while bundle turns are numbered by position: they must agree.
        if turn["turn_ind"] != index:
            issues.add(file, None, f"{where}.turn_ind", f"expected {index} (turns numbered 0, "
                       f"1, 2, … in order), got {turn['turn_ind']}")
            ok = False
        role = ROLES.get(turn["role"])
        if role is None:
            issues.add(file, None, f"{where}.role",
                       f"expected one of {', '.join(ROLES)}, got {turn['role']!r}")
            ok = False
            continue
        labels = turn.get("turn_level_aggregated")
        if role == "system":
            if labels is None:
                issues.add(file, None, f"{where}.turn_level_aggregated",
                           "required on ASST turns (the release labels every one)")
                ok = False
            elif not expect(labels, "object", issues, file, f"{where}.turn_level_aggregated"):
                ok = False
        elif labels is not None:
            issues.add(file, None, f"{where}.turn_level_aggregated",
                       "expected only on ASST turns")
            ok = False
        empty += not turn["utterance"].strip()
        turns.append((role, turn["utterance"], labels))
    return (turns, empty) if ok else (None, 0)


def _labels(builder, unit_type, unit_id, labels: dict, names, file, path) -> list[str]:
    """Adds the labels of one unit; returns the NAMES it lacks.

    An absent (or null) label is a missing value, not an error: the release leaves relevance
    out on 5 assistant turns (2,230 relevance vs 2,235 interestingness labels).
    """
    for key in labels:
        if key not in names:
            builder.issues.add(file, None, f"{path}.{key}",
                               f"unexpected label (expected: {', '.join(names)})")
    missing = []
    for name in names:
        if labels.get(name) is None:
            missing.append(name)
            continue
        builder.label(unit_type, unit_id, None, name, labels[name], file=file,
                      path=f"{path}.{name}")
    return missing
