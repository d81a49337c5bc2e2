"""The LLM user simulators' answer formats (issue 31 item 1): every prompt of the PEPPER and
iEvaLM users declares one (its example answer has it, compact and bounded), the format reaches
the scripted OpenAI-compatible server as `response_format` (a JSON schema; the persuasiveness
regex cannot be sent to an `openai` backend and is only checked), the shown item ids are the
reflections' enum, and an answer outside the format is re-asked with the reason."""

from __future__ import annotations

import json

import pytest

from evaluation.lib.live.contract import LiveAnswer
from evaluation.lib.llm.answer_format import AnswerFormatError
from evaluation.lib.llm.core_recall_persuasiveness import (
    IEVALM_PERSUASIVENESS_RUBRIC,
    PERSUASIVENESS_FORMAT,
)
from evaluation.lib.simulators.simulators import (
    SIMULATORS,
    IEvaLMSimulator,
    PepperSimulator,
    SimulatorError,
    reflection_format,
)
from evaluation.lib.simulators.users import HistoryView, ItemCard, SeenItem, TargetView
from tests.evaluation.llm.helpers import config_for


def card(item_id: str, name: str, *categories: str) -> ItemCard:
    return ItemCard(item_id, name, "restaurant", "Porto", categories, 2, 4.0, "")


SEEN = card("r3", "Cozy Diner", "seafood")
SHOWN = [SEEN, card("r1", "Harbor Grill", "seafood"), card("r2", "Noodle Nook", "noodles")]
HISTORY = HistoryView("d1", "Porto", "restaurant",
                      (SeenItem(SEEN, (("Cozy seafood diner.", 5.0),)),))


def compact(value) -> str:
    return json.dumps(value, separators=(",", ":"))


def sent_format(request) -> dict | None:
    return request.body.get("response_format")


@pytest.mark.parametrize("simulator,prompt", [
    (cls.name, p.name) for cls in SIMULATORS.values() if cls.needs_llm for p in cls.prompts])
def test_every_simulator_prompt_declares_a_format_its_example_has(simulator, prompt):
    declared = next(p for p in SIMULATORS[simulator].prompts if p.name == prompt)
    answer_format = declared.answer_format or declared.format_for(["r1"])
    answer_format.check(declared.example)
    if answer_format.kind == "json":
        assert declared.example == compact(json.loads(declared.example))  # compact JSON
        for key, sub in answer_format.json_schema["properties"].items():
            bounded = sub.get("maxLength") or sub.get("maxItems") is not None
            assert bounded, f"{answer_format.name}.{key} has no bound"
    with pytest.raises(AnswerFormatError):
        answer_format.check(declared.example + "x" * 9000)


def test_every_llm_simulator_declares_its_prompts():
    assert {name for name, cls in SIMULATORS.items() if cls.needs_llm} == {"pepper", "ievalm"}
    assert all(cls.prompts for cls in SIMULATORS.values() if cls.needs_llm)
    assert not SIMULATORS["template"].prompts


def test_reflections_enumerate_the_shown_items_and_the_opinions():
    fmt = reflection_format(["r1", "r2", "r1"])
    reflections = fmt.json_schema["properties"]["reflected_preferences"]
    assert reflections["maxItems"] == 2
    assert reflections["items"]["properties"]["item_id"]["enum"] == ["r1", "r2"]
    assert reflections["items"]["properties"]["opinion"]["enum"] == ["like", "dislike"]
    fmt.check('{"reflected_preferences":[{"item_id":"r2","opinion":"dislike","reason":"x"}],'
              '"utterance":"No noodles."}')
    with pytest.raises(AnswerFormatError, match="not one of the allowed values"):
        fmt.check('{"reflected_preferences":[{"item_id":"h9","opinion":"like","reason":"x"}],'
                  '"utterance":"Hi."}')
    empty = reflection_format([])  # nothing shown: no reflection is possible
    empty.check('{"reflected_preferences":[],"utterance":"Anything?"}')
    with pytest.raises(AnswerFormatError, match="more than 0 items"):
        empty.check('{"reflected_preferences":[{"item_id":"r1"}],"utterance":"Hi."}')


