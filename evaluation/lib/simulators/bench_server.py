"""A fixed-latency OpenAI-compatible chat server for `bench_simulation` (docs/performance.md).

It answers `POST /v1/chat/completions` after exactly `latency` seconds, at most `concurrency`
requests at once (the rest queue, as on a real inference server with that many slots), with a
well-formed answer to the user simulators' prompts: Likes/Dislikes for a PEPPER profile, else an
utterance with reflected preferences. Every answer differs (a counter), so nothing is cached
within a run. It measures Concord, not a model.
"""

from __future__ import annotations

import itertools
import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class BenchLLMServer:
    def __init__(self, *, latency: float = 0.2, concurrency: int = 8):
        self.latency, self.slots = latency, threading.BoundedSemaphore(concurrency)
        self.counter, self.lock, self.calls = itertools.count(), threading.Lock(), 0
        self.httpd: ThreadingHTTPServer | None = None

    @property
    def api_base(self) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"

    def answer(self, prompt: str) -> str:
        n = next(self.counter)
        if "summarise a person's tastes" in prompt:
            return json.dumps({"likes": ["quiet places", f"taste {n}"], "dislikes": ["crowds"],
                               "narrative": "I like quiet places."})
        return json.dumps({"reflected_preferences": [], "utterance": f"Something else? ({n})"})

    def start(self) -> BenchLLMServer:
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            # Headers and body go out as two writes: without this, Nagle's algorithm and the
            # client's delayed ACK add ~40 ms to every answer.
            disable_nagle_algorithm = True

            def log_message(self, format, *args):  # noqa: A002 - stdlib signature
                return

            def do_POST(self):  # noqa: N802 - stdlib naming
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                prompt = "\n".join(str(m.get("content", "")) for m in body.get("messages", []))
                with server.slots:
                    time.sleep(server.latency)
                    text = server.answer(prompt)
                with server.lock:
                    server.calls += 1
                payload = json.dumps({
                    "id": "bench", "object": "chat.completion", "created": int(time.time()),
                    "model": body.get("model", "bench"),
                    "choices": [{"index": 0, "finish_reason": "stop",
                                 "message": {"role": "assistant", "content": text}}],
                    "usage": {"prompt_tokens": len(prompt.split()),
                              "completion_tokens": len(text.split()),
                              "total_tokens": len(prompt.split()) + len(text.split())},
                }).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()
        return self

    def stop(self) -> None:
        if self.httpd:
            self.httpd.shutdown()
            self.httpd.server_close()
