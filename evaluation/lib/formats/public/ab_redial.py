"""AB-ReDial: 200 ReDial dialogues with per-annotator turn- and dialogue-level labels.

Source: `Data/annotated_dialogues.csv` and `Data/annotated_turns.csv` of
https://github.com/Clemenciah/AB-ReDial (Siro, Aliannejadi and de Rijke, "Understanding and
Predicting User Satisfaction with Conversational Recommender Systems", ACM TOIS 2023).
Licence: MIT (LICENSE file of the repository, © 2023 Clemencia).

Published shape: one CSV row per (dialogue, annotator), 3–4 rows per dialogue, rows of one
dialogue adjacent. Utterance cells read `SYSTEM<tab>text` / `USER<tab>text` (sometimes with
spaces or an em space instead of the tab).
- annotated_dialogues.csv: ConvId, utterance0…utterance21 (empty after the dialogue's end),
  understanding 1–3, task-completion 1–3, interest-arousal 0–3, efficiency 0–1,
  dialogue-overall 1–5, justification-text.
- annotated_turns.csv: ConvId, then for K = 1..3 four utterances (two of context, the rated
  SYSTEM utterance, the next USER utterance) and relevanceK 0–4, interestingnessK 1–3,
  overallK 1–5.

Imported as a finished annotation study (formats.md §4) over a `log` benchmark holding the 200
dialogues (no systems: ReDial's recommenders are people, so `logs` is empty).

Decisions, all recorded in `notes`:
- Five ConvIds are reused for two different dialogues. A unit is a ConvId plus its text: a
  reused ConvId becomes `ConvId~<6 hex of the SHA-1 of the dialogue text>` for each of its
  dialogues (other ids are kept as published). Turn rows of such an id go to the dialogue whose
  utterances they share most.
- No annotator ids are published. annotator_id is the row's position within its unit's group
  (`slot-1` … `slot-4`, separately in each file): it tells the 3–4 ratings of a unit apart, as
  agreement needs, but the same slot in two units is not known to be the same person.
- Turn units are `<dialogue unit>#turn<K>` (K as in the column names, not a position): the
  windows were cut from a slightly different copy of the text, so `units` gives the position in
  the dialogue only when the rated utterance occurs exactly once there, and always `context`.
- Field names are the CRSArena-Eval ones (task-completion -> task_completion, …; turn overallK
  -> turn_overall); empty cells are missing values; justification-text goes to `comments`.
"""

import hashlib
import re
from pathlib import Path

from evaluation.lib.formats.errors import FormatError, FormatIssue, IssueCollector
from evaluation.lib.formats.judgments import csv_rows, parse_number, read_limited
from evaluation.lib.formats.public.base import (
    DEFAULT_MAX_BYTES,
    ImportBuilder,
    PublicImport,
    field_spec,
)

DIALOGUES_FILE = "annotated_dialogues.csv"
TURNS_FILE = "annotated_turns.csv"
TURNS_PER_ROW = 3
WINDOW = 4  # context, context, rated SYSTEM utterance, next USER utterance
RATED = 2  # position of the rated utterance in its window
UTTERANCE = re.compile(r"^(?P<role>SYSTEM|USER)(?:\s+(?P<text>.*))?$", re.DOTALL)
ROLES = {"SYSTEM": "system", "USER": "user"}

# field name -> (source column, spec); turn columns get K appended.
DIALOGUE_COLUMNS = {
    "understanding": ("understanding", field_spec(
        "dialogue", 1, 3, "ordinal",
        "Does the system understand the user's request and try to fulfil it? (1-3)")),
    "task_completion": ("task-completion", field_spec(
        "dialogue", 1, 3, "ordinal",
        "Does the system make recommendations that the user finally accepts? (1-3)")),
    "interest_arousal": ("interest-arousal", field_spec(
        "dialogue", 0, 3, "ordinal",
        "Does the system try to spark the user's interest in something new? (0-3)")),
    "efficiency": ("efficiency", field_spec(
        "dialogue", 0, 1, "ordinal",
        "Does the system suggest items matching the user's interests within the first three "
        "interactions? (0-1)")),
    "dialogue_overall": ("dialogue-overall", field_spec(
        "dialogue", 1, 5, "ordinal", "Overall user satisfaction with the dialogue (1-5)")),
}
TURN_COLUMNS = {
    "relevance": ("relevance", field_spec(
        "turn", 0, 4, "ordinal",
        "Is the system's response relevant to the user's request and context? (0-4)")),
    "interestingness": ("interestingness", field_spec(
        "turn", 1, 3, "ordinal",
        "Is the system's response interesting, making the user want to continue? (1-3)")),
    "turn_overall": ("overall", field_spec(
        "turn", 1, 5, "ordinal", "Turn-level user satisfaction (source column overallK; 1-5)")),
}

