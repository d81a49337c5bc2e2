"""The arena on SQLite, the default install's database (`make run`; issue 34.1).

The suite runs on PostgreSQL when it answers, so the hand-written statements of a battle
(evaluation/rows.py on core/rows.py) would otherwise never meet SQLite, which refuses
PostgreSQL's `SELECT … FOR UPDATE`. This test runs the arena's service, statement and page tests
again in a child pytest whose `DATABASE_URL` is a fresh SQLite file: every statement those tests
reach is exercised on both databases in the normal test run. (The battle bench runs gunicorn on
PostgreSQL only and is left out.)
"""

import os
import subprocess
import sys

import pytest
from django.conf import settings
from django.db import connection

ARENA_TESTS = ("tests/evaluation/arena/test_battles.py",
               "tests/evaluation/arena/test_arena_rows.py",
               "tests/evaluation/arena/test_deadlines.py",
               "tests/leaderboard/test_arena_pages.py",
               "tests/evaluation/arena/test_crs_signals.py",
               "tests/evaluation/arena/test_adaptive_pairing.py")


def test_the_arena_tests_pass_on_sqlite(tmp_path):
    if connection.vendor == "sqlite":
        pytest.skip("this run is on SQLite already: the arena's tests run on it directly")
    env = {**os.environ, "DATABASE_URL": f"sqlite:///{tmp_path / 'arena.sqlite3'}",
           "CONCORD_VAR_DIR": str(tmp_path / "var")}
    child = subprocess.run(
        [sys.executable, "-m", "pytest", *ARENA_TESTS, "-x", "-q", "-p", "no:cacheprovider",
         "-k", "not bench_measures", "-W", "ignore::pytest.PytestUnraisableExceptionWarning"],
        env=env, cwd=settings.BASE_DIR, capture_output=True, text=True, timeout=800)
    assert child.returncode == 0, child.stdout[-6000:] + child.stderr[-2000:]
    assert " passed" in child.stdout and " skipped" not in child.stdout
