"""The task forms' server-side rules (pure: taskforms has no database)."""

import json

from django.http import QueryDict

from annotation.lib import taskforms
from annotation.lib.taskforms import Layout, parse_post

RESPONSE = Layout(forms=("citation", "checklist", "likert"), quote_count=2,
                  likert_scales=taskforms.DEFAULT_LIKERT_SCALES)


def field_name(name: str) -> str:
    """citation_0 -> citation-0, face_turn_1_relevance -> face-turn-1-relevance,
    face_task_completion -> face-task_completion (keys keep their own underscores)."""
    prefix, _, rest = name.partition("_")
    if prefix not in ("citation", "likert", "core", "face", "rec", "pair") or not rest:
        return name
    if prefix == "face" and rest.startswith("turn_"):
        _, index, key = rest.split("_", 2)
        return f"face-turn-{index}-{key}"
    return f"{prefix}-{rest}"


def post(**fields) -> QueryDict:
    data = QueryDict(mutable=True)
    for name, value in fields.items():
        for v in value if isinstance(value, list) else [value]:
            data.appendlist(field_name(name), v)
    return data


def complete_response(**over):
    fields = {"citation_0": "supported", "citation_1": "not_supported", "error": ["no_errors"],
              "likert_informativeness": "4", "likert_naturalness": "5"}
    fields.update(over)
    return post(**fields)


def test_a_complete_response_form_parses_to_typed_values():
    parsed = parse_post(complete_response(), RESPONSE, partial=False)
    assert parsed.errors == []
    assert parsed.values == {"citations": {"0": "supported", "1": "not_supported"},
                             "errors": ["no_errors"],
                             "likert": {"informativeness": 4, "naturalness": 5}}


def test_no_errors_combined_with_an_error_category_is_rejected():
    parsed = parse_post(complete_response(error=["no_errors", "too_vague"]), RESPONSE,
                        partial=False)
    assert any("No errors" in e for e in parsed.errors)
    assert "errors" not in parsed.values


def test_checklist_consistency_rule():
    assert taskforms.checklist_is_consistent(["no_errors"])
    assert taskforms.checklist_is_consistent(["too_vague", "exaggeration"])
    assert not taskforms.checklist_is_consistent(["no_errors", "wrong_item"])


def test_every_quote_needs_a_verdict_and_none_is_preselected():
    assert not hasattr(taskforms, "CITATION_DEFAULT")
    parsed = parse_post(post(citation_0="supported", error="no_errors",
                             likert_informativeness="3", likert_naturalness="3"),
                        RESPONSE, partial=False)
    assert "Citation check: choose a verdict for quote 2." in parsed.errors


def test_likert_values_outside_the_configured_scale_are_rejected():
    parsed = parse_post(complete_response(likert_naturalness="6"), RESPONSE, partial=False)
    assert any("Naturalness" in e and "outside 1–5" in e for e in parsed.errors)
    custom = Layout(forms=("likert",), likert_scales=({"key": "fun", "label": "Fun", "min": 0,
                                                       "max": 2},))
    assert parse_post(post(likert_fun="2"), custom, partial=False).values == {"likert": {"fun": 2}}


def test_core_form_needs_all_twelve_factors_and_an_overall_between_0_and_100():
    layout = Layout(forms=("core",))
    data = {f"core_{f.key}": "4" for f in taskforms.CORE_FACTORS}
    assert len(taskforms.CORE_FACTORS) == 12
    parsed = parse_post(post(**data, core_overall="101"), layout, partial=False)
    assert any("Overall" in e for e in parsed.errors)
    parsed = parse_post(post(**data, core_overall="0"), layout, partial=False)
    assert parsed.errors == [] and parsed.values["core"]["overall"] == 0
    parsed = parse_post(post(**{**data, "core_coherence": "5"}, core_overall="50"), layout,
                        partial=False)
    assert any("Coherence" in e for e in parsed.errors)


def test_face_form_rates_each_system_turn_and_the_dialogue_on_the_released_scales():
    layout = Layout(forms=("face",), rated_turns=(1, 3))
    data = {"face_understanding": "2", "face_task_completion": "2", "face_efficiency": "1",
            "face_interest_arousal": "0", "face_overall": "4",
            "face_turn_1_relevance": "2", "face_turn_1_interestingness": "0"}
    parsed = parse_post(post(**data), layout, partial=False)
    assert "Rate relevance of system turn 3." in parsed.errors
    data.update({"face_turn_3_relevance": "1", "face_turn_3_interestingness": "1"})
    parsed = parse_post(post(**data), layout, partial=False)
    assert parsed.errors == []
    assert parsed.values["face"]["turns"] == {"1": {"relevance": 2, "interestingness": 0},
                                              "3": {"relevance": 1, "interestingness": 1}}
    parsed = parse_post(post(**{**data, "face_efficiency": "2"}), layout, partial=False)
    assert any("Efficiency" in e for e in parsed.errors)