BENCHMARK = {
    "name": "AB-ReDial",
    "slug": "ab-redial",
    "version": "1.0",
    "domain": "movies",
    "description": "200 ReDial movie-recommendation dialogues between people, each rated by "
                   "3-4 annotators per dialogue (understanding, task completion, interest "
                   "arousal, efficiency, overall satisfaction) and on three sampled system "
                   "turns (relevance, interestingness, overall). Imported from "
                   "Clemenciah/AB-ReDial.",
    "license": "MIT",
    "citation": "Clemencia Siro, Mohammad Aliannejadi and Maarten de Rijke. Understanding and "
                "Predicting User Satisfaction with Conversational Recommender Systems. ACM "
                "Transactions on Information Systems, 2023.",
}


def import_ab_redial(path: Path, *, max_bytes: int = DEFAULT_MAX_BYTES) -> PublicImport:
    """PATH: the folder holding both CSV files, or either file (the other is read beside it)."""
    path = Path(path)
    folder = path if path.is_dir() else path.parent
    if not path.exists():
        raise FormatError([FormatIssue(str(path), None, "$", "no such file or folder")])
    missing = [name for name in (DIALOGUES_FILE, TURNS_FILE) if not (folder / name).is_file()]
    if missing:
        raise FormatError([FormatIssue(name, None, "$", f"required file is missing (AB-ReDial "
                                       f"needs {DIALOGUES_FILE} and {TURNS_FILE} in {folder})")
                           for name in missing])
    issues = IssueCollector()
    fields = {name: spec for name, (_, spec) in {**DIALOGUE_COLUMNS, **TURN_COLUMNS}.items()}
    builder = ImportBuilder(BENCHMARK, fields, issues)
    dialogue_groups = _groups(folder / DIALOGUES_FILE, max_bytes, issues, DIALOGUE_COLUMNS,
                              window_count=None)
    turn_groups = _groups(folder / TURNS_FILE, max_bytes, issues, TURN_COLUMNS,
                          window_count=TURNS_PER_ROW)
    if dialogue_groups is None or turn_groups is None:
        issues.raise_if_any()  # an unreadable file: row-level checks would only add noise
    # Otherwise keep going after bad rows, so that one run reports every problem.
    unit_ids = _dialogue_unit_ids(dialogue_groups, builder.notes)
    missing_values = 0
    for key, group in dialogue_groups.items():
        missing_values += _add_dialogue(builder, unit_ids[key], group)
    owner = _match_turn_groups(dialogue_groups, turn_groups, issues)
    slots_taken: dict[tuple, int] = {}
    for key, group in turn_groups.items():
        dialogue_key = owner.get(key)
        if dialogue_key is None or unit_ids[dialogue_key] not in builder.dialogues:
            continue  # already reported
        # Rows of one dialogue whose window text differs go to the same units with new slots.
        first_slot = slots_taken.get(dialogue_key, 0) + 1
        slots_taken[dialogue_key] = first_slot - 1 + len(group.rows)
        missing_values += _add_turns(builder, unit_ids[dialogue_key], group, first_slot)
    located = sum(1 for unit in builder.units.values()
                  if unit["unit_type"] == "turn" and unit["turn_index"] is not None)
    result = builder.finish()
    turn_units = sum(1 for unit in result.units if unit["unit_type"] == "turn")
    result.notes += [
        "AB-ReDial publishes no annotator ids: annotator_id is the row's position within its "
        "unit's group (slot-1 … slot-4, per file), not a person.",
        f"{located} of {turn_units} rated turns were located in their dialogue (turn_index); "
        "the others occur zero or several times in the dialogue text (turn_index None).",
        f"{missing_values} empty label cells imported as missing values.",
        f"{len(result.comments)} justification texts kept as comments, not labels.",
    ]
    return result


