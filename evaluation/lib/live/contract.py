"""The live-system contract, version `concord-live/1` (docs/formats.md §4): what Concord sends
to a live conversational recommender each turn and what it must answer.

The answer holds what a `turn` submission line holds (formats.md §2): the system's text
(`response`), its ranking of the benchmark's items (`ranked_item_ids`, best first) and optional
`citations` mapping the labels of quoted review spans to review ids. `validate_answer` checks an
answer completely and reports the first problem as a `LiveAnswerError` with a JSON path, so a
malformed answer is recorded as the dialogue's failure, never half used.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from evaluation.lib.metrics.quotes import extract_labels

CONTRACT = "concord-live/1"
ROLES = ("user", "system")
MAX_RANKED = 100
MAX_RESPONSE_CHARS = 20_000
_LABEL = re.compile(r"^[A-Za-z0-9_.-]{1,50}$")


class LiveAnswerError(ValueError):
    """The system answered, but not by the contract; `path` locates the problem and `kind`
    says which: `wrong_type` (a field of the wrong JSON type) or `invalid` (anything else)."""

    def __init__(self, path: str, message: str, kind: str = "invalid"):
        self.path, self.message, self.kind = path, message, kind
        super().__init__(f"{path}: {message}")


def _wrong_type(path: str, message: str) -> LiveAnswerError:
    return LiveAnswerError(path, message, "wrong_type")


@dataclass(frozen=True)
class HistoryTurn:
    role: str
    text: str
    ranked_item_ids: tuple[str, ...] = ()
    action: str | None = None  # the simulated user's act, when its simulator names one

    def as_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {"role": self.role, "text": self.text}
        if self.role == "system":
            data["ranked_item_ids"] = list(self.ranked_item_ids)
        if self.action:
            data["action"] = self.action
        return data


@dataclass(frozen=True)
class LiveRequest:
    """One turn to answer: the conversation so far and the user's new utterance."""

    benchmark: str
    dialogue_id: str
    turn_index: int  # the index the system's answer will have in the dialogue
    history: tuple[HistoryTurn, ...]
    utterance: str
    candidate_item_ids: tuple[str, ...] = ()  # empty: any item of the benchmark
    top_k: int = 10

    def as_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "contract": CONTRACT, "benchmark": self.benchmark, "dialogue_id": self.dialogue_id,
            "turn_index": self.turn_index, "history": [t.as_json() for t in self.history],
            "utterance": self.utterance, "top_k": self.top_k,
        }
        if self.candidate_item_ids:
            data["candidate_item_ids"] = list(self.candidate_item_ids)
        return data

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> LiveRequest:
        """A request as a live system receives it (used by in-process systems and tests)."""
        return cls(
            benchmark=str(data["benchmark"]), dialogue_id=str(data["dialogue_id"]),
            turn_index=int(data["turn_index"]),
            history=tuple(HistoryTurn(str(t["role"]), str(t["text"]),
                                      tuple(t.get("ranked_item_ids") or ()), t.get("action"))
                          for t in data.get("history") or ()),
            utterance=str(data["utterance"]),
            candidate_item_ids=tuple(data.get("candidate_item_ids") or ()),
            top_k=int(data.get("top_k") or 10),
        )

    def user_text(self) -> str:
        """Everything the user said, the new utterance included."""
        return " ".join([*(t.text for t in self.history if t.role == "user"), self.utterance])


@dataclass(frozen=True)
class LiveAnswer:
    response: str
    ranked_item_ids: tuple[str, ...]
    citations: tuple[Mapping[str, str], ...] = field(default_factory=tuple)

    def as_json(self) -> dict[str, Any]:
        return {"response": self.response, "ranked_item_ids": list(self.ranked_item_ids),
                "citations": [dict(c) for c in self.citations]}


def validate_answer(data: Any, *, item_ids: Collection[str], review_ids: Collection[str],
                    candidate_item_ids: Sequence[str] = ()) -> LiveAnswer:
    """The answer when it follows the contract, else LiveAnswerError (first problem)."""
    if not isinstance(data, Mapping):
        raise _wrong_type("$", f"expected a JSON object, got {type(data).__name__}")
    response = data.get("response")
    if response is None:
        raise LiveAnswerError("$.response", "required string is missing")
    if not isinstance(response, str):
        raise _wrong_type("$.response", f"expected a string, got {type(response).__name__}")
    if not response.strip():
        raise LiveAnswerError("$.response", "the response is empty")
    if len(response) > MAX_RESPONSE_CHARS:
        raise LiveAnswerError("$.response", f"over {MAX_RESPONSE_CHARS} characters")
    ranked = data.get("ranked_item_ids")
    if ranked is None:
        raise LiveAnswerError("$.ranked_item_ids", "required list of item ids is missing")
    if not isinstance(ranked, list):
        raise _wrong_type("$.ranked_item_ids", f"expected a list of item ids, got "
                                               f"{type(ranked).__name__}")
    if len(ranked) > MAX_RANKED:
        raise LiveAnswerError("$.ranked_item_ids", f"at most {MAX_RANKED} items, got {len(ranked)}")
    pool = set(candidate_item_ids)
    seen: set[str] = set()
    for position, item_id in enumerate(ranked):
        path = f"$.ranked_item_ids[{position}]"
        if not isinstance(item_id, str):
            raise _wrong_type(path, f"expected an item id string, got "
                                    f"{type(item_id).__name__}")
        if item_id not in item_ids:
            raise LiveAnswerError(path, f"unknown item id {item_id!r} (not in the benchmark)")
        if pool and item_id not in pool:
            raise LiveAnswerError(path, f"item {item_id!r} is not in the request's "
                                        "candidate_item_ids")
        if item_id in seen:
            raise LiveAnswerError(path, f"item {item_id!r} is ranked twice")
        seen.add(item_id)
    citations = data.get("citations", [])
    if citations is None:
        citations = []
    if not isinstance(citations, list):
        raise _wrong_type("$.citations", f"expected a list, got {type(citations).__name__}")
    checked, labels = [], set()
    for position, citation in enumerate(citations):
        path = f"$.citations[{position}]"
        if not isinstance(citation, Mapping):
            raise _wrong_type(path, "expected an object {label, review_id, quote?}")
        label, review_id = citation.get("label"), citation.get("review_id")
        if not isinstance(label, str) or not _LABEL.match(label):
            raise LiveAnswerError(f"{path}.label", "expected a label such as R1")
        if not isinstance(review_id, str):
            raise _wrong_type(f"{path}.review_id", f"expected a review id string, got "
                                                   f"{type(review_id).__name__}")
        if review_id not in review_ids:
            raise LiveAnswerError(f"{path}.review_id",
                                  f"label [{label}] maps to unknown review id {review_id!r}")
        entry = {"label": label, "review_id": review_id}
        if citation.get("quote") is not None:
            if not isinstance(citation["quote"], str):
                raise _wrong_type(f"{path}.quote", "expected a string")
            entry["quote"] = citation["quote"]
        labels.add(label)
        checked.append(entry)
    for mention in extract_labels(response):
        if mention.label not in labels:
            raise LiveAnswerError("$.response", f"label [{mention.label}] has no entry in "
                                                "citations")
    return LiveAnswer(response=response, ranked_item_ids=tuple(ranked), citations=tuple(checked))