def test_blind_recommendation_needs_one_to_three_candidates_and_verbatim_quotes():
    reviews = {"v1": ("r1", "The crab cakes were incredible.")}

    def checker(review_id, start, end, text, item_id):
        owner, body = reviews.get(review_id, (None, ""))
        return owner == item_id and body[start:end] == text

    layout = Layout(forms=("recommend",), candidate_ids=("r1", "r2", "h1", "a1"),
                    quote_checker=checker)
    good = {"item_id": "r1", "review_id": "v1", "start": 4, "end": 14, "text": "crab cakes"}
    parsed = parse_post(post(rec_item=["r1"], rec_text="I recommend it",
                             rec_quotes=json.dumps([good])), layout, partial=False)
    assert parsed.errors == [] and parsed.values["recommend"]["quotes"] == [good]
    forged = {**good, "text": "lobster"}
    parsed = parse_post(post(rec_item=["r1"], rec_text="x", rec_quotes=json.dumps([forged])),
                        layout, partial=False)
    assert any("does not match" in e for e in parsed.errors)
    twice = parse_post(post(rec_item=["r1"], rec_text="x", rec_quotes=json.dumps([good, good])),
                       layout, partial=False)
    assert twice.errors == ["The passage \u201ccrab cakes\u201d is quoted twice; remove one."]
    assert twice.values["recommend"]["quotes"] == [good]
    parsed = parse_post(post(rec_item=["r1", "r2", "h1", "a1"], rec_text="x"), layout,
                        partial=False)
    assert any("at most 3" in e for e in parsed.errors)
    parsed = parse_post(post(rec_item=["zz"], rec_text="x"), layout, partial=False)
    assert "Pick 1–3 items." in parsed.errors


def test_pairwise_left_and_right_are_stored_as_the_items_a_and_b_through_the_swap():
    plain, swapped = Layout(forms=("pairwise",)), Layout(forms=("pairwise",), swapped=True)
    assert parse_post(post(pair_choice="left"), plain, partial=False).values["pairwise"] == {
        "choice": "a"}
    assert parse_post(post(pair_choice="left"), swapped, partial=False).values["pairwise"] == {
        "choice": "b"}
    assert parse_post(post(pair_choice="tie"), swapped, partial=False).values["pairwise"] == {
        "choice": "tie"}
    assert taskforms.pairwise_to_display("b", True) == "left"
    assert parse_post(post(pair_choice="up"), plain, partial=False).errors


def test_a_flagged_item_may_be_submitted_incomplete_and_a_draft_keeps_what_is_valid():
    parsed = parse_post(post(flag="1", flag_reason="response is empty"), RESPONSE, partial=False)
    assert parsed.errors == [] and parsed.values == {"flag": True,
                                                     "flag_reason": "response is empty"}
    draft = parse_post(post(citation_0="supported", likert_naturalness="9"), RESPONSE,
                       partial=True)
    assert draft.values == {"citations": {"0": "supported"}}


def test_flatten_gives_one_field_per_value_for_the_long_export():
    values = parse_post(complete_response(comment="odd one"), RESPONSE, partial=False).values
    rows = dict(taskforms.flatten(values))
    assert rows["citation.0"] == "supported" and rows["citation.1"] == "not_supported"
    assert rows["error.no_errors"] == 1 and rows["error.too_vague"] == 0
    assert len([k for k in rows if k.startswith("error.")]) == 8
    assert rows["likert.informativeness"] == 4 and rows["comment"] == "odd one"


def test_gold_score_compares_expected_fields_and_accepts_any_acceptable_item():
    values = {"citations": {"0": "supported", "1": "partial"}}
    assert taskforms.gold_score({"citation.0": "supported", "citation.1": "not_supported"},
                                values) == (1, 2)
    picked = {"recommend": {"items": ["r2", "h1"]}}
    assert taskforms.gold_score({"recommend.items": ["r1", "h1"]}, picked) == (1, 1)
    assert taskforms.gold_score({"recommend.items": ["r1"]}, picked) == (0, 1)


def test_a_categorical_field_without_a_strict_majority_is_a_tie():
    s, p, n = ({"citations": {"0": v}} for v in ("supported", "partial", "not_supported"))
    assert taskforms.categorical_tie([s, p])
    assert taskforms.categorical_tie([s, p, n])
    assert not taskforms.categorical_tie([s, s, p])
    likert_only = [{"likert": {"x": 1}}, {"likert": {"x": 5}}]
    assert not taskforms.categorical_tie(likert_only)  # ordinal scales are not categorical
    assert taskforms.categorical_tie([{"pairwise": {"choice": "a"}},
                                      {"pairwise": {"choice": "b"}}])


def test_an_author_likert_configuration_is_validated():
    assert taskforms.validate_likert_scales(list(taskforms.DEFAULT_LIKERT_SCALES)) == []
    assert taskforms.validate_likert_scales([]) != []
    bad = [{"key": "a b", "min": 3, "max": 1}, {"key": "x", "min": 1, "max": 5,
                                                "anchors": {"one": "?"}}]
    errors = taskforms.validate_likert_scales(bad)
    assert len(errors) == 3