class _Group:
    """The rows of one unit (ConvId + text) in one file, in file order."""

    def __init__(self, conv_id: str, turns: list[tuple[str, str]], line: int):
        self.conv_id = conv_id
        self.turns = turns  # [(role, text)]
        self.line = line
        self.rows: list[tuple[int, dict[str, str]]] = []


def _groups(path: Path, max_bytes: int, issues: IssueCollector, columns: dict,
            window_count: int | None) -> dict[tuple, _Group] | None:
    """{(ConvId, utterance texts): group} of one file, in order of first appearance; None when
    the file as a whole is unusable (not CSV, missing columns). Bad rows are reported and
    skipped."""
    file = path.name
    header, rows = csv_rows(read_limited(path, max_bytes), file, issues)
    if not header:
        return None
    utterance_columns = sorted((int(name[9:]), name) for name in header
                               if re.fullmatch(r"utterance\d+", name))
    label_columns = [source for source, _ in columns.values()]
    if window_count:
        label_columns = [f"{source}{k}" for k in range(1, window_count + 1)
                         for source in label_columns]
        wanted = [f"utterance{i}" for i in range(window_count * WINDOW)]
    else:
        wanted = ["utterance0"]
    missing = [name for name in ["ConvId", *wanted, *label_columns] if name not in header]
    for name in missing:
        issues.add(file, 1, f"$.{name}", "required column is missing")
    if missing:
        return None
    groups: dict[tuple, _Group] = {}
    for line, row in rows:
        conv_id = row["ConvId"].strip()
        if not conv_id:
            issues.add(file, line, "$.ConvId", "expected a conversation id, got an empty cell")
            continue
        cells = [row[name] for _, name in utterance_columns]
        turns = _utterances(cells, file, line, issues, windows=window_count is not None)
        if turns is None:
            continue
        key = (conv_id, tuple(cells))
        group = groups.setdefault(key, _Group(conv_id, turns, line))
        group.rows.append((line, row))
    return groups


def _utterances(cells: list[str], file: str, line: int, issues, *, windows: bool):
    """[(role, text)] of the utterance cells; dialogues end at their first empty cell."""
    turns = []
    ended = False
    for position, cell in enumerate(cells):
        if not cell.strip():
            if windows and position < TURNS_PER_ROW * WINDOW:
                issues.add(file, line, f"$.utterance{position}", "expected an utterance")
                return None
            ended = True
            continue
        if ended:
            issues.add(file, line, f"$.utterance{position}",
                       "expected empty: an earlier utterance cell is empty")
            return None
        match = UTTERANCE.match(cell.strip())
        if not match:
            issues.add(file, line, f"$.utterance{position}", "expected SYSTEM or USER, then "
                       f"the text, got {cell[:40]!r}")
            return None
        turns.append((ROLES[match["role"]], (match["text"] or "").strip()))
    if not turns:
        issues.add(file, line, "$.utterance0", "expected at least one utterance")
        return None
    return turns


def _text_hash(turns: list[tuple[str, str]]) -> str:
    text = "\n".join(f"{role}\t{text}" for role, text in turns)
    return hashlib.sha1(text.encode("utf-8")).hexdigest()[:6]


def _dialogue_unit_ids(groups: dict[tuple, _Group], notes: list[str]) -> dict[tuple, str]:
    by_conv: dict[str, list[tuple]] = {}
    for key, group in groups.items():
        by_conv.setdefault(group.conv_id, []).append(key)
    unit_ids = {}
    for conv_id, keys in by_conv.items():
        if len(keys) == 1:
            unit_ids[keys[0]] = conv_id
            continue
        ids = [f"{conv_id}~{_text_hash(groups[key].turns)}" for key in keys]
        unit_ids.update(zip(keys, ids, strict=True))
        lines = ", ".join(str(groups[key].line) for key in keys)
        notes.append(f"ConvId {conv_id!r} is used for {len(keys)} different dialogues (rows "
                     f"from lines {lines} of {DIALOGUES_FILE}); imported as {', '.join(ids)}.")
    return unit_ids


