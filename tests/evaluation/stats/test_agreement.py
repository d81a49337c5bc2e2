"""Agreement reports beyond alpha: leave-one-out, annotator diagnostics, pairwise correlation,
Cohen's kappa, majority vote, citation precision and blind recommendation agreement."""

import pytest

from evaluation.lib.stats.agreement import (
    checklist_indicator_matrices,
    compute_alpha,
    reliability_matrix,
)
from evaluation.lib.stats.annotators import (
    AgreementField,
    annotator_diagnostics,
    cohen_kappa,
    leave_one_annotator_out,
    pairwise_annotator_correlation,
    worst_annotator_pairs,
)
from evaluation.lib.stats.label_summaries import (
    blind_recommendation_agreement,
    citation_precision,
    majority_vote,
    normalise_citation_label,
)

ANNOTATORS = ["A1", "A2", "A3"]
# A1 and A2 agree perfectly; A3 disagrees on everything.
INFORMATIVENESS = [[1, 2, 3, 4, 5], [1, 2, 3, 4, 5], [5, 1, 4, 2, 3]]
LABELS = [["s", "p", "n", "s"], ["s", "p", "n", "s"], ["n", "s", "p", "p"]]
FIELDS = {
    "informativeness": AgreementField(INFORMATIVENESS, "interval"),
    "citation": AgreementField(LABELS, "nominal"),
}


def test_reliability_matrix_pivots_rating_triples_with_missing_cells():
    matrix = reliability_matrix([("A1", "u1", 3), ("A2", "u2", 4), ("A1", "u2", 5)])
    assert matrix.annotators == ["A1", "A2"]
    assert matrix.units == ["u1", "u2"]
    assert matrix.values == [[3, 5], [None, 4]]
    with pytest.raises(ValueError):
        reliability_matrix([("A1", "u1", 3), ("A1", "u1", 4)])


def test_leave_one_out_starts_with_everyone_and_drops_each_annotator():
    rows = leave_one_annotator_out(FIELDS, ANNOTATORS)
    assert [row.dropped for row in rows] == [(), ("A1",), ("A2",), ("A3",)]
    everyone = rows[0]
    assert everyone.alphas["informativeness"] == compute_alpha(INFORMATIVENESS, "interval")
    without_a3 = rows[3]
    assert without_a3.alphas["informativeness"].value == 1.0
    assert without_a3.alphas["citation"].value == 1.0
    assert without_a3.mean_alpha == 1.0
    assert everyone.mean_alpha == pytest.approx(
        (everyone.alphas["informativeness"].value + everyone.alphas["citation"].value) / 2
    )


def test_leave_one_out_with_two_annotators_left_marks_single_rater_alpha_undefined():
    fields = {"x": AgreementField([[1, 2, 3], [1, 2, 2]], "interval")}
    rows = leave_one_annotator_out(fields, ["A", "B"])
    assert rows[1].alphas["x"].value is None
    assert rows[1].mean_alpha is None


def test_worst_pairs_lists_the_pairs_whose_removal_raises_mean_alpha_most_first():
    annotators = ["A1", "A2", "A3", "A4"]
    data = [[1, 2, 3, 4, 5, 1], [1, 2, 3, 4, 5, 1], [5, 4, 1, 2, 1, 5], [4, 5, 2, 1, 3, 4]]
    pairs = worst_annotator_pairs({"x": AgreementField(data)}, annotators, limit=2)
    assert len(pairs) == 2
    assert pairs[0].dropped == ("A3", "A4")
    assert pairs[0].mean_alpha == 1.0
    assert pairs[0].mean_alpha >= pairs[1].mean_alpha


def test_annotator_diagnostics_matches_hand_computation():
    scales = {"informativeness": [[1, 2, 3], [3, 2, 1], [2, 2, None]]}
    checklists = [
        [{"too_vague"}, set(), {"no_errors"}],
        [{"too_vague", "wrong_item"}, {"exaggeration"}, None],
        [None, None, None],
    ]
    gold = ["Supported", "Partial"]
    responses = [["Supported", "Partial"], ["Supported", "Not supported"], [None, None]]
    rows = annotator_diagnostics(
        ["A1", "A2", "A3"],
        scales=scales,
        error_checklists=checklists,
        gold_responses=responses,
        gold_answers=gold,
    )
    first = rows[0]
    assert first.mean_rating["informativeness"] == 2.0
    # Others' item means: 2.5, 2, 1 → |1 − 2.5| + |2 − 2| + |3 − 1| = 3.5 over 3 items.
    assert first.mean_abs_deviation["informativeness"] == pytest.approx(3.5 / 3)
    assert first.flag_rate == pytest.approx(1 / 3)  # "no_errors" is not an error category
    assert first.mean_error_categories == pytest.approx(1 / 3)
    assert first.gold_accuracy == 1.0
    second = rows[1]
    assert second.flag_rate == 1.0
    assert second.mean_error_categories == 1.5
    assert second.gold_accuracy == 0.5
    third = rows[2]
    assert third.flag_rate is None and third.gold_accuracy is None
    assert third.n["checklists"] == 0
    assert third.mean_rating["informativeness"] == 2.0


