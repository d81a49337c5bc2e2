"""Every declared answer format holds on a model with random weights (issue 31, item 6).

A tiny character-level GPT-2 with random weights (tests/evaluation/llm/tiny_models.py, built in
the test: nothing is downloaded) behind the built-in server, reached through the gateway as a
`concord-local` profile reaches it. For every prompt of every registered evaluator, of every
LLM simulator and of the zero-shot baseline, the call constrained to the prompt's declared
format is answered, and the answer is read by that evaluator's own parser. A random model
writes nothing on purpose, so the constraint and the token cap, not the model, make it parse:
greedy decoding of random weights rambles until the format forces the end (every reasoning
runs to its bound), which is what the cap must leave room for. The gateway sends the format's
own cap (`AnswerFormat.max_tokens`) whatever the profile's `max_tokens` says, and the answer
stays within it.
"""

from __future__ import annotations

import importlib.util
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pytest

from evaluation.lib.llm import registry
from evaluation.lib.llm.answer_format import AnswerFormat
from evaluation.lib.llm.core_debate import build_debate_messages, parse_debate_reply
from evaluation.lib.llm.core_factors import build_factor_messages, parse_factor_rating
from evaluation.lib.llm.core_recall_persuasiveness import (
    parse_persuasiveness,
    persuasiveness_messages,
)
from evaluation.lib.llm.core_rubrics import DEBATE_ROLES, FACTOR_KEYS
from evaluation.lib.llm.face.aspects import ASPECTS as FACE_ASPECTS
from evaluation.lib.llm.face.particles import parse_particles
from evaluation.lib.llm.face.prompts import (
    decomposer_messages,
    initial_instruction,
    scoring_messages,
)
from evaluation.lib.llm.face.scoring import grade_position
from evaluation.lib.llm.gateway import LLMGateway, ModelConfig
from evaluation.lib.llm.judging import Parsed, format_parser, parse_tagged_scores
from evaluation.lib.llm.pepper_judge import PEPPER_ASPECTS, build_pepper_messages
from evaluation.lib.llm.responders import (
    DialogueContext,
    parse_ranked_answer,
    ranked_answer_format,
    zero_shot_messages,
)
from evaluation.lib.llm.trace_judge import TRACE_CRITERIA, JudgedTurn, build_trace_judge_messages
from evaluation.lib.simulators.simulators import SIMULATORS
from tests.evaluation.llm.sample_logs import ITEM_NAMES, REALISTIC_LOG
from tests.evaluation.llm.test_debate import FACTOR_RESULTS
from tests.evaluation.llm.test_responders import CONTEXT
from tests.evaluation.llm.tiny_models import char_level_gpt2

# Skipped without torch and transformers, looked up without importing them (seconds, in every
# test process that collects this file).
pytestmark = pytest.mark.skipif(
    not all(importlib.util.find_spec(name) for name in ("torch", "transformers")),
    reason="needs torch and transformers")
pytest.importorskip("lmformatenforcer")

LOG_TURNS = tuple((t["role"], t["text"]) for t in REALISTIC_LOG["turns"])
SHOWN = ("poi-1", "poi-3")


@dataclass(frozen=True)
class Case:
    """One declared prompt: OWNER (evaluator, simulator or baseline) and PROMPT, its MESSAGES,
    its declared FORMAT, and PROBLEM: its own parser on the answer (None when it reads it)."""

    owner: str
    prompt: str
    messages: list[dict[str, str]]
    format: AnswerFormat
    problem: Callable[[Any], str | None]
    logprobs: bool = False

    @property
    def id(self) -> str:
        return f"{self.owner}/{self.prompt}/{self.format.name}"


def _of(parsed: Parsed[Any]) -> str | None:
    return None if parsed.ok else parsed.problem


def _tags(keys):
    def problem(result):
        _, problems = parse_tagged_scores(result.text, keys, low=1, high=5)
        return "; ".join(problems.values()) or None
    return problem


def _face_grade(aspect):
    def problem(result):
        index = grade_position(result.logprobs or ())
        if index is None:
            return "no Score: line"
        token = result.logprobs[index].token.strip()
        return None if token.isdigit() and int(token) in aspect.scores else f"grade {token!r}"
    return problem


