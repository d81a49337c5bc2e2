"""Entailment grounding, claim splitting and the NLI wrapper (tiny local model, no download)."""

import pytest

from evaluation.lib.metrics.entailment import (
    Claim,
    NLIModel,
    claim_premises,
    claim_sentences,
    entailment_grounding,
    find_entailment_index,
    load_nli_model,
    score_turn_claims,
    split_sentences,
)
from evaluation.lib.metrics.types import Unavailable

from .tiny_nli import build_tiny_nli

PAIRS = [
    ("the crab cakes were incredible", "we loved the crab cakes"),
    ("service was slow", "great service"),
    ("quiet place and clean rooms with friendly staff", "cozy place"),
    ("parking easy", "parking was easy and the rooms were clean"),
    ("food", "food"),
]


@pytest.fixture(scope="module")
def tiny_model_dir(tmp_path_factory):
    return build_tiny_nli(
        tmp_path_factory.mktemp("nli"), {0: "entailment", 1: "neutral", 2: "contradiction"}
    )


@pytest.fixture(scope="module")
def tiny_model(tiny_model_dir):
    model = load_nli_model(tiny_model_dir, batch_size=2)
    assert isinstance(model, NLIModel), model
    return model


# --- claims and the metric --------------------------------------------------------------------


def test_sentences_split_after_closing_quotes_and_keep_trailing_labels():
    text = 'Try Harbor House. One diner said "the crab cakes were incredible." [R1] Book early!'
    assert split_sentences(text) == [
        "Try Harbor House.",
        'One diner said "the crab cakes were incredible." [R1]',
        "Book early!",
    ]


def test_newlines_split_sentences():
    assert split_sentences("Option A: quiet rooms\nOption B: rooftop bar") == [
        "Option A: quiet rooms",
        "Option B: rooftop bar",
    ]


def test_claims_drop_labels_quote_marks_and_short_fragments():
    claims = claim_sentences('Great pick. Reviewers say "the rooms were clean" [R1, R2]. Enjoy!')
    assert claims == [Claim("Reviewers say the rooms were clean.", ("R1", "R2"))]


def test_claim_premises_are_its_own_reviews_else_all_cited():
    reviews = {"R1": ["review one"], "R2": ["review two"]}
    assert claim_premises(Claim("x y z", ("R2",)), reviews) == ["review two"]
    assert claim_premises(Claim("x y z", ()), reviews) == ["review one", "review two"]
    assert claim_premises(Claim("x y z", ("R9",)), reviews) == ["review one", "review two"]


def test_entailment_grounding_is_the_share_of_entailed_claims():
    # Claim 1 best premise 0.9, claim 2 best 0.4, claim 3 has no premise -> 1 of 3.
    assert entailment_grounding([[0.2, 0.9], [0.4], []]) == pytest.approx(1 / 3)
    assert entailment_grounding([[0.5]]) == 1.0  # the threshold is inclusive
    assert entailment_grounding([[0.4]], threshold=0.3) == 1.0


def test_response_without_claims_has_vacuous_entailment_of_one():
    assert entailment_grounding([]) == 1.0


class FixedScorer:
    """Entails a hypothesis when the premise contains its last word."""

    def entailment_probabilities(self, pairs):
        return [0.9 if hyp.split()[-1].strip(".") in premise else 0.1 for premise, hyp in pairs]


def test_score_turn_claims_groups_probabilities_per_claim():
    response = 'Guests loved the "crab cakes" [R1]. The staff seemed very friendly.'
    reviews = {"R1": ["the crab cakes rock"], "R2": ["friendly staff"]}
    probabilities = score_turn_claims(response, reviews, FixedScorer())
    # Claim 1 uses R1 only; claim 2 has no label, so both reviews.
    assert probabilities == [[0.9], [0.1, 0.9]]
    assert entailment_grounding(probabilities) == 1.0


# --- the model wrapper ------------------------------------------------------------------------


def test_entailment_label_is_found_case_insensitively():
    assert find_entailment_index({0: "CONTRADICTION", 1: "NEUTRAL", 2: "ENTAILMENT"}) == 2
    assert find_entailment_index({"0": "entailment", "1": "not_entailment"}) == 0
    assert find_entailment_index({0: "LABEL_0", 1: "LABEL_1"}) is None


def test_tiny_model_scores_pairs_as_probabilities(tiny_model):
    probabilities = tiny_model.entailment_probabilities(PAIRS)
    assert len(probabilities) == len(PAIRS)
    assert all(0.0 <= p <= 1.0 for p in probabilities)


def test_batched_scores_equal_one_by_one_scores(tiny_model):
    batched = tiny_model.entailment_probabilities(PAIRS)
    single = [tiny_model.entailment_probabilities([pair])[0] for pair in PAIRS]
    assert batched == pytest.approx(single, abs=1e-5)


def test_batch_size_does_not_change_scores(tiny_model_dir):
    small = load_nli_model(tiny_model_dir, batch_size=1)
    large = load_nli_model(tiny_model_dir, batch_size=64)
    assert small.entailment_probabilities(PAIRS) == pytest.approx(
        large.entailment_probabilities(PAIRS), abs=1e-5
    )


def test_duplicate_pairs_get_identical_scores(tiny_model):
    scores = tiny_model.entailment_probabilities([PAIRS[0], PAIRS[1], PAIRS[0]])
    assert scores[0] == scores[2]


def test_wrapper_reads_the_entailment_column_wherever_it_is(tmp_path):
    # Entailment is label 2 here and its logit is pushed up: its probability must be high.
    directory = build_tiny_nli(
        tmp_path, {0: "contradiction", 1: "neutral", 2: "ENTAILMENT"}, entailment_bias=6.0
    )
    model = load_nli_model(directory)
    assert model.entailment_index == 2
    assert min(model.entailment_probabilities(PAIRS)) > 0.95


def test_missing_path_is_reported_unavailable():
    assert load_nli_model(None) == Unavailable("no NLI model path is configured")
    assert load_nli_model("") == Unavailable("no NLI model path is configured")
    missing = load_nli_model("/nonexistent/nli-model")
    assert isinstance(missing, Unavailable)
    assert "not found" in missing.reason


def test_directory_without_a_model_is_reported_unavailable(tmp_path):
    result = load_nli_model(tmp_path)
    assert isinstance(result, Unavailable)
    assert "could not load NLI model" in result.reason


def test_model_without_entailment_label_is_reported_unavailable(tmp_path):
    directory = build_tiny_nli(tmp_path, {0: "LABEL_0", 1: "LABEL_1", 2: "LABEL_2"})
    result = load_nli_model(directory)
    assert isinstance(result, Unavailable)
    assert "no 'entailment' label" in result.reason
