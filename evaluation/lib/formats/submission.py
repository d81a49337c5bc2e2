"""Submissions of formats.md §2: stream, validate and read `turn` and `log` files.

Protocol `turn` (Trace, §4): one line per answered system turn,
`{dialogue_id, turn_index, response, ranked_item_ids, citations: [{label, review_id, quote}]}`.
The answered turns are the reference system turns that recommend or compare plus the first
system turn after each reject_and_refine (`evaluation.lib.metrics.suite.evaluated_turn_keys`).

Protocol `log` (CoRE / FACE / PEPPER): one conversation per line,
`{log_id, dialogue_id?, turns: [{role, text, recommended_item_ids?}], ground_truth_item_ids?}`.

Validation is all-or-nothing, like the bundle importer: it reports every problem as
`file:line: json.path: message` (FormatError) and the caller stores nothing. Files are read
as a stream through a bounded line reader, so neither an oversize file nor a single 500 MB line
is ever held in memory: a file is refused by size before reading when its size is known and
while reading otherwise, and an overlong line is skipped (and reported) in fixed-size chunks.

Pure Python: nothing here imports Django. `SubmissionReference` is built from the plain records
of a benchmark bundle (formats.md §1), as `evaluation.selectors.benchmark_bundle` returns them.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from evaluation.lib.formats.errors import FormatError, FormatIssue, IssueCollector
from evaluation.lib.formats.jsonl import validate_record
from evaluation.lib.metrics.accuracy import build_city_type_index, open_pool
from evaluation.lib.metrics.quotes import extract_labels
from evaluation.lib.metrics.suite import CLOSED, OPEN, evaluated_turn_keys
from evaluation.lib.metrics.types import (
    Citation,
    ItemInfo,
    ReferenceDialogue,
    ReferenceTurn,
    ReviewInfo,
    SubmittedTurn,
)
from evaluation.lib.progress import Progress

TURN = "turn"
LOG = "log"
SCHEMAS = {TURN: "submission_turn", LOG: "log"}
DEFAULT_NAME = {TURN: "submission.jsonl", LOG: "logs.jsonl"}
PROTOCOLS = tuple(SCHEMAS)  # the protocols a researcher can upload
DEFAULT_MAX_BYTES = 200 * 1024 * 1024
# A Trace answer is a few hundred bytes; 1 MiB leaves room for long LLM responses and rankings
# over open pools while keeping a hostile line from costing more than that in memory.
DEFAULT_MAX_LINE_BYTES = 1024 * 1024
CHUNK_BYTES = 1024 * 1024
_BOM = b"\xef\xbb\xbf"
HIDDEN = "hidden"
HIDDEN_WHOLE = ("the hidden split is scored only as a whole: answer every answered turn of every "
                "hidden dialogue, or leave all hidden dialogues out")
TURN_KEYS = ("dialogue_id", "turn_index", "response", "ranked_item_ids", "citations", "metadata")


def human_size(size: int) -> str:
    for unit in ("bytes", "KB", "MB", "GB"):
        if size < 1024 or unit == "GB":
            return f"{size:.0f} {unit}" if unit == "bytes" else f"{size:.1f} {unit}"
        size /= 1024
    return str(size)


# --- the benchmark side: plain records → metric input types ---------------------------------


def item_infos(records: Iterable[Mapping[str, Any]]) -> dict[str, ItemInfo]:
    """Catalogue items (bundle records) as the metrics' ItemInfo, by id."""
    return {
        r["id"]: ItemInfo(r["id"], r["type"], r.get("city"), r.get("lat"), r.get("lon"),
                          r.get("price_level"), r.get("name", ""))
        for r in records
    }


def review_infos(records: Iterable[Mapping[str, Any]]) -> dict[str, ReviewInfo]:
    return {r["id"]: ReviewInfo(r["id"], r["item_id"], r["text"]) for r in records}


