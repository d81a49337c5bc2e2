"""Serve a local Hugging Face causal LM behind an OpenAI-compatible chat-completions API.

Architecture spec, "LLM and model access": local models are loaded from a configured path (never
downloaded at run time) and reached through the same gateway as hosted models, so every judge
works unchanged with a local model, including the logprobs that FACE-style scoring needs.

Usage::

    python -m evaluation.lib.llm.local_server --model-path /models/qwen3-8b --port 8001

then, in Concord::

    ModelConfig(model="openai/qwen3-8b", api_base="http://127.0.0.1:8001/v1", api_key="local")

(the ``openai/`` prefix tells litellm to speak the OpenAI protocol; the part after it is sent as
the model name and is only echoed back). Supported request fields: ``messages``,
``max_tokens``/``max_completion_tokens`` (default 1024), ``temperature`` (0 = greedy),
``seed``, ``logprobs`` and ``top_logprobs``. Logprobs are those of the model's own next-token
distribution (log-softmax of the raw logits), whatever the sampling temperature. One request
is generated at a time; for throughput use vLLM, which speaks the same protocol.
"""

from __future__ import annotations

import argparse
import json
import threading
import time
import uuid
from collections.abc import Mapping, Sequence
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

# Long enough for the longest answer a Concord judge or baseline asks for (CoRE's factor
# reasoning, the debate's statements, FACE's decomposition with its step-by-step reasoning).
DEFAULT_MAX_TOKENS = 1024
CHAT_PATHS = ("/v1/chat/completions", "/chat/completions")


class RequestError(ValueError):
    """A request this server cannot honour (answered with HTTP 400)."""


class LocalCausalLM:
    """A causal LM and its tokenizer loaded from a local directory, with chat completion."""

    def __init__(self, model_path: str | Path, *, served_model_name: str | None = None) -> None:
        # Imported here so that importing this module (e.g. to list evaluators) stays cheap and
        # works where torch is not installed.
        import torch
        from transformers import AutoModelForCausalLM, AutoTokenizer

        self._torch = torch
        path = Path(model_path)
        if not path.is_dir():
            raise FileNotFoundError(f"model path {path} is not a directory")
        self.tokenizer = AutoTokenizer.from_pretrained(path, local_files_only=True)
        self.model = AutoModelForCausalLM.from_pretrained(path, local_files_only=True)
        self.model.eval()
        self.name = served_model_name or path.name
        self._lock = threading.Lock()  # one generation at a time: the model is not re-entrant

    def render_prompt(self, messages: Sequence[Mapping[str, Any]]) -> str:
        if getattr(self.tokenizer, "chat_template", None):
            return self.tokenizer.apply_chat_template(
                list(messages), tokenize=False, add_generation_prompt=True
            )
        # Base models have no chat template: a plain transcript ending with the assistant cue.
        lines = [f"{m['role']}: {m['content']}" for m in messages]
        return "\n".join(lines) + "\nassistant:"

    def complete(self, request: Mapping[str, Any]) -> dict[str, Any]:
        """Answer one chat-completions request body with an OpenAI-format response body."""
        messages = request.get("messages")
        if not isinstance(messages, list) or not messages:
            raise RequestError("messages must be a non-empty list")
        if int(request.get("n", 1) or 1) != 1:
            raise RequestError("only n=1 is supported")
        max_tokens = int(
            request.get("max_tokens") or request.get("max_completion_tokens") or DEFAULT_MAX_TOKENS
        )
        temperature = float(request.get("temperature", 1.0) or 0.0)
        want_logprobs = bool(request.get("logprobs"))
        top_logprobs = int(request.get("top_logprobs") or 0)

        encoded = self.tokenizer(self.render_prompt(messages), return_tensors="pt")
        prompt_length = encoded["input_ids"].shape[1]
        with self._lock:
            if request.get("seed") is not None:
                self._torch.manual_seed(int(request["seed"]))
            output = self._generate(encoded, max_tokens, temperature)
        generated = output.sequences[0, prompt_length:].tolist()
        eos = self.tokenizer.eos_token_id
        finish_reason = "stop" if generated and generated[-1] == eos else "length"
        content_ids = generated[:-1] if finish_reason == "stop" else generated
        choice: dict[str, Any] = {
            "index": 0,
            "message": {
                "role": "assistant",
                "content": self.tokenizer.decode(content_ids, skip_special_tokens=True),
            },
            "finish_reason": finish_reason,
            "logprobs": None,
        }
        if want_logprobs:
            choice["logprobs"] = self._logprobs(output.logits, content_ids, top_logprobs)
        return {
            "id": f"chatcmpl-{uuid.uuid4().hex}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": self.name,
            "choices": [choice],
            "usage": {
                "prompt_tokens": prompt_length,
                "completion_tokens": len(generated),
                "total_tokens": prompt_length + len(generated),
            },
        }

    def _generate(self, encoded: Mapping[str, Any], max_tokens: int, temperature: float) -> Any:
        sampling: dict[str, Any] = {"do_sample": temperature > 0}
        if temperature > 0:
            sampling["temperature"] = temperature
        pad = self.tokenizer.pad_token_id
        with self._torch.no_grad():
            return self.model.generate(
                **encoded,
                max_new_tokens=max_tokens,
                output_logits=True,
                return_dict_in_generate=True,
                pad_token_id=pad if pad is not None else self.tokenizer.eos_token_id,
                **sampling,
            )

    def _logprobs(self, logits: Sequence[Any], token_ids: Sequence[int], top: int) -> dict:
        content = []
        for step, token_id in enumerate(token_ids):
            log_probs = self._torch.log_softmax(logits[step][0].float(), dim=-1)
            entry = self._token_entry(token_id, float(log_probs[token_id]))
            alternatives = []
            if top > 0:
                values, indices = self._torch.topk(log_probs, k=min(top, log_probs.shape[-1]))
                alternatives = [
                    self._token_entry(int(i), float(v))
                    for v, i in zip(values.tolist(), indices.tolist(), strict=True)
                ]
            entry["top_logprobs"] = alternatives
            content.append(entry)
        return {"content": content}

    def _token_entry(self, token_id: int, logprob: float) -> dict[str, Any]:
        token = self.tokenizer.decode([token_id])
        return {"token": token, "logprob": logprob, "bytes": list(token.encode("utf-8"))}


