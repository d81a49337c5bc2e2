"""The whole non-LLM Trace suite on a hand-built benchmark with hand-computed values."""

import ast
from pathlib import Path

import pytest

from evaluation.lib.metrics.entailment import load_nli_model
from evaluation.lib.metrics.suite import (
    SuiteConfig,
    evaluate_submission,
    evaluated_turn_keys,
    metric_specs,
)
from evaluation.lib.metrics.text import rouge_l_f1, sentence_bleu4
from evaluation.lib.metrics.types import (
    AXES,
    Citation,
    ItemInfo,
    ReferenceDialogue,
    ReferenceTurn,
    ReviewInfo,
    SubmittedTurn,
    Unavailable,
)

from .tiny_nli import build_tiny_nli

KM_PER_DEGREE = 111.19508

ITEMS = [
    ItemInfo("A", "restaurant", "Tampa", 0.0, 0.0, 1, "Harbor House"),
    ItemInfo("B", "restaurant", "Tampa", 0.0, 0.009, 3, "Sky Lounge"),
    ItemInfo("C", "restaurant", "Tampa", 0.0, 0.09, 2, "Taco Stop"),
    ItemInfo("D", "restaurant", "Tampa", None, None, 4, "Far Grill"),  # open pool only
    ItemInfo("H", "hotel", "Tampa", 0.0, 0.0045, 2, "Bay Inn"),  # other type: never in pool
]
REVIEWS = [
    ReviewInfo("rA1", "A", "Honestly the crab cakes were incredible, and parking was easy."),
    ReviewInfo("rB1", "B", "The rooftop bar has a quiet corner and great wine."),
    ReviewInfo("rC1", "C", "Cheap tacos, friendly staff."),
]
REF_TEXT_1 = "Harbor House has incredible crab cakes [R1]."


def turn(index, role, action, text="", gold=(), alternatives=()):
    return ReferenceTurn(index, role, text, action, tuple(gold), tuple(alternatives))


DIALOGUE = ReferenceDialogue(
    "d1",
    "test",
    {"city": "Tampa"},
    ("A", "B", "C"),
    (
        turn(0, "user", "greet_and_seek", "Looking for a cheap seafood dinner."),
        turn(1, "system", "recommend", REF_TEXT_1, gold=["A"]),
        turn(2, "user", "reject_and_refine", "Not that one, something quieter."),
        turn(3, "system", "recommend", "Sky Lounge is quiet.", gold=["B"], alternatives=["C"]),
        turn(4, "user", "provide_preference", "Fine."),
        turn(5, "system", "compare", "Taco Stop is cheaper.", gold=["C"]),
        turn(6, "user", "farewell", "Bye."),
    ),
)
RESPONSE_1 = 'Try Harbor House: "the crab cakes were incredible" [R1] and parking is easy.'
SUBMISSION = [
    SubmittedTurn("d1", 1, RESPONSE_1, ("C", "A", "B"), (Citation("R1", "rA1"),)),
    SubmittedTurn("d1", 3, "Sky Lounge is quiet. No quotes here.", ("B", "C")),
    # Turn 5 is missing on purpose: it is a non-answer (missing in every turn metric) and
    # reported.
]


@pytest.fixture(scope="module")
def result():
    return evaluate_submission([DIALOGUE], ITEMS, REVIEWS, SUBMISSION)


def values(result, metric):
    return {row.unit_id: row.value for row in result.values if row.metric == metric}


def test_turn_units_are_recommend_and_compare_turns(result):
    assert set(values(result, "non_answer")) == {"d1#1", "d1#3", "d1#5"}
    assert set(values(result, "mrr")) == {"d1#1", "d1#3"}  # d1#5 unanswered: missing
    row = next(row for row in result.values if row.metric == "mrr")
    assert (row.unit_type, row.dialogue_id) == ("turn", "d1")


def test_accuracy_per_turn_hand_computed(result):
    # d1#1: gold A at rank 2; d1#3: gold B at rank 1 (alt C at 2); d1#5: not answered.
    assert values(result, "recall@1") == {"d1#1": 0.0, "d1#3": 1.0}
    assert values(result, "recall@3") == {"d1#1": 1.0, "d1#3": 1.0}
    assert values(result, "mrr") == {"d1#1": 0.5, "d1#3": 1.0}
    assert values(result, "mr_recall@1") == {"d1#1": 0.0, "d1#3": 1.0}
    assert result.means()["mrr"] == pytest.approx(0.75)
    assert values(result, "non_answer") == {"d1#1": 0.0, "d1#3": 0.0, "d1#5": 1.0}