def reference_dialogue(record: Mapping[str, Any]) -> ReferenceDialogue:
    """A bundle dialogue record as the metrics' ReferenceDialogue (gold included)."""
    turns = tuple(
        ReferenceTurn(t["index"], t["role"], t["text"], t["action"],
                      tuple(t.get("gold_item_ids", ())), tuple(t.get("alternative_item_ids", ())),
                      tuple(t.get("referenced_item_ids", ())))
        for t in record["turns"]
    )
    return ReferenceDialogue(record["id"], record["split"], record.get("scenario", {}),
                             tuple(record["candidate_item_ids"]), turns)


@dataclass(frozen=True)
class DialogueRef:
    """What validation needs to know about one reference dialogue."""

    split: str
    pool: frozenset[str]
    turns: Mapping[int, tuple[str, str]]  # index -> (role, action)
    answered: tuple[int, ...]  # the turns a submission must answer


@dataclass(frozen=True)
class SubmissionReference:
    """Ids a submission may use, per dialogue its pool and the turns it must answer."""

    dialogues: Mapping[str, DialogueRef]
    item_ids: frozenset[str]
    review_ids: frozenset[str]
    pool_mode: str = CLOSED

    @classmethod
    def from_records(cls, *, items: Sequence[Mapping], reviews: Sequence[Mapping],
                     dialogues: Sequence[Mapping], pool_mode: str = CLOSED) -> SubmissionReference:
        if pool_mode not in (CLOSED, OPEN):
            raise ValueError(f"pool_mode must be {CLOSED!r} or {OPEN!r}, not {pool_mode!r}")
        infos = item_infos(items)
        index = build_city_type_index(infos.values()) if pool_mode == OPEN else None
        refs = {}
        for record in dialogues:
            dialogue = reference_dialogue(record)
            pool = (dialogue.candidate_item_ids if pool_mode == CLOSED
                    else open_pool(dialogue.candidate_item_ids, infos, index))
            refs[dialogue.id] = DialogueRef(
                split=dialogue.split, pool=frozenset(pool),
                turns={t.index: (t.role, t.action) for t in dialogue.turns},
                answered=tuple(i for _, i in evaluated_turn_keys([dialogue])),
            )
        return cls(refs, frozenset(infos), frozenset(r["id"] for r in reviews), pool_mode)


@dataclass(frozen=True)
class SubmissionSummary:
    """What a valid file holds: its protocol, line count and the splits it answers in full."""

    protocol: str
    line_count: int
    splits: tuple[str, ...] = ()
    dialogue_count: int = 0


# --- streaming ------------------------------------------------------------------------------


class FileTooLarge(Exception):
    def __init__(self, read: int):
        self.read = read
        super().__init__(f"read {read} bytes")


def bounded_lines(stream: IO[bytes], *, max_line_bytes: int, max_bytes: int,
                  chunk_bytes: int = CHUNK_BYTES) -> Iterator[tuple[int, bytes | None, int]]:
    """Yield (line number, line without its newline, length in bytes) for each line.

    A line longer than `max_line_bytes` comes back as None (with its full length): it is
    counted chunk by chunk, never kept. Memory stays below `chunk_bytes + max_line_bytes`.
    Raises FileTooLarge once more than `max_bytes` were read.
    """
    number, total, length, too_long = 0, 0, 0, False
    pending = bytearray()
    while chunk := stream.read(chunk_bytes):
        total += len(chunk)
        if total > max_bytes:
            raise FileTooLarge(total)
        start = 0
        while True:
            newline = chunk.find(b"\n", start)
            end = len(chunk) if newline < 0 else newline
            if not too_long and length + (end - start) > max_line_bytes:
                too_long = True
                pending.clear()
            if not too_long:
                pending += chunk[start:end]
            length += end - start
            if newline < 0:
                break
            number += 1
            yield number, None if too_long else bytes(pending).removesuffix(b"\r"), length
            pending.clear()
            length, too_long, start = 0, False, newline + 1
    if length or too_long:
        yield number + 1, None if too_long else bytes(pending).removesuffix(b"\r"), length