def _declared(owner: str, prompt: str, *per_call: Any) -> AnswerFormat:
    """The format OWNER's registered object declares for PROMPT (per call: built for PER_CALL)."""
    spec = registry.find(owner) or SIMULATORS[owner]
    declared = next(p for p in spec.prompts if p.name == prompt)
    return declared.answer_format or declared.format_for(*per_call)


def _simulator_ask(shape: str) -> list[dict[str, str]]:
    return [{"role": "system", "content": "You are a user looking for a quiet seafood place."},
            {"role": "user", "content": "Reply with one line of compact JSON only, no other "
                                        f"text: {shape}"}]


def cases() -> list[Case]:
    found: list[Case] = []
    for factor in FACTOR_KEYS[:1]:
        found.append(Case("core", "factor", build_factor_messages(
            REALISTIC_LOG, factor, item_names=ITEM_NAMES), _declared("core", "factor"),
            lambda result: _of(parse_factor_rating(result.text))))
    role = DEBATE_ROLES[0]
    debate = _declared("core", "debate", role.name)
    found.append(Case("core", "debate", build_debate_messages(
        REALISTIC_LOG, FACTOR_RESULTS, role, round_number=1, item_names=ITEM_NAMES), debate,
        lambda result: _of(parse_debate_reply(result.text, debate))))
    found.append(Case("core", "persuasiveness", persuasiveness_messages(
        REALISTIC_LOG, item_names=ITEM_NAMES), _declared("core", "persuasiveness"),
        lambda result: _of(parse_persuasiveness(result.text))))
    turn = JudgedTurn("d1", 3, LOG_TURNS[:2], LOG_TURNS[2][1])
    found.append(Case("trace_judge", "judge", build_trace_judge_messages(turn),
                      _declared("trace_judge", "judge"), _tags(TRACE_CRITERIA)))
    found.append(Case("pepper_judge", "judge", build_pepper_messages(REALISTIC_LOG),
                      _declared("pepper_judge", "judge"), _tags(PEPPER_ASPECTS)))
    found.append(Case("face", "decompose", decomposer_messages(
        LOG_TURNS[:2], LOG_TURNS[2][1], LOG_TURNS[3][1]), _declared("face", "decompose"),
        lambda result: _of(parse_particles(result.text))))
    seen: set[str] = set()
    for aspect in FACE_ASPECTS.values():  # one per distinct grade scale
        fmt = _declared("face", "score", aspect)
        if fmt.name not in seen:
            seen.add(fmt.name)
            found.append(Case("face", "score", scoring_messages(
                initial_instruction(aspect), aspect, LOG_TURNS[:2], "recommendation",
                LOG_TURNS[2][1], LOG_TURNS[3][1]), fmt, _face_grade(aspect), logprobs=True))
    shapes = {"prepare": '{"likes":["<short binary preference>"],"dislikes":["<short binary '
                         'preference>"],"narrative":"<two sentences in the first person>"}',
              "opening": '{"utterance":"<your message>"}',
              "respond": '{"reflected_preferences":[{"item_id":"<an id shown above>",'
                         '"opinion":"like","reason":"<your reason>"}],'
                         '"utterance":"<your message>"}',
              "utterance": '{"utterance":"<your message>"}'}
    for name in ("pepper", "ievalm"):
        for declared in SIMULATORS[name].prompts:
            fmt = declared.answer_format or declared.format_for(SHOWN)
            if declared.name == "persuasiveness":
                found.append(Case(name, declared.name, persuasiveness_messages(REALISTIC_LOG),
                                  fmt, lambda result: _of(parse_persuasiveness(result.text))))
                continue
            reader = format_parser(fmt)
            found.append(Case(name, declared.name, _simulator_ask(shapes[declared.name]), fmt,
                              lambda result, reader=reader: _of(reader(result.text))))
    context = DialogueContext.from_dict(CONTEXT)
    ids = [c.id for c in context.candidates]
    ranked = ranked_answer_format(ids)
    found.append(Case("llm_zero_shot", "answer", zero_shot_messages(context), ranked,
                      lambda result: _of(parse_ranked_answer(result.text, ids, ranked))))
    return found


