"""GS, CD, PC and CGS with hand-computed values and the paper's reference row."""

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from evaluation.lib.metrics.grounding import (
    ASPECT_INVENTORY,
    DEFAULT_ASPECT_MATCHER,
    DEFAULT_CD_GATE,
    EXACT,
    FAIL,
    AspectMatcher,
    cgs_formula_variants,
    citation_density,
    composite_grounding_score,
    count_tokens,
    fuzzy_citation_density,
    grounding_score,
    grounding_score_zero_if_unquoted,
    match_quote,
    normalize_for_match,
    provenance_coverage,
    quote_core,
)
from evaluation.lib.metrics.quotes import extract_labels, extract_quotes

REVIEW_1 = "Honestly the crab cakes were incredible, and parking was easy."
REVIEW_2 = "The chowder was bland."
SOURCES = {"R1": [normalize_for_match(REVIEW_1)], "R2": [normalize_for_match(REVIEW_2)]}


def matches_for(response, sources=SOURCES, **kwargs):
    return [match_quote(quote, sources, **kwargs) for quote in extract_quotes(response)]


# --- GS ---------------------------------------------------------------------------------------


def test_gs_counts_quotes_that_match_the_review_they_cite():
    # Quote 1 is verbatim in R1 (100); quote 2 scores 66.7 against R2 -> GS = 1/2.
    response = (
        'Try Harbor House. One diner said "The crab cakes were incredible." [R1] '
        'and another "best chowder in town" [R2].'
    )
    matches = matches_for(response)
    assert [m.verbatim for m in matches] == [True, False]
    assert matches[1].score == pytest.approx(66.667, abs=0.01)
    assert grounding_score(matches) == 0.5


def test_turn_without_quotes_has_vacuous_gs_of_one():
    assert grounding_score(matches_for("Try Harbor House, it is great.")) == 1.0


def test_gs0_gives_zero_to_a_turn_without_quotes():
    assert grounding_score_zero_if_unquoted([]) == 0.0
    assert grounding_score_zero_if_unquoted(matches_for('"crab cakes were incredible" [R1]')) == 1.0


def test_gs_threshold_sensitivity_70_80_90_exact():
    # partial_ratio: "crab cakes were so good" vs R1 = 73.9; "the crab cakes are incredible" = 93.1.
    matches = matches_for('"crab cakes were so good" [R1] and "the crab cakes are incredible" [R1]')
    assert grounding_score(matches, 70) == 1.0
    assert grounding_score(matches, 80) == 0.5
    assert grounding_score(matches, 90) == 0.5
    assert grounding_score(matches, EXACT) == 0.0


def test_quote_citing_the_wrong_review_fails():
    assert grounding_score(matches_for('"the crab cakes were incredible" [R2]')) == 0.0


def test_quote_citing_an_unmapped_label_fails():
    assert grounding_score(matches_for('"the crab cakes were incredible" [R9]')) == 0.0


def test_quote_with_several_labels_takes_the_best_review():
    assert grounding_score(matches_for('"the crab cakes were incredible" [R2, R1]')) == 1.0


def test_unlabelled_quote_matches_any_cited_review_unless_policy_is_fail():
    response = 'They said "the chowder was bland" honestly.'
    assert grounding_score(matches_for(response)) == 1.0
    assert grounding_score(matches_for(response, unlabeled_policy=FAIL)) == 0.0


def test_matching_ignores_case_curly_apostrophes_and_edge_punctuation():
    sources = {"R1": [normalize_for_match("We didn't   expect such a view!")]}
    [match] = matches_for("“We DIDN’T expect such a view.” [R1]", sources)
    assert match.verbatim
    assert quote_core('  "Great." ') == "great"


# --- CD ---------------------------------------------------------------------------------------


def test_cd_is_matching_quote_tokens_over_response_tokens():
    response = (
        'Try Harbor House. One diner said "the crab cakes were incredible" [R1] '
        'and another "best chowder in town" [R2].'
    )
    # 19 word tokens (labels count as R1, R2); only the 5 tokens of the matching quote count.
    assert count_tokens(response) == 19
    assert citation_density(matches_for(response), count_tokens(response)) == pytest.approx(5 / 19)