def test_grounding_per_turn_hand_computed(result):
    # d1#1: one verbatim quote; 13 tokens, 5 quoted; "parking" is 5 characters after [R1].
    assert values(result, "gs")["d1#1"] == 1.0
    assert values(result, "cd")["d1#1"] == pytest.approx(5 / 13)
    assert values(result, "pc")["d1#1"] == 1.0
    assert values(result, "cgs")["d1#1"] == 1.0
    # d1#3: no quotes -> GS 1 (vacuous) but CD 0 -> CGS 0; "quiet" has no label -> PC 0.
    assert values(result, "gs")["d1#3"] == 1.0
    assert values(result, "gs0")["d1#3"] == 0.0
    assert values(result, "pc")["d1#3"] == 0.0
    assert values(result, "cgs")["d1#3"] == 0.0
    assert result.means()["cgs"] == pytest.approx(1 / 2)  # d1#5 has no answer: no grounding
    assert "d1#5" not in values(result, "gs") and "d1#5" not in values(result, "pc")


def test_sensitivity_variants_are_reported(result):
    for name in (
        "gs_t70",
        "gs_t90",
        "gs_exact",
        "cd_exact",
        "cd_fuzzy",
        "pc_gap",
        "rejection_recovery_dialogue_mean",
        "cgs_t70",
        "cgs_exact",
        "cgs_cd_gate_0.03",
        "cgs_harmonic",
        "spatial_coherence_1km",
        "spatial_coherence_5km",
    ):
        assert values(result, name), name


def test_text_metrics_compare_with_the_reference_turn(result):
    assert values(result, "bleu4")["d1#1"] == pytest.approx(sentence_bleu4(RESPONSE_1, REF_TEXT_1))
    assert values(result, "rouge_l")["d1#1"] == pytest.approx(rouge_l_f1(RESPONSE_1, REF_TEXT_1))
    assert "d1#5" not in values(result, "bleu4")  # the non-answer's text is not scored


def test_recovery_per_dialogue_hand_computed(result):
    # Top-1 hits: d1#1 C (gold A) no, d1#3 B (gold B) yes, d1#5 nothing -> TSR 1, T2R 2.
    assert values(result, "tsr") == {"d1": 1.0}
    assert values(result, "t2r") == {"d1": 2.0}
    assert values(result, "t2r_no_hit") == {"d1": 0.0}  # a hit: the no-hit rule did not apply
    # The rejection at user turn 2 is one episode, followed by d1#3, which hits.
    assert values(result, "rejection_recovery") == {"d1#2": 1.0}
    assert values(result, "rejection_recovery_dialogue_mean") == {"d1": 1.0}


def test_practical_value_per_dialogue_hand_computed(result):
    # Recommended (top-1) items: C then B, 0.081 degrees (≈ 9.0 km) apart on the equator.
    assert values(result, "spatial_coherence") == {"d1": 0.0}
    assert values(result, "spatial_coherence_5km") == {"d1": 0.0}
    assert values(result, "route_km")["d1"] == pytest.approx(0.081 * KM_PER_DEGREE, rel=1e-6)
    # The user asked for "cheap" (≤ $$): C ($$) fits, B ($$$) does not.
    assert values(result, "price_alignment") == {"d1": 0.5}
    assert values(result, "itinerary_diversity") == {"d1": pytest.approx(1 / 3)}
    row = next(row for row in result.values if row.metric == "tsr")
    assert (row.unit_type, row.unit_id, row.dialogue_id) == ("dialogue", "d1", "d1")


def test_missing_turns_are_reported(result):
    assert result.missing_turns == ("d1#5",)


def test_every_value_has_a_spec_with_matching_unit_and_a_known_axis(result):
    specs = {spec.name: spec for spec in result.specs}
    assert len(specs) == len(result.specs)
    for row in result.values:
        assert specs[row.metric].unit == row.unit_type
        low, high = specs[row.metric].range
        assert row.value >= low and (high is None or row.value <= high), row
    assert {spec.axis for spec in result.specs} <= set(AXES)
    assert specs["t2r"].direction == "lower" and specs["route_km"].direction == "lower"
    assert specs["recall@1"].direction == "higher"


def test_entailment_without_a_model_is_unavailable_with_the_reason(result):
    assert result.unavailable["entailment"] == "no NLI model configured"
    assert result.unavailable["cgsent"] == "no NLI model configured"
    assert not values(result, "entailment")
    assert "entailment" in {spec.name for spec in result.specs}


def test_unavailable_model_reason_is_passed_through():
    result = evaluate_submission(
        [DIALOGUE], ITEMS, REVIEWS, SUBMISSION, nli=Unavailable("NLI_MODEL_PATH is not set")
    )
    assert result.unavailable["entailment"] == "NLI_MODEL_PATH is not set"


class KeywordScorer:
    """Entails a claim when its premise mentions crab cakes."""

    def entailment_probabilities(self, pairs):
        return [0.9 if "crab cakes" in premise and "crab" in hyp else 0.2 for premise, hyp in pairs]


