"""External human judgments and external metric scores (formats.md §5). Pure Python, no Django.

Human judgments: a CSV file (header row) or JSON Lines, one judgment per row / line, validated
against `schemas/judgment.schema.json`:

    {"unit_type": "turn"|"dialogue"|"item", "unit_id": "...", "annotator_id": "a1",
     "field": "relevance", "value": 2}

`annotator_id` is optional: absent, null or an empty CSV cell means an aggregated label (one
value per unit, as CRSArena-Eval publishes them). Unit ids are the benchmark's, e.g. `conv_id`
for a dialogue and `conv_id#turn_ind` for an assistant turn of CRSArena-Eval.

Metric scores: JSON Lines (CSV accepted too), validated against `schemas/score.schema.json`:

    {"metric": "face_overall", "unit_type": "dialogue", "unit_id": "...", "value": 0.71}

with optional `system`, `benchmark`, `evaluator` strings (so Concord's own result export,
formats.md §3, can be read back).

Both readers are atomic: they return every record or raise FormatError listing each problem as
`file:line: $.field: what was expected`; nothing partial is ever returned. Rejected: malformed
lines, missing or unexpected fields, duplicates (same unit, annotator and field; same metric,
unit and system), non-finite numbers, text values in a numeric field, values outside a declared
scale, and unit ids not in `known_units` when that is given.

CSV cells are stripped of surrounding spaces and a cell that reads as a number becomes one; in
JSON Lines types are taken as written (a quoted "3" is text).
"""

import csv
import io
import json
import math
import re
from collections.abc import Collection, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from evaluation.lib.formats.errors import FormatError, FormatIssue, IssueCollector
from evaluation.lib.formats.jsonl import parse_jsonl, validate_record, validator

DEFAULT_MAX_BYTES = 200 * 1024 * 1024
UNIT_TYPES = ("turn", "dialogue", "item")
LEVELS = ("nominal", "ordinal", "interval", "ratio")
# Deliberately narrower than float(): "nan", "inf", "1_000" and hex are not numbers in a CSV.
_NUMBER = re.compile(r"^[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?$")


# --- shared helpers (also used by the public-dataset importers) ------------------------------

def read_limited(path: Path, max_bytes: int) -> bytes:
    """The bytes of PATH, refused by size before reading (formats.md: oversize files)."""
    path = Path(path)
    if not path.is_file():
        raise FormatError([FormatIssue(str(path), None, "$", "no such file")])
    size = path.stat().st_size
    if size > max_bytes:
        raise FormatError([FormatIssue(path.name, None, "$",
                                       f"file is {size} bytes, over the {max_bytes} byte limit")])
    return path.read_bytes()


def parse_number(text: str) -> int | float | None:
    """A CSV cell as a number (integral values as int), or None when it is not one."""
    text = text.strip()
    if not _NUMBER.match(text):
        return None
    number = float(text)
    if not math.isfinite(number):
        return None
    return int(number) if number.is_integer() else number


def is_number(value) -> bool:
    """A finite JSON number; booleans are not numbers here (True would silently become 1)."""
    return (isinstance(value, int | float) and not isinstance(value, bool)
            and math.isfinite(value))


def decode_text(raw: bytes, file: str, issues: IssueCollector) -> str | None:
    try:
        # utf-8-sig: spreadsheet programs put a byte-order mark in front of CSV exports.
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = raw[: exc.start].count(b"\n") + 1
        issues.add(file, line, "$", f"not UTF-8 text (byte {raw[exc.start]:#04x})")
        return None


