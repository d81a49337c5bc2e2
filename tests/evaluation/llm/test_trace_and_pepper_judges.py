"""The Trace LLM judge (App. J) and the PEPPER qualitative judge (§3.3.2)."""

from __future__ import annotations

from evaluation.lib.llm.pepper_judge import PEPPER_ASPECTS, build_pepper_messages, judge_pepper_log
from evaluation.lib.llm.trace_judge import (
    TRACE_CRITERIA,
    JudgedTurn,
    build_trace_judge_messages,
    judge_trace_turn,
    judge_trace_turns,
)
from tests.evaluation.llm.helpers import config_for
from tests.evaluation.llm.sample_logs import REALISTIC_LOG

TURN = {
    "dialogue_id": "trace-17",
    "turn_index": 3,
    "context": [
        {"role": "user", "text": "We want seafood near the harbour, nothing too pricey."},
        {"role": "system", "text": "Do you prefer a lively place or a quiet one?"},
        {"role": "user", "text": "Quiet, we are celebrating an anniversary."},
    ],
    "response": 'Try Harbor Lights: "the crab cakes were incredible and the room was calm" [R2].',
    "cited_reviews": [
        {
            "label": "R2",
            "review_id": "rev-88",
            "text": "The crab cakes were incredible and the room was calm even on a Friday.",
            "item_name": "Harbor Lights",
        }
    ],
}

ALL_FIVE = (
    "Relevant and grounded.\n<relevance>5</relevance><informativeness>4</informativeness>"
    "<grounding_quality>5</grounding_quality><natural_flow>4</natural_flow>"
    "<justification>3</justification>"
)


def test_trace_prompt_shows_context_response_reviews_and_all_five_scales():
    prompt = "\n".join(m["content"] for m in build_trace_judge_messages(JudgedTurn.from_dict(TURN)))

    assert "Quiet, we are celebrating an anniversary." in prompt
    assert "Try Harbor Lights" in prompt
    assert "[R2] (Harbor Lights, review rev-88): The crab cakes were incredible" in prompt
    for name in ("Relevance", "Informativeness", "Grounding quality", "Natural flow"):
        assert f"- {name} <" in prompt
    assert all(f"<{c}>N</{c}>" in prompt for c in TRACE_CRITERIA)


def test_trace_scores_are_parsed_per_criterion(llm_server, gateway):
    server = llm_server([ALL_FIVE])

    scores = judge_trace_turn(TURN, gateway=gateway, config=config_for(server))

    assert {c: s.score for c, s in scores.items()} == {
        "relevance": 5,
        "informativeness": 4,
        "grounding_quality": 5,
        "natural_flow": 4,
        "justification": 3,
    }
    assert scores["relevance"].rationale == "Relevant and grounded."
    assert all(s.ok and s.attempts == 1 for s in scores.values())


def test_trace_judge_reasks_when_a_score_is_out_of_range(llm_server, gateway):
    server = llm_server([ALL_FIVE.replace("<justification>3", "<justification>0"), ALL_FIVE])

    scores = judge_trace_turn(TURN, gateway=gateway, config=config_for(server))

    assert scores["justification"].score == 3 and scores["justification"].attempts == 2
    assert "<justification> value '0' is outside 1–5" in server.requests[1].last_user_text


def test_trace_judge_keeps_valid_scores_and_records_failures_for_the_rest(llm_server, gateway):
    partial = "<relevance>4</relevance><natural_flow>9</natural_flow>"
    server = llm_server([partial, partial, partial])

    scores = judge_trace_turn(TURN, gateway=gateway, config=config_for(server))

    assert server.request_count == 3
    assert scores["relevance"].score == 4 and scores["relevance"].ok
    assert scores["natural_flow"].score is None
    assert "outside 1–5" in scores["natural_flow"].failure
    assert "no <informativeness>" in scores["informativeness"].failure


def test_a_reasoning_longer_than_asked_is_read_and_one_cut_before_its_tags_is_reasked(
        llm_server, gateway):
    """The prompt asks for at most 60 words (the format's bound under constrained decoding).
    A real model on a backend that cannot constrain may write more: with its tags there, the
    answer is read as it is (no re-ask, no drop); cut before its tags (its token cap), it is
    re-asked, and the re-ask says why and repeats the limit."""
    prompt = build_trace_judge_messages(JudgedTurn.from_dict(TURN))[-1]["content"]
    assert "Give a short reasoning first, in at most 60 words. Then give every score" in prompt
    rambling = " ".join(["The response names a quiet seafood place near the harbour."] * 25)
    server = llm_server([rambling + "\n" + ALL_FIVE, rambling, ALL_FIVE])

    long_but_complete = judge_trace_turn(TURN, gateway=gateway, config=config_for(server))
    cut = judge_trace_turn({**TURN, "response": "Try Quiet Cove."}, gateway=gateway,
                           config=config_for(server))

    assert long_but_complete["relevance"].score == 5
    assert long_but_complete["relevance"].attempts == 1
    assert long_but_complete["relevance"].rationale.startswith(rambling)
    assert {c: s.score for c, s in cut.items()} == {c: s.score for c, s in
                                                     long_but_complete.items()}
    assert cut["relevance"].attempts == 2
    reask = server.requests[2].last_user_text
    assert "no <relevance>…</relevance> tag found" in reask
    assert "(the reasoning before the tags ran to 250 words; at most 60 were asked)" in reask
    assert "Answer again: a short reasoning in at most 60 words, then every score" in reask


def test_many_trace_turns_are_judged_in_order(llm_server, gateway):
    def script(request):
        score = 2 if "turn-one" in request.prompt_text else 5
        return "".join(f"<{c}>{score}</{c}>" for c in TRACE_CRITERIA)

    server = llm_server(script)
    turns = [{**TURN, "response": "turn-one"}, {**TURN, "response": "turn-two"}]

    results = judge_trace_turns(turns, gateway=gateway, config=config_for(server))

    assert [r["relevance"].score for r in results] == [2, 5]


def test_pepper_prompt_has_the_dialogue_preferences_and_three_criteria():
    content = build_pepper_messages(REALISTIC_LOG)[0]["content"]

    assert "User: Hello! Do you know of any family friendly movies?" in content
    assert "Recommender: That is Finding Nemo (2003)!" in content
    assert "Family animation, ocean adventures." in content
    for label in ("Proactiveness (1-5)", "Coherence (1-5)", "Personalization (1-5)"):
        assert label in content


def test_pepper_scores_are_parsed(llm_server, gateway):
    server = llm_server(
        ["Asks good questions.\n<proactiveness>4</proactiveness>"
         "<coherence>5</coherence><personalization>3</personalization>"]
    )  # fmt: skip

    scores = judge_pepper_log(
        REALISTIC_LOG, gateway=gateway, config=config_for(server), user_preferences="Sea films"
    )

    assert {a: s.score for a, s in scores.items()} == {
        "proactiveness": 4,
        "coherence": 5,
        "personalization": 3,
    }
    assert "Sea films" in server.requests[0].prompt_text
    assert tuple(scores) == PEPPER_ASPECTS


def test_pepper_failure_is_recorded_not_defaulted(llm_server, gateway):
    server = llm_server(["Proactiveness: 4, Coherence: 5"] * 3)

    scores = judge_pepper_log(REALISTIC_LOG, gateway=gateway, config=config_for(server))

    assert all(s.score is None and s.failure for s in scores.values())
    assert server.request_count == 3
