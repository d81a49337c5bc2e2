"""A real HTTP live system for tests (docs/formats.md §4): a threaded server on 127.0.0.1 that
answers each `concord-live/1` request with `script(request_json) -> reply`.

A reply is a dict (sent as JSON with status 200), a `Raw(status, body, delay)` for faults
(malformed JSON, 5xx, slowness), `Raw(..., trickle=seconds)` for a server that sends its answer
(status line and headers included) one byte every that many seconds, or `DROP` to close the
connection without answering. Every
request (body and headers) is recorded, and the largest number of requests in flight at once is
measured, so tests can check the client's concurrency limit.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass(frozen=True)
class Raw:
    status: int = 200
    body: bytes = b""
    delay: float = 0.0
    headers: dict = field(default_factory=dict)
    trickle: float = 0.0  # seconds between bytes: the whole answer, headers included
    undeclared: bool = False  # no Content-Length: the body ends when the connection closes


def trickled(seconds: float = 1.0, header_bytes: int = 4000) -> Raw:
    """A reply whose headers alone take HEADER_BYTES × SECONDS to arrive: one byte a second
    never trips a per-read timeout, only a total deadline."""
    return Raw(200, b'{"response": "too late", "ranked_item_ids": []}',
               headers={"X-Padding": "p" * header_bytes}, trickle=seconds)


DROP = object()


@dataclass
class LiveServer:
    script: Callable[[dict], Any]
    requests: list[dict] = field(default_factory=list)
    headers: list[dict] = field(default_factory=list)
    in_flight: int = 0
    max_in_flight: int = 0
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _httpd: ThreadingHTTPServer | None = None
    stopping: threading.Event = field(default_factory=threading.Event)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._httpd.server_address[1]}/crs"

    def start(self) -> LiveServer:
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            disable_nagle_algorithm = True  # no 40 ms delayed-ACK stall between header and body

            def log_message(self, format, *args):  # noqa: A002 - stdlib signature
                return

            def do_POST(self):  # noqa: N802 - stdlib naming
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                with server._lock:
                    server.requests.append(body)
                    server.headers.append(dict(self.headers))
                    server.in_flight += 1
                    server.max_in_flight = max(server.max_in_flight, server.in_flight)
                counted = True

                def leave():  # before the answer leaves: once the client has it, it may
                    nonlocal counted  # send its next request before this thread runs again
                    if counted:
                        with server._lock:
                            server.in_flight -= 1
                        counted = False

                try:
                    reply = server.script(body)
                    if reply is DROP:
                        leave()
                        self.close_connection = True
                        self.connection.shutdown(2)
                        return
                    if not isinstance(reply, Raw):
                        reply = Raw(200, json.dumps(reply).encode())
                    if reply.delay:
                        time.sleep(reply.delay)
                    leave()
                    if reply.trickle:
                        self._trickle(reply)
                        return
                    self.send_response(reply.status)
                    self.send_header("Content-Type", "application/json")
                    if reply.undeclared:
                        self.close_connection = True
                    else:
                        self.send_header("Content-Length", str(len(reply.body)))
                    for name, value in reply.headers.items():
                        self.send_header(name, value)
                    self.end_headers()
                    self.wfile.write(reply.body)
                except (BrokenPipeError, ConnectionResetError):
                    pass
                finally:
                    leave()

            def _trickle(self, reply: Raw) -> None:
                self.close_connection = True
                head = [f"HTTP/1.1 {reply.status} OK", "Content-Type: application/json",
                        f"Content-Length: {len(reply.body)}",
                        *(f"{name}: {value}" for name, value in reply.headers.items())]
                data = ("\r\n".join(head) + "\r\n\r\n").encode() + reply.body
                for at in range(len(data)):
                    if server.stopping.is_set():
                        return
                    self.wfile.write(data[at:at + 1])
                    self.wfile.flush()
                    time.sleep(reply.trickle)

        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._httpd.daemon_threads = True
        threading.Thread(target=self._httpd.serve_forever, daemon=True).start()
        return self

    def stop(self) -> None:
        self.stopping.set()  # a trickling answer stops with the server
        if self._httpd:
            self._httpd.shutdown()
            self._httpd.server_close()


@contextmanager
def live_server(script: Callable[[dict], Any]) -> Iterator[LiveServer]:
    server = LiveServer(script).start()
    try:
        yield server
    finally:
        server.stop()


def first_items(item_ids: list[str], text: str = "How about these?") -> Callable[[dict], dict]:
    """A script that always recommends ITEM_IDS (a trivially correct live system)."""
    return lambda request: {"response": text, "ranked_item_ids": list(item_ids)}
