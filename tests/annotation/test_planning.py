"""Pure planning logic: blinding letters, sampling, and the next-item choice."""

from datetime import datetime, timedelta

from annotation.lib import blinding, handout, sampling
from annotation.lib.handout import Candidate, choose_next


def test_letters_are_a_stored_permutation_reproducible_per_seed_and_varying_by_dialogue():
    keys = ["reference", "submission:4", "submission:9"]
    first = blinding.assign_letters(keys, seed="study:d1")
    assert sorted(first.values()) == ["A", "B", "C"] and set(first) == set(keys)
    assert blinding.assign_letters(list(reversed(keys)), seed="study:d1") == first
    patterns = {tuple(blinding.assign_letters(keys, seed=f"study:d{n}").items())
                for n in range(30)}
    assert len(patterns) > 1  # a letter does not identify a system across dialogues


def test_letters_go_past_z():
    assert [blinding.letter_for(i) for i in (0, 25, 26, 27, 51, 52)] == [
        "A", "Z", "AA", "AB", "AZ", "BA"]


def units():
    made = []
    for n in range(12):
        difficulty = ("easy", "medium", "hard")[n % 3] if n < 9 else "hard"
        made.append(sampling.Unit(f"d{n:02}", 1, difficulty,
                                  frozenset({"ref", "sys"} if n != 0 else {"ref"})))
        made.append(sampling.Unit(f"d{n:02}", 3, difficulty, frozenset({"ref", "sys"})))
    return made


def test_the_default_sample_is_paired_reproducible_and_one_turn_per_dialogue():
    picks = sampling.sample_units(units(), sources=["ref", "sys"], size=5, seed=1)
    assert len(picks) == 5 and len({p.dialogue for p in picks}) == 5
    assert all(p.sources == ("ref", "sys") for p in picks)
    assert picks == sampling.sample_units(units(), sources=["ref", "sys"], size=5, seed=1)
    assert picks != sampling.sample_units(units(), sources=["ref", "sys"], size=5, seed=2)


def test_stratifying_by_difficulty_keeps_the_mix():
    picks = sampling.sample_units(units(), sources=["ref", "sys"], size=6, seed=3,
                                  stratify=sampling.DIFFICULTY)
    tiers = {u.dialogue: u.difficulty for u in units()}
    mix = sorted(tiers[p.dialogue] for p in picks)
    # 3 easy, 3 medium, 6 hard eligible -> 1.5, 1.5, 3 of 6 (the tie goes to the first tier)
    assert mix == ["easy", "easy", "hard", "hard", "hard", "medium"]


def test_stratifying_by_system_samples_each_system_separately():
    picks = sampling.sample_units(units(), sources=["ref", "sys"], size=4, seed=3,
                                  stratify=sampling.SYSTEM)
    assert sorted(p.sources for p in picks) == [("ref",)] * 4 + [("sys",)] * 4


def test_proportional_allocation_uses_largest_remainders_and_caps():
    assert sampling.proportional_allocation({"a": 5, "b": 3, "c": 2}, 5) == {"a": 3, "b": 1,
                                                                               "c": 1}
    assert sampling.proportional_allocation({"a": 1, "b": 1}, 10) == {"a": 1, "b": 1}


def cands(*specs):
    return [Candidate(item_id=i, kind=kind, labels=labels, holds=holds, target=2, order=i)
            for i, kind, labels, holds in specs]


def test_unfinished_work_comes_back_first_then_calibration_in_order():
    items = cands((1, "normal", 0, 0), (2, "calibration", 0, 0), (3, "calibration", 0, 0))
    args = {"member_seed": 1, "gold_rate": 0, "gold_done": 0, "regular_done": 0}
    assert choose_next(resume=[1], candidates=items, done={1}, **args).reason == "resume"
    decision = choose_next(resume=[], candidates=items, done=set(), **args)
    assert (decision.item_id, decision.reason) == (2, "calibration")
    assert choose_next(resume=[], candidates=items, done={2}, **args).item_id == 3


def test_items_are_handed_out_only_while_short_of_their_target():
    items = cands((1, "normal", 2, 0), (2, "normal", 1, 1), (3, "normal", 1, 0))
    args = {"member_seed": 1, "gold_rate": 0, "gold_done": 0, "regular_done": 0}
    assert choose_next(resume=[], candidates=items, done=set(), **args).item_id == 3
    assert choose_next(resume=[], candidates=items, done={3}, **args) is None


def test_items_closest_to_their_target_are_finished_first():
    items = cands((1, "normal", 0, 0), (2, "normal", 1, 0), (3, "normal", 0, 1))
    firsts = {choose_next(resume=[], candidates=items, done=set(), member_seed=seed,
                          gold_rate=0, gold_done=0, regular_done=0).item_id
              for seed in range(10)}
    assert firsts <= {2, 3} and len(firsts) == 2  # started items first, in random order


def test_each_annotator_gets_their_own_random_order():
    items = cands(*[(i, "normal", 0, 0) for i in range(1, 40)])
    firsts = {choose_next(resume=[], candidates=items, done=set(), member_seed=seed,
                          gold_rate=0, gold_done=0, regular_done=0).item_id
              for seed in range(10)}
    assert len(firsts) > 3


def test_gold_is_mixed_in_at_the_configured_rate_and_never_used_as_filler():
    assert not handout.wants_gold(gold_rate=0.25, gold_done=0, regular_done=2)
    assert handout.wants_gold(gold_rate=0.25, gold_done=0, regular_done=3)
    assert not handout.wants_gold(gold_rate=0.25, gold_done=1, regular_done=3)
    items = cands((1, "gold", 0, 0), (2, "normal", 0, 0))
    decision = choose_next(resume=[], candidates=items, done=set(), member_seed=1,
                           gold_rate=0.25, gold_done=0, regular_done=3)
    assert decision.reason == "gold"
    assert choose_next(resume=[], candidates=items, done={2}, member_seed=1, gold_rate=0.25,
                       gold_done=0, regular_done=0) is None


def test_staleness_and_remaining_estimate():
    now = datetime(2025, 1, 1, 12)
    assert handout.is_stale(now - timedelta(minutes=31), now, timedelta(minutes=30))
    assert not handout.is_stale(now - timedelta(minutes=5), now, timedelta(minutes=30))
    items = cands((1, "calibration", 0, 0), (2, "normal", 0, 0), (3, "normal", 2, 0),
                  (4, "gold", 0, 0))
    assert handout.remaining_for(candidates=items, done=set(), gold_rate=0.5) == 3
