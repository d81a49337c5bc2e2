"""JSON / JSON Lines parsing with JSON Schema validation and line-numbered issues."""

import json
import math
import re
from functools import cache
from pathlib import Path

import jsonschema_rs
from jsonschema import Draft202012Validator

from evaluation.lib.formats.errors import IssueCollector, json_path

SCHEMA_DIR = Path(__file__).parent / "schemas"


@cache
def validator(schema_name: str) -> Draft202012Validator:
    schema = json.loads((SCHEMA_DIR / f"{schema_name}.schema.json").read_text())
    Draft202012Validator.check_schema(schema)
    return Draft202012Validator(schema)


@cache
def _compiled(schema_name: str) -> jsonschema_rs.Draft202012Validator:
    """The same schema compiled by jsonschema-rs: it only tells whether a record is valid,
    about 100 times faster than walking it in Python (a 50,000-line submission's records took
    most of its validation). The messages of an invalid record come from `validator`."""
    return jsonschema_rs.Draft202012Validator(validator(schema_name).schema)


def schema_property_order(schema_name: str, *defs: str) -> list[str]:
    """Key order of a schema object (the canonical order the writer uses)."""
    schema = validator(schema_name).schema
    for name in defs:
        schema = schema["$defs"][name]
    return list(schema["properties"])


def _describe(error) -> tuple[str, str]:
    """A (json path, what was expected) pair for a jsonschema error, in plain words."""
    path = list(error.absolute_path)
    kind = error.validator
    if kind == "required":
        missing = error.message.split("'")[1]
        return json_path([*path, missing]), "required field is missing"
    if kind == "additionalProperties":
        return json_path(path), f"unexpected field: {error.message.split('(')[-1].rstrip(')')}"
    got = json.dumps(error.instance, ensure_ascii=False)
    if len(got) > 60:
        got = got[:57] + "..."
    expected = {
        "type": lambda: f"expected {error.validator_value}",
        "enum": lambda: "expected one of " + ", ".join(map(str, error.validator_value)),
        "minimum": lambda: f"expected a value >= {error.validator_value}",
        "maximum": lambda: f"expected a value <= {error.validator_value}",
        "minLength": lambda: f"expected at least {error.validator_value} characters",
        "maxLength": lambda: f"expected at most {error.validator_value} characters",
        "minItems": lambda: f"expected at least {error.validator_value} entries",
        "uniqueItems": lambda: "expected no repeated entries",
        "pattern": lambda: f"expected to match {error.validator_value}",
    }.get(kind)
    message = expected() if expected else error.message
    return json_path(path), f"{message}, got {got}"


# NUL and lone surrogates are valid JSON escapes (\\u0000, \\ud800) but PostgreSQL cannot store
# them in text (DataError, UnicodeEncodeError): they are refused where the text comes in.
_UNSTORABLE = re.compile("[\x00\ud800-\udfff]")


def unstorable(value) -> tuple[str, str] | None:
    """(json path, what is wrong) for the first string PostgreSQL cannot store (NUL, a lone
    surrogate) or number it cannot (NaN, ±Infinity) in VALUE, else None. Iterative, so a
    deeply nested record cannot exhaust the stack."""
    stack = [((), value)]
    while stack:
        path, node = stack.pop()
        if isinstance(node, str):
            found = _UNSTORABLE.search(node)
            if found:
                char = found.group()
                what = "a NUL character" if char == "\x00" else \
                    f"a lone surrogate (U+{ord(char):04X})"
                return json_path(path), f"contains {what} at position {found.start() + 1}, " \
                    "which cannot be stored as text"
        elif isinstance(node, float) and not math.isfinite(node):
            return json_path(path), f"expected a finite number, got {node}"
        elif isinstance(node, dict):
            for key, child in node.items():
                if _UNSTORABLE.search(key):
                    return json_path(path), f"field name {key.encode('unicode_escape')!r} " \
                        "contains a character that cannot be stored as text"
                stack.append(((*path, key), child))
        elif isinstance(node, list):
            stack.extend(((*path, i), child) for i, child in enumerate(node))
    return None


def validate_record(record, schema_name: str, file: str, line: int | None, issues) -> bool:
    bad = unstorable(record)
    if bad is not None:
        issues.add(file, line, *bad)
        return False
    if record is None:
        issues.add(file, line, "$", "expected an object, got null")
        return False
    if _compiled(schema_name).is_valid(record):
        return True
    errors = sorted(validator(schema_name).iter_errors(record), key=lambda e: list(e.path))
    for error in errors:
        path, message = _describe(error)
        issues.add(file, line, path, message)
    return not errors


def _decode(raw: bytes, file: str, issues: IssueCollector) -> str | None:
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = raw[: exc.start].count(b"\n") + 1
        issues.add(file, line, "$", f"not UTF-8 text (byte {raw[exc.start]:#04x})")
        return None


def parse_json(raw: bytes, file: str, schema_name: str, issues: IssueCollector):
    text = _decode(raw, file, issues)
    if text is None:
        return None
    try:
        record = json.loads(text)
    except json.JSONDecodeError as exc:
        issues.add(file, exc.lineno, "$", f"malformed JSON: {exc.msg} (column {exc.colno})")
        return None
    except RecursionError:
        issues.add(file, 1, "$", "malformed JSON: nested too deeply")
        return None
    return record if validate_record(record, schema_name, file, None, issues) else None


def parse_jsonl(raw: bytes, file: str, schema_name: str, issues: IssueCollector):
    """Yield (line number, record) for each valid, non-blank line; record issues for the rest."""
    text = _decode(raw, file, issues)
    if text is None:
        return
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError as exc:
            issues.add(file, number, "$", f"malformed JSON: {exc.msg} (column {exc.colno})")
            continue
        except RecursionError:
            issues.add(file, number, "$", "malformed JSON: nested too deeply")
            continue
        if validate_record(record, schema_name, file, number, issues):
            yield number, record
