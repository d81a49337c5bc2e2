"""The LLM evaluator registry and its answer formats (issues 29 item 1, 31 items 1 and 4):
every registered prompt declares its format, its example answer has it, the tag formats only
admit answers the tag parser reads, JSON formats (built per call for a debate role or the
candidates) reach the scripted server as `response_format`, and an answer that copies one of
the prompt's `<…>` placeholders is refused with that reason."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from evaluation.lib.llm import registry
from evaluation.lib.llm.answer_format import AnswerFormatError
from evaluation.lib.llm.core_debate import DebateSettings, build_debate_messages, run_debate
from evaluation.lib.llm.core_factors import FACTOR_FORMAT, build_factor_messages
from evaluation.lib.llm.core_rubrics import DEBATE_ROLES
from evaluation.lib.llm.face.aspects import ASPECTS as FACE_ASPECTS
from evaluation.lib.llm.judging import (
    copied_placeholder,
    parse_rating,
    parse_tagged_scores,
    prompt_placeholders,
    tagged_scores_format,
)
from evaluation.lib.llm.responders import (
    DialogueContext,
    ranked_answer_format,
    zero_shot_messages,
    zero_shot_turn,
)
from evaluation.lib.llm.trace_judge import (
    ANSWER_FORMAT as TRACE_FORMAT,
)
from evaluation.lib.llm.trace_judge import (
    TRACE_CRITERIA,
    JudgedTurn,
    build_trace_judge_messages,
)
from tests.evaluation.llm.helpers import config_for, debate_role_and_round
from tests.evaluation.llm.sample_logs import ITEM_NAMES, REALISTIC_LOG
from tests.evaluation.llm.test_debate import FACTOR_RESULTS
from tests.evaluation.llm.test_responders import CONTEXT

DOCS = Path(__file__).resolve().parents[3] / "docs" / "llm.md"
PER_CALL = {"debate": ("Common User",), "score": (FACE_ASPECTS["relevance"],)}


def test_the_built_in_evaluators_are_registered_once_each_with_their_docs_row():
    names = registry.names()
    assert names[:4] == ("core", "trace_judge", "pepper_judge", "face")
    docs = DOCS.read_text(encoding="utf-8")
    for evaluator in registry.registered()[:4]:
        assert evaluator.docs and evaluator.prompts
        assert f"| `{evaluator.name}` |" in docs, f"no docs/llm.md row for {evaluator.name}"
    with pytest.raises(ValueError, match="unknown LLM evaluator 'nope' \\(choose from core"):
        registry.get("nope")


@pytest.mark.parametrize("evaluator,prompt", [
    (e.name, p.name) for e in registry.registered() for p in e.prompts])
def test_every_prompt_declares_a_format_its_example_answer_has(evaluator, prompt):
    declared = next(p for p in registry.get(evaluator).prompts if p.name == prompt)
    answer_format = declared.answer_format or declared.format_for(*PER_CALL[prompt])
    answer_format.check(declared.example)  # raises when the example is out of format
    if answer_format.kind == "json":
        assert declared.example == json.dumps(json.loads(declared.example),
                                              separators=(",", ":"))  # compact, not indented
    with pytest.raises(AnswerFormatError):
        answer_format.check(declared.example + "\n" + "x" * 9000)  # bounded length


def test_a_tag_format_admits_only_answers_the_tag_parser_reads():
    fmt = tagged_scores_format("t", TRACE_CRITERIA, low=1, high=5)
    good = "Well grounded.\n" + "".join(f"<{c}>{n}</{c}>\n" for c, n in
                                         zip(TRACE_CRITERIA, (1, 2, 3, 4, 5), strict=True))
    fmt.check(good)
    assert parse_tagged_scores(good, TRACE_CRITERIA, low=1, high=5)[0] == dict(
        zip(TRACE_CRITERIA, (1, 2, 3, 4, 5), strict=True))
    for bad in (good.replace("<relevance>1", "<relevance>6"), good.replace("<relevance>1",
                "<relevance>N"), good.replace("Well grounded.", "<user>copied</user>"),
                good.replace("<justification>5</justification>", "")):
        with pytest.raises(AnswerFormatError):
            fmt.check(bad)
    rating = "I counted two problems.\n<rating>2</rating>"
    FACTOR_FORMAT.check(rating)
    assert parse_rating(rating, low=0, high=4).value.score == 2
    with pytest.raises(AnswerFormatError):
        FACTOR_FORMAT.check("I counted.\n<rating>5</rating>")


def test_per_call_formats_enumerate_the_role_and_the_candidates():
    fmt = ranked_answer_format(["poi-1", "poi-2", "poi-1"])
    items = fmt.json_schema["properties"]["ranked_item_ids"]
    assert items["items"]["enum"] == ["poi-1", "poi-2"] and items["maxItems"] == 2
    fmt.check('{"ranked_item_ids":["poi-2"],"response":"Try it."}')
    with pytest.raises(AnswerFormatError, match="not one of the allowed values"):
        fmt.check('{"ranked_item_ids":["poi-9"],"response":"Try it."}')


def test_placeholders_are_the_prompts_template_text_not_its_tags():
    debate = build_debate_messages(REALISTIC_LOG, FACTOR_RESULTS, DEBATE_ROLES[0],
                                   round_number=1, item_names=ITEM_NAMES)
    assert prompt_placeholders(debate) == ("<your statement>", "<whole number from 0 to 100>")
    zero_shot = zero_shot_messages(DialogueContext.from_dict(CONTEXT))
    assert prompt_placeholders(zero_shot) == ("<every candidate id, best match first>",
                                              "<your next message to the user>")
    # tags (<rating>, <guideline factor="…">, <user>, </response>) are structure, not placeholders
    assert prompt_placeholders(build_factor_messages(REALISTIC_LOG, "coherence")) == ()
    turn = JudgedTurn("d1", 1, (("user", "Quiet seafood <please>, cheap"),), "Try Harbor Grill.")
    assert prompt_placeholders(build_trace_judge_messages(turn)) == ()
    assert copied_placeholder("A fine answer.", ("<your statement>",)) is None


def test_the_debate_sends_its_schema_and_refuses_a_copied_placeholder(llm_server, gateway):
    def script(request):
        role, number = debate_role_and_round(request)
        statement = "<your statement>" if role == "Linguist" else f"{role} agrees."
        return json.dumps({"evaluator": role, "statement": statement, "score": 70},
                          separators=(",", ":"))

    server = llm_server(script)
    result = run_debate(REALISTIC_LOG, FACTOR_RESULTS, gateway=gateway,
                        config=config_for(server), settings=DebateSettings(max_rounds=1,
                                                                           max_reasks=1),
                        item_names=ITEM_NAMES)

    turns = {turn.role: turn for turn in result.rounds[0].turns}
    linguist = next(role.key for role in DEBATE_ROLES if role.name == "Linguist")
    assert turns[linguist].failure == ("unparseable after 2 answers: the answer copies the "
                                       "prompt's placeholder <your statement>")
    assert all(t.failure is None for key, t in turns.items() if key != linguist)
    sent = server.requests[0].body["response_format"]
    assert sent["type"] == "json_schema" and sent["json_schema"]["name"] == "core_debate"
    schema = sent["json_schema"]["schema"]
    role, _ = debate_role_and_round(server.requests[0])
    assert schema["properties"]["evaluator"]["enum"] == [role]
    assert schema["properties"]["score"] == {"type": "integer", "minimum": 0, "maximum": 100}


def test_a_baseline_answer_copying_its_template_is_refused(llm_server, gateway):
    copied = json.dumps({"ranked_item_ids": ["<every candidate id, best match first>"],
                         "response": "<your next message to the user>"})
    server = llm_server([copied, copied])

    outcome = zero_shot_turn(CONTEXT, gateway=gateway, config=config_for(server), max_reasks=1)

    assert outcome.line is None
    assert outcome.failure == ("unparseable after 2 answers: the answer copies the prompt's "
                               "placeholder <every candidate id, best match first>")
    assert "copies the prompt's placeholder" in server.requests[1].last_user_text
    schema = server.requests[0].body["response_format"]["json_schema"]["schema"]
    assert schema["properties"]["ranked_item_ids"]["items"]["enum"] == ["poi-1", "poi-2",
                                                                        "poi-3"]


def test_a_judge_answer_copying_a_placeholder_keeps_none_of_its_scores(llm_server, gateway):
    from evaluation.lib.llm.judging import judge_aspects

    messages = [{"role": "user", "content": "Say <one word, in capitals>, then <a>N</a>."}]
    server = llm_server(["<one word, in capitals>\n<a>3</a>"])

    scores = judge_aspects(gateway, config_for(server), messages, ("a",), low=1, high=5,
                           max_reasks=0, answer_format=tagged_scores_format("x", ("a",), low=1,
                                                                            high=5))

    assert scores["a"].score is None
    assert re.search(r"copies the prompt's placeholder <one word, in capitals>",
                     scores["a"].failure)
    assert "response_format" not in server.requests[0].body  # a regex is only checked
    assert TRACE_FORMAT.kind == "regex"
