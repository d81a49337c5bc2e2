"""The responses a study can judge: the benchmark's reference system turns, or one
turn-protocol submission's."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterator
from dataclasses import dataclass, field

from django.conf import settings

from evaluation.lib.formats.submission import iter_turn_records
from evaluation.models import (
    EVALUATED_ACTIONS,
    Benchmark,
    Citation,
    Submission,
    Turn,
)

REFERENCE = "reference"


@dataclass
class Source:
    """Who answered: the benchmark's reference system turns, or one turn-protocol submission."""

    key: str
    system_id: int | None = None
    submission_id: int | None = None
    responses: dict[tuple[str, int], dict] = field(default_factory=dict)


def submission_records(submission: Submission) -> Iterator[dict]:
    """The lines of a stored turn-protocol submission (validated on upload), as dicts."""
    with submission.file.open("rb") as handle:
        yield from iter_turn_records(handle, max_bytes=settings.MAX_UPLOAD_BYTES)


def reference_source(benchmark: Benchmark) -> Source:
    source = Source(key=REFERENCE)
    turns = Turn.objects.filter(dialogue__benchmark=benchmark, role=Turn.Role.SYSTEM,
                                action__in=EVALUATED_ACTIONS).select_related("dialogue")
    citations = defaultdict(list)
    for c in (Citation.objects.filter(turn__dialogue__benchmark=benchmark)
              .select_related("review").order_by("position")):
        citations[c.turn_id].append({"label": c.label, "review_id": c.review.external_id,
                                     "quote": c.quote})
    for turn in turns:
        source.responses[(turn.dialogue.external_id, turn.index)] = {
            "text": turn.text, "citations": citations[turn.pk]}
    return source


def submission_source(submission: Submission) -> Source:
    source = Source(key=f"submission:{submission.pk}", system_id=submission.system_id,
                    submission_id=submission.pk)
    for record in submission_records(submission):
        source.responses[(str(record["dialogue_id"]), int(record["turn_index"]))] = {
            "text": record["response"],
            "citations": [{"label": c["label"], "review_id": c["review_id"],
                           "quote": c.get("quote", "")} for c in record.get("citations", [])],
        }
    return source
