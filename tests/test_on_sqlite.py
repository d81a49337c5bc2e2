"""The tests that run again on SQLite, the default install's database (`make run`).

The suite runs on PostgreSQL when it answers, so code that behaves differently on SQLite would
otherwise never meet it. One child pytest, whose `DATABASE_URL` is a fresh SQLite file, runs
them all (one process, one migration):

- the arena (issue 34.1, docs/arena.md): the battle's hand-written statements
  (evaluation/rows.py on core/rows.py) lock a row with PostgreSQL's `SELECT … FOR UPDATE`,
  which SQLite refuses: the arena's service, statement, deadline and page tests. (The battle
  bench runs gunicorn on PostgreSQL only and is left out.)
- the active hand-out's lock on the study row (annotation/services/handout.py): drawn items
  only, and annotators asking at once at a wave's end. (The hand-out is ORM code, no
  hand-written SQL: the module's settings, report and export tests need no second database.)
- one test whose code writes from threads of its own (the LLM gateway's response cache): on
  SQLite, with one writer, such a test must commit, or the thread waits for the test's open
  transaction and fails "database is locked" (docs/operations.md, "The suite without
  PostgreSQL and Redis").
"""

import os
import subprocess
import sys

import pytest
from django.conf import settings
from django.db import connection

ON_SQLITE = (
    "tests/evaluation/arena/test_battles.py",
    "tests/evaluation/arena/test_arena_rows.py",
    "tests/evaluation/arena/test_deadlines.py",
    "tests/leaderboard/test_arena_pages.py",
    "tests/evaluation/arena/test_crs_signals.py",
    "tests/evaluation/arena/test_adaptive_pairing.py",
    "tests/annotation/test_active_handout.py::"
    "test_only_drawn_items_are_handed_out_wave_by_wave_and_each_records_its_pi",
    "tests/annotation/test_active_handout.py::"
    "test_annotators_asking_at_once_at_a_waves_end_get_one_new_wave_and_distinct_items",
    "tests/evaluation/test_live_systems.py::"
    "test_the_llm_baselines_answer_live_through_the_gateway",
)
LEFT_OUT = "not bench_measures"  # the battle bench: gunicorn on PostgreSQL only


@pytest.mark.slow
def test_the_arena_handout_and_threaded_cache_tests_pass_on_sqlite(tmp_path):
    if connection.vendor == "sqlite":
        pytest.skip("this run is on SQLite already: these tests run on it directly")
    env = {**os.environ, "DATABASE_URL": f"sqlite:///{tmp_path / 'rerun.sqlite3'}",
           "CONCORD_VAR_DIR": str(tmp_path / "var")}
    child = subprocess.run(
        [sys.executable, "-m", "pytest", *ON_SQLITE, "-x", "-q", "-rA", "-p", "no:cacheprovider",
         "-k", LEFT_OUT, "-W", "ignore::pytest.PytestUnraisableExceptionWarning"],
        env=env, cwd=settings.BASE_DIR, capture_output=True, text=True, timeout=800)
    assert child.returncode == 0, child.stdout[-6000:] + child.stderr[-2000:]
    assert " passed" in child.stdout and " skipped" not in child.stdout
    passed = [line.split()[1] for line in child.stdout.splitlines() if line.startswith("PASSED ")]
    # every listed file and test ran (a renamed one would otherwise drop out unnoticed)
    assert [entry for entry in ON_SQLITE
            if not any(test.startswith(entry) for test in passed)] == []