def csv_rows(raw: bytes, file: str, issues: IssueCollector
             ) -> tuple[list[str], list[tuple[int, dict[str, str]]]]:
    """(header, [(line of the row's start, {column: cell})]) of a CSV file with a header row.

    Line numbers are physical lines, so a row with quoted newlines reports where it starts.
    Rows with the wrong number of cells are reported and left out.
    """
    text = decode_text(raw, file, issues)
    if text is None:
        return [], []
    reader = csv.reader(io.StringIO(text, newline=""))
    try:
        header = next(reader, None)
    except csv.Error as exc:
        issues.add(file, 1, "$", f"malformed CSV: {exc}")
        return [], []
    if not header or not any(cell.strip() for cell in header):
        issues.add(file, 1, "$", "expected a header row naming the columns")
        return [], []
    header = [cell.strip() for cell in header]
    for name in {name for name in header if header.count(name) > 1}:
        issues.add(file, 1, "$", f"column {name!r} appears more than once")
    rows = []
    while True:
        start = reader.line_num + 1
        try:
            row = next(reader)
        except StopIteration:
            break
        except csv.Error as exc:
            issues.add(file, start, "$", f"malformed CSV: {exc}")
            break
        if not any(cell.strip() for cell in row):
            continue
        if len(row) != len(header):
            issues.add(file, start, "$",
                       f"expected {len(header)} cells as in the header, got {len(row)}")
            continue
        rows.append((start, dict(zip(header, row, strict=True))))
    return header, rows


def _records(raw: bytes, file: str, schema: str, issues: IssueCollector, *, as_csv: bool,
             optional_empty: tuple[str, ...] = ()) -> Iterator[tuple[int, dict]]:
    """Schema-valid (line, record) pairs from a CSV or JSON Lines file."""
    if not as_csv:
        yield from parse_jsonl(raw, file, schema, issues)
        return
    properties = validator(schema).schema["properties"]
    required = validator(schema).schema["required"]
    header, rows = csv_rows(raw, file, issues)
    if not header:
        return
    missing = [name for name in required if name not in header]
    unexpected = [name for name in header if name not in properties]
    for name in missing:
        issues.add(file, 1, f"$.{name}", "required column is missing")
    for name in unexpected:
        issues.add(file, 1, f"$.{name}",
                   f"unexpected column (expected: {', '.join(properties)})")
    if missing or unexpected:
        return
    for line, row in rows:
        record = {}
        for name, cell in row.items():
            cell = cell.strip()
            if name in optional_empty and cell == "":
                continue  # an empty optional cell means "not given" (e.g. aggregated label)
            number = parse_number(cell) if name == "value" else None
            record[name] = cell if number is None else number
        if validate_record(record, schema, file, line, issues):
            yield line, record


def _is_csv(file: str, raw: bytes) -> bool:
    suffix = Path(file).suffix.lower()
    if suffix == ".csv":
        return True
    if suffix in (".jsonl", ".ndjson", ".json"):
        return False
    return not raw.lstrip(b"\xef\xbb\xbf \t\r\n").startswith(b"{")


def _check_unit(record, line, file, known_units, issues) -> bool:
    if known_units is None:
        return True
    if record["unit_id"] in known_units.get(record["unit_type"], ()):
        return True
    issues.add(file, line, "$.unit_id",
               f"unknown {record['unit_type']} id {record['unit_id']!r} (not in the benchmark)")
    return False


# --- human judgments --------------------------------------------------------------------------

@dataclass
class Judgments:
    """Labels as the public importers produce them, plus the fields they use.

    labels: {unit_type, unit_id, annotator_id (str, or None for an aggregated label), field,
             value (number or str), scale ((min, max) when the field was declared with a scale,
             else None)}
    fields: field name -> {unit_type, scale_min, scale_max, level, description, values}; the
            declared spec when `fields` was passed, otherwise inferred from the file (numeric ->
            level "interval" with the observed range, text -> "nominal" with the observed values).
    """

    labels: list[dict] = field(default_factory=list)
    fields: dict[str, dict] = field(default_factory=dict)

    def annotators(self) -> list[str]:
        return sorted({label["annotator_id"] for label in self.labels
                       if label["annotator_id"] is not None})


def read_judgments(path: Path, *, fields: Mapping[str, Mapping] | None = None,
                   known_units: Mapping[str, Collection[str]] | None = None,
                   max_bytes: int = DEFAULT_MAX_BYTES) -> Judgments:
    path = Path(path)
    return parse_judgments(read_limited(path, max_bytes), path.name, fields=fields,
                           known_units=known_units)


