"""A local Hugging Face causal LM served over the OpenAI protocol, reached through the gateway.

The model is a tiny GPT-2 built from a config in the test (random weights, a word-level
tokenizer made with the ``tokenizers`` library): nothing is downloaded.
"""

from __future__ import annotations

import subprocess
import sys

import pytest

from evaluation.lib.llm.gateway import LLMGateway, ModelConfig

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