def test_cd_counts_verbatim_quotes_only_and_fuzzy_cd_is_a_variant():
    response = 'Here: "crab cakes were so good" [R1]'
    matches = matches_for(response)
    tokens = count_tokens(response)  # Here crab cakes were so good R1 = 7
    assert citation_density(matches, tokens) == 0.0  # not in the review word for word
    assert fuzzy_citation_density(matches, tokens, 70) == pytest.approx(5 / 7)
    assert fuzzy_citation_density(matches, tokens, 80) == 0.0


def test_a_paraphrase_passing_gs_at_90_cannot_open_the_cgs_gate():
    # Review rA1 says "the crab cakes were incredible"; the quote changes one word. Its partial
    # ratio is >= 90, so GS counts it grounded, but CD (verbatim) is 0 and CGS is 0.
    response = 'Go: "the crab cake were incredible" [R1]'
    (match,) = matches_for(response)
    assert match.score >= 90 and not match.verbatim
    tokens = count_tokens(response)
    assert fuzzy_citation_density([match], tokens, 90) >= DEFAULT_CD_GATE
    cd = citation_density([match], tokens)
    assert cd == 0.0
    assert composite_grounding_score(grounding_score([match], 90), cd, 1.0) == 0.0


def test_cd_of_an_empty_response_is_zero():
    assert citation_density([], 0) == 0.0


def test_token_count_keeps_contractions_together_and_splits_hyphens():
    # It's | a | 5 | star | place | isn't | it
    assert count_tokens("It's a 5-star place, isn't it?") == 7


# --- PC ---------------------------------------------------------------------------------------


def test_inventory_has_about_forty_terms_in_four_families():
    assert set(ASPECT_INVENTORY) == {"food_menu", "ambience_style", "logistics", "value_price"}
    assert 38 <= sum(len(terms) for terms in ASPECT_INVENTORY.values()) <= 45


def test_aspect_matching_is_case_insensitive_whole_word_and_spelling_tolerant():
    text = "Seafood, WiFi, wi-fi, outdoor seating and Family Friendly; seafoods and budgetary."
    terms = [(m.term, text[m.start : m.end]) for m in DEFAULT_ASPECT_MATCHER.mentions(text)]
    assert terms == [
        ("seafood", "Seafood"),
        ("wi-fi", "WiFi"),
        ("wi-fi", "wi-fi"),
        ("outdoor seating", "outdoor seating"),
        ("family-friendly", "Family Friendly"),
    ]


def test_longest_term_wins_where_terms_overlap():
    matcher = AspectMatcher({"x": ("outdoor", "outdoor seating")})
    assert [m.term for m in matcher.mentions("Outdoor seating!")] == ["outdoor seating"]


def test_pc_counts_terms_with_a_label_within_80_characters():
    # "seafood" sits right before [R1]; "cheap" is more than 80 characters after it.
    response = 'Great seafood "the crab cakes were incredible" [R1].' + " x" * 50 + " Also cheap."
    mentions = DEFAULT_ASPECT_MATCHER.mentions(response)
    assert [m.term for m in mentions] == ["seafood", "cheap"]
    assert provenance_coverage(mentions, extract_labels(response)) == 0.5


def test_pc_window_is_plus_minus_80_characters_from_the_mention_offset():
    # "quiet" starts at offset 0: the window is [-80, 80]. "[R1]" after 72 spaces occupies
    # offsets 77-80 (inside); after 73 spaces 78-81 (its last character is outside).
    for gap, expected in ((72, 1.0), (73, 0.0)):
        response = "quiet" + " " * gap + "[R1]"
        mentions = DEFAULT_ASPECT_MATCHER.mentions(response)
        assert provenance_coverage(mentions, extract_labels(response), window=80) == expected
    # The earlier reading measured from the end of the term: 73 spaces is a gap of 73 <= 80.
    response = "quiet" + " " * 73 + "[R1]"
    mentions = DEFAULT_ASPECT_MATCHER.mentions(response)
    assert provenance_coverage(mentions, extract_labels(response), measure="gap") == 1.0


def test_pc_window_reaches_back_80_characters_before_the_mention():
    # "[R1]" at offsets 0-3. "cozy" at 80 has the window [0, 160]: the whole bracket is inside;
    # "cozy" at 81 has [1, 161]: the bracket starts before it.
    for gap, expected in ((76, 1.0), (77, 0.0)):
        response = "[R1]" + " " * gap + "cozy"
        mentions = DEFAULT_ASPECT_MATCHER.mentions(response)
        assert provenance_coverage(mentions, extract_labels(response)) == expected