def parse_judgments(raw: bytes, file: str, *, fields: Mapping[str, Mapping] | None = None,
                    known_units: Mapping[str, Collection[str]] | None = None) -> Judgments:
    """Judgments of a CSV / JSON Lines file (chosen by FILE's suffix, else by content).

    fields: optional declared spec (field -> {unit_type, scale_min, scale_max, level, values});
        when given, other field names are rejected and values are checked against it.
    known_units: optional {unit_type: ids}; judgments on other units are rejected.
    """
    issues = IssueCollector()
    records = list(_records(raw, file, "judgment", issues, as_csv=_is_csv(file, raw),
                            optional_empty=("annotator_id",)))
    checked = _JudgmentChecks(file, fields, issues)
    seen: dict[tuple, int] = {}
    aggregated: dict[tuple, tuple[int, bool]] = {}
    labels = []
    for line, record in records:
        ok = _check_unit(record, line, file, known_units, issues)
        ok = checked.value(line, record) and ok
        annotator = record.get("annotator_id")
        key = (record["unit_type"], record["unit_id"], annotator, record["field"])
        if key in seen:
            who = f"annotator {annotator!r}" if annotator is not None else "the aggregate"
            issues.add(file, line, "$", f"duplicate judgment of {record['unit_type']} "
                       f"{record['unit_id']!r} by {who} on field {record['field']!r} "
                       f"(first on line {seen[key]})")
            continue
        seen[key] = line
        # An aggregate next to per-annotator values of the same unit and field would be
        # counted twice in the human mean; the file has to say one or the other.
        slot = key[:2] + key[3:]
        kind = annotator is None
        if slot in aggregated and aggregated[slot][1] != kind:
            issues.add(file, line, "$.annotator_id", "this unit and field already has "
                       f"{'per-annotator' if kind else 'aggregated'} judgments (line "
                       f"{aggregated[slot][0]}); do not mix aggregated and per-annotator values")
            continue
        aggregated.setdefault(slot, (line, kind))
        if ok:
            labels.append({
                "unit_type": record["unit_type"], "unit_id": record["unit_id"],
                "annotator_id": annotator, "field": record["field"], "value": record["value"],
                "scale": checked.scale(record["field"]),
            })
    checked.finish()
    issues.raise_if_any()
    return Judgments(labels=labels, fields=checked.field_specs())


