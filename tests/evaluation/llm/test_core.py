"""CoRE twelve-factor judge, mixture of evaluators and baselines, over the real litellm path."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from evaluation.lib.llm.conversation import ConversationLog, render_log
from evaluation.lib.llm.core_factors import (
    build_factor_messages,
    parse_factor_rating,
    score_factors,
)
from evaluation.lib.llm.core_recall_persuasiveness import (
    IEVALM_PERSUASIVENESS_RUBRIC,
    parse_persuasiveness,
    persuasiveness_messages,
    recall_at_k,
    score_persuasiveness,
    session_recall,
)
from evaluation.lib.llm.core_routing import (
    choose_judge_per_factor,
    configs_for_choices,
    qwk_by_factor,
)
from evaluation.lib.llm.core_rubrics import FACTOR_GUIDELINES, FACTOR_KEYS, GUIDELINE_BY_KEY
from tests.evaluation.llm.helpers import config_for, factor_name
from tests.evaluation.llm.sample_logs import ITEM_NAMES, REALISTIC_LOG, SHORT_LOG

NAME_TO_KEY = {g.name: g.key for g in FACTOR_GUIDELINES}


def test_there_are_twelve_factors_in_four_dimensions_of_three():
    assert len(FACTOR_GUIDELINES) == 12
    dimensions = [g.dimension for g in FACTOR_GUIDELINES]
    assert sorted(dimensions.count(d) for d in set(dimensions)) == [3, 3, 3, 3]


# --- log rendering -----------------------------------------------------------------------------


def test_log_is_split_into_history_and_interaction_with_one_session_list():
    log = ConversationLog.from_dict(SHORT_LOG)

    assert [t.text for t in log.history] == ["Hi there, any ideas for a movie?"]
    assert len(log.interaction) == 4
    # Per-turn lists concatenated; the repeated m-nemo counts once, at its first position.
    assert log.session_recommendations() == ("m-sharktale", "m-nemo", "m-ponyo")

    rendered = render_log(log, item_names=ITEM_NAMES)
    history_part = rendered.split("<interaction>")[0]
    assert "Hi there, any ideas for a movie?" in history_part
    assert "Something with fish please." not in history_part
    assert "Shark Tale (2004), Finding Nemo (2003), Ponyo (2008)" in rendered
    assert "<groundtruth_list>\n  Finding Nemo (2003), Ponyo (2008)" in rendered


def test_unknown_ground_truth_is_said_to_be_unknown():
    log = ConversationLog.from_dict({**SHORT_LOG, "ground_truth_item_ids": []})
    assert "(unknown: judge against the interests the user expressed)" in render_log(log)


# --- prompts -----------------------------------------------------------------------------------


@pytest.mark.parametrize("factor", FACTOR_KEYS)
def test_a_factor_prompt_carries_its_own_rubric_and_no_other(factor):
    prompt = "\n".join(m["content"] for m in build_factor_messages(REALISTIC_LOG, factor))
    own = GUIDELINE_BY_KEY[factor]

    assert f'<guideline factor="{own.name}">' in prompt
    assert own.definition in prompt
    assert all(rule in prompt for rule in own.scoring_standard)
    assert all(step in prompt for step in own.steps)
    assert "<rating>N</rating>" in prompt
    for other in FACTOR_GUIDELINES:
        if other.key == factor:
            continue
        assert other.definition not in prompt
        assert not any(rule in prompt for rule in other.scoring_standard if len(rule) > 25)
        assert other.name not in prompt, f"{other.name} leaks into the {own.name} prompt"


def test_the_prompt_shows_the_log_the_session_list_and_the_ground_truth():
    prompt = build_factor_messages(REALISTIC_LOG, "effectiveness", item_names=ITEM_NAMES)[1]
    content = prompt["content"]
    assert "That is Finding Nemo (2003)! Marlin" in content
    assert "<groundtruth_list>\n  Finding Nemo (2003)" in content
    assert "Sing (2016), Moana (2016), Get Out (2017), Finding Dory (2016)" in content


def test_counting_rules_follow_the_seed():
    coherence = GUIDELINE_BY_KEY["coherence"].scoring_standard
    assert "0 misaligned turns: 4 points." in coherence
    assert "2 misaligned turns: 2 points." in coherence
    appropriateness = " ".join(GUIDELINE_BY_KEY["appropriateness"].scoring_standard)
    assert "4 points" in appropriateness and "0 points" in appropriateness
    assert not any(f"{n} point" in appropriateness for n in (1, 2, 3))


# --- parsing -----------------------------------------------------------------------------------


def test_rating_is_read_after_the_rationale():
    parsed = parse_factor_rating("Two turns miss the intent. <rating>2</rating>")
    assert parsed.ok and parsed.value.score == 2
    assert parsed.value.rationale == "Two turns miss the intent."


@pytest.mark.parametrize(
    ("answer", "score"),
    [
        ("<rating>1</rating> then I reconsider: <rating>3</rating>", 3),
        ("<RATING> 4 </RATING>", 4),
        ("<rating>0</rating>", 0),
        ("<rating>2.0</rating>", 2),
    ],
)
def test_rating_parsing_takes_the_last_whole_score(answer, score):
    assert parse_factor_rating(answer).value.score == score


@pytest.mark.parametrize(
    "answer", ["I give it 3", "<rating>5</rating>", "<rating>-1</rating>", "<rating>2.5</rating>"]
)
def test_bad_ratings_are_rejected_with_a_reason(answer):
    parsed = parse_factor_rating(answer)
    assert not parsed.ok and parsed.problem


# --- scoring over HTTP -------------------------------------------------------------------------

SCORES = {g.name: i % 5 for i, g in enumerate(FACTOR_GUIDELINES)}


def scripted_factor_answers(request):
    name = factor_name(request)
    return f"Reasoning about {name}: counted things.\n<rating>{SCORES[name]}</rating>"


def test_twelve_factors_are_scored_one_prompt_each(llm_server, gateway):
    server = llm_server(scripted_factor_answers)

    results = score_factors(REALISTIC_LOG, gateway=gateway, config=config_for(server))

    assert server.request_count == 12
    assert sorted(factor_name(r) for r in server.requests) == sorted(SCORES)
    assert {k: r.score for k, r in results.items()} == {
        NAME_TO_KEY[name]: score for name, score in SCORES.items()
    }
    coherence = results["coherence"]
    assert coherence.ok and coherence.attempts == 1
    assert coherence.rationale == "Reasoning about Coherence: counted things."


def test_a_rerun_makes_no_http_call_and_gives_the_same_scores(llm_server, gateway):
    server = llm_server(scripted_factor_answers)
    config = config_for(server)
    first = score_factors(REALISTIC_LOG, gateway=gateway, config=config)

    second = score_factors(REALISTIC_LOG, gateway=gateway, config=config)

    assert server.request_count == 12
    assert {k: r.score for k, r in second.items()} == {k: r.score for k, r in first.items()}
    assert gateway.usage.cached_calls == 12


def test_a_malformed_answer_is_reasked_with_the_problem_stated(llm_server, gateway):
    server = llm_server(
        ["It is fine overall.", "Hmm. <rating>7</rating>", "OK. <rating>3</rating>"]
    )

    result = score_factors(
        REALISTIC_LOG, gateway=gateway, config=config_for(server), factors=["naturalness"]
    )["naturalness"]

    assert (result.score, result.attempts, result.failure) == (3, 3, None)
    reask = server.requests[1]
    assert reask.messages[-2] == {"role": "assistant", "content": "It is fine overall."}
    assert "no <rating>" in reask.messages[-1]["content"]
    assert "outside 0–4" in server.requests[2].messages[-1]["content"]


def test_a_factor_rationale_cut_before_its_rating_is_reasked_with_the_word_limit(
        llm_server, gateway):
    """The prompt asks for at most 100 words of reasoning (the format's bound); a longer
    rationale with its rating is read as it is, one that never reached its rating (cut at the
    token cap) is re-asked with the count and the limit."""
    prompt = build_factor_messages(REALISTIC_LOG, "naturalness")[-1]["content"]
    assert "Reason step by step following the guideline first, in at most 100 words." in prompt
    long = " ".join(["Turn two answers the request naturally and politely."] * 20)  # 160 words
    server = llm_server([long + "\n<rating>3</rating>", long, "Short. <rating>2</rating>"])

    read = score_factors(REALISTIC_LOG, gateway=gateway, config=config_for(server),
                         factors=["naturalness"])["naturalness"]
    reasked = score_factors(REALISTIC_LOG, gateway=gateway, config=config_for(server),
                            factors=["coherence"])["coherence"]

    assert (read.score, read.attempts, read.rationale) == (3, 1, long)
    assert (reasked.score, reasked.attempts) == (2, 2)
    correction = server.requests[2].messages[-1]["content"]
    assert "no <rating>…</rating> tag found (the reasoning before the tags ran to 160 words; " \
           "at most 100 were asked)" in correction
    assert "give your reasoning in at most 100 words, then end with exactly one tag" in correction


def test_answers_that_stay_malformed_become_a_recorded_failure(llm_server, gateway):
    server = llm_server(["no score", "still none", "<rating>9</rating>", "never asked"])

    result = score_factors(
        REALISTIC_LOG, gateway=gateway, config=config_for(server), factors=["groundedness"]
    )["groundedness"]

    assert server.request_count == 3  # one ask + two re-asks, then stop
    assert result.score is None and not result.ok
    assert "unparseable after 3 answers" in result.failure
    assert result.raw_answer == "<rating>9</rating>"


def test_an_llm_error_becomes_a_recorded_failure(llm_server, gateway):
    from tests.support.llm_server import http_error

    server = llm_server([http_error(400, message="context too long")])

    result = score_factors(
        REALISTIC_LOG, gateway=gateway, config=config_for(server), factors=["novelty"]
    )["novelty"]

    assert result.score is None and result.failure.startswith("llm_error")


# --- mixture of evaluators ---------------------------------------------------------------------


def test_qwk_table_by_factor_and_model():
    human = {"u1": {"coherence": 4}, "u2": {"coherence": 0}, "u3": {"coherence": 2}}
    judges = {
        "gpt": {"u1": {"coherence": 4}, "u2": {"coherence": 0}, "u3": {"coherence": 2}},
        "llama": {"u1": {"coherence": 0}, "u2": {"coherence": 4}},
    }
    table = qwk_by_factor(human, judges, factors=["coherence"])
    assert table["coherence"]["gpt"] == pytest.approx(1.0)
    assert table["coherence"]["llama"] == pytest.approx(-1.0)


def test_the_best_aligned_judge_is_chosen_per_factor_with_ties_and_gaps_reported():
    qwk = {
        "coherence": {"gpt": 0.592, "glm": 0.624, "llama": None},
        "novelty": {"gpt": 0.3, "glm": 0.3},
        "diversity": {"gpt": None, "glm": math.nan},
    }

    choices = choose_judge_per_factor(qwk, preference=["glm", "gpt"], default_model="gpt")

    assert (choices["coherence"].model, choices["coherence"].qwk) == ("glm", 0.624)
    assert choices["coherence"].reason == "highest QWK"
    assert choices["novelty"].model == "glm" and choices["novelty"].tied_with == ("gpt",)
    assert "tie" in choices["novelty"].reason
    assert choices["diversity"].model == "gpt" and choices["diversity"].qwk is None
    assert "no QWK" in choices["diversity"].reason


def test_each_factor_is_sent_to_its_chosen_judge(llm_server, gateway):
    server = llm_server(scripted_factor_answers)
    choices = choose_judge_per_factor(
        {
            "coherence": {"judge-a": 0.9, "judge-b": 0.1},
            "novelty": {"judge-a": 0.2, "judge-b": 0.8},
        }
    )
    fallback = config_for(server, model="openai/judge-a")
    configs = configs_for_choices(
        choices, {"judge-b": config_for(server, model="openai/judge-b")}, fallback=fallback
    )

    score_factors(REALISTIC_LOG, gateway=gateway, config=configs, factors=["coherence", "novelty"])

    models = {factor_name(r): r.model for r in server.requests}
    assert models == {"Coherence": "judge-a", "Novelty": "judge-b"}


# --- baselines ---------------------------------------------------------------------------------


def test_recall_at_k_on_the_session_list_by_hand():
    # Session list: sharktale, nemo, ponyo; ground truth: nemo, ponyo.
    assert session_recall(SHORT_LOG) == {1: 0.0, 5: 1.0, 10: 1.0}
    assert recall_at_k(["a", "b", "c"], ["b", "z"], 2) == 0.5
    assert recall_at_k(["a"], [], 1) is None


def test_realistic_log_recall():
    recall = session_recall(REALISTIC_LOG)
    # Finding Nemo is the 10th distinct item of the session list.
    assert recall == {1: 0.0, 5: 0.0, 10: 1.0}


def test_persuasiveness_prompt_and_parse(llm_server, gateway):
    messages = persuasiveness_messages(REALISTIC_LOG, item_names=ITEM_NAMES)
    content = messages[0]["content"]
    assert "The items you are after: Finding Nemo (2003)." in content
    assert IEVALM_PERSUASIVENESS_RUBRIC in content  # CoRE §6.4 uses iEvaLM's method
    assert "The Sea Beast (2022) is a great next adventure" in content.split("<system_turn>")[1]
    assert "<groundtruth_list>" not in content
    assert parse_persuasiveness("<rating>2</rating>").value.score == 2
    assert not parse_persuasiveness("<rating>3</rating>").ok

    server = llm_server(["Accurate and it led me to my film. <rating>2</rating>"])
    result = score_persuasiveness(REALISTIC_LOG, gateway=gateway, config=config_for(server))
    assert result.score == 2 and result.factor == "persuasiveness"


@given(
    rationale=st.text(alphabet=st.characters(blacklist_characters="<>"), max_size=200),
    score=st.integers(min_value=0, max_value=4),
)
def test_any_rationale_followed_by_a_rating_parses_back(rationale, score):
    parsed = parse_factor_rating(f"{rationale}\n<rating>{score}</rating>")
    assert parsed.value.score == score
    assert parsed.value.rationale == rationale.strip()