def test_pc_merges_repeated_mentions_of_one_term():
    # "quiet" twice (one covered) and "cozy" once (uncovered): 1 of 2 distinct terms.
    response = "quiet [R1]" + " " * 100 + "quiet and cozy"
    mentions = DEFAULT_ASPECT_MATCHER.mentions(response)
    assert provenance_coverage(mentions, extract_labels(response)) == 0.5


def test_turn_without_aspect_mentions_has_pc_of_one():
    assert provenance_coverage([], []) == 1.0


def test_pc_without_labels_is_zero_when_aspects_are_mentioned():
    assert provenance_coverage(DEFAULT_ASPECT_MATCHER.mentions("cozy and quiet"), []) == 0.0


# --- CGS --------------------------------------------------------------------------------------


def test_cgs_matches_the_paper_dense_row():
    # metrics.md check: GS 0.997, PC 0.733 -> 0.997 x 0.8665 = 0.864 (CD 0.393 passes the gate).
    assert composite_grounding_score(0.997, 0.393, 0.733) == pytest.approx(0.997 * 0.8665)
    assert round(composite_grounding_score(0.997, 0.393, 0.733), 3) == 0.864


def test_cgs_is_zero_below_the_density_gate():
    assert composite_grounding_score(1.0, 0.049, 1.0) == 0.0
    assert composite_grounding_score(1.0, 0.05, 1.0) == 1.0


def test_citation_free_turn_gets_no_cgs_credit_despite_gs_of_one():
    matches = matches_for("Try Harbor House, it is quiet.")
    gs, cd = grounding_score(matches), citation_density(matches, 6)
    assert (gs, cd) == (1.0, 0.0)
    assert composite_grounding_score(gs, cd, 0.0) == 0.0


def test_cgs_hand_computed_turn():
    # GS 1/2, CD 5/19 >= 0.05, PC 1/2 -> 0.5 x (0.5 + 0.25) = 0.375.
    assert composite_grounding_score(0.5, 5 / 19, 0.5) == pytest.approx(0.375)


def test_cgs_formula_variants_hand_computed():
    variants = cgs_formula_variants(1.0, 0.5, 0.5)
    assert variants == pytest.approx(
        {
            "cgs_cd_gate_0.03": 0.75,
            "cgs_cd_gate_0.10": 0.75,
            "cgs_no_pc_floor": 0.5,
            "cgs_sqrt_pc": math.sqrt(0.5),
            "cgs_geometric": 0.25 ** (1 / 3),
            "cgs_harmonic": 3 / (1 + 2 + 2),
            "cgs_additive": 2 / 3,
        }
    )


def test_cd_gate_variants_differ_only_near_the_gate():
    variants = cgs_formula_variants(1.0, 0.04, 1.0)
    assert variants["cgs_cd_gate_0.03"] == 1.0
    assert variants["cgs_cd_gate_0.10"] == 0.0
    assert variants["cgs_harmonic"] == pytest.approx(3 / (1 + 25 + 1))
    assert cgs_formula_variants(1.0, 0.0, 1.0)["cgs_harmonic"] == 0.0


unit = st.floats(min_value=0.0, max_value=1.0)


@given(gs=unit, cd=unit, pc=unit)
def test_cgs_and_its_variants_stay_in_unit_interval_and_below_gs(gs, cd, pc):
    cgs = composite_grounding_score(gs, cd, pc)
    assert 0.0 <= cgs <= gs + 1e-12
    for value in cgs_formula_variants(gs, cd, pc).values():
        assert -1e-12 <= value <= 1.0 + 1e-12


@given(
    st.lists(
        st.sampled_from(
            [
                '"crab cakes were so good" [R1]',
                '"the crab cakes are incredible" [R1]',
                '"the crab cakes were incredible" [R1]',
                '"best chowder in town" [R2]',
                "plain words",
            ]
        ),
        max_size=6,
    )
)
def test_gs_is_bounded_and_never_rises_with_a_stricter_threshold(parts):
    matches = matches_for(" and ".join(parts))
    values = [grounding_score(matches, t) for t in (70, 80, 90, EXACT)]
    assert all(0.0 <= v <= 1.0 for v in values)
    assert values == sorted(values, reverse=True)