def test_entailment_hook_scores_claims_and_cgsent():
    result = evaluate_submission([DIALOGUE], ITEMS, REVIEWS, SUBMISSION, nli=KeywordScorer())
    # d1#1 has one claim sentence (the whole response), entailed by rA1; d1#3 cites nothing, so
    # its two claims are not entailed; d1#5 is unanswered, so it has no grounding at all.
    assert values(result, "entailment") == {"d1#1": 1.0, "d1#3": 0.0}
    assert values(result, "cgsent")["d1#1"] == 1.0
    assert values(result, "cgsent")["d1#3"] == 0.0
    assert "entailment" not in result.unavailable


class BrokenScorer:
    def entailment_probabilities(self, pairs):
        raise RuntimeError("CUDA out of memory")


def test_failing_nli_model_does_not_sink_the_run():
    result = evaluate_submission([DIALOGUE], ITEMS, REVIEWS, SUBMISSION, nli=BrokenScorer())
    assert "CUDA out of memory" in result.unavailable["entailment"]
    assert not values(result, "entailment")
    assert values(result, "cgs")


def test_real_tiny_nli_model_runs_through_the_suite(tmp_path):
    model = load_nli_model(
        build_tiny_nli(tmp_path, {0: "entailment", 1: "neutral", 2: "contradiction"})
    )
    result = evaluate_submission([DIALOGUE], ITEMS, REVIEWS, SUBMISSION, nli=model)
    entailment = values(result, "entailment")
    assert set(entailment) == {"d1#1", "d1#3"}
    assert all(0.0 <= value <= 1.0 for value in entailment.values())
    assert values(result, "entailment_t0.3")


def test_open_pool_accepts_same_city_and_type_items_only():
    submission = [SubmittedTurn("d1", 1, "", ("D", "A", "H", "B"))]
    closed = evaluate_submission([DIALOGUE], ITEMS, REVIEWS, submission)
    opened = evaluate_submission(
        [DIALOGUE], ITEMS, REVIEWS, submission, SuiteConfig(pool_mode="open")
    )
    assert values(closed, "out_of_pool_rate")["d1#1"] == 0.5  # D and H
    assert values(opened, "out_of_pool_rate")["d1#1"] == 0.25  # H only


def test_t2r_can_exclude_dialogues_without_a_hit():
    submission = [SubmittedTurn("d1", index, "", ("H",)) for index in (1, 3, 5)]
    penalized = evaluate_submission([DIALOGUE], ITEMS, REVIEWS, submission)
    excluded = evaluate_submission(
        [DIALOGUE], ITEMS, REVIEWS, submission, SuiteConfig(t2r_no_hit="exclude")
    )
    assert values(penalized, "t2r") == {"d1": 4.0}
    assert values(excluded, "t2r") == {}
    assert values(penalized, "t2r_no_hit") == {"d1": 1.0}  # the rule applied to this dialogue
    assert "turns + 1" in {s.name: s for s in penalized.specs}["t2r_no_hit"].description


def test_text_metrics_can_be_switched_off():
    result = evaluate_submission(
        [DIALOGUE], ITEMS, REVIEWS, SUBMISSION, SuiteConfig(text_metrics=False)
    )
    assert not values(result, "bleu4")
    assert "bleu4" not in {spec.name for spec in result.specs}


def test_items_and_reviews_may_be_given_as_mappings():
    result = evaluate_submission(
        [DIALOGUE],
        {item.id: item for item in ITEMS},
        {review.id: review for review in REVIEWS},
        SUBMISSION,
    )
    assert values(result, "cgs")["d1#1"] == 1.0


def test_config_hash_is_stable_and_changes_with_any_setting():
    assert SuiteConfig().config_hash() == SuiteConfig().config_hash()
    assert len(SuiteConfig().config_hash()) == 64
    assert SuiteConfig(gs_threshold=90).config_hash() != SuiteConfig().config_hash()
    assert SuiteConfig(pool_mode="open").config_hash() != SuiteConfig().config_hash()


def test_config_hash_ignores_int_float_and_list_tuple_spelling():
    assert SuiteConfig(gs_threshold=80, k_values=[1, 3, 5, 10]).config_hash() == (
        SuiteConfig().config_hash()
    )
    inventory = {family: list(terms) for family, terms in SuiteConfig().aspect_inventory}
    assert SuiteConfig(aspect_inventory=inventory).config_hash() == SuiteConfig().config_hash()


def test_bad_config_values_are_rejected():
    with pytest.raises(ValueError):
        SuiteConfig(pool_mode="half-open")
    with pytest.raises(ValueError):
        SuiteConfig(k_values=(0,))
    with pytest.raises(ValueError):
        SuiteConfig(t2r_no_hit="ignore")


