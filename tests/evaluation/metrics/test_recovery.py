"""TSR, T2R and rejection recovery."""

import pytest

from evaluation.lib.metrics.recovery import (
    EXCLUDE,
    pooled_rejection_recovery,
    rejection_episodes,
    rejection_recovery,
    task_success,
    turns_to_first_hit,
)
from evaluation.lib.metrics.types import ReferenceDialogue, ReferenceTurn


def test_tsr_is_one_when_any_turn_hits():
    assert task_success([False, True, False]) == 1.0
    assert task_success([False, False]) == 0.0
    assert task_success([]) is None


def test_t2r_counts_recommendation_turns_up_to_the_first_hit():
    assert turns_to_first_hit([True]) == 1.0
    assert turns_to_first_hit([False, False, True, True]) == 3.0


def test_t2r_without_any_hit_is_turn_count_plus_one_by_default():
    assert turns_to_first_hit([False, False, False]) == 4.0


def test_t2r_without_any_hit_can_be_excluded_instead():
    assert turns_to_first_hit([False, False], no_hit=EXCLUDE) is None
    assert turns_to_first_hit([False, True], no_hit=EXCLUDE) == 2.0


def _dialogue(*turns):
    return ReferenceDialogue(
        "d1",
        "test",
        {},
        (),
        tuple(ReferenceTurn(index, role, "", action) for index, (role, action) in enumerate(turns)),
    )


DIALOGUE = _dialogue(
    ("user", "greet_and_seek"),
    ("system", "recommend"),  # 1
    ("user", "reject_and_refine"),
    ("system", "ask_preference"),  # 3: not a recommendation, skipped
    ("user", "provide_preference"),
    ("system", "recommend"),  # 5: the repair attempt for the first rejection
    ("user", "reject_and_refine"),
    ("system", "compare"),  # 7: the repair attempt for the second rejection
    ("user", "reject_and_refine"),  # no recommendation follows: not counted
    ("system", "farewell"),
)


def test_rejection_recovery_reads_the_next_recommend_or_compare_turn():
    assert rejection_recovery(DIALOGUE, {1: False, 5: True, 7: False}) == 0.5
    assert rejection_recovery(DIALOGUE, {1: True, 5: True, 7: True}) == 1.0


def test_missing_hit_flag_counts_as_a_miss():
    assert rejection_recovery(DIALOGUE, {5: True}) == 0.5


def test_dialogue_without_rejections_is_excluded_from_rejection_recovery():
    plain = _dialogue(("user", "greet_and_seek"), ("system", "recommend"))
    assert rejection_recovery(plain, {1: True}) is None


def test_episodes_name_the_rejecting_user_turn_and_the_outcome():
    assert rejection_episodes(DIALOGUE, {1: False, 5: True, 7: False}) == [(2, True), (6, False)]


def test_pooled_rate_weighs_every_episode_the_same():
    # Appendix J: one dialogue 1/1, another 0/3 -> 1/4, not the mean of rates (0.5).
    assert pooled_rejection_recovery([[(2, True)], [(2, False), (4, False), (6, False)]]) == 0.25
    assert pooled_rejection_recovery([[], []]) is None


def test_no_hit_note_says_the_rule_and_how_many_dialogues_it_applies_to():
    from evaluation.lib.metrics.recovery import no_hit_note

    # t2r_no_hit is 0/1 per dialogue: a mean of 0.25 over 20 dialogues is 5 without a hit.
    note = no_hit_note(None, 0.25, 20)  # no option stored: the default rule, penalize
    assert note == {"rule": "penalize", "rule_text": "turns + 1", "dialogues": 5, "of": 20,
                    "text": "no hit: turns + 1 (5 of 20 dialogues)"}
    assert no_hit_note("exclude", 2 / 3, 3)["text"] == "no hit: excluded (2 of 3 dialogues)"
    assert no_hit_note("penalize", None, 0) is None
    with pytest.raises(ValueError, match="unknown T2R no-hit rule"):
        no_hit_note("ignore", 0.5, 2)
