"""Dialogue-level recovery metrics for Trace (§6.3, Appendix J and Appendix N).

A turn "hits" when the system's top-k (k = 1 by default: the item it actually recommends)
contains a gold item of that reference turn.
- TSR (task success rate): 1 if any recommend/compare turn of the dialogue hits, else 0.
- T2R (turns to first correct recommendation): the 1-based count of recommend/compare turns up
  to and including the first hit; lower is better. The paper does not say what a dialogue
  without any hit gets. Its Table 5 pairs low TSR with high T2R, which fits a penalty, so by
  default such a dialogue scores (number of its recommend/compare turns + 1); with
  ``no_hit="exclude"`` it is left out (None) instead.
  The suite also reports, per dialogue, whether this rule applied (``t2r_no_hit``), so a page
  can say how many dialogues the number rests on a rule rather than a hit.
- Rejection recovery (Appendix J: "the fraction of reject_and_refine *episodes* whose immediately
  following recommend/compare turn hits a gold POI"): pooled over all episodes of all
  dialogues, so every episode weighs the same. :func:`rejection_episodes` lists the episodes of
  one dialogue (rejections with no later recommendation are not episodes); the suite stores one
  0/1 unit per episode and the leaderboard mean over those units *is* the pooled rate (one
  dialogue 1/1 and another 0/3 give 1/4 = 0.25). :func:`rejection_recovery` — the mean of
  per-dialogue rates, 0.50 in that example — stays as the sensitivity variant
  ``rejection_recovery_dialogue_mean``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from evaluation.lib.metrics.types import REJECT_ACTION, ReferenceDialogue

PENALIZE = "penalize"
EXCLUDE = "exclude"
# What T2R gives a dialogue without a hit, in words (pages, exports, the metric's description).
NO_HIT_RULES = {PENALIZE: "turns + 1", EXCLUDE: "excluded"}


def no_hit_note(rule: str | None, no_hit_share: float | None, dialogues: int) -> dict | None:
    """The rule T2R used for dialogues without a hit and how many dialogues it applies to.

    ``no_hit_share`` is the run's mean of ``t2r_no_hit`` (a 0/1 per dialogue with
    recommend/compare turns) over ``dialogues`` dialogues, so share × dialogues is the count.
    RULE is the suite's ``t2r_no_hit`` option (None: the default, penalize). None when the run
    has no such dialogues to report on.
    """
    if no_hit_share is None or not dialogues:
        return None
    rule = rule or PENALIZE
    if rule not in NO_HIT_RULES:
        raise ValueError(f"unknown T2R no-hit rule {rule!r}")
    count = round(no_hit_share * dialogues)
    return {"rule": rule, "rule_text": NO_HIT_RULES[rule], "dialogues": count, "of": dialogues,
            "text": f"no hit: {NO_HIT_RULES[rule]} ({count} of {dialogues} dialogues)"}


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


def rejection_episodes(
    dialogue: ReferenceDialogue, hit_by_turn: Mapping[int, bool]
) -> list[tuple[int, bool]]:
    """(index of the reject_and_refine user turn, did the next recommend/compare turn hit?).

    ``hit_by_turn`` maps the index of each recommend/compare system turn to its hit flag.
    """
    episodes: list[tuple[int, bool]] = []
    turns = dialogue.turns
    for position, turn in enumerate(turns):
        if turn.role != "user" or turn.action != REJECT_ACTION:
            continue
        follow_up = next(
            (later for later in turns[position + 1 :] if later.is_recommendation), None
        )
        if follow_up is not None:
            episodes.append((turn.index, bool(hit_by_turn.get(follow_up.index, False))))
    return episodes


def pooled_rejection_recovery(episodes_per_dialogue: Sequence[Sequence[tuple[int, bool]]]):
    """Appendix J's rate over many dialogues: recovered episodes / all episodes (None if none)."""
    outcomes = [hit for episodes in episodes_per_dialogue for _, hit in episodes]
    return sum(outcomes) / len(outcomes) if outcomes else None


def rejection_recovery(
    dialogue: ReferenceDialogue, hit_by_turn: Mapping[int, bool]
) -> float | None:
    """One dialogue's rate: its recovered episodes / its episodes (None without episodes).

    Averaging this over dialogues is the *sensitivity variant*, not the paper's pooled rate.
    """
    return pooled_rejection_recovery([rejection_episodes(dialogue, hit_by_turn)])
