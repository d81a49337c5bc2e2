"""Answer formats as data: checked answers, and the request parameters each backend gets,
sent through the real litellm path to a scripted local server."""

from __future__ import annotations

import pytest

from evaluation.lib.llm.answer_format import (
    AnswerFormat,
    AnswerFormatError,
    compact_json,
    request_parameters,
)
from evaluation.lib.llm.gateway import cache_key
from tests.evaluation.llm.helpers import config_for

SCORE = AnswerFormat("score", json_schema={
    "type": "object", "additionalProperties": False, "required": ["score", "reason"],
    "properties": {"score": {"type": "integer", "enum": [1, 2, 3]},
                   "reason": {"type": "string", "maxLength": 20},
                   "ids": {"type": "array", "maxItems": 2, "items": {"type": "string"}}}})
HELLO = [{"role": "user", "content": "Score it"}]


def test_a_conforming_answer_parses_and_each_violation_names_its_reason():
    assert SCORE.check('{"score":2,"reason":"fine"}') == {"score": 2, "reason": "fine"}
    cases = {'{"score":4,"reason":"x"}': "answer.score is not one of the allowed values",
             '{"score":2}': "answer lacks reason",
             '{"score":2,"reason":"' + "x" * 21 + '"}': "longer than 20 characters",
             '{"score":2,"reason":"x","ids":["a","b","c"]}': "more than 2 items",
             '{"score":2,"reason":"x","note":1}': "unexpected keys note",
             '{"score":true,"reason":"x"}': "answer.score should be integer",
             "score: 2": "not JSON"}
    for text, reason in cases.items():
        with pytest.raises(AnswerFormatError, match=reason):
            SCORE.check(text)


def test_a_regex_format_matches_the_whole_answer():
    verdict = AnswerFormat("verdict", regex=r"<answer>(yes|no)</answer>")
    assert verdict.check(" <answer>no</answer>\n") == "<answer>no</answer>"
    with pytest.raises(AnswerFormatError, match="verdict pattern"):
        verdict.check("<answer>maybe</answer>")


def test_a_format_declares_exactly_one_of_schema_and_regex():
    with pytest.raises(ValueError, match="exactly one"):
        AnswerFormat("both", json_schema={}, regex="x")
    with pytest.raises(ValueError, match="letters"):
        AnswerFormat("a name with spaces", regex="x")


def test_each_backend_gets_the_parameters_it_understands():
    verdict = AnswerFormat("verdict", regex="yes|no")
    schema = dict(SCORE.json_schema)
    assert request_parameters(SCORE, "openai")["response_format"]["json_schema"] == {
        "name": "score", "schema": schema, "strict": True}
    assert request_parameters(SCORE, "vllm") == {
        "extra_body": {"structured_outputs": {"json": schema}}}
    assert request_parameters(verdict, "vllm") == {
        "extra_body": {"structured_outputs": {"regex": "yes|no"}}}
    assert request_parameters(SCORE, "llama.cpp") == {"extra_body": {"json_schema": schema}}
    assert request_parameters(verdict, "concord-local") == {
        "extra_body": {"structured_outputs": {"regex": "yes|no"}}}
    assert request_parameters(verdict, "openai") == {}  # cannot constrain: checked only
    assert request_parameters(None, "openai") == {}
    with pytest.raises(ValueError, match="unknown LLM backend"):
        request_parameters(SCORE, "ollama-ish")


def test_the_format_reaches_the_server_and_separates_cache_entries(llm_server, gateway):
    server = llm_server(['{"score":1,"reason":"ok"}', '{"score":3,"reason":"ok"}'])
    config = config_for(server)

    first = gateway.complete(config, HELLO, answer_format=SCORE)
    second = gateway.complete(config, HELLO)

    assert SCORE.check(first.text)["score"] == 1 and second.text.startswith('{"score":3')
    sent = server.requests[0].params["response_format"]
    assert sent["type"] == "json_schema" and sent["json_schema"]["name"] == "score"
    assert "response_format" not in server.requests[1].params
    assert cache_key(config, HELLO, SCORE) != cache_key(config, HELLO)


def test_compact_json_has_no_spaces():
    assert compact_json({"a": [1, 2], "b": "é"}) == '{"a":[1,2],"b":"é"}'


def test_a_constrained_call_is_capped_by_its_format_not_by_the_profile(llm_server, gateway):
    """The gateway sends a constrained call's max_tokens from the format's length bound (its
    longest answer in characters, plus the end), in place of the profile's: a smaller profile
    cap would cut the answer before it closes. An unconstrained call (a regex the openai
    backend cannot send) or an unbounded format keeps the profile's cap."""
    bounded = AnswerFormat("bounded", json_schema={
        "type": "object", "additionalProperties": False, "required": ["score", "reason"],
        "properties": {"score": {"type": "integer", "enum": [1, 2, 3]},
                       "reason": {"type": "string", "maxLength": 20}}})
    # {"score":1,"reason":"<20 characters>"} and the end of the answer
    assert bounded.max_chars == len('{"score":1,"reason":""}') + 20
    assert bounded.max_tokens == bounded.max_chars + 1
    verdict = AnswerFormat("verdict", regex=r"reasons[^<>]{0,40}<answer>(?:yes|no)</answer>")
    assert verdict.max_chars == len("reasons") + 40 + len("<answer>yes</answer>")
    assert SCORE.max_chars is None and SCORE.max_tokens is None  # "ids" has no maxLength
    assert AnswerFormat("free", regex=r"[a-z]+\s*").max_tokens is None
    server = llm_server(['{"score":1,"reason":"ok"}', "reasons <answer>no</answer>",
                         '{"score":2,"reason":"ok"}'])
    config = config_for(server, max_tokens=5)

    gateway.complete(config, HELLO, answer_format=bounded)
    gateway.complete(config, HELLO, answer_format=verdict)
    gateway.complete(config, HELLO, answer_format=SCORE)

    sent = [request.params["max_tokens"] for request in server.requests]
    assert sent == [bounded.max_tokens, 5, 5]
