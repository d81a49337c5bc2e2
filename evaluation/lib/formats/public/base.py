"""What every public-dataset importer returns, and the checks they share. Pure Python.

An importer reads a data set exactly as its authors published it and returns a PublicImport:
plain dicts and lists that the Django side stores in one transaction. It either returns the
whole, valid result or raises FormatError listing every problem found; never a partial result.
"""

import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from evaluation.lib.formats.bundle import Bundle, canonical_bundle
from evaluation.lib.formats.errors import FormatError, FormatIssue, IssueCollector
from evaluation.lib.formats.jsonl import validate_record
from evaluation.lib.formats.judgments import (
    DEFAULT_MAX_BYTES,
    LEVELS,
    UNIT_TYPES,
    is_number,
    read_limited,
)

__all__ = ["DEFAULT_MAX_BYTES", "ImportBuilder", "PublicImport", "field_spec", "load_json"]

SPLIT = "test"  # public data sets are evaluation material only; each importer declares it.


@dataclass
class PublicImport:
    """The plain result of a public-dataset importer.

    bundle: a `log`-protocol benchmark (formats.md §1) in canonical form: `benchmark` meta
        (protocols ["log"], splits ["test"]), `items` and `reviews` empty, one `dialogues` record
        per source conversation (split "test", action "other" on every turn, and the source in
        `scenario`: source_dataset, system, conv_id, …). `write_bundle` / `read_bundle`
        round-trip it unchanged.
    logs: system name -> log records (formats.md §2, protocol `log`): {log_id, dialogue_id,
        turns: [{role: user|system, text}], metadata}; empty when the data set has no systems.
    labels: human labels {unit_type: turn|dialogue|item, unit_id, annotator_id (str, or None
        for a label aggregated over annotators by the authors), field, value (number or str),
        scale: (min, max) or None}. Unique per (unit_type, unit_id, annotator_id, field).
    fields: field name -> {unit_type, scale_min, scale_max, level: nominal|ordinal|interval|
        ratio, description, values (the categories of a nominal field, else None)}.
    units: one record per labelled unit, {unit_type, unit_id, dialogue_id (a bundle dialogue),
        turn_index (position of the unit's turn in that dialogue, or None: dialogue units, or a
        turn that cannot be located), system (or None), source_dataset, and for turns rated
        out of their dialogue `context` ([{role, text}], what the annotators saw)}.
    comments: free-text remarks of annotators {unit_type, unit_id, annotator_id, text}; kept
        apart from labels because agreement statistics do not apply to them.
    notes: what the importer decided (disambiguated ids, missing values, scale choices).
    votes: pairwise votes in cast order (CRS Arena's vote files), {system_a, system_b, outcome:
        a|b|tie, reason, voter_ref, session_id, setting, file, line}; stored as an arena.
    """

    bundle: Bundle
    logs: dict[str, list[dict]] = field(default_factory=dict)
    labels: list[dict] = field(default_factory=list)
    fields: dict[str, dict] = field(default_factory=dict)
    units: list[dict] = field(default_factory=list)
    comments: list[dict] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    votes: list[dict] = field(default_factory=list)

    def systems(self) -> list[str]:
        return sorted(self.logs)

    def annotators(self) -> list[str]:
        return sorted({label["annotator_id"] for label in self.labels
                       if label["annotator_id"] is not None})

    def known_units(self) -> dict[str, set[str]]:
        """{unit_type: ids}: pass to `judgments.parse_judgments/parse_scores(known_units=…)`."""
        known: dict[str, set[str]] = {}
        for unit in self.units:
            known.setdefault(unit["unit_type"], set()).add(unit["unit_id"])
        return known


def field_spec(unit_type: str, scale_min, scale_max, level: str, description: str,
               values: list | None = None) -> dict:
    assert unit_type in UNIT_TYPES and level in LEVELS
    return {"unit_type": unit_type, "scale_min": scale_min, "scale_max": scale_max,
            "level": level, "description": description, "values": values}


def load_json(path: Path, max_bytes: int, issues: IssueCollector):
    """A whole JSON document, or None with the problem recorded (line and column given)."""
    raw = read_limited(path, max_bytes)
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        issues.add(path.name, raw[: exc.start].count(b"\n") + 1, "$",
                   f"not UTF-8 text (byte {raw[exc.start]:#04x})")
        return None
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        issues.add(path.name, exc.lineno, "$", f"malformed JSON: {exc.msg} (column {exc.colno})")
        return None


def locate(path: Path, names: Iterable[str], *, dataset: str) -> dict[str, Path]:
    """The published files of a data set: PATH is one of them or the folder holding them."""
    path = Path(path)
    names = tuple(names)
    if path.is_dir():
        found = {name: path / name for name in names if (path / name).is_file()}
        if not found:
            raise FormatError([FormatIssue(str(path), None, "$", f"no {dataset} file here "
                                           f"(expected {' and/or '.join(names)})")])
        return found
    if path.is_file():
        return {path.name: path}
    raise FormatError([FormatIssue(str(path), None, "$", "no such file or folder")])


_KIND = {
    "object": lambda value: isinstance(value, dict),
    "array": lambda value: isinstance(value, list),
    "string": lambda value: isinstance(value, str),
    "integer": lambda value: isinstance(value, int) and not isinstance(value, bool),
    "number": is_number,
}