def make_server(
    lm: LocalCausalLM, host: str = "127.0.0.1", port: int = 8001
) -> ThreadingHTTPServer:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - stdlib signature
            pass

        def do_GET(self) -> None:  # noqa: N802 - stdlib naming
            if self.path.rstrip("/") in ("/v1/models", "/models"):
                self._send(200, {"object": "list", "data": [{"id": lm.name, "object": "model"}]})
            else:
                self._send(404, {"error": {"message": f"unknown path {self.path}"}})

        def do_POST(self) -> None:  # noqa: N802 - stdlib naming
            body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            if self.path.split("?", 1)[0] not in CHAT_PATHS:
                self._send(404, {"error": {"message": f"unknown path {self.path}"}})
                return
            try:
                self._send(200, lm.complete(json.loads(body or b"{}")))
            except (RequestError, json.JSONDecodeError, TypeError, ValueError) as error:
                self._send(400, {"error": {"message": str(error), "type": "invalid_request"}})

        def _send(self, status: int, payload: Mapping[str, Any]) -> None:
            data = json.dumps(payload).encode("utf-8")
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

    server = ThreadingHTTPServer((host, port), Handler)
    server.daemon_threads = True
    return server


def serve_in_thread(
    lm: LocalCausalLM, host: str = "127.0.0.1", port: int = 0
) -> ThreadingHTTPServer:
    """Start serving on a background thread (port 0 = any free port); ``shutdown()`` to stop."""
    server = make_server(lm, host, port)
    threading.Thread(
        target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
    ).start()
    return server


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model-path", required=True, help="directory with config and weights")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8001)
    parser.add_argument("--served-model-name", default=None, help="name echoed in responses")
    args = parser.parse_args(argv)
    lm = LocalCausalLM(args.model_path, served_model_name=args.served_model_name)
    server = make_server(lm, args.host, args.port)
    print(f"serving {lm.name} on http://{args.host}:{server.server_address[1]}/v1", flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()


if __name__ == "__main__":
    main()
