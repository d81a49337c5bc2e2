"""The leakage audit of a simulated dialogue (docs/simulation.md, "Leakage audit").

Zhu, Huang & Sang (2024), "How Reliable is Your Simulator?" (arXiv:2403.16416), showed that
iEvaLM-style evaluation is inflated by *data leakage*: the target item's title appears in the
conversation history the system is given, or in the simulated user's own replies, and the system
then "recommends" what it was told; many of those dialogues succeed at the first turn. Their
sanitised setting ("-Both") scores only the dialogues with neither kind of leak. Concord audits
every simulated dialogue for the same failures, per dialogue with the reasons:

- `named_target`: a user turn names a target item *before the system showed it to the user*
  (a user who reacts to an item the system already recommended leaks nothing), by its id
  (`id`), its exact name (`name`) or a near spelling of its name (`fuzzy`, the rule below);
- `target_in_history`: the user's seeded history (the seen items a simulator reads, and their
  reviews) contains a target: a seen item is a target (`seen`), or a review of a seen item
  names one (`review`);
- `first_turn_success`: the first system turn already puts a target within the simulator's
  success cut-off (the iEvaLM user's `accept_at`, else the items shown to the user). It is a
  symptom Zhu et al. report beside leakage, not leakage itself (a good system may find the
  target from a leak-free opening), so it is flagged and counted, but it does not make a
  dialogue *leaked*: `leaked` = a `named_target` or `target_in_history` flag, the two leaks
  that "-Both" removes.

The fuzzy rule. Text and names are compared as *tokens*: Unicode NFKD with the accents
dropped, lower case, runs of letters and digits (so "Café-Bar" is `cafe bar`). A name matches
exactly when its tokens appear consecutively in the text. Otherwise, for names of at least
MIN_FUZZY_CHARS characters (tokens joined by single spaces), every window of n − 1, n and
n + 1 consecutive tokens of the text (n = the name's tokens) is compared with the name by
`difflib.SequenceMatcher.ratio` (2·matches / total length); the best window at or above
FUZZY_THRESHOLD (0.85) is a fuzzy match. 0.85 accepts a dropped article ("harbor grill" for
"The Harbor Grill": 0.857), a spelling variant ("Harbour Grill": 0.96) or one typo in a
word of six letters, and rejects names that share one of two words ("Harbor Inn" for "Harbor
Grill": 0.73). Shorter names ("Inn", "Bo") only match exactly, and an id only as a whole
token of the raw text (case-insensitive, not inside a longer id).
"""

from __future__ import annotations

import re
import unicodedata
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from difflib import SequenceMatcher

FUZZY_THRESHOLD = 0.85
MIN_FUZZY_CHARS = 6
AUDIT_VERSION = "1.0"

NAMED_TARGET = "named_target"
TARGET_IN_HISTORY = "target_in_history"
FIRST_TURN_SUCCESS = "first_turn_success"
LEAK_KINDS = (NAMED_TARGET, TARGET_IN_HISTORY)  # what "-Both" removes
KIND_LABELS = {
    NAMED_TARGET: "the user named a target before it was shown",
    TARGET_IN_HISTORY: "the user's seeded history contains a target",
    FIRST_TURN_SUCCESS: "a target was found at the first turn",
}
# The sanitised protocol of Zhu et al. (2024): the leaked dialogues removed, then re-scored.
SANITISED = "sanitised-both"
SANITISED_LABEL = "sanitised (-Both): leaked dialogues removed"


@dataclass(frozen=True)
class Target:
    id: str
    name: str


@dataclass(frozen=True)
class Flag:
    kind: str  # NAMED_TARGET, TARGET_IN_HISTORY or FIRST_TURN_SUCCESS
    item_id: str
    match: str  # id, name, fuzzy (named); seen, review (history); rank (first turn)
    turn: int | None = None  # the turn's index in the dialogue (None: the history)
    score: float | None = None  # the fuzzy ratio, or the target's rank at the first turn
    evidence: str = ""  # the words that matched, or the seen item that names the target

    def as_json(self) -> dict:
        return {"kind": self.kind, "item_id": self.item_id, "match": self.match,
                "turn": self.turn, "score": self.score, "evidence": self.evidence}


@dataclass(frozen=True)
class DialogueAudit:
    flags: tuple[Flag, ...]

    @property
    def leaked(self) -> bool:
        return any(f.kind in LEAK_KINDS for f in self.flags)

    @property
    def first_turn_success(self) -> bool:
        return any(f.kind == FIRST_TURN_SUCCESS for f in self.flags)

    @property
    def kinds(self) -> list[str]:
        return sorted({f.kind for f in self.flags})

    def as_json(self) -> dict:
        return {"version": AUDIT_VERSION, "leaked": self.leaked,
                "first_turn_success": self.first_turn_success, "kinds": self.kinds,
                "flags": [f.as_json() for f in self.flags]}


def tokens(text: str) -> list[str]:
    """TEXT as comparable tokens: NFKD without accents, lower case, letters and digits."""
    plain = unicodedata.normalize("NFKD", text or "")
    plain = "".join(c for c in plain if not unicodedata.combining(c))
    return re.findall(r"[^\W_]+", plain.casefold())


