"""LLM Zero-Shot and RAG-Citation baselines (Trace, Appendix F) producing ``turn`` lines."""

from __future__ import annotations

import json

from evaluation.lib.llm.responders import (
    CandidateItem,
    DialogueContext,
    EvidenceSentence,
    cited_quotes,
    rag_citation_messages,
    rag_citation_turn,
    retrieve_evidence,
    submission_jsonl,
    zero_shot_messages,
    zero_shot_turn,
)
from tests.evaluation.llm.helpers import config_for

CONTEXT = {
    "dialogue_id": "trace-17",
    "turn_index": 3,
    "action": "recommend",
    "turns": [
        {"role": "user", "text": "We want seafood near the harbour, nothing too pricey."},
        {"role": "system", "text": "Do you prefer a lively place or a quiet one?"},
        {"role": "user", "text": "Quiet please, it is our anniversary dinner."},
    ],
    "candidates": [
        {"id": "poi-1", "name": "Harbor Lights", "type": "restaurant", "price_level": 2,
         "stars": 4.5, "categories": ["Seafood"]},
        {"id": "poi-2", "name": "Burger Barn", "type": "restaurant", "price_level": 1},
        {"id": "poi-3", "name": "Quiet Cove", "type": "restaurant", "categories": ["Seafood"]},
    ],
}  # fmt: skip

EVIDENCE = [
    EvidenceSentence(
        "R1", "rev-1", "poi-1",
        "The crab cakes were incredible and the room stayed calm all evening.",
        item_name="Harbor Lights", stars=5,
    ),
    EvidenceSentence("R2", "rev-2", "poi-3", "Lovely quiet spot for a date night.", stars=4),
]  # fmt: skip

GOOD_QUOTE = "the crab cakes were incredible and the room stayed calm all evening"


def reply(ranked, response) -> str:
    return json.dumps({"ranked_item_ids": ranked, "response": response})


def test_zero_shot_prompt_has_the_dialogue_the_cards_and_the_action():
    content = zero_shot_messages(DialogueContext.from_dict(CONTEXT))[0]["content"]

    assert "user: Quiet please, it is our anniversary dinner." in content
    assert "- id: poi-1; name: Harbor Lights; type: restaurant; price: $$; stars: 4.5" in content
    assert "Recommend the best-matching place(s)" in content
    assert '"ranked_item_ids"' in content


def test_zero_shot_returns_a_submission_line(llm_server, gateway):
    server = llm_server([reply(["poi-3", "poi-1", "poi-9"], "Quiet Cove suits a calm dinner.")])

    outcome = zero_shot_turn(CONTEXT, gateway=gateway, config=config_for(server))

    assert outcome.ok
    assert outcome.line == {
        "dialogue_id": "trace-17",
        "turn_index": 3,
        "response": "Quiet Cove suits a calm dinner.",
        "ranked_item_ids": ["poi-3", "poi-1"],  # the invented poi-9 is dropped
        "citations": [],
    }


def test_zero_shot_accepts_fenced_json_and_reasks_on_malformed_output(llm_server, gateway):
    server = llm_server(
        ["Here you go: {ranked: poi-1}", "```json\n" + reply(["poi-1"], "Harbor Lights!") + "\n```"]
    )

    outcome = zero_shot_turn(CONTEXT, gateway=gateway, config=config_for(server))

    assert outcome.ok and outcome.attempts == 2
    assert outcome.line["ranked_item_ids"] == ["poi-1"]
    assert "no valid JSON object" in server.requests[1].last_user_text


def test_zero_shot_failure_is_recorded(llm_server, gateway):
    server = llm_server([reply(["poi-77"], "Try it")] * 3)

    outcome = zero_shot_turn(CONTEXT, gateway=gateway, config=config_for(server))

    assert outcome.line is None and "no candidate id" in outcome.failure
    assert server.request_count == 3