def test_pepper_sends_each_format_and_re_asks_an_answer_outside_it(llm_server, gateway):
    answers = {"out": 0}

    def script(request):
        prompt = request.prompt_text
        if "summarise a person's tastes" in prompt:
            return compact({"likes": ["seafood"], "dislikes": ["noise"],
                            "narrative": "I love seafood."})
        if "Start the conversation" in prompt:
            # prose around the JSON: an unconstrained model's answer, read by the fallback
            return 'Sure! {"utterance":"Any seafood place?"} Hope that helps.'
        if "could not be used" not in request.last_user_text:
            answers["out"] += 1  # an id that was never shown: outside the enum
            return compact({"reflected_preferences": [
                {"item_id": "h9", "opinion": "like", "reason": "x"}], "utterance": "Hm."})
        return compact({"reflected_preferences": [
            {"item_id": "r1", "opinion": "like", "reason": "seafood"}],
            "utterance": "Harbor Grill sounds good; anything quieter?"})

    server = llm_server(script)
    simulator = PepperSimulator(gateway=gateway, config=config_for(server), shown_k=2)
    state = simulator.start(HISTORY)
    assert simulator.opening(state).text == "Any seafood place?"
    said = simulator.respond(state, LiveAnswer("Try these.", ("r3", "r1", "r2")), SHOWN)

    assert said.text == "Harbor Grill sounds good; anything quieter?"
    assert state.reflections == [[{"item_id": "r1", "opinion": "like", "reason": "seafood"}]]
    assert answers["out"] == 1
    names = [sent_format(r)["json_schema"]["name"] for r in server.requests]
    assert names == ["pepper_preferences", "sim_utterance", "pepper_reflections",
                     "pepper_reflections"]
    assert all(sent_format(r)["type"] == "json_schema" for r in server.requests)
    turn = sent_format(server.requests[2])["json_schema"]["schema"]
    # the first shown_k (2) items of the list, as the prompt shows them
    assert turn["properties"]["reflected_preferences"]["items"]["properties"]["item_id"][
        "enum"] == ["r3", "r1"]
    reask = server.requests[3].last_user_text
    assert "could not be used" in reask and "not one of the allowed values" in reask
    # compact JSON is what the prompt asks for; its placeholders are to be filled in
    assert '{"utterance":"<your message>"}' in server.requests[1].prompt_text


def test_a_copied_or_out_of_format_preparation_fails_after_the_re_asks(llm_server, gateway):
    copied = compact({"likes": ["<short binary preference>"], "dislikes": [],
                      "narrative": "x"})
    too_many = compact({"likes": [f"like {i}" for i in range(20)], "dislikes": [],
                        "narrative": "x"})
    server = llm_server([copied, too_many])
    simulator = PepperSimulator(gateway=gateway, config=config_for(server), max_reasks=1)
    with pytest.raises(SimulatorError, match="has more than 12 items"):
        simulator.prepare(HISTORY)
    assert "copies the prompt's placeholder <short binary preference>" in \
        server.requests[1].last_user_text


def test_ievalm_sends_its_utterance_schema_and_checks_the_persuasiveness_regex(
        llm_server, gateway):
    def script(request):
        if "<rating>" in request.prompt_text:
            return "It names one of them.\n<rating>2</rating>"
        return compact({"utterance": "No, something by the sea."})

    server = llm_server(script)
    simulator = IEvaLMSimulator(gateway=gateway, config=config_for(server))
    target = card("r1", "Harbor Grill", "seafood")
    state = simulator.start(HISTORY, TargetView(target, (target,)))
    simulator.opening(state)
    said = simulator.respond(state, LiveAnswer("Try Noodle Nook.", ("r2",)), SHOWN[2:])
    scores = simulator.finish(state, LiveAnswer("Harbor Grill!", ("r1",)), [target])

    assert said.text == "No, something by the sea." and scores["persuasiveness"] == 2
    utterances, persuasiveness = server.requests[:2], server.requests[2]
    assert [sent_format(r)["json_schema"]["name"] for r in utterances] == ["sim_utterance"] * 2
    assert sent_format(persuasiveness) is None  # a regex: the openai backend only checks it
    assert IEVALM_PERSUASIVENESS_RUBRIC in persuasiveness.prompt_text  # the one CoRE asks
    assert PERSUASIVENESS_FORMAT.kind == "regex"
    assert PERSUASIVENESS_FORMAT.name == "ievalm_persuasiveness"
