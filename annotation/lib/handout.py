"""Which item an annotator gets next (annotation.md §Assignment and quality).

Order of preference:
1. their own unfinished work (an open assignment, or one with a saved draft);
2. calibration items they have not done, in their order;
3. a gold item, when their share of gold so far is below the configured rate;
4. items still short of their label target (overlap k, or k + 1 after a categorical tie),
   counting submitted labels and live hand-outs: those closest to their target first, so
   items reach k labels (and become usable) early instead of all staying half-done; among
   equals, in the annotator's own random order.
   Gold is never used as filler once the regular items run out, so the gold rate stays what
   the author configured.

An assignment whose annotator has been inactive longer than the study's timeout no longer holds
its slot, so abandoned items are handed to someone else and the overlap target is reached.
Everything here is plain data in, a decision out; the service reads and locks the rows.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from datetime import datetime, timedelta

CALIBRATION, GOLD, NORMAL = "calibration", "gold", "normal"


@dataclass(frozen=True)
class Candidate:
    item_id: int
    kind: str
    labels: int = 0  # submitted labels by annotators who count
    holds: int = 0  # live hand-outs to other annotators
    target: int = 1
    order: int = 0  # the position in the study's creation order (calibration order)


@dataclass(frozen=True)
class Decision:
    item_id: int
    reason: str  # resume / calibration / gold / needs_labels


def order_key(member_seed: int, item_id: int) -> int:
    """The annotator's stable random rank of an item (a keyed hash, not Python's hash())."""
    digest = hashlib.blake2b(f"{member_seed}:{item_id}".encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big")


def is_stale(last_active_at: datetime, now: datetime, timeout: timedelta) -> bool:
    return last_active_at < now - timeout


def wants_gold(*, gold_rate: float, gold_done: int, regular_done: int) -> bool:
    """Mix gold in so that after n items about gold_rate * n of them were gold."""
    if gold_rate <= 0:
        return False
    return gold_done + 1 <= gold_rate * (gold_done + regular_done + 1)


def choose_next(*, resume: list[int], candidates: list[Candidate], done: set[int],
                member_seed: int, gold_rate: float, gold_done: int,
                regular_done: int) -> Decision | None:
    """The next item for one annotator, or None when there is nothing left for them.

    `resume` lists their unfinished item ids in the order they got them; `done` holds every
    item they have submitted or been handed (they never label an item twice).
    """
    if resume:
        return Decision(resume[0], "resume")
    fresh = [c for c in candidates if c.item_id not in done]
    calibration = sorted((c for c in fresh if c.kind == CALIBRATION), key=lambda c: c.order)
    if calibration:
        return Decision(calibration[0].item_id, "calibration")

    def rank(c: Candidate) -> int:
        return order_key(member_seed, c.item_id)

    gold = sorted((c for c in fresh if c.kind == GOLD), key=rank)
    if gold and wants_gold(gold_rate=gold_rate, gold_done=gold_done, regular_done=regular_done):
        return Decision(gold[0].item_id, "gold")
    short = [c for c in fresh if c.kind == NORMAL and c.labels + c.holds < c.target]
    if short:
        best = min(short, key=lambda c: (-(c.labels + c.holds), rank(c)))
        return Decision(best.item_id, "needs_labels")
    return None


def remaining_for(*, candidates: list[Candidate], done: set[int], gold_rate: float) -> int:
    """How many more items this annotator can expect (calibration, short items, their gold)."""
    fresh = [c for c in candidates if c.item_id not in done]
    calibration = sum(c.kind == CALIBRATION for c in fresh)
    short = sum(c.kind == NORMAL and c.labels + c.holds < c.target for c in fresh)
    gold_left = sum(c.kind == GOLD for c in fresh)
    gold = min(gold_left, round(short * gold_rate / (1 - gold_rate))) if gold_rate < 1 else 0
    return calibration + short + gold


ESTIMATE_MIN_SAMPLE = 5  # own item times needed before they replace the study's figure
ESTIMATE_WINDOW = 10  # the most recent item times the estimate looks at


def seconds_per_item(recent_ms: list[int], default_seconds: float) -> float:
    """The time one more item will take: the median of the annotator's most recent
    ESTIMATE_WINDOW focused item times (newest first), once there are ESTIMATE_MIN_SAMPLE of
    them; before that the study's own figure. A median of a window does not jump when one
    item took ten minutes (a coffee break) or five seconds (a practice item), as a mean of
    three did ("about 54 min left", then "about 5 min left")."""
    times = sorted(ms for ms in recent_ms[:ESTIMATE_WINDOW] if ms > 0)
    if len(times) < ESTIMATE_MIN_SAMPLE:
        return float(default_seconds)
    middle = len(times) // 2
    median = times[middle] if len(times) % 2 else (times[middle - 1] + times[middle]) / 2
    return median / 1000