def test_evidence_is_retrieved_by_jaccard_similarity_and_labelled():
    reviews = [
        {"id": "a", "item_id": "poi-1", "text": "Great seafood. Parking is hard."},
        {"id": "b", "item_id": "poi-2", "text": "Quiet seafood place by the harbour."},
    ]
    items = {"poi-2": CandidateItem("poi-2", "Burger Barn")}

    evidence = retrieve_evidence("quiet seafood harbour", reviews, items=items, k=2)

    # "Quiet seafood place by the harbour." shares 3 of 6 words; "Great seafood." 1 of 4.
    assert [(e.label, e.review_id, e.text) for e in evidence] == [
        ("R1", "b", "Quiet seafood place by the harbour."),
        ("R2", "a", "Great seafood."),
    ]
    assert evidence[0].item_name == "Burger Barn"


def test_rag_prompt_lists_labelled_evidence_and_the_quote_rule():
    content = rag_citation_messages(DialogueContext.from_dict(CONTEXT), EVIDENCE)[0]["content"]
    assert "[R1] (Harbor Lights, 5 stars) The crab cakes were incredible" in content
    assert "at least 10 words copied exactly" in content


def test_quote_check_needs_ten_verbatim_tokens_from_the_labelled_sentence():
    ok = f'Book it: "{GOOD_QUOTE}" [R1].'
    short = 'Book it: "the crab cakes were incredible" [R1].'
    wrong_label = f'Book it: "{GOOD_QUOTE}" [R2].'
    paraphrase = 'Book it: "the crab cakes were amazing and the room stayed calm all evening" [R1].'
    curly = f"Book it: \u201c{GOOD_QUOTE.capitalize()}\u201d [R1]."

    assert cited_quotes(ok, EVIDENCE) == (
        [{"label": "R1", "review_id": "rev-1", "quote": GOOD_QUOTE}],
        1,
    )
    assert cited_quotes(short, EVIDENCE)[1] == 0
    assert cited_quotes(wrong_label, EVIDENCE)[1] == 0
    assert cited_quotes(paraphrase, EVIDENCE)[1] == 0
    assert cited_quotes(curly, EVIDENCE)[1] == 1


def test_rag_citation_returns_a_line_with_citations(llm_server, gateway):
    response = f'Harbor Lights fits: "{GOOD_QUOTE}" [R1], and Quiet Cove is "Lovely" [R2].'
    server = llm_server([reply(["poi-1", "poi-3"], response)])

    outcome = rag_citation_turn(CONTEXT, EVIDENCE, gateway=gateway, config=config_for(server))

    assert outcome.ok
    assert outcome.line["citations"] == [
        {"label": "R1", "review_id": "rev-1", "quote": GOOD_QUOTE},
        {"label": "R2", "review_id": "rev-2", "quote": "Lovely"},
    ]
    assert json.loads(submission_jsonl([outcome]))["dialogue_id"] == "trace-17"


def test_rag_citation_retries_when_the_quote_check_fails_then_records_failure(llm_server, gateway):
    paraphrased = reply(["poi-1"], 'Reviewers say "the crab cakes were great" [R1].')
    server = llm_server([paraphrased] * 4)

    outcome = rag_citation_turn(CONTEXT, EVIDENCE, gateway=gateway, config=config_for(server))

    assert server.request_count == 3  # first try + 2 retries
    assert outcome.line is None and "copied exactly" in outcome.failure
    assert "at least 10 words" in server.requests[1].last_user_text


def test_rag_citation_succeeds_on_a_retry(llm_server, gateway):
    server = llm_server(
        [
            reply(["poi-1"], "Harbor Lights is great."),
            reply(["poi-1"], f'Harbor Lights: "{GOOD_QUOTE}" [R1]'),
        ]
    )

    outcome = rag_citation_turn(CONTEXT, EVIDENCE, gateway=gateway, config=config_for(server))

    assert outcome.ok and outcome.attempts == 2
