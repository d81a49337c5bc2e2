"""FACE's pure parts: Eq. 1 and the aggregation computed by hand from given logprobs, particle
parsing, UCB selection (Algorithm 2) and the beam step on a small deterministic problem."""

import math
import random

import pytest

from evaluation.lib.llm.face.aspects import ASPECTS, parse_aspects
from evaluation.lib.llm.face.engine import aggregate, unit_uncertainty
from evaluation.lib.llm.face.optimize import (
    beam_select,
    parse_rewrites,
    split_dialogues,
    ucb_select,
)
from evaluation.lib.llm.face.particles import parse_particles
from evaluation.lib.llm.face.scoring import (
    MASS_FLAG,
    LogprobsUnavailable,
    ParticleScore,
    expected_score,
    face_score,
    grade_position,
    score_from_answer,
    score_uncertainty,
)
from evaluation.lib.llm.gateway import TokenLogprob

ln = math.log


def test_eq1_expectation_by_hand():
    # P(0)=0.1, P(1)=0.2, P(2)=0.6 and 0.1 on a non-grade token: the allowed mass is 0.9.
    score = expected_score([(" 2", ln(0.6)), ("1", ln(0.2)), ("0", ln(0.1)), ("x", ln(0.1))],
                           [0, 1, 2])
    assert score.value == pytest.approx((0 * 0.1 + 1 * 0.2 + 2 * 0.6) / 0.9)  # 1.5556
    assert score.distribution == pytest.approx({0: 0.1 / 0.9, 1: 0.2 / 0.9, 2: 0.6 / 0.9})
    assert score.mass_outside == pytest.approx(0.1)
    assert not score.flagged


def test_eq1_merges_spellings_of_a_grade_and_flags_mass_outside():
    # " 1" and "1" are the same grade; 3 is outside a 0-2 scale; only 0.5 of the mass counts.
    score = expected_score([("1", ln(0.2)), (" 1", ln(0.1)), ("3", ln(0.3)), ("0", ln(0.2))],
                           [0, 1, 2])
    assert score.distribution == pytest.approx({0: 0.4, 1: 0.6, 2: 0.0})
    assert score.value == pytest.approx(0.6)
    assert score.mass_outside == pytest.approx(0.5) and score.mass_outside > MASS_FLAG
    assert score.flagged and score.to_dict()["flagged"] is True


def test_eq1_without_any_grade_is_a_failure_not_a_number():
    score = expected_score([("yes", ln(0.9))], [0, 1])
    assert score.value is None and "no probability" in score.failure


def _tokens(pieces):
    return tuple(TokenLogprob(tok, ln(p), tuple((t, ln(q)) for t, q in top))
                 for tok, p, top in pieces)


def test_the_grade_token_is_the_one_after_the_last_score_marker():
    tokens = _tokens([("Score", 0.9, [("Score", 0.9)]), (":", 1, [(":", 1)]),
                      (" 1", 0.5, [(" 1", 0.5)]), (" then", 1, [(" then", 1)]),
                      ("\nScore", 1, [("\nScore", 1)]), (":", 1, [(":", 1)]),
                      (" ", 1, [(" ", 1)]), ("2", 0.7, [("2", 0.7), ("1", 0.3)])])
    assert grade_position(tokens) == 7
    score = score_from_answer(tokens, "m", [0, 1, 2])
    assert score.value == pytest.approx(0.7 * 2 + 0.3 * 1)


def test_no_logprobs_is_refused():
    with pytest.raises(LogprobsUnavailable, match="no fallback"):
        score_from_answer(None, "openai/x", [0, 1, 2])
    with pytest.raises(LogprobsUnavailable):  # logprobs without top alternatives
        score_from_answer((TokenLogprob("2", -0.1, ()),), "openai/x", [0, 1, 2])


def test_aggregation_means_over_particles_then_instructions():
    def ps(v):
        return ParticleScore(v, {}, 0.0)
    # Turn 1 has two particles, turn 3 one; two instructions.
    particles = {(1, 0): [ps(1.0), ps(2.0)], (1, 1): [ps(0.0), ps(None)], (3, 0): [ps(2.0),
                                                                                 ps(1.5)]}
    per_turn = aggregate(particles, 2, True, [1, 3, 5])
    # Turn 1: instruction 1 mean (1+0)/2 = 0.5, instruction 2 mean 2.0 (None left out) -> 1.25.
    assert per_turn == {1: pytest.approx(1.25), 3: pytest.approx(1.75), 5: None}
    dialogue = aggregate(particles, 2, False, [1, 3])
    # Instruction 1: (1+0+2)/3 = 1; instruction 2: (2+1.5)/2 = 1.75; mean 1.375.
    assert dialogue == {None: pytest.approx(1.375)}
    assert face_score([[None], [None]]) is None


def test_particles_parse_the_last_json_list_and_reject_bad_ones():
    text = ('Reasoning [not json].\n```json\n[{"dialogue_act": "Recommendation", "mention": '
            '"How about Inception?", "user_feedback": "sounds good"}]\n```')
    parsed = parse_particles(text)
    assert parsed.ok and parsed.value[0].act == "recommendation"
    assert parsed.value[0].feedback == "sounds good"
    assert "not one of" in parse_particles('[{"dialogue_act": "joke", "mention": "x"}]').problem
    assert parse_particles("no list here").problem == "no JSON list found"
    assert parse_particles("[]").problem == "the JSON list is empty"