CASES = cases()


def test_every_declared_prompt_is_covered():
    """A new prompt (of an evaluator or a simulator) fails here until it has its case."""
    declared = {(e.name, p.name) for e in registry.registered() for p in e.prompts}
    declared |= {(name, p.name) for name in ("pepper", "ievalm")
                 for p in SIMULATORS[name].prompts}
    declared.add(("llm_zero_shot", "answer"))
    assert declared <= {(case.owner, case.prompt) for case in CASES}
    assert {case.format.name for case in CASES if (case.owner, case.prompt) == ("face", "score")
            } == {_declared("face", "score", a).name for a in FACE_ASPECTS.values()}


def test_every_declared_format_is_bounded_and_its_prompt_says_the_reasoning_limit():
    for case in CASES:
        assert case.format.max_tokens is not None, case.id
        # an 8k-context model keeps room for the prompt
        assert case.format.max_tokens <= 6144, (case.id, case.format.max_tokens)
        if case.format.kind == "regex" and case.owner not in ("pepper", "ievalm"):
            prompt = case.messages[-1]["content"]
            assert "in at most " in prompt and " words" in prompt, case.id


class _Recording:
    """The built-in model, recording each request's max_tokens (what the gateway sent)."""

    def __init__(self, lm):
        self.lm, self.sent = lm, []
        self._complete = lm.complete

    def __call__(self, request, **options):
        self.sent.append(request.get("max_tokens"))
        return self._complete(request, **options)


@pytest.fixture(scope="module")
def random_server(tmp_path_factory):
    import torch

    from evaluation.lib.llm.local_server import LocalCausalLM, serve_in_thread

    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # a tiny model: one thread is several times faster on a busy CPU
    lm = LocalCausalLM(char_level_gpt2(tmp_path_factory.mktemp("random-gpt2"), seed=3,
                                       positions=16384), served_model_name="random-gpt2")
    # Paid once, not by the first case: litellm's import and the JSON mask's token tables.
    from evaluation.lib.llm.gateway import _litellm

    _litellm()
    lm.vocabulary().data("json")
    recording = _Recording(lm)
    lm.complete = recording  # the server calls lm.complete; the instance attribute wins
    server = serve_in_thread(lm)
    yield recording, f"http://127.0.0.1:{server.server_address[1]}/v1"
    server.shutdown()
    server.server_close()
    torch.set_num_threads(threads)


@pytest.mark.parametrize("case", CASES, ids=[case.id for case in CASES])
def test_a_random_model_answers_every_declared_format_so_its_parser_reads_it(random_server,
                                                                             case):
    recording, api_base = random_server
    # The profile's cap is far too small for any of these answers: the format's cap replaces
    # it on a constrained call.
    config = ModelConfig("openai/random-gpt2", api_base=api_base, api_key="local",
                         backend="concord-local", temperature=0.0, max_tokens=8,
                         logprobs=case.logprobs, top_logprobs=20 if case.logprobs else None,
                         timeout=120.0)
    started = time.monotonic()
    result = LLMGateway().complete(config, case.messages, answer_format=case.format)
    seconds = time.monotonic() - started

    assert recording.sent[-1] == case.format.max_tokens
    assert result.completion_tokens <= case.format.max_tokens
    case.format.check(result.text)  # the whole answer has the declared format
    assert case.problem(result) is None, (case.id, result.text[-300:])
    assert seconds < 20, f"{case.id}: {seconds:.1f} s"


def test_unconstrained_the_same_random_model_answers_in_none_of_the_formats(random_server):
    """The control: without the constraint the parsers read none of its answers."""
    _, api_base = random_server
    config = ModelConfig("openai/random-gpt2", api_base=api_base, api_key="local",
                         backend="concord-local", temperature=0.0, max_tokens=64)
    gateway = LLMGateway()
    for case in CASES:
        if case.logprobs:
            continue  # FACE's score: its reading needs the logprobs of a constrained call
        answer = gateway.complete(config, case.messages)
        assert case.problem(answer) is not None, case.id