def _add_dialogue(builder: ImportBuilder, unit_id: str, group: _Group) -> int:
    scenario = {"source_dataset": "redial", "conv_id": group.conv_id}
    if unit_id != group.conv_id:
        scenario["text_hash"] = unit_id.split("~")[1]
    if builder.dialogue(unit_id, group.turns, scenario, file=DIALOGUES_FILE, line=group.line,
                        path="$.ConvId") is None:
        return 0
    builder.unit("dialogue", unit_id, unit_id, source_dataset="redial")
    missing = 0
    for slot, (line, row) in enumerate(group.rows, start=1):
        annotator = f"slot-{slot}"
        for name, (column, _) in DIALOGUE_COLUMNS.items():
            missing += _label(builder, "dialogue", unit_id, annotator, name, row[column],
                              DIALOGUES_FILE, line, column)
        text = row.get("justification-text", "").strip()
        if text:
            builder.comments.append({"unit_type": "dialogue", "unit_id": unit_id,
                                     "annotator_id": annotator, "text": text})
    return missing


def _label(builder, unit_type, unit_id, annotator, name, cell, file, line, column) -> int:
    """Adds one label from a CSV cell; returns 1 for an empty cell (a missing value)."""
    if not cell.strip():
        return 1
    value = parse_number(cell)
    if value is None:
        builder.issues.add(file, line, f"$.{column}", f"expected a number, got {cell!r}")
        return 0
    builder.label(unit_type, unit_id, annotator, name, value, file=file, line=line,
                  path=f"$.{column}")
    return 0


def _overlap(window: _Group, dialogue: _Group) -> int:
    texts = {text for _, text in dialogue.turns}
    return sum(1 for _, text in window.turns if text in texts)


def _match_turn_groups(dialogue_groups, turn_groups, issues) -> dict[tuple, tuple]:
    """For each turn-file group, the dialogue-file group it was cut from.

    A ConvId with one dialogue owns all its turn rows (the windows' text may differ slightly
    from the dialogue's). For a reused ConvId each turn group goes to the dialogue sharing most
    utterances with it; a tie is an error rather than a guess.
    """
    by_conv: dict[str, list[tuple]] = {}
    for key, group in dialogue_groups.items():
        by_conv.setdefault(group.conv_id, []).append(key)
    owner = {}
    for key, group in turn_groups.items():
        candidates = by_conv.get(group.conv_id, [])
        if not candidates:
            issues.add(TURNS_FILE, group.line, "$.ConvId",
                       f"ConvId {group.conv_id!r} has no dialogue in {DIALOGUES_FILE}")
            continue
        if len(candidates) == 1:
            owner[key] = candidates[0]
            continue
        scores = sorted(((_overlap(group, dialogue_groups[c]), c) for c in candidates),
                        key=lambda pair: -pair[0])
        if scores[0][0] == scores[1][0]:
            issues.add(TURNS_FILE, group.line, "$.ConvId", f"ConvId {group.conv_id!r} names "
                       f"{len(candidates)} dialogues and these turns match none of them best")
            continue
        owner[key] = scores[0][1]
    taken: dict[tuple, tuple] = {}
    for key, dialogue_key in owner.items():
        if len(by_conv[dialogue_groups[dialogue_key].conv_id]) > 1 and dialogue_key in taken:
            issues.add(TURNS_FILE, turn_groups[key].line, "$.ConvId",
                       f"these turns and those of line {turn_groups[taken[dialogue_key]].line} "
                       f"both match the same dialogue of reused ConvId "
                       f"{dialogue_groups[dialogue_key].conv_id!r}")
        taken.setdefault(dialogue_key, key)
    return owner


def _add_turns(builder: ImportBuilder, dialogue_id: str, group: _Group, first_slot: int) -> int:
    dialogue = builder.dialogues[dialogue_id]
    positions: dict[str, list[int]] = {}
    for turn in dialogue["turns"]:
        positions.setdefault(turn["text"], []).append(turn["index"])
    missing = 0
    for k in range(1, TURNS_PER_ROW + 1):
        window = group.turns[(k - 1) * WINDOW:k * WINDOW]
        rated = positions.get(window[RATED][1], [])
        unit_id = f"{dialogue_id}#turn{k}"
        builder.unit("turn", unit_id, dialogue_id, source_dataset="redial",
                     turn_index=rated[0] if len(rated) == 1 else None,
                     context=[{"role": role, "text": text} for role, text in window])
        for slot, (line, row) in enumerate(group.rows, start=first_slot):
            for name, (column, _) in TURN_COLUMNS.items():
                missing += _label(builder, "turn", unit_id, f"slot-{slot}", name,
                                  row[f"{column}{k}"], TURNS_FILE, line, f"{column}{k}")
    return missing