def _mentions_id(text: str, item_id: str) -> bool:
    if not item_id:
        return False
    pattern = r"(?<![\w-])" + re.escape(item_id) + r"(?![\w-])"
    return re.search(pattern, text or "", flags=re.IGNORECASE) is not None


def name_match(text: str, name: str) -> tuple[str, float, str] | None:
    """(`name` or `fuzzy`, ratio, the words matched) when TEXT names NAME, else None."""
    words, wanted = tokens(text), tokens(name)
    if not words or not wanted:
        return None
    n = len(wanted)
    for i in range(len(words) - n + 1):
        if words[i:i + n] == wanted:
            return "name", 1.0, " ".join(wanted)
    joined = " ".join(wanted)
    if len(joined) < MIN_FUZZY_CHARS:
        return None
    best, best_window = 0.0, ""
    for size in {max(1, n - 1), n, n + 1}:
        for i in range(len(words) - size + 1):
            window = " ".join(words[i:i + size])
            matcher = SequenceMatcher(None, window, joined, autojunk=False)
            if matcher.real_quick_ratio() < FUZZY_THRESHOLD or \
                    matcher.quick_ratio() < FUZZY_THRESHOLD:
                continue
            ratio = matcher.ratio()
            if ratio > best:
                best, best_window = ratio, window
    if best >= FUZZY_THRESHOLD:
        return "fuzzy", round(best, 4), best_window
    return None


def item_mention(text: str, target: Target) -> tuple[str, float, str] | None:
    """How TEXT names TARGET: by id (`id`), exact name (`name`) or near name (`fuzzy`)."""
    if _mentions_id(text, target.id):
        return "id", 1.0, target.id
    return name_match(text, target.name)


def audit_dialogue(*, turns: Sequence[Mapping], targets: Sequence[Target],
                   seen: Sequence[tuple[str, Sequence[str]]] = (), shown_k: int = 5,
                   success_k: int | None = None) -> DialogueAudit:
    """The flags of one simulated dialogue.

    TURNS: the stored turns (`role`, `text`, `index`; system turns with `ranked_item_ids`);
    TARGETS: the user's target items; SEEN: (seen item id, its review texts) of the user's
    history; SHOWN_K: how many of a system turn's items the user sees (a target the user saw
    may be named afterwards); SUCCESS_K: the simulator's success cut-off (default SHOWN_K)."""
    flags: list[Flag] = []
    by_id = {t.id: t for t in targets}
    for seen_id, reviews in seen:
        if seen_id in by_id:
            flags.append(Flag(TARGET_IN_HISTORY, seen_id, "seen", evidence=seen_id))
            continue
        for target in targets:
            hit = next((m for m in (item_mention(r, target) for r in reviews) if m), None)
            if hit is not None:
                flags.append(Flag(TARGET_IN_HISTORY, target.id, "review", score=hit[1],
                                  evidence=f"a review of {seen_id}: {hit[2]}"))
    shown_before: set[str] = set()
    first_system = True
    for position, turn in enumerate(turns):
        index = turn.get("index", position)
        if turn.get("role") == "user":
            for target in targets:
                if target.id in shown_before:
                    continue
                hit = item_mention(turn.get("text", ""), target)
                if hit is not None:
                    flags.append(Flag(NAMED_TARGET, target.id, hit[0], turn=index,
                                      score=hit[1], evidence=hit[2]))
        elif turn.get("role") == "system":
            ranked = list(turn.get("ranked_item_ids") or ())
            if first_system:
                cut = success_k or shown_k
                for rank, item in enumerate(ranked[:cut], start=1):
                    if item in by_id:
                        flags.append(Flag(FIRST_TURN_SUCCESS, item, "rank", turn=index,
                                          score=float(rank)))
                first_system = False
            shown_before.update(ranked[:shown_k])
    return DialogueAudit(tuple(flags))


def audit_summary(audits: Iterable[Mapping]) -> dict:
    """The share of leaked dialogues of stored audits (`DialogueAudit.as_json()`), and the
    count per kind of flag (a dialogue counts once per kind)."""
    audits = list(audits)
    kinds = Counter(kind for a in audits for kind in a.get("kinds", ()))
    leaked = sum(1 for a in audits if a.get("leaked"))
    first = sum(1 for a in audits if a.get("first_turn_success"))
    total = len(audits)
    return {"version": AUDIT_VERSION, "dialogues": total, "leaked": leaked,
            "share": leaked / total if total else None, "first_turn_success": first,
            "first_turn_share": first / total if total else None,
            "by_kind": {k: kinds.get(k, 0) for k in KIND_LABELS}}


def behaviour_summary(dialogues: Iterable[Sequence[Mapping]]) -> dict:
    """How the simulated users behaved over DIALOGUES (each its stored turns): the number of
    user turns and their mean length in words (whitespace-separated), and the mean number of
    system turns per dialogue (issue 32's behaviour figures, beside the leakage share)."""
    words, user_turns, system_turns, total = 0, 0, 0, 0
    for turns in dialogues:
        total += 1
        for turn in turns:
            if turn.get("role") == "user":
                user_turns += 1
                words += len(str(turn.get("text", "")).split())
            elif turn.get("role") == "system":
                system_turns += 1
    return {"dialogues": total, "user_turns": user_turns,
            "mean_user_turn_words": words / user_turns if user_turns else None,
            "mean_system_turns": system_turns / total if total else None}