def test_metric_specs_are_unique_and_cover_every_axis():
    specs = metric_specs()
    assert len({spec.name for spec in specs}) == len(specs)
    assert {spec.axis for spec in specs} == set(AXES)


def test_evaluated_turns_include_the_first_system_turn_after_a_rejection():
    dialogue = ReferenceDialogue(
        "d2",
        "test",
        {},
        (),
        (
            turn(0, "user", "greet_and_seek"),
            turn(1, "system", "recommend", gold=["A"]),
            turn(2, "user", "reject_and_refine"),
            turn(3, "system", "ask_preference"),
            turn(4, "user", "provide_preference"),
            turn(5, "system", "compare", gold=["B"]),
            turn(6, "system", "farewell"),
        ),
    )
    assert evaluated_turn_keys([DIALOGUE, dialogue]) == [
        ("d1", 1),
        ("d1", 3),
        ("d1", 5),
        ("d2", 1),
        ("d2", 3),
        ("d2", 5),
    ]


def test_metrics_package_imports_nothing_from_django():
    package = Path(__file__).resolve().parents[3] / "evaluation" / "metrics"
    for source in package.glob("*.py"):
        tree = ast.parse(source.read_text())
        for node in ast.walk(tree):
            names = []
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module:
                names = [node.module]
            assert not any(name.split(".")[0] == "django" for name in names), source


def _rejections_dialogue(dialogue_id, hits):
    """A dialogue with one reject_and_refine episode per entry of HITS (True: the system's next
    recommendation hits gold)."""
    turns, index = [turn(0, "user", "greet_and_seek", "Hi.")], 1
    for _ in hits:
        turns.append(turn(index, "system", "recommend", "X.", gold=["A"]))
        turns.append(turn(index + 1, "user", "reject_and_refine", "No."))
        index += 2
    turns.append(turn(index, "system", "recommend", "Y.", gold=["A"]))
    turns = tuple(turns)
    submission, follow_ups = [], [t.index for t in turns if t.is_recommendation][1:]
    answers = dict(zip(follow_ups, hits, strict=True))
    for t in turns:
        if t.is_recommendation:
            submission.append(SubmittedTurn(dialogue_id, t.index, "Z.",
                                            ("A",) if answers.get(t.index) else ("B",)))
    return ReferenceDialogue(dialogue_id, "test", {}, ("A", "B"), turns), submission


def test_rejection_recovery_is_pooled_over_episodes_as_in_appendix_j():
    # One dialogue recovers 1 of 1, another 0 of 3: the paper's rate is 1/4 = 0.25; the mean of
    # per-dialogue rates (0.50) is only the sensitivity variant.
    first, sub_1 = _rejections_dialogue("r1", [True])
    second, sub_2 = _rejections_dialogue("r2", [False, False, False])
    result = evaluate_submission([first, second], ITEMS, REVIEWS, sub_1 + sub_2)
    assert result.means()["rejection_recovery"] == pytest.approx(0.25)
    assert result.means()["rejection_recovery_dialogue_mean"] == pytest.approx(0.5)
    assert len(values(result, "rejection_recovery")) == 4
    rows = [r for r in result.values if r.metric == "rejection_recovery"]
    assert {r.dialogue_id for r in rows} == {"r1", "r2"}  # intervals resample dialogues


def test_a_non_answer_never_scores_well():
    # A failed LLM turn: placeholder text, no items, metadata.no_answer. Before, its text had no
    # quotes and no aspects, so GS = PC = 1; now every turn metric is missing for it.
    submission = [
        SubmittedTurn("d1", 1, "(no answer: the LLM baseline failed)", (), answered=False),
        SubmittedTurn("d1", 3, "(no answer: the LLM baseline failed)", (), answered=False),
        SubmittedTurn("d1", 5, "(no answer: the LLM baseline failed)", (), answered=False),
    ]
    result = evaluate_submission([DIALOGUE], ITEMS, REVIEWS, submission)
    assert values(result, "non_answer") == {"d1#1": 1.0, "d1#3": 1.0, "d1#5": 1.0}
    for metric in ("gs", "pc", "cgs", "cd", "bleu4", "rouge_l", "recall@1", "mrr"):
        assert values(result, metric) == {}, metric
    assert values(result, "tsr") == {"d1": 0.0}  # nothing recommended, nothing hit


def test_an_answer_without_text_has_no_grounding_but_keeps_its_ranking():
    result = evaluate_submission([DIALOGUE], ITEMS, REVIEWS, [SubmittedTurn("d1", 1, " ", ("A",))])
    assert values(result, "recall@1")["d1#1"] == 1.0
    assert "d1#1" not in values(result, "gs") and "d1#1" not in values(result, "pc")