def short(value) -> str:
    text = json.dumps(value, ensure_ascii=False)
    return text if len(text) <= 60 else text[:57] + "..."


def expect(value, kind: str, issues: IssueCollector, file: str, path: str,
           line: int | None = None) -> bool:
    """Type check of a source value; records `expected KIND, got VALUE` when it fails."""
    if _KIND[kind](value):
        return True
    issues.add(file, line, path, f"expected {kind}, got {short(value)}")
    return False


class ImportBuilder:
    """Accumulates one import; `finish()` checks it as a whole and returns it or raises."""

    def __init__(self, benchmark: dict, fields: dict[str, dict], issues: IssueCollector):
        self.benchmark = {**benchmark, "protocols": ["log"], "splits": [SPLIT]}
        self.fields = fields
        self.issues = issues
        self.dialogues: dict[str, dict] = {}
        self.logs: dict[str, list[dict]] = {}
        self.units: dict[tuple[str, str], dict] = {}
        self.labels: dict[tuple, dict] = {}
        self.comments: list[dict] = []
        self.notes: list[str] = []

    def dialogue(self, dialogue_id: str, turns: list[tuple[str, str]], scenario: dict, *,
                 file: str, path: str, line: int | None = None) -> dict | None:
        """A bundle dialogue from (role, text) turns; every turn's action is "other" because
        the public data sets carry no dialogue acts."""
        if dialogue_id in self.dialogues:
            self.issues.add(file, line, path, f"duplicate conversation id {dialogue_id!r}")
            return None
        record = {
            "id": dialogue_id, "split": SPLIT, "scenario": scenario, "candidate_item_ids": [],
            "turns": [{"index": index, "role": role, "text": text, "action": "other"}
                      for index, (role, text) in enumerate(turns)],
        }
        if not validate_record(record, "dialogue", file, line, self.issues):
            return None
        self.dialogues[dialogue_id] = record
        return record

    def log(self, system: str, dialogue: dict, metadata: dict) -> None:
        self.logs.setdefault(system, []).append({
            "log_id": dialogue["id"], "dialogue_id": dialogue["id"],
            "turns": [{"role": turn["role"], "text": turn["text"]} for turn in dialogue["turns"]],
            "metadata": metadata,
        })

    def unit(self, unit_type: str, unit_id: str, dialogue_id: str, *, turn_index=None,
             system=None, source_dataset=None, **extra) -> None:
        key = (unit_type, unit_id)
        if key not in self.units:
            self.units[key] = {"unit_type": unit_type, "unit_id": unit_id,
                               "dialogue_id": dialogue_id, "turn_index": turn_index,
                               "system": system, "source_dataset": source_dataset, **extra}

    def label(self, unit_type: str, unit_id: str, annotator_id: str | None, name: str, value, *,
              file: str, path: str, line: int | None = None) -> bool:
        """One label, checked against its field's unit type, level and scale."""
        spec = self.fields[name]
        assert spec["unit_type"] == unit_type, (name, unit_type)
        if spec["level"] == "nominal":
            if spec["values"] and value not in spec["values"]:
                self.issues.add(file, line, path, "expected one of "
                                + ", ".join(map(str, spec["values"])) + f", got {short(value)}")
                return False
        elif not is_number(value):
            self.issues.add(file, line, path, f"expected a number, got {short(value)}")
            return False
        elif not spec["scale_min"] <= value <= spec["scale_max"]:
            self.issues.add(file, line, path, f"expected a value in {spec['scale_min']}.."
                            f"{spec['scale_max']} ({name}), got {short(value)}")
            return False
        key = (unit_type, unit_id, annotator_id, name)
        if key in self.labels:
            self.issues.add(file, line, path, f"second {name} label for {unit_type} "
                            f"{unit_id!r} by {annotator_id or 'the aggregate'}")
            return False
        if isinstance(value, float) and value.is_integer():
            value = int(value)  # "3.0" in a CSV is the scale point 3
        scale = None if spec["level"] == "nominal" else (spec["scale_min"], spec["scale_max"])
        self.labels[key] = {"unit_type": unit_type, "unit_id": unit_id,
                            "annotator_id": annotator_id, "field": name, "value": value,
                            "scale": scale}
        return True

    def finish(self) -> PublicImport:
        self.issues.raise_if_any()
        validate_record(self.benchmark, "benchmark", "benchmark.json", None, self.issues)
        for unit in self.units.values():
            if unit["dialogue_id"] not in self.dialogues:
                self.issues.add("(import)", None, "$", f"unit {unit['unit_id']!r} refers to "
                                f"no dialogue ({unit['dialogue_id']!r})")
        for label in self.labels.values():
            if (label["unit_type"], label["unit_id"]) not in self.units:
                self.issues.add("(import)", None, "$", f"label on unknown {label['unit_type']} "
                                f"{label['unit_id']!r}")
        self.issues.raise_if_any()
        bundle = canonical_bundle(Bundle(benchmark=self.benchmark,
                                         dialogues=list(self.dialogues.values())))
        return PublicImport(bundle=bundle, logs=self.logs, labels=list(self.labels.values()),
                            fields=self.fields, units=list(self.units.values()),
                            comments=self.comments, notes=self.notes)
