"""A scripted OpenAI-compatible chat-completions server for tests.

Concord's architecture (spec: "LLM and model access") requires that no evaluator needs the
internet to be tested: tests start this real HTTP peer on 127.0.0.1 and point litellm at it, so
the whole litellm → openai SDK → HTTP code path runs exactly as in production.

The server answers ``POST /v1/chat/completions`` (and ``/chat/completions``) from a *script*:

- a list of replies, consumed one per request in arrival order, or
- a callable ``script(request: RecordedRequest) -> reply``, for answers that depend on the prompt
  (needed when several requests run concurrently and arrival order is not deterministic).

A reply is a ``ScriptedReply`` (text, HTTP error, or logprobs) or a plain string (normal text).
Every request is recorded so tests can assert on prompt contents and call counts. ``usage``
counts are realistic and checkable: by default whitespace-separated tokens of all message
contents (prompt) and of the answer (completion); a test may pass another ``token_counter``.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

CHAT_PATHS = ("/v1/chat/completions", "/chat/completions")


def whitespace_tokens(text: str) -> int:
    return len(text.split())


@dataclass(frozen=True)
class ScriptedReply:
    """One scripted answer. ``status`` != 200 turns it into an HTTP error response."""

    text: str = ""
    status: int = 200
    retry_after: float | None = None
    error_message: str = "scripted error"
    # Per generated token: [(chosen_token, logprob), (alternative, logprob), ...]. The first pair
    # is the sampled token; the whole list is returned as that token's top_logprobs.
    logprobs: Sequence[Sequence[tuple[str, float]]] | None = None
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    delay_seconds: float = 0.0
    # Seconds between the bytes of the whole answer, status line and headers included: a
    # server that never trips a per-read timeout, only a total deadline.
    trickle_seconds: float = 0.0


def text(answer: str) -> ScriptedReply:
    return ScriptedReply(text=answer)


def http_error(
    status: int, *, retry_after: float | None = None, message: str = ""
) -> ScriptedReply:
    return ScriptedReply(
        status=status, retry_after=retry_after, error_message=message or f"{status}"
    )


def with_logprobs(tokens: Sequence[Sequence[tuple[str, float]]]) -> ScriptedReply:
    """A reply whose text is the concatenation of the chosen tokens, with their logprobs."""
    return ScriptedReply(
        text="".join(alternatives[0][0] for alternatives in tokens), logprobs=tokens
    )


@dataclass(frozen=True)
class RecordedRequest:
    path: str
    body: dict[str, Any]
    headers: dict[str, str]

    @property
    def messages(self) -> list[dict[str, Any]]:
        return list(self.body.get("messages", []))

    @property
    def params(self) -> dict[str, Any]:
        return {key: value for key, value in self.body.items() if key != "messages"}

    @property
    def model(self) -> str:
        return str(self.body.get("model", ""))

    @property
    def prompt_text(self) -> str:
        """All message contents joined, for substring assertions on what the model was shown."""
        return "\n".join(_content_text(message.get("content")) for message in self.messages)

    @property
    def last_user_text(self) -> str:
        for message in reversed(self.messages):
            if message.get("role") == "user":
                return _content_text(message.get("content"))
        return ""


Script = Sequence[ScriptedReply | str] | Callable[[RecordedRequest], ScriptedReply | str]


def _content_text(content: Any) -> str:
    # OpenAI allows content as a list of parts; the gateway sends strings, but be tolerant.
    if isinstance(content, list):
        return "".join(part.get("text", "") for part in content if isinstance(part, dict))
    return "" if content is None else str(content)


@dataclass
class ScriptedLLMServer:
    script: Script
    token_counter: Callable[[str], int] = whitespace_tokens
    host: str = "127.0.0.1"
    requests: list[RecordedRequest] = field(default_factory=list)

    def __post_init__(self) -> None:
        self._lock = threading.Lock()
        self._position = 0
        self._httpd: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None
        self._usage_totals = {"prompt_tokens": 0, "completion_tokens": 0, "answers": 0}

    # -- lifecycle -------------------------------------------------------------------------
    def start(self) -> ScriptedLLMServer:
        handler = _make_handler(self)
        self._httpd = ThreadingHTTPServer((self.host, 0), handler)
        self._httpd.daemon_threads = True
        # A short poll interval keeps shutdown (and so each test's teardown) fast.
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
            self._httpd = None

    @property
    def port(self) -> int:
        assert self._httpd is not None, "server not started"
        return self._httpd.server_address[1]

    @property
    def api_base(self) -> str:
        return f"http://{self.host}:{self.port}/v1"

    # -- inspection ------------------------------------------------------------------------
    @property
    def request_count(self) -> int:
        with self._lock:
            return len(self.requests)

    def usage_totals(self) -> dict[str, int]:
        """Sum of the usage this server reported on successful answers (ground truth for tests)."""
        with self._lock:
            return dict(self._usage_totals)

    # -- request handling ------------------------------------------------------------------
    def _next_reply(self, request: RecordedRequest) -> ScriptedReply:
        with self._lock:
            self.requests.append(request)
            if callable(self.script):
                script_fn = self.script
            else:
                script_fn = None
                if self._position >= len(self.script):
                    return ScriptedReply(
                        status=400, error_message="scripted server: script exhausted"
                    )
                reply = self.script[self._position]
                self._position += 1
        if script_fn is not None:
            reply = script_fn(request)
        return ScriptedReply(text=reply) if isinstance(reply, str) else reply

    def _completion_body(self, request: RecordedRequest, reply: ScriptedReply) -> dict[str, Any]:
        prompt_tokens = reply.prompt_tokens
        if prompt_tokens is None:
            prompt_tokens = sum(
                self.token_counter(_content_text(m.get("content"))) for m in request.messages
            )
        completion_tokens = reply.completion_tokens
        if completion_tokens is None:
            completion_tokens = (
                len(reply.logprobs)
                if reply.logprobs is not None
                else self.token_counter(reply.text)
            )
        with self._lock:
            self._usage_totals["prompt_tokens"] += prompt_tokens
            self._usage_totals["completion_tokens"] += completion_tokens
            self._usage_totals["answers"] += 1
        choice: dict[str, Any] = {
            "index": 0,
            "message": {"role": "assistant", "content": reply.text},
            "finish_reason": "stop",
            "logprobs": _openai_logprobs(reply.logprobs) if reply.logprobs is not None else None,
        }
        return {
            "id": f"chatcmpl-scripted-{len(self.requests)}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": request.model,
            "choices": [choice],
            "usage": {
                "prompt_tokens": prompt_tokens,
                "completion_tokens": completion_tokens,
                "total_tokens": prompt_tokens + completion_tokens,
            },
        }


def _openai_logprobs(tokens: Sequence[Sequence[tuple[str, float]]]) -> dict[str, Any]:
    def entry(token: str, logprob: float) -> dict[str, Any]:
        return {"token": token, "logprob": logprob, "bytes": list(token.encode("utf-8"))}

    content = []
    for alternatives in tokens:
        chosen_token, chosen_logprob = alternatives[0]
        item = entry(chosen_token, chosen_logprob)
        item["top_logprobs"] = [entry(token, logprob) for token, logprob in alternatives]
        content.append(item)
    return {"content": content}


def _make_handler(server: ScriptedLLMServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        disable_nagle_algorithm = True  # no 40 ms delayed-ACK stall between header and body

        def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - stdlib signature
            pass  # keep pytest output clean

        def do_POST(self) -> None:  # noqa: N802 - stdlib naming
            path = self.path.split("?", 1)[0]
            length = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(length)
            if path not in CHAT_PATHS:
                self._send_json(404, {"error": {"message": f"unknown path {path}"}})
                return
            try:
                body = json.loads(raw or b"{}")
            except json.JSONDecodeError:
                self._send_json(400, {"error": {"message": "body is not JSON"}})
                return
            request = RecordedRequest(path=path, body=body, headers=dict(self.headers.items()))
            reply = server._next_reply(request)
            if reply.delay_seconds:
                time.sleep(reply.delay_seconds)
            if reply.status != 200:
                extra = {}
                if reply.retry_after is not None:
                    extra["Retry-After"] = f"{reply.retry_after:g}"
                error = {
                    "message": reply.error_message,
                    "type": "scripted_error",
                    "code": reply.status,
                }
                self._send_json(reply.status, {"error": error}, extra)
                return
            if reply.trickle_seconds:
                self._trickle(server._completion_body(request, reply), reply.trickle_seconds)
                return
            self._send_json(200, server._completion_body(request, reply))

        def _trickle(self, payload: dict[str, Any], seconds: float) -> None:
            body = json.dumps(payload).encode("utf-8")
            head = (f"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nX-Padding: "
                    f"{'p' * 2000}\r\nContent-Length: {len(body)}\r\n\r\n").encode()
            self.close_connection = True
            try:
                for byte in range(len(head + body)):
                    if server._httpd is None:  # stopped
                        return
                    self.wfile.write((head + body)[byte:byte + 1])
                    time.sleep(seconds)
            except (BrokenPipeError, ConnectionResetError):
                return

        def _send_json(
            self, status: int, payload: dict[str, Any], extra: dict | None = None
        ) -> None:
            data = json.dumps(payload).encode("utf-8")
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            for key, value in (extra or {}).items():
                self.send_header(key, value)
            self.end_headers()
            self.wfile.write(data)

    return Handler


@contextmanager
def scripted_llm_server(
    script: Script, *, token_counter: Callable[[str], int] = whitespace_tokens
) -> Iterator[ScriptedLLMServer]:
    """Run a ``ScriptedLLMServer`` on 127.0.0.1 (free port) for the duration of the block."""
    server = ScriptedLLMServer(script=script, token_counter=token_counter).start()
    try:
        yield server
    finally:
        server.stop()
