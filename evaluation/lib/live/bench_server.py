"""A fixed-latency live system (`concord-live/1`, docs/formats.md §4) for `bench_arena_battles`
(docs/performance.md): it answers every turn after exactly `latency` seconds with a fixed
ranking, and records how long it held each request, so a caller can subtract the system's own
time from what it measured (in process: `held`; from another process: `GET /held`).

`python -m evaluation.lib.live.bench_server --systems 2 --latency 0.3 --items '["i1"]'` runs
the systems in a process of their own: it prints one line of JSON (`{"urls": [...]}`) once they
listen, and serves until its standard input closes.
"""

from __future__ import annotations

import argparse
import json
import sys
import threading
import time
from collections.abc import Sequence
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class BenchLiveServer:
    def __init__(self, *, latency: float = 0.3, item_ids: tuple[str, ...] = (),
                 text: str = "Here are a few places you may like."):
        self.latency, self.item_ids, self.text = latency, list(item_ids), text
        self.lock = threading.Lock()
        self.held: dict[tuple[str, int], float] = {}  # (dialogue_id, turn_index) -> seconds
        self.httpd: ThreadingHTTPServer | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}/crs"

    def start(self, ports: Sequence[Sequence[int]] = ()) -> BenchLiveServer:
        """Listen on 127.0.0.1: on the first free port of PORTS ((low, high) ranges, the
        loopback ports Concord may call, CONCORD_LIVE_LOOPBACK_PORTS), or on any port."""
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            disable_nagle_algorithm = True  # no 40 ms delayed-ACK stall between header and body

            def log_message(self, format, *args):  # noqa: A002 - stdlib signature
                return

            def do_GET(self):  # noqa: N802 - stdlib naming
                if self.path != "/held":
                    self.send_error(404)
                    return
                with server.lock:
                    payload = json.dumps([[d, t, s] for (d, t), s in server.held.items()]).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

            def do_POST(self):  # noqa: N802 - stdlib naming
                started = time.perf_counter()
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                time.sleep(server.latency)
                payload = json.dumps({"response": server.text,
                                      "ranked_item_ids": server.item_ids}).encode()
                with server.lock:  # before answering: the caller may look right after
                    server.held[(body["dialogue_id"], int(body["turn_index"]))] = (
                        time.perf_counter() - started)
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)
                self.wfile.flush()

        self.httpd = _bind(Handler, ports)
        self.httpd.daemon_threads = True
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()
        return self

    def stop(self) -> None:
        if self.httpd:
            self.httpd.shutdown()
            self.httpd.server_close()


def _bind(handler, ports: Sequence[Sequence[int]]) -> ThreadingHTTPServer:
    for low, high in ports:
        for port in range(low, high + 1):
            try:
                return ThreadingHTTPServer(("127.0.0.1", port), handler)
            except OSError:
                continue
    if ports:
        raise OSError(f"no free port on 127.0.0.1 in {ports}")
    return ThreadingHTTPServer(("127.0.0.1", 0), handler)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--systems", type=int, default=2)
    parser.add_argument("--latency", type=float, default=0.3)
    parser.add_argument("--items", default="[]", help="the ranked item ids, a JSON list")
    parser.add_argument("--ports", default="[]",
                        help="the port ranges to listen in, a JSON list of [low, high]")
    args = parser.parse_args(argv)
    servers = [BenchLiveServer(latency=args.latency, item_ids=tuple(json.loads(args.items)))
               .start(json.loads(args.ports)) for _ in range(args.systems)]
    print(json.dumps({"urls": [server.url for server in servers]}), flush=True)
    sys.stdin.read()  # until the caller closes it (or goes away)
    for server in servers:
        server.stop()


if __name__ == "__main__":
    main()
