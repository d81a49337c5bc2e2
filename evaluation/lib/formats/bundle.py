"""The benchmark bundle of formats.md §1: read + validate (schema and references), write back.

`read_bundle` returns plain dicts only when the whole bundle is valid; otherwise it raises
FormatError listing `file:line: json.path: problem` for everything it found.
`write_bundle` writes the canonical form, so export(import(bundle)) == bundle byte for byte
for a canonical bundle (the demo generator writes through it too).
"""

import json
from dataclasses import dataclass, field
from pathlib import Path

from evaluation.lib.formats.errors import FormatError, FormatIssue, IssueCollector
from evaluation.lib.formats.jsonl import parse_json, parse_jsonl, schema_property_order
from evaluation.lib.formats.sources import open_bundle

BUNDLE_FILES = ("benchmark.json", "items.jsonl", "reviews.jsonl", "dialogues.jsonl")
EVALUATED_ACTIONS = ("recommend", "compare")
TURN_LISTS = ("referenced_item_ids", "citations", "gold_item_ids", "alternative_item_ids")


@dataclass
class Bundle:
    benchmark: dict
    items: list[dict] = field(default_factory=list)
    reviews: list[dict] = field(default_factory=list)
    dialogues: list[dict] = field(default_factory=list)


# Ids become URL path segments (/benchmarks/<slug>/dialogues/<id>/): a slash would make the
# page unreachable. Descriptions are shown on pages and held in memory whole.
_ID_FORBIDDEN = ("/", "\\")
MAX_DESCRIPTION_CHARS = 20_000


def read_bundle(path: Path, *, max_bytes: int, max_total_bytes: int | None = None) -> Bundle:
    source = open_bundle(path, max_bytes=max_bytes, wanted=BUNDLE_FILES,
                         max_total_bytes=max_total_bytes)
    missing = [name for name in BUNDLE_FILES if name not in source.names()]
    if missing:
        raise FormatError(
            [FormatIssue(name, None, "$", "required file is missing") for name in missing]
        )
    issues = IssueCollector()
    benchmark = parse_json(source.read("benchmark.json"), "benchmark.json", "benchmark", issues)
    items = list(parse_jsonl(source.read("items.jsonl"), "items.jsonl", "item", issues))
    reviews = list(parse_jsonl(source.read("reviews.jsonl"), "reviews.jsonl", "review", issues))
    dialogues = list(
        parse_jsonl(source.read("dialogues.jsonl"), "dialogues.jsonl", "dialogue", issues)
    )
    issues.raise_if_any()
    _check_references(benchmark, items, reviews, dialogues, issues)
    issues.raise_if_any()
    return Bundle(
        benchmark=benchmark,
        items=[record for _, record in items],
        reviews=[record for _, record in reviews],
        dialogues=[record for _, record in dialogues],
    )


def _unique_ids(file: str, records, issues) -> dict[str, dict]:
    seen: dict[str, dict] = {}
    first_line: dict[str, int] = {}
    for line, record in records:
        if record["id"] in seen:
            issues.add(
                file, line, "$.id",
                f"duplicate id {record['id']!r} (first on line {first_line[record['id']]})",
            )
            continue
        seen[record["id"]] = record
        first_line[record["id"]] = line
    return seen


def _check_records(items, reviews, dialogues, issues) -> None:
    """What the schemas cannot say: items where something refers to them, ids usable in
    URLs, bounded texts."""
    if not items and (reviews or any(d.get("candidate_item_ids") for _, d in dialogues)):
        # said once, instead of an "unknown item id" for every review and dialogue
        issues.add("items.jsonl", None, "$", "the file has no items, but reviews.jsonl or "
                   "dialogues.jsonl refer to items")
    for file, records in (("items.jsonl", items), ("dialogues.jsonl", dialogues)):
        for line, record in records:
            if any(char in record["id"] for char in _ID_FORBIDDEN):
                issues.add(file, line, "$.id", f"id {record['id']!r} contains '/' or '\\' "
                           "(ids are parts of page addresses)")
    for line, item in items:
        description = item.get("description") or ""
        if len(description) > MAX_DESCRIPTION_CHARS:
            issues.add("items.jsonl", line, "$.description",
                       f"{len(description):,} characters, over the "
                       f"{MAX_DESCRIPTION_CHARS:,} limit")


def _check_references(benchmark, items, reviews, dialogues, issues) -> None:
    _check_records(items, reviews, dialogues, issues)
    if not items and issues:
        return
    item_by_id = _unique_ids("items.jsonl", items, issues)
    review_by_id = _unique_ids("reviews.jsonl", reviews, issues)
    for line, review in reviews:
        if review["item_id"] not in item_by_id:
            issues.add("reviews.jsonl", line, "$.item_id", f"unknown item id {review['item_id']!r}")
    _unique_ids("dialogues.jsonl", dialogues, issues)
    for line, dialogue in dialogues:
        _check_dialogue(line, dialogue, benchmark["splits"], item_by_id, review_by_id, issues)


def _check_ids(ids, item_by_id, line, path, issues) -> None:
    for position, item_id in enumerate(ids):
        if item_id not in item_by_id:
            issues.add("dialogues.jsonl", line, f"{path}[{position}]",
                       f"unknown item id {item_id!r}")