def test_rewrites_and_aspects_and_split():
    text = ("<feedback>too lenient</feedback>\n<instructions>Step 1: be strict</instructions>\n"
            "<feedback>ignores feedback</feedback><instructions>Step 1: read the feedback"
            "</instructions><instructions>third</instructions>")
    assert parse_rewrites(text, 2) == [("too lenient", "Step 1: be strict"),
                                       ("ignores feedback", "Step 1: read the feedback")]
    assert parse_aspects(["overall", "relevance"]) == ("relevance", "overall")
    with pytest.raises(ValueError, match="unknown FACE aspect"):
        parse_aspects(["charm"])
    assert ASPECTS["efficiency"].scores == (0, 1)
    train, dev = split_dialogues([f"d{i}" for i in range(10)], dev_share=0.2, seed=7)
    assert len(dev) == 2 and not set(train) & set(dev) and len(train) == 8
    assert split_dialogues([f"d{i}" for i in range(10)], dev_share=0.2, seed=7) == (train, dev)


def test_ucb_selection_by_hand():
    # Three arms with fixed rewards 0.1, 0.5, 0.3; samples of 2 particles; c = 1.
    rewards = [0.1, 0.5, 0.3]
    pulls = []

    def reward(arm, sample):
        pulls.append(arm)
        return rewards[arm]

    chosen, state = ucb_select(3, list(range(10)), reward, keep=2, rounds=5, sample_size=2,
                               rng=random.Random(0))
    # Rounds 1-3 pull each unpulled arm in order (UCB = inf). After them N = 2 for every arm and
    # Q(I) = r/2 (Algorithm 2's update divides by N in particles): 0.05, 0.25, 0.15.
    # Round 4 (t=4): bonus sqrt(ln 4 / 2) = 0.8326 for all: arm 1 wins (0.25 + 0.83).
    # Then N(1) = 4, Q(1) = 0.25 + (0.5 - 0.25) / 4 = 0.3125.
    # Round 5 (t=5): arm 0: 0.05 + sqrt(ln 5 / 2) = 0.947; arm 1: 0.3125 + sqrt(ln 5 / 4) =
    # 0.947...; arm 2: 0.15 + 0.897 = 1.047 -> arm 2; Q(2) = 0.15 + (0.3 - 0.15) / 4 = 0.1875.
    assert pulls == [0, 1, 2, 1, 2]
    assert state.pulls == [2, 4, 4]
    assert state.estimates == pytest.approx([0.05, 0.3125, 0.1875])
    assert chosen == [1, 2]


def test_ucb_undefined_reward_counts_as_zero_and_ties_go_to_the_earlier_arm():
    chosen, state = ucb_select(2, [1, 2, 3], lambda arm, sample: None, keep=1, rounds=2,
                               sample_size=3, rng=random.Random(1))
    assert state.estimates == [0.0, 0.0] and chosen == [0]
    assert [arm for arm, _ in state.history] == [0, 1]


def test_beam_step_keeps_the_best_b_by_training_correlation():
    pool = {"a": 0.2, "b": None, "c": 0.6, "d": 0.6, "e": -0.1}
    assert beam_select(pool, 2) == ["c", "d"]  # tie: the earlier one first
    assert beam_select(pool, 4) == ["c", "d", "a", "e"]  # undefined last


def test_face_metrics_meet_the_study_fields_they_are_named_after():
    from annotation.lib.labels import FieldSpec
    from annotation.lib.reports import ScoreSet, match_aspects

    fields = {name: FieldSpec(name, unit, "ordinal", 0, 4) for name, unit in (
        ("relevance", "turn"), ("interestingness", "turn"), ("dialogue_overall", "dialogue"),
        ("understanding", "dialogue"))}
    scores = [ScoreSet("face", a.metric, a.level) for a in ASPECTS.values()]
    pairs, by_name = match_aspects(scores, fields)
    assert by_name
    assert {(s.metric, f.name) for s, f in pairs} == {
        ("face.relevance", "relevance"), ("face.interestingness", "interestingness"),
        ("face.overall", "dialogue_overall"), ("face.understanding", "understanding")}


def test_a_units_uncertainty_is_the_sd_of_its_distributions_mixture_by_hand():
    # Instruction 1: particle A {0: .5, 2: .5} (score 1), B {1: 1} (score 1); instruction 2:
    # A {2: 1} (score 2), B failed. Weights as the FACE score's: 1/(2·2) for instruction 1's
    # particles, 1/(2·1) for instruction 2's A. Mixture {0: .125, 1: .25, 2: .625}: mean 1.5 =
    # the FACE score, E g² = 0.25 + 2.5 = 2.75, variance 0.5; inside the distributions only A
    # of instruction 1 varies (variance 1, weight .25): within_sd 0.5.
    a1 = ParticleScore(1.0, {0: 0.5, 1: 0.0, 2: 0.5}, 0.0)
    b1 = ParticleScore(1.0, {0: 0.0, 1: 1.0, 2: 0.0}, 0.0)
    a2 = ParticleScore(2.0, {0: 0.0, 1: 0.0, 2: 1.0}, 0.0)
    b2 = ParticleScore(None, {}, None, "no grade")
    assert face_score([[1.0, 1.0], [2.0, None]]) == pytest.approx(1.5)
    result = score_uncertainty([[a1, b1], [a2, b2]])
    assert result["sd"] == pytest.approx(math.sqrt(0.5))
    assert result["within_sd"] == pytest.approx(0.5)
    assert result["distributions"] == 3 and "Eq. 1" in result["source"]
    # engine.unit_uncertainty groups a turn's particles per instruction the same way
    particles = {(1, 0): [a1, a2], (1, 1): [b1, b2]}
    assert unit_uncertainty(particles, 2) == result
    assert score_uncertainty([[b2], [b2]]) is None  # no usable score, no uncertainty
