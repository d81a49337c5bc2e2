"""Dialogue-level recovery metrics for Trace (§6.3, Appendix J and Appendix N).

A turn "hits" when the system's top-k (k = 1 by default: the item it actually recommends)
contains a gold item of that reference turn.
- TSR (task success rate): 1 if any recommend/compare turn of the dialogue hits, else 0.
- T2R (turns to first correct recommendation): the 1-based count of recommend/compare turns up
  to and including the first hit; lower is better. The paper does not say what a dialogue
  without any hit gets. Its Table 5 pairs low TSR with high T2R, which fits a penalty, so by
  default such a dialogue scores (number of its recommend/compare turns + 1); with
  ``no_hit="exclude"`` it is left out (None) instead.
- Rejection recovery: share of the user's reject_and_refine turns whose next recommend/compare
  system turn hits. Rejections with no later recommendation are not counted; a dialogue without
  any counted rejection is excluded (None).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from evaluation.lib.metrics.types import REJECT_ACTION, ReferenceDialogue

PENALIZE = "penalize"
EXCLUDE = "exclude"


def task_success(hits: Sequence[bool]) -> float | None:
    """TSR for one dialogue: 1.0 if any recommend/compare turn hits; None without such turns."""
    if not hits:
        return None
    return 1.0 if any(hits) else 0.0


def turns_to_first_hit(hits: Sequence[bool], no_hit: str = PENALIZE) -> float | None:
    """T2R for one dialogue, from its recommend/compare turns' hit flags in dialogue order."""
    if not hits:
        return None
    for position, hit in enumerate(hits, start=1):
        if hit:
            return float(position)
    return float(len(hits) + 1) if no_hit == PENALIZE else None


def rejection_recovery(
    dialogue: ReferenceDialogue, hit_by_turn: Mapping[int, bool]
) -> float | None:
    """Share of reject_and_refine user turns whose next recommend/compare turn hits.

    ``hit_by_turn`` maps the index of each recommend/compare system turn to its hit flag.
    """
    outcomes: list[bool] = []
    turns = dialogue.turns
    for position, turn in enumerate(turns):
        if turn.role != "user" or turn.action != REJECT_ACTION:
            continue
        follow_up = next(
            (later for later in turns[position + 1 :] if later.is_recommendation), None
        )
        if follow_up is not None:
            outcomes.append(hit_by_turn.get(follow_up.index, False))
    if not outcomes:
        return None
    return sum(outcomes) / len(outcomes)