def _check_dialogue(line, dialogue, splits, item_by_id, review_by_id, issues) -> None:
    file = "dialogues.jsonl"
    if dialogue["split"] not in splits:
        issues.add(file, line, "$.split", f"split {dialogue['split']!r} is not declared in "
                   f"benchmark.json (declared: {', '.join(splits)})")
    pool = set(dialogue["candidate_item_ids"])
    for key in ("candidate_item_ids", "target_item_ids", "seen_item_ids"):
        _check_ids(dialogue.get(key, []), item_by_id, line, f"$.{key}", issues)
    for position, turn in enumerate(dialogue["turns"]):
        path = f"$.turns[{position}]"
        if turn["index"] != position:
            issues.add(file, line, f"{path}.index", f"expected {position} (turns are numbered "
                       f"0, 1, 2, … in order), got {turn['index']}")
        for key in ("referenced_item_ids", "gold_item_ids", "alternative_item_ids"):
            _check_ids(turn.get(key, []), item_by_id, line, f"{path}.{key}", issues)
        _check_gold(turn, pool, line, path, issues)
        _check_citations(turn, review_by_id, line, path, issues)


def _check_gold(turn, pool, line, path, issues) -> None:
    answers = [("gold_item_ids", turn.get("gold_item_ids", [])),
               ("alternative_item_ids", turn.get("alternative_item_ids", []))]
    evaluated = turn["role"] == "system" and turn["action"] in EVALUATED_ACTIONS
    for key, ids in answers:
        if ids and not evaluated:
            issues.add("dialogues.jsonl", line, f"{path}.{key}",
                       "expected only on system turns that recommend or compare")
        for position, item_id in enumerate(ids):
            if item_id not in pool:
                issues.add("dialogues.jsonl", line, f"{path}.{key}[{position}]",
                           f"item {item_id!r} is not in the dialogue's candidate pool")


def _check_citations(turn, review_by_id, line, path, issues) -> None:
    for position, citation in enumerate(turn.get("citations", [])):
        cpath = f"{path}.citations[{position}]"
        review = review_by_id.get(citation["review_id"])
        if review is None:
            issues.add("dialogues.jsonl", line, f"{cpath}.review_id",
                       f"unknown review id {citation['review_id']!r}")
            continue
        if f"[{citation['label']}]" not in turn["text"]:
            issues.add("dialogues.jsonl", line, f"{cpath}.label",
                       f"label [{citation['label']}] does not appear in the turn text")
        _locate_quote(citation, review, line, cpath, issues)


def _locate_quote(citation, review, line, cpath, issues) -> None:
    """Fill in start/end when absent; when given they must point at the quote exactly."""
    text, quote = review["text"], citation["quote"]
    if "start" in citation or "end" in citation:
        start, end = citation.get("start"), citation.get("end")
        if start is None or end is None or text[start:end] != quote:
            issues.add("dialogues.jsonl", line, f"{cpath}.start",
                       f"offsets {start}..{end} do not hold the quote in review {review['id']!r}")
        return
    start = text.find(quote)
    if start < 0:
        issues.add("dialogues.jsonl", line, f"{cpath}.quote",
                   f"quote does not occur in review {review['id']!r}")
        return
    citation["start"], citation["end"] = start, start + len(quote)


# --- writing ---------------------------------------------------------------------------------

def _number(value):
    """Integral floats are written as integers so that DB floats round-trip byte for byte."""
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value


def _sorted_free_form(value):
    """Free-form objects (scenario, attributes) get sorted keys: PostgreSQL's jsonb does not
    keep key order, so only a sorted form survives a round trip through the database."""
    if isinstance(value, dict):
        return {key: _sorted_free_form(value[key]) for key in sorted(value)}
    if isinstance(value, list):
        return [_sorted_free_form(v) for v in value]
    return _number(value)


def _ordered(record: dict, keys: list[str]) -> dict:
    return {key: _sorted_free_form(record[key]) for key in keys if key in record}


def canonical_dialogue(dialogue: dict) -> dict:
    out = _ordered(dialogue, schema_property_order("dialogue"))
    out.setdefault("scenario", {})
    out = _ordered(out, schema_property_order("dialogue"))
    for key in ("target_item_ids", "seen_item_ids"):
        if not out.get(key):
            out.pop(key, None)
    turn_keys = schema_property_order("dialogue", "turn")
    citation_keys = schema_property_order("dialogue", "citation")
    turns = []
    for turn in dialogue["turns"]:
        turn = {**{key: [] for key in TURN_LISTS}, **turn}
        turn["citations"] = [_ordered(c, citation_keys) for c in turn["citations"]]
        turns.append(_ordered(turn, turn_keys))
    out["turns"] = turns
    return out


def canonical_bundle(bundle: Bundle) -> Bundle:
    return Bundle(
        benchmark=_ordered(bundle.benchmark, schema_property_order("benchmark")),
        items=[_ordered(item, schema_property_order("item")) for item in bundle.items],
        reviews=[_ordered(review, schema_property_order("review")) for review in bundle.reviews],
        dialogues=[canonical_dialogue(dialogue) for dialogue in bundle.dialogues],
    )


def _jsonl(records: list[dict]) -> str:
    return "".join(json.dumps(record, ensure_ascii=False) + "\n" for record in records)


def bundle_files(bundle: Bundle) -> dict[str, str]:
    """The four files of BUNDLE in canonical form, by file name."""
    bundle = canonical_bundle(bundle)
    return {
        "benchmark.json": json.dumps(bundle.benchmark, ensure_ascii=False, indent=2) + "\n",
        "items.jsonl": _jsonl(bundle.items),
        "reviews.jsonl": _jsonl(bundle.reviews),
        "dialogues.jsonl": _jsonl(bundle.dialogues),
    }


def write_bundle(bundle: Bundle, directory: Path) -> None:
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    for name, text in bundle_files(bundle).items():
        (directory / name).write_text(text, encoding="utf-8")
