"""Settings come from environment variables only; production refuses unsafe defaults."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def manage(*args, tmp_path, **env):
    full_env = {key: value for key, value in os.environ.items()
                if key not in ("DATABASE_URL", "SECRET_KEY", "DJANGO_ENV", "DEBUG",
                                   "DJANGO_ALLOW_ASYNC_UNSAFE")}
    full_env.update(CONCORD_VAR_DIR=str(tmp_path), **env)
    return subprocess.run([sys.executable, "manage.py", *args], cwd=ROOT, env=full_env,
                          capture_output=True, text=True, timeout=120)


def test_production_deploy_check_is_clean(tmp_path):
    result = manage("check", "--deploy", tmp_path=tmp_path, DJANGO_ENV="production",
                    SECRET_KEY="k" * 60 + "-a-long-random-production-key",
                    ALLOWED_HOSTS="concord.example.org")
    assert result.returncode == 0, result.stderr
    assert "no issues" in result.stdout


def test_production_refuses_to_start_without_a_secret_key(tmp_path):
    result = manage("check", tmp_path=tmp_path, DJANGO_ENV="production")
    assert result.returncode != 0
    assert "SECRET_KEY must be set when DJANGO_ENV=production" in result.stderr


def test_a_malformed_boolean_is_refused_loudly(tmp_path):
    result = manage("check", tmp_path=tmp_path, DEBUG="maybe")
    assert result.returncode != 0
    assert "DEBUG='maybe' is not a boolean" in result.stderr


def test_postgresql_prepares_repeated_statements_unless_turned_off(tmp_path):
    show = ("from django.conf import settings; "
            "print(settings.DATABASES['default']['OPTIONS'])")
    url = "postgres://postgres@127.0.0.1:5432/concord"
    on = manage("shell", "-c", show, tmp_path=tmp_path, DATABASE_URL=url)
    assert "'server_side_binding': True, 'prepare_threshold': 5" in on.stdout, on.stderr
    off = manage("shell", "-c", show, tmp_path=tmp_path, DATABASE_URL=url,
                 DATABASE_PREPARE_THRESHOLD="-1")
    assert "'prepare_threshold': None" in off.stdout, off.stderr
    sqlite = manage("shell", "-c", show, tmp_path=tmp_path)
    assert "server_side_binding" not in sqlite.stdout, sqlite.stderr


def test_malformed_credentials_and_model_profiles_are_refused_loudly(tmp_path):
    variable = manage("check", tmp_path=tmp_path, CONCORD_CREDENTIALS="SECRET_KEY=SECRET_KEY")
    assert variable.returncode != 0
    assert ("ImproperlyConfigured: CONCORD_CREDENTIALS: 'SECRET_KEY' is not a credential name"
            in variable.stderr)
    profile = manage("check", tmp_path=tmp_path, CONCORD_CREDENTIALS="demo=DEMO_KEY",
                     CONCORD_LLM_PROFILES='{"fast": {"model": "openai/x", "credential": "px"}}')
    assert profile.returncode != 0
    assert ("ImproperlyConfigured: CONCORD_LLM_PROFILES: profile 'fast': credential 'px' is "
            "not in CONCORD_CREDENTIALS") in profile.stderr
    fine = manage("shell", "-c", "from django.conf import settings; "
                  "print(sorted(settings.LLM_PROFILES), sorted(settings.CREDENTIALS))",
                  tmp_path=tmp_path, CONCORD_CREDENTIALS="demo=DEMO_KEY",
                  CONCORD_LLM_PROFILES='{"fast": {"model": "openai/x", "credential": "demo"}}')
    assert fine.stdout.strip().endswith("['fast'] ['demo']"), fine.stderr


def test_in_process_baselines_need_at_least_one_thread(tmp_path):
    result = manage("check", tmp_path=tmp_path, CONCORD_LIVE_INPROCESS_THREADS="0")
    assert result.returncode != 0
    assert "CONCORD_LIVE_INPROCESS_THREADS must be at least 1" in result.stderr


def test_llm_calls_need_a_positive_deadline(tmp_path):
    result = manage("check", tmp_path=tmp_path, CONCORD_LLM_TIMEOUT_SECONDS="0")
    assert result.returncode != 0
    assert "CONCORD_LLM_TIMEOUT_SECONDS must be positive" in result.stderr


SHOW_TEST_PROCESS = (
    "import os; from django.conf import settings; from config.celery import app; "
    "print(settings.VAR_DIR, settings.CELERY_BROKER_URL, os.environ['CELERY_BROKER_URL'], "
    "app.conf.broker_url, settings.DATABASES['default']['TEST']['NAME'])")


def test_each_parallel_test_process_gets_its_own_folder_redis_database_and_sqlite_file(
        tmp_path):
    """`make test` runs pytest-xdist: gwK of N uses VAR_DIR/gwK and Redis database
    base + K * 16 // N (mod 16), and Celery sends where the settings say (it reads the
    environment first)."""
    seen = {}
    for process in ("gw0", "gw1"):
        result = manage("shell", "-c", SHOW_TEST_PROCESS, tmp_path=tmp_path, DJANGO_ENV="test",
                        PYTEST_XDIST_WORKER=process, PYTEST_XDIST_WORKER_COUNT="2",
                        DATABASE_URL="sqlite:///" + str(tmp_path / "x.sqlite3"),
                        CELERY_BROKER_URL="redis://127.0.0.1:6379/7")
        assert result.returncode == 0, result.stderr
        seen[process] = result.stdout.splitlines()[-1].split()
    folder = str(tmp_path)
    assert seen["gw0"] == [f"{folder}/gw0"] + ["redis://127.0.0.1:6379/7"] * 3 + [
        f"{folder}/gw0/test.sqlite3"]
    assert seen["gw1"] == [f"{folder}/gw1"] + ["redis://127.0.0.1:6379/15"] * 3 + [
        f"{folder}/gw1/test.sqlite3"]
    four = manage("shell", "-c", SHOW_TEST_PROCESS, tmp_path=tmp_path, DJANGO_ENV="test",
                  PYTEST_XDIST_WORKER="gw3", PYTEST_XDIST_WORKER_COUNT="4",
                  DATABASE_URL="sqlite:///" + str(tmp_path / "x.sqlite3"),
                  CELERY_BROKER_URL="redis://127.0.0.1:6379")
    assert four.stdout.splitlines()[-1].split()[1:4] == ["redis://127.0.0.1:6379/12"] * 3, \
        four.stderr


def test_without_a_broker_url_parallel_test_processes_share_out_the_default_redis(tmp_path):
    """As in CI: no CELERY_BROKER_URL, Redis answering on 127.0.0.1, so database 15 shifted
    per process (gw0 15, gw1 7 of two)."""
    import socket

    try:
        socket.create_connection(("127.0.0.1", 6379), timeout=0.3).close()
    except OSError:
        pytest.skip("needs Redis on 127.0.0.1:6379")
    urls = [manage("shell", "-c", SHOW_TEST_PROCESS, tmp_path=tmp_path, DJANGO_ENV="test",
                   PYTEST_XDIST_WORKER=process, PYTEST_XDIST_WORKER_COUNT="2",
                   DATABASE_URL="sqlite:///" + str(tmp_path / "x.sqlite3"),
                   CELERY_BROKER_URL="").stdout.splitlines()[-1].split()[1]
            for process in ("gw0", "gw1")]
    assert urls == ["redis://127.0.0.1:6379/15", "redis://127.0.0.1:6379/7"]


def test_a_worker_started_by_a_parallel_test_keeps_the_urls_it_is_given(tmp_path):
    """A Celery worker a test starts inherits PYTEST_XDIST_WORKER, but runs in development
    mode and is handed the test process's already derived URL: shifting it again would make it
    listen where nothing is sent (the stall of the first parallel attempt)."""
    result = manage("shell", "-c", SHOW_TEST_PROCESS.replace(
        ", settings.DATABASES['default']['TEST']['NAME']", ""), tmp_path=tmp_path,
        DJANGO_ENV="development", PYTEST_XDIST_WORKER="gw1", PYTEST_XDIST_WORKER_COUNT="2",
        CELERY_BROKER_URL="redis://127.0.0.1:6379/15")
    expected = [str(tmp_path)] + ["redis://127.0.0.1:6379/15"] * 3
    assert result.stdout.splitlines()[-1].split() == expected, result.stderr


def test_more_parallel_test_processes_than_redis_databases_are_refused(tmp_path):
    result = manage("check", tmp_path=tmp_path, DJANGO_ENV="test", PYTEST_XDIST_WORKER="gw0",
                    PYTEST_XDIST_WORKER_COUNT="17")
    assert result.returncode != 0
    assert "PYTEST_XDIST_WORKER_COUNT=17: at most 16 test processes" in result.stderr


def test_every_file_the_parallel_run_starts_first_exists():
    from tests.conftest import SLOW_FIRST

    root = Path(__file__).resolve().parent.parent
    assert [path for path in SLOW_FIRST if not (root / path).is_file()] == []


@pytest.mark.django_db
def test_each_parallel_process_on_postgresql_copies_the_runs_migrated_template():
    from django.db import connection

    from tests.support import databases

    worker = os.environ.get("PYTEST_XDIST_WORKER")
    if connection.vendor != "postgresql" or worker is None:
        pytest.skip("only parallel processes on PostgreSQL copy a template")
    assert databases.HOW == {"default": "cloned"}
    assert connection.settings_dict["NAME"].endswith(f"_{worker}")
    # the copy holds every migration applied (their rows may be gone: a transactional test
    # before this one empties every table but this one)
    from django.db.migrations.executor import MigrationExecutor

    executor = MigrationExecutor(connection)
    assert executor.migration_plan(executor.loader.graph.leaf_nodes()) == []


def test_the_embedded_broker_sends_a_task_without_a_warning(tmp_path):
    """`make run`'s web process used to log kombu's "No hostname was supplied. Reverting to
    default 'localhost'" the first time it queued a task on the filesystem broker."""
    send = ("from django.conf import settings; from config.celery import app; "
            "print(settings.CELERY_BROKER_URL); app.send_task('concord.no-such-task'); "
            "print('sent')")
    result = manage("shell", "-v", "0", "-c", send, tmp_path=tmp_path, CELERY_BROKER_URL="",
                    LOG_LEVEL="INFO")
    assert result.stdout.split() == ["filesystem://localhost//", "sent"], result.stderr
    assert "hostname" not in result.stderr, result.stderr
    assert len(list((tmp_path / "broker" / "queue").iterdir())) == 1  # the message is queued


def test_model_loading_draws_no_progress_bar_in_the_logs(tmp_path, monkeypatch):
    """transformers draws "Loading weights 0%|…" unless huggingface_hub's bars are off; the
    worker's log filed each bar as a WARNING."""
    show = ("from huggingface_hub.utils import are_progress_bars_disabled; "
            "print(are_progress_bars_disabled())")
    monkeypatch.delenv("HF_HUB_DISABLE_PROGRESS_BARS")  # set by this process's settings
    result = manage("shell", "-v", "0", "-c", show, tmp_path=tmp_path)
    assert result.stdout.split() == ["True"], result.stderr