class _JudgmentChecks:
    """Per-field checks: declared spec when given, otherwise consistency within the file."""

    def __init__(self, file: str, fields, issues: IssueCollector):
        self.file = file
        self.declared = {name: dict(spec) for name, spec in fields.items()} if fields else None
        self.issues = issues
        self.unit_type: dict[str, tuple[str, int]] = {}
        self.numbers: dict[str, list[tuple[int, float]]] = {}
        self.texts: dict[str, list[tuple[int, str]]] = {}

    def value(self, line: int, record: dict) -> bool:
        name, value, unit_type = record["field"], record["value"], record["unit_type"]
        if isinstance(value, float) and not math.isfinite(value):
            self.issues.add(self.file, line, "$.value", f"expected a finite number, got {value}")
            return False
        if self.declared is not None:
            return self._against_declared(line, name, value, unit_type)
        first = self.unit_type.setdefault(name, (unit_type, line))
        if first[0] != unit_type:
            self.issues.add(self.file, line, "$.unit_type", f"field {name!r} is used on "
                            f"{first[0]} units (line {first[1]}); a field belongs to one unit type")
            return False
        bucket = self.texts if isinstance(value, str) else self.numbers
        bucket.setdefault(name, []).append((line, value))
        return True

    def _against_declared(self, line, name, value, unit_type) -> bool:
        spec = self.declared.get(name)
        if spec is None:
            self.issues.add(self.file, line, "$.field", f"unknown field {name!r} (expected one "
                            f"of {', '.join(sorted(self.declared))})")
            return False
        if spec.get("unit_type") and spec["unit_type"] != unit_type:
            self.issues.add(self.file, line, "$.unit_type",
                            f"field {name!r} is a {spec['unit_type']} field, got {unit_type}")
            return False
        allowed = spec.get("values")
        if allowed and value not in allowed:
            self.issues.add(self.file, line, "$.value", "expected one of "
                            + ", ".join(map(str, allowed)) + f", got {json.dumps(value)}")
            return False
        if spec.get("level", "interval") == "nominal":
            return True
        if not is_number(value):
            self.issues.add(self.file, line, "$.value",
                            f"expected a number for {spec.get('level')} field {name!r}, "
                            f"got {json.dumps(value)}")
            return False
        low, high = spec.get("scale_min"), spec.get("scale_max")
        if (low is not None and value < low) or (high is not None and value > high):
            self.issues.add(self.file, line, "$.value",
                            f"expected a value in {low}..{high} for field {name!r}, got {value}")
            return False
        return True

    def finish(self) -> None:
        """Text values in a field that otherwise holds numbers are typos, not categories."""
        if self.declared is not None:
            return
        for name, texts in self.texts.items():
            numbers = self.numbers.get(name)
            if not numbers:
                continue
            for line, value in texts:
                self.issues.add(self.file, line, "$.value",
                                f"expected a number: field {name!r} holds numbers (e.g. line "
                                f"{numbers[0][0]}), got {json.dumps(value)}")

    def scale(self, name: str) -> tuple | None:
        spec = (self.declared or {}).get(name)
        if not spec or spec.get("scale_min") is None or spec.get("scale_max") is None:
            return None
        return (spec["scale_min"], spec["scale_max"])

    def field_specs(self) -> dict[str, dict]:
        if self.declared is not None:
            return self.declared
        specs = {}
        for name, (unit_type, _) in self.unit_type.items():
            numbers = [value for _, value in self.numbers.get(name, [])]
            if numbers:
                specs[name] = {"unit_type": unit_type, "scale_min": min(numbers),
                               "scale_max": max(numbers), "level": "interval",
                               "description": "inferred from the file: numeric, observed range",
                               "values": None}
            else:
                specs[name] = {"unit_type": unit_type, "scale_min": None, "scale_max": None,
                               "level": "nominal",
                               "description": "inferred from the file: text categories",
                               "values": sorted({value for _, value in self.texts[name]})}
        return specs


# --- metric scores ----------------------------------------------------------------------------

def read_scores(path: Path, *, known_units: Mapping[str, Collection[str]] | None = None,
                max_bytes: int = DEFAULT_MAX_BYTES) -> list[dict]:
    path = Path(path)
    return parse_scores(read_limited(path, max_bytes), path.name, known_units=known_units)


def parse_scores(raw: bytes, file: str, *,
                 known_units: Mapping[str, Collection[str]] | None = None) -> list[dict]:
    """Score records {metric, unit_type, unit_id, value[, system, benchmark, evaluator]}."""
    issues = IssueCollector()
    records = list(_records(raw, file, "score", issues, as_csv=_is_csv(file, raw),
                            optional_empty=("system", "benchmark", "evaluator")))
    seen: dict[tuple, int] = {}
    scores = []
    for line, record in records:
        ok = _check_unit(record, line, file, known_units, issues)
        if not is_number(record["value"]):
            issues.add(file, line, "$.value", f"expected a finite number, got {record['value']}")
            ok = False
        # The same reference unit can be scored once per system (protocol `turn`).
        key = (record["metric"], record["unit_type"], record["unit_id"], record.get("system"))
        if key in seen:
            issues.add(file, line, "$", f"duplicate score of metric {record['metric']!r} for "
                       f"{record['unit_type']} {record['unit_id']!r} (first on line {seen[key]})")
            continue
        seen[key] = line
        if ok:
            scores.append(record)
    issues.raise_if_any()
    return scores
