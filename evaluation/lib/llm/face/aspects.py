"""The seven FACE aspects (FACE §3.1, scales as released in CRSArena-Eval: relevance 0–2).

Turn-level aspects are scored per system turn from that turn's particles; dialogue-level
aspects from all particles of the dialogue (FACE §2.2). `label_fields` are the names a human
study may give the aspect: the FACE annotation form (`face.<key>`) and the CRSArena-Eval import.
"""

from __future__ import annotations

from dataclasses import dataclass

TURN, DIALOGUE = "turn", "dialogue"


@dataclass(frozen=True)
class FaceAspect:
    key: str
    level: str  # "turn" or "dialogue"
    low: int
    high: int
    question: str
    label_fields: tuple[str, ...]

    @property
    def metric(self) -> str:
        return face_metric(self.key)

    @property
    def scores(self) -> tuple[int, ...]:
        return tuple(range(self.low, self.high + 1))


def face_metric(aspect: str) -> str:
    return f"face.{aspect}"


def _aspect(key, level, low, high, question, *extra_fields) -> FaceAspect:
    return FaceAspect(key, level, low, high, question, (f"face.{key}", key, *extra_fields))


ASPECTS: dict[str, FaceAspect] = {a.key: a for a in (
    _aspect("relevance", TURN, 0, 2,
            "Does the assistant's response make sense and meet the user's interests?"),
    _aspect("interestingness", TURN, 0, 2,
            "Does the response make the user want to continue the conversation?"),
    _aspect("understanding", DIALOGUE, 0, 2,
            "Does the assistant understand the user's request and try to fulfil it?"),
    _aspect("task_completion", DIALOGUE, 0, 2,
            "Does the assistant make recommendations that the user finally accepts?"),
    _aspect("interest_arousal", DIALOGUE, 0, 2,
            "Does the assistant try to spark the user's interest in something new?"),
    _aspect("efficiency", DIALOGUE, 0, 1,
            "Does the assistant suggest items matching the user's interests within the first "
            "three interactions?"),
    _aspect("overall", DIALOGUE, 0, 4,
            "What is the overall impression of the assistant's performance?",
            "dialogue_overall"),
)}
TURN_ASPECTS = tuple(k for k, a in ASPECTS.items() if a.level == TURN)
DIALOGUE_ASPECTS = tuple(k for k, a in ASPECTS.items() if a.level == DIALOGUE)


def parse_aspects(names) -> tuple[str, ...]:
    """The aspect keys NAMES names, in the canonical order; a clear error for an unknown one."""
    wanted = [n.strip() for n in names if n and n.strip()]
    unknown = [n for n in wanted if n not in ASPECTS]
    if unknown:
        raise ValueError(f"unknown FACE aspect(s) {', '.join(unknown)} (choose from "
                         f"{', '.join(ASPECTS)})")
    return tuple(k for k in ASPECTS if k in wanted)