@contextmanager
def open_source(source, *, name: str, max_bytes: int,
                progress: Progress | None = None) -> Iterator[tuple[IO[bytes], str]]:
    """A binary stream and display name for a path or an open file (an upload, a BytesIO…).

    The size is checked before reading when it is known (a path, Django's File.size). With
    PROGRESS, the stream reports how much of the file was read (`READING`, in KiB).
    """
    if isinstance(source, str | Path):
        path = Path(source)
        if not path.is_file():
            raise FormatError([FormatIssue(str(path), None, "$", "no such file")])
        _check_size(path.stat().st_size, path.name, max_bytes)
        with path.open("rb") as handle:
            yield _reporting(handle, path.stat().st_size, progress), path.name
        return
    label = Path(str(getattr(source, "name", "") or name)).name or name
    size = getattr(source, "size", None)
    if isinstance(size, int):
        _check_size(size, label, max_bytes)
    if getattr(source, "seekable", lambda: False)():
        source.seek(0)
    yield _reporting(source, size if isinstance(size, int) else 0, progress), label


READING = "checking the file (KiB read)"


def _kib(size: int) -> int:
    return -(-size // 1024)


class _ReportingReader:
    """A binary stream that tells PROGRESS how much of it was read after each read (the
    validator reads 1 MiB at a time, so a 12 MB file reports a dozen times)."""

    def __init__(self, stream: IO[bytes], size: int, progress: Progress):
        self.stream, self.size, self.progress, self.read_bytes = stream, size, progress, 0
        progress(READING, 0, _kib(size))

    def read(self, size: int = -1) -> bytes:
        chunk = self.stream.read(size)
        self.read_bytes += len(chunk)
        total = max(self.size, self.read_bytes)
        self.progress(READING, _kib(self.read_bytes), _kib(total))
        return chunk


def _reporting(stream: IO[bytes], size: int, progress: Progress | None):
    return stream if progress is None else _ReportingReader(stream, size, progress)


def _check_size(size: int, name: str, max_bytes: int) -> None:
    if size > max_bytes:
        raise FormatError([FormatIssue(name, None, "$", f"file is {human_size(size)}, over the "
                                                        f"{human_size(max_bytes)} limit")])


def _json_lines(stream: IO[bytes], name: str, schema: str, issues: IssueCollector, *,
                max_bytes: int, max_line_bytes: int,
                refuse_blank: bool = False) -> Iterator[tuple[int, dict]]:
    """Yield (line number, record) for each schema-valid line; record issues for the rest.

    With `refuse_blank` (validating an upload), blank lines are problems too; files stored
    before that rule are still read.
    """
    try:
        for number, raw, length in bounded_lines(stream, max_line_bytes=max_line_bytes,
                                                 max_bytes=max_bytes):
            if raw is None:
                issues.add(name, number, "$", f"line is {human_size(length)}, over the "
                           f"{human_size(max_line_bytes)} line limit")
                continue
            if not raw.strip():
                if not refuse_blank:
                    continue
                # Refused, not skipped: a file of blank lines is junk, and a junk file must
                # cost a few lines' reading, not a web worker for a minute.
                issues.add(name, number, "$", "blank line")
            else:
                record = _parse_line(raw.removeprefix(_BOM) if number == 1 else raw, name,
                                     number, issues)
                if record is not _INVALID and validate_record(record, schema, name, number,
                                                              issues):
                    yield number, record
            if issues.total >= issues.cap - 1:
                issues.add(name, None, "$", f"reading stopped at line {number} after "
                           f"{issues.total} problems")
                return
    except FileTooLarge:
        issues.add(name, None, "$", f"file is over the {human_size(max_bytes)} limit "
                                    "(reading stopped there)")


_INVALID = object()  # a line that is not JSON (a JSON `null` parses to None, and is refused)


def _parse_line(raw: bytes, name: str, number: int, issues: IssueCollector):
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        issues.add(name, number, "$", f"not UTF-8 text (byte {raw[exc.start]:#04x} at column "
                                      f"{exc.start + 1})")
        return _INVALID
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        issues.add(name, number, "$", f"malformed JSON: {exc.msg} (column {exc.colno})")
    except RecursionError:
        issues.add(name, number, "$", "malformed JSON: nested too deeply")
    return _INVALID


# --- protocol `turn` ------------------------------------------------------------------------


def validate_turn_submission(source, *, reference: SubmissionReference,
                             splits: Sequence[str] | None = None,
                             max_bytes: int = DEFAULT_MAX_BYTES,
                             max_line_bytes: int = DEFAULT_MAX_LINE_BYTES,
                             progress: Progress | None = None) -> SubmissionSummary:
    """Check a `turn` submission against a benchmark; raise FormatError listing every problem.

    Every answered turn of every dialogue in `splits` must have exactly one line; without
    `splits`, the splits of the dialogues the file answers are required in full. Lines for
    dialogues of other splits are checked the same way and are allowed. PROGRESS hears how
    much of the file was read (`open_source`).
    """
    issues = IssueCollector()
    seen: dict[tuple[str, int], int] = {}
    lines = 0
    with open_source(source, name=DEFAULT_NAME[TURN], max_bytes=max_bytes,
                     progress=progress) as (stream, name):
        for number, record in _json_lines(stream, name, SCHEMAS[TURN], issues,
                                          max_bytes=max_bytes, max_line_bytes=max_line_bytes,
                                          refuse_blank=True):
            lines += 1
            _check_turn_line(record, name, number, reference, seen, issues)
    if not lines and not issues:
        issues.add(name, None, "$", "the file has no submission lines")
    required = tuple(splits) if splits else tuple(sorted(
        {reference.dialogues[d].split for d, _ in seen}))
    unknown = [s for s in required if s not in {r.split for r in reference.dialogues.values()}]
    for split in unknown:
        issues.add(name, None, "$", f"the benchmark has no dialogue in split {split!r}")
    count = _check_complete(reference, required, seen, name, issues)
    issues.raise_if_any()
    return SubmissionSummary(TURN, lines, required, count)


def _check_turn_line(record: dict, name: str, number: int, reference: SubmissionReference,
                     seen: dict, issues: IssueCollector) -> None:
    def add(path: str, message: str) -> None:
        issues.add(name, number, path, message)

    dialogue_id, index = record["dialogue_id"], int(record["turn_index"])
    dialogue = reference.dialogues.get(dialogue_id)
    if dialogue is None:
        add("$.dialogue_id", f"unknown dialogue id {dialogue_id!r}")
        return
    hidden = dialogue.split == HIDDEN
    if hidden and index not in dialogue.answered:
        # Never the turn's role or action, nor the list of answered turns: errors about hidden
        # dialogues tell no more than the public download does.
        add("$.turn_index", f"turn {index} of hidden dialogue {dialogue_id!r} is not a turn "
            "systems answer")
    elif index not in dialogue.turns:
        add("$.turn_index", f"dialogue {dialogue_id!r} has no turn {index}")
    elif index not in dialogue.answered:
        role, action = dialogue.turns[index]
        add("$.turn_index", f"turn {index} of dialogue {dialogue_id!r} is a {role} {action} "
            f"turn that systems do not answer (answered turns: "
            f"{', '.join(map(str, dialogue.answered)) or 'none'})")
    elif (dialogue_id, index) in seen:
        add("$.turn_index", f"turn {index} of dialogue {dialogue_id!r} is answered twice "
            f"(first on line {seen[(dialogue_id, index)]})")
    else:
        seen[(dialogue_id, index)] = number
    if not record["response"].strip():
        add("$.response", "the response is empty")
    pool_name = "candidate pool" if reference.pool_mode == CLOSED else "open pool"
    for position, item_id in enumerate(record["ranked_item_ids"]):
        if item_id not in reference.item_ids:
            add(f"$.ranked_item_ids[{position}]", f"unknown item id {item_id!r}")
        elif item_id not in dialogue.pool:
            add(f"$.ranked_item_ids[{position}]",
                f"item {item_id!r} is not in the {'hidden ' if hidden else ''}dialogue's "
                f"{pool_name}")
    _check_citations(record, add, reference)


def _check_citations(record: dict, add, reference: SubmissionReference) -> None:
    citations = record.get("citations", [])
    for position, citation in enumerate(citations):
        if citation["review_id"] not in reference.review_ids:
            add(f"$.citations[{position}].review_id",
                f"label [{citation['label']}] maps to unknown review id {citation['review_id']!r}")
    mapped = {citation["label"] for citation in citations}
    for label in dict.fromkeys(m.label for m in extract_labels(record["response"])):
        if label not in mapped:
            add("$.response", f"label [{label}] has no entry in citations")


def _check_complete(reference: SubmissionReference, splits: Sequence[str], seen: dict,
                    name: str, issues: IssueCollector) -> int:
    count, hidden_incomplete = 0, False
    for dialogue_id, dialogue in reference.dialogues.items():
        if dialogue.split not in splits:
            continue
        count += 1
        missing = [i for i in dialogue.answered if (dialogue_id, i) not in seen]
        if missing and dialogue.split == HIDDEN:
            hidden_incomplete = True  # one message for the split, not a list of its turns
        elif missing:
            issues.add(name, None, "$", f"dialogue {dialogue_id!r} ({dialogue.split}): no answer "
                       f"for turn{'s' if len(missing) > 1 else ''} {', '.join(map(str, missing))}")
    if hidden_incomplete:
        issues.add(name, None, "$", HIDDEN_WHOLE)
    return count


def iter_turn_records(source, *, max_bytes: int = DEFAULT_MAX_BYTES,
                      max_line_bytes: int = DEFAULT_MAX_LINE_BYTES) -> Iterator[dict]:
    """The schema-valid lines of a (validated) `turn` submission as dicts, in file order.

    Raises FormatError at the end if any line is unreadable: stored files were validated on
    upload, so this only fires on a file changed behind Concord's back.
    """
    issues = IssueCollector()
    with open_source(source, name=DEFAULT_NAME[TURN], max_bytes=max_bytes) as (stream, name):
        for _, record in _json_lines(stream, name, SCHEMAS[TURN], issues, max_bytes=max_bytes,
                                     max_line_bytes=max_line_bytes):
            yield record
    issues.raise_if_any()


def submitted_turn(record: Mapping[str, Any]) -> SubmittedTurn:
    return SubmittedTurn(
        record["dialogue_id"], int(record["turn_index"]), record["response"],
        tuple(record["ranked_item_ids"]),
        tuple(Citation(c["label"], c["review_id"], c.get("quote", ""))
              for c in record.get("citations", [])),
        answered=(record.get("metadata") or {}).get("no_answer") is not True,
    )


def read_turn_submission(source, **limits) -> list[SubmittedTurn]:
    """A `turn` submission as the metrics' SubmittedTurn records."""
    return [submitted_turn(record) for record in iter_turn_records(source, **limits)]


def turn_line(record: Mapping[str, Any]) -> str:
    """One submission line in canonical key order (what Concord's baselines write)."""
    ordered = {key: record[key] for key in TURN_KEYS if key in record}
    return json.dumps(ordered, ensure_ascii=False) + "\n"


def write_turn_submission(records: Iterable[Mapping[str, Any]], path: Path) -> int:
    count = 0
    with Path(path).open("w", encoding="utf-8") as handle:
        for record in records:
            handle.write(turn_line(record))
            count += 1
    return count


# --- protocol `log` -------------------------------------------------------------------------


def validate_log_submission(source, *, reference: SubmissionReference,
                            max_bytes: int = DEFAULT_MAX_BYTES,
                            max_line_bytes: int = DEFAULT_MAX_LINE_BYTES,
                            progress: Progress | None = None) -> SubmissionSummary:
    """Check a `log` submission: unique log ids, known dialogue and item ids."""
    issues = IssueCollector()
    first_line: dict[str, int] = {}
    lines = 0
    with open_source(source, name=DEFAULT_NAME[LOG], max_bytes=max_bytes,
                     progress=progress) as (stream, name):
        for number, record in _json_lines(stream, name, SCHEMAS[LOG], issues,
                                          max_bytes=max_bytes, max_line_bytes=max_line_bytes,
                                          refuse_blank=True):
            lines += 1
            _check_log_line(record, name, number, reference, first_line, issues)
    if not lines and not issues:
        issues.add(name, None, "$", "the file has no logs")
    issues.raise_if_any()
    return SubmissionSummary(LOG, lines)


def _check_log_line(record, name, number, reference, first_line, issues) -> None:
    log_id = record["log_id"]
    if log_id in first_line:
        issues.add(name, number, "$.log_id",
                   f"duplicate log id {log_id!r} (first on line {first_line[log_id]})")
    else:
        first_line[log_id] = number
    if "dialogue_id" in record and record["dialogue_id"] not in reference.dialogues:
        issues.add(name, number, "$.dialogue_id", f"unknown dialogue id {record['dialogue_id']!r}")
    ids = [("$.ground_truth_item_ids", record.get("ground_truth_item_ids", []))]
    ids += [(f"$.turns[{i}].recommended_item_ids", t.get("recommended_item_ids", []))
            for i, t in enumerate(record["turns"])]
    for path, values in ids:
        for position, item_id in enumerate(values):
            if item_id not in reference.item_ids:
                issues.add(name, number, f"{path}[{position}]", f"unknown item id {item_id!r}")


def iter_log_records(source, *, max_bytes: int = DEFAULT_MAX_BYTES,
                     max_line_bytes: int = DEFAULT_MAX_LINE_BYTES) -> Iterator[dict]:
    """The schema-valid conversations of a (validated) `log` submission, in file order; raises
    FormatError at the end if any line is unreadable (see `iter_turn_records`)."""
    issues = IssueCollector()
    with open_source(source, name=DEFAULT_NAME[LOG], max_bytes=max_bytes) as (stream, name):
        for _, record in _json_lines(stream, name, SCHEMAS[LOG], issues, max_bytes=max_bytes,
                                     max_line_bytes=max_line_bytes):
            yield record
    issues.raise_if_any()


def log_dialogue_lines(source, *, max_bytes: int = DEFAULT_MAX_BYTES) -> list[tuple[int, str]]:
    """(line number, dialogue id) of every log of a (validated) `log` file that names one."""
    issues = IssueCollector()
    lines = []
    with open_source(source, name=DEFAULT_NAME[LOG], max_bytes=max_bytes) as (stream, name):
        for number, record in _json_lines(stream, name, SCHEMAS[LOG], issues,
                                          max_bytes=max_bytes,
                                          max_line_bytes=DEFAULT_MAX_LINE_BYTES):
            if record.get("dialogue_id"):
                lines.append((number, record["dialogue_id"]))
    issues.raise_if_any()
    return lines


def validate_submission(source, *, protocol: str, reference: SubmissionReference,
                        splits: Sequence[str] | None = None, **limits) -> SubmissionSummary:
    if protocol == TURN:
        return validate_turn_submission(source, reference=reference, splits=splits, **limits)
    if protocol == LOG:
        return validate_log_submission(source, reference=reference, **limits)
    raise ValueError(f"unknown protocol {protocol!r}")
