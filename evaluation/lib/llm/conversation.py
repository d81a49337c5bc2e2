"""Conversation logs as LLM judges read them.

Implements the log pre-processing of CoRE (§6.5 and Fig. 13): a ``log`` submission
(formats spec §2: ``{log_id, dialogue_id?, turns: [{role, text, recommended_item_ids?}],
ground_truth_item_ids?, metadata?}``) is split into ``history`` (context, not rated) and
``interaction`` (rated), and the system's per-turn recommendation lists are concatenated into one
session list. The rendering is shared by the CoRE and PEPPER judges.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any
from xml.sax.saxutils import escape

USER_ROLES = frozenset({"user", "seeker"})
SYSTEM_ROLES = frozenset({"system", "assistant", "recommender"})


@dataclass(frozen=True)
class LogTurn:
    role: str  # "user" or "system"
    text: str
    recommended_item_ids: tuple[str, ...] = ()


@dataclass(frozen=True)
class ConversationLog:
    log_id: str
    turns: tuple[LogTurn, ...]
    ground_truth_item_ids: tuple[str, ...] = ()
    dialogue_id: str | None = None
    metadata: Mapping[str, Any] = field(default_factory=dict, hash=False, compare=False)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ConversationLog:
        turns = tuple(
            LogTurn(
                role=_normalize_role(str(turn["role"])),
                text=str(turn.get("text", "")),
                recommended_item_ids=tuple(str(i) for i in turn.get("recommended_item_ids") or ()),
            )
            for turn in data["turns"]
        )
        return cls(
            log_id=str(data["log_id"]),
            turns=turns,
            ground_truth_item_ids=tuple(str(i) for i in data.get("ground_truth_item_ids") or ()),
            dialogue_id=None if data.get("dialogue_id") is None else str(data["dialogue_id"]),
            metadata=dict(data.get("metadata") or {}),
        )

    @property
    def history_turn_count(self) -> int:
        """Leading turns that are context only, from ``metadata["history_turns"]`` (default 0).

        CoRE logs start with turns taken from the original dataset before the evaluated system
        joined; they help the judge understand the situation but are not the system's work.
        """
        count = int(self.metadata.get("history_turns", 0) or 0)
        return max(0, min(count, len(self.turns)))

    @property
    def history(self) -> tuple[LogTurn, ...]:
        return self.turns[: self.history_turn_count]

    @property
    def interaction(self) -> tuple[LogTurn, ...]:
        return self.turns[self.history_turn_count :]

    def session_recommendations(self) -> tuple[str, ...]:
        """The interaction's per-turn lists concatenated, first occurrence kept (r_session).

        Repeats are dropped so an item re-listed in every turn counts once, both for the judge
        (novelty and diversity count items) and for Recall@k on the session list.
        """
        seen: dict[str, None] = {}
        for turn in self.interaction:
            for item_id in turn.recommended_item_ids:
                seen.setdefault(item_id, None)
        return tuple(seen)


def _normalize_role(role: str) -> str:
    lowered = role.strip().lower()
    if lowered in USER_ROLES:
        return "user"
    if lowered in SYSTEM_ROLES:
        return "system"
    raise ValueError(f"unknown turn role {role!r}")


def as_log(log: ConversationLog | Mapping[str, Any]) -> ConversationLog:
    return log if isinstance(log, ConversationLog) else ConversationLog.from_dict(log)


def item_label(item_id: str, item_names: Mapping[str, str] | None) -> str:
    name = (item_names or {}).get(item_id)
    return name if name else item_id


def render_turns(turns: Sequence[LogTurn], indent: str = "    ") -> str:
    return "\n".join(f"{indent}<{turn.role}>{escape(turn.text)}</{turn.role}>" for turn in turns)


def render_log(
    log: ConversationLog,
    *,
    item_names: Mapping[str, str] | None = None,
    include_ground_truth: bool = True,
) -> str:
    """The log in CoRE's tagged layout: conversation, session list, ground truth when known."""
    history = render_turns(log.history) or "    (no earlier context)"
    interaction = render_turns(log.interaction) or "    (empty)"
    session = ", ".join(escape(item_label(i, item_names)) for i in log.session_recommendations())
    parts = [
        "<conversation>",
        "  <history>",
        "    <!-- earlier context: read it to understand the situation; do not rate it -->",
        history,
        "  </history>",
        "  <interaction>",
        "    <!-- rate the system turns in this part -->",
        interaction,
        "  </interaction>",
        "</conversation>",
        "<system_recommendation_list>",
        f"  {session or '(the system recommended no items)'}",
        "</system_recommendation_list>",
    ]
    if include_ground_truth:
        truth = ", ".join(escape(item_label(i, item_names)) for i in log.ground_truth_item_ids)
        parts += [
            "<groundtruth_list>",
            f"  {truth or '(unknown: judge against the interests the user expressed)'}",
            "</groundtruth_list>",
        ]
    return "\n".join(parts)


def render_plain_dialogue(
    turns: Sequence[LogTurn], *, user_label: str = "User", system_label: str = "Recommender"
) -> str:
    """A simple "Speaker: text" transcript, for judges whose papers use that layout (PEPPER)."""
    labels = {"user": user_label, "system": system_label}
    return "\n".join(f"{labels[turn.role]}: {turn.text}" for turn in turns)
