"""`manage.py bench_annotation` end to end, small: its own PostgreSQL database, gunicorn,
simulated annotators over loopback, figures printed (docs/performance.md)."""

import json
import socket

import pytest
from django.core.management import call_command


def _postgres() -> bool:
    try:
        with socket.create_connection(("127.0.0.1", 5432), timeout=1):
            return True
    except OSError:
        return False


@pytest.mark.skipif(not _postgres(), reason="needs PostgreSQL on 127.0.0.1:5432")
def test_the_benchmark_runs_and_reports_every_request(capsys):
    call_command("bench_annotation", "--annotators", "3", "--items", "4", "--json",
                 "--database-url", "postgres://postgres@127.0.0.1:5432/concord_bench_smoke")
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
