"""`manage.py bench_annotation` end to end, small: its own PostgreSQL database, gunicorn,
simulated annotators over loopback, figures printed (docs/performance.md); and the same loop
against another tool's URL."""

import json
import os
import socket
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from django.core.management import CommandError, call_command


def _postgres() -> bool:
    try:
        with socket.create_connection(("127.0.0.1", 5432), timeout=1):
            return True
    except OSError:
        return False


@pytest.mark.skipif(not _postgres(), reason="needs PostgreSQL on 127.0.0.1:5432")
def test_the_benchmark_runs_and_reports_every_request(capsys):
    # A database of its own per process: concurrent test runs must not drop each other's.
    url = f"postgres://postgres@127.0.0.1:5432/concord_bench_smoke_{os.getpid()}"
    call_command("bench_annotation", "--annotators", "3", "--items", "4", "--json",
                 "--database-url", url)
    out = capsys.readouterr().out
    report = json.loads(out[out.index("{"):])
    assert report["requests"] == 3 * 4 * 2 and report["errors"] == 0
    for kind in ("item page (GET)", "submit (POST)"):
        row = report["kinds"][kind]
        assert row["n"] == 12 and 0 < row["p50_ms"] <= row["p95_ms"] <= row["p99_ms"]
        assert 1 <= row["queries"] <= 10
    assert set(report["cpu_ms_per_request"]) == {"web", "database", "load generator"}
    floor = report["floor"]  # the same load on a WSGI app that does nothing
    assert floor["requests"] == 24 and floor["errors"] == 0
    assert 0 < floor["p50_ms"] <= floor["p95_ms"]
    assert set(floor["cpu_ms_per_request"]) == {"web", "load generator"}


def test_another_tool_is_measured_with_the_same_loop(capsys):
    seen = []

    class Tool(BaseHTTPRequestHandler):  # answers every task but the third
        protocol_version = "HTTP/1.1"  # keeps the connection, as the load generator expects
        disable_nagle_algorithm = True  # no 40 ms delayed-ACK stall between header and body

        def do_GET(self):  # noqa: N802 (the handler's API)
            seen.append((self.path, self.headers.get("Cookie")))
            self.send_response(404 if self.path == "/tasks/3/" else 200)
            self.send_header("Content-Length", "4")
            self.end_headers()
            self.wfile.write(b"task")

        def log_message(self, *args):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Tool)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{server.server_address[1]}/tasks/{{n}}/"
    try:
        call_command("bench_annotation", "--against", url, "--session", "abc", "--tasks", "4",
                     "--annotators", "2", "--items", "3", "--json")
    finally:
        server.shutdown()
        server.server_close()
    out = capsys.readouterr().out
    report = json.loads(out[out.index("{"):])
    assert report["requests"] == len(seen) == 2 * 3 * 2  # as many as the annotators' run makes
    assert {path for path, _ in seen} == {f"/tasks/{n}/" for n in range(1, 5)}
    assert {cookie for _, cookie in seen} == {"sessionid=abc"}
    assert report["errors"] == sum(path == "/tasks/3/" for path, _ in seen) == 3
    assert 0 < report["p50_ms"] <= report["p95_ms"] <= report["p99_ms"]
    assert set(report["cpu_ms_per_request"]) == {"database", "load generator"}
    with pytest.raises(CommandError, match="127.0.0.1 or localhost"):
        call_command("bench_annotation", "--against", "http://example.org/tasks/{n}/")
    with pytest.raises(CommandError, match="session cookie's value alone"):
        call_command("bench_annotation", "--against", url, "--session", "abc\r\nX-Evil: 1")


@pytest.mark.django_db(transaction=True)
def test_replay_serves_the_plans_requests_in_process(tmp_path, capsys):
    """--seed-only then --replay: the instruction-count check of docs/performance.md."""
    plan = tmp_path / "plan.json"
    call_command("bench_annotation", "--seed-only", str(plan), "--annotators", "2",
                 "--items", "2")
    capsys.readouterr()
    call_command("bench_annotation", "--replay", str(plan), "--rounds", "2")
    # 2 rounds x 2 annotators x (item page 200, submission redirected onwards 307)
    assert capsys.readouterr().out.strip() == "8 requests, statuses [200, 307]"
