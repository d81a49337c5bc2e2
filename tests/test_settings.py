"""Settings come from environment variables only; production refuses unsafe defaults."""

import os
import subprocess
import sys
from pathlib import Path

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