def test_pairwise_correlation_averages_over_annotator_pairs():
    data = [[1, 2, 3, 4], [1, 2, 3, 4], [4, 3, 2, 1]]
    result = pairwise_annotator_correlation(data)
    # Pairs: (1,2) r = 1, (1,3) r = −1, (2,3) r = −1 → mean −1/3.
    assert result["pearson"].value == pytest.approx(-1 / 3)
    assert result["spearman"].value == pytest.approx(-1 / 3)
    assert result["pearson"].n["pairs"] == 3


def test_pairwise_correlation_skips_constant_annotators_and_reports_undefined():
    result = pairwise_annotator_correlation([[2, 2, 2, 2], [1, 2, 3, 4]])
    assert result["pearson"].value is None
    assert result["pearson"].n["pairs_skipped"] == 1
    assert result["pearson"].undefined_reason


def test_cohen_kappa_hand_example_and_missing_items():
    # p_o = 3/4; p_e = ½·½ + ½·½ = ½ → kappa = (0.75 − 0.5) / 0.5 = 0.5.
    estimate = cohen_kappa(["y", "y", "n", "n", None], ["y", "y", "n", "y", "n"])
    assert estimate.value == pytest.approx(0.5)
    assert estimate.n == {"units": 4}
    joined = cohen_kappa({"a": 1, "b": 2, "c": 1}, {"b": 2, "a": 1, "d": 3})
    assert joined.value == 1.0 and joined.n == {"units": 2}


def test_cohen_kappa_is_undefined_when_only_one_label_is_used():
    estimate = cohen_kappa(["y", "y", "y"], ["y", "y", "y"])
    assert estimate.value is None
    assert "chance agreement is 1" in estimate.undefined_reason


def test_majority_vote_counts_ties_and_ignores_missing_labels():
    votes = majority_vote(
        {"q1": ["s", "s", "p"], "q2": ["s", "p"], "q3": [None, "n"], "q4": [None]},
        tie_label="p",
    )
    assert votes.labels == {"q1": "s", "q2": "p", "q3": "n", "q4": None}
    assert votes.ties == ("q2",)
    assert votes.tie_count == 1


def test_citation_precision_reproduces_trace_tfidf_row_40_of_44():
    quote_labels, systems = {}, {}
    for i in range(44):
        majority = "Supported" if i < 40 else "Partial"
        quote_labels[f"tfidf-{i}"] = [majority, majority, majority, "Not supported", "Partial"]
        systems[f"tfidf-{i}"] = "TF-IDF"
    result = citation_precision(quote_labels, systems)["TF-IDF"]
    assert round(result.value, 3) == 0.909
    assert result.n == {"quotes": 44, "supported": 40, "partial": 4, "not_supported": 0, "ties": 0}


def test_citation_precision_breaks_ties_to_partial_and_can_cluster_by_dialogue():
    labels = {
        "q1": ["Supported", "Supported", "Not supported"],
        "q2": ["Supported", "Not supported"],  # tie → Partial
        "q3": ["supported", "SUPPORTED"],
        "q4": ["Not supported", "not_supported"],
    }
    systems = dict.fromkeys(labels, "RAG")
    dialogues = {"q1": "d1", "q2": "d1", "q3": "d2", "q4": "d3"}
    result = citation_precision(labels, systems, quote_dialogues=dialogues)["RAG"]
    assert result.value == 0.5
    assert result.n["ties"] == 1 and result.n["partial"] == 1 and result.n["dialogues"] == 3
    assert 0.0 <= result.ci_low <= result.value <= result.ci_high <= 1.0


def test_normalise_citation_label_rejects_unknown_labels():
    assert normalise_citation_label(" Not  Supported ") == "not_supported"
    with pytest.raises(ValueError):
        normalise_citation_label("maybe")


def test_blind_recommendation_agreement_hand_example():
    picks = {
        "d1": [{"a"}, {"a", "b"}, {"a"}],  # Jaccard 0.5, 1, 0.5; "a" picked by 3 of 3
        "d2": [{"x"}, {"y"}],  # Jaccard 0; no item picked by more than half
    }
    gold = {"d1": "a", "d2": ["y", "z"]}
    result = blind_recommendation_agreement(picks, gold)
    assert result["mean_pairwise_jaccard"].value == pytest.approx((0.5 + 1 + 0.5 + 0) / 4)
    assert result["mean_pairwise_jaccard"].n == {"pairs": 4, "dialogues": 2}
    assert result["strict_majority_share"].value == 0.5
    assert result["majority_gold_agreement"].value == 1.0
    assert result["majority_gold_agreement"].n == {"dialogues": 1, "agreeing": 1}


def test_blind_recommendation_without_gold_leaves_gold_agreement_undefined():
    result = blind_recommendation_agreement({"d1": [{"a"}, {"b"}]})
    assert result["majority_gold_agreement"].value is None
    assert result["strict_majority_share"].value == 0.0


def test_checklist_becomes_one_yes_no_variable_per_error_category():
    checklists = [[{"too_vague"}, {"no_errors"}, None], [{"too_vague", "wrong_item"}, set(), {"x"}]]
    matrices = checklist_indicator_matrices(checklists)
    assert set(matrices) == {"too_vague", "wrong_item", "x"}
    assert matrices["too_vague"] == [[1, 0, None], [1, 0, 0]]
    assert matrices["wrong_item"] == [[0, 0, None], [1, 0, 0]]
    assert compute_alpha(matrices["too_vague"], "nominal").value == 1.0
