"""Concord settings: one module, driven by environment variables.

Three run modes (docs/operations.md):
- embedded (default): SQLite under var/, Celery on kombu's filesystem transport, no server needed;
- service: DATABASE_URL=postgres://… and CELERY_BROKER_URL=redis://…;
- test: chosen automatically under pytest; uses PostgreSQL and Redis on 127.0.0.1 when they answer.
"""

import os
import socket
import sys
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import dj_database_url
from django.core.exceptions import ImproperlyConfigured

from evaluation.lib.credentials import parse_credentials as _parse_credentials
from evaluation.lib.llm.profiles import parse_profiles as _parse_profiles

BASE_DIR = Path(__file__).resolve().parent.parent


def env_str(name: str, default: str = "") -> str:
    return os.environ.get(name, default)


def env_bool(name: str, default: bool) -> bool:
    raw = os.environ.get(name)
    if raw is None or raw == "":
        return default
    if raw.lower() in {"1", "true", "yes", "on"}:
        return True
    if raw.lower() in {"0", "false", "no", "off"}:
        return False
    raise ImproperlyConfigured(f"{name}={raw!r} is not a boolean (use true/false)")


def env_int(name: str, default: int) -> int:
    raw = os.environ.get(name)
    if raw is None or raw == "":
        return default
    try:
        return int(raw)
    except ValueError as exc:
        raise ImproperlyConfigured(f"{name}={raw!r} is not an integer") from exc


def env_float(name: str, default: float) -> float:
    raw = os.environ.get(name)
    if raw is None or raw == "":
        return default
    try:
        return float(raw)
    except ValueError as exc:
        raise ImproperlyConfigured(f"{name}={raw!r} is not a number") from exc


def env_list(name: str, default: list[str]) -> list[str]:
    raw = os.environ.get(name)
    if raw is None or raw == "":
        return default
    return [part.strip() for part in raw.split(",") if part.strip()]


def env_port_ranges(name: str, default: str) -> list[tuple[int, int]]:
    """Ports and inclusive ranges, comma-separated ("8000-8999,9100"), as (low, high) pairs."""
    raw = os.environ.get(name) or default
    ranges = []
    for part in (p.strip() for p in raw.split(",")):
        low, dash, high = part.partition("-")
        try:
            pair = (int(low), int(high if dash else low))
        except ValueError:
            pair = (0, 0)
        if not 1 <= pair[0] <= pair[1] <= 65535:
            raise ImproperlyConfigured(f"{name}={raw!r}: {part!r} is not a port (1-65535) or "
                                       "a range of ports such as 8000-8999")
        ranges.append(pair)
    return ranges


def _reachable(host: str, port: int) -> bool:
    try:
        with socket.create_connection((host, port), timeout=0.3):
            return True
    except OSError:
        return False


_UNDER_PYTEST = "pytest" in sys.modules
DJANGO_ENV = env_str("DJANGO_ENV", "test" if _UNDER_PYTEST else "development")
if DJANGO_ENV not in {"development", "production", "test"}:
    raise ImproperlyConfigured(
        f"DJANGO_ENV={DJANGO_ENV!r}: expected development, production or test"
    )
PRODUCTION = DJANGO_ENV == "production"
TESTING = DJANGO_ENV == "test"

# --- parallel test processes (pytest-xdist: `make test` runs pytest -n N) ---------------------
# Each test process gwK (PYTEST_XDIST_WORKER; PYTEST_XDIST_WORKER_COUNT of them) gets its own
# VAR_DIR subfolder (SQLite test file, broker folders, uploads), its own test database
# (pytest-django appends _gwK to the test database's name) and its own Redis database: the
# broker URL's index (15 by default) plus K * (16 // count), modulo 16 — with -n 2 and DB 7, gw0
# uses 7 and gw1 15. Only under DJANGO_ENV=test: a worker process a test starts runs in
# development mode and is handed the derived URLs, which it must not shift a second time.
TEST_PROCESS = env_str("PYTEST_XDIST_WORKER") if TESTING else ""
TEST_PROCESSES = env_int("PYTEST_XDIST_WORKER_COUNT", 1) if TEST_PROCESS else 1
if not 1 <= TEST_PROCESSES <= 16:
    raise ImproperlyConfigured(f"PYTEST_XDIST_WORKER_COUNT={TEST_PROCESSES}: at most 16 test "
                               "processes (one Redis database each)")


def _redis_for_test_process(url: str) -> str:
    """URL with its database index moved to this test process's own (see above)."""
    if not TEST_PROCESS or not url.startswith("redis://"):
        return url
    parts = urlsplit(url)
    index = int(parts.path.strip("/") or 0)
    number = int(TEST_PROCESS.removeprefix("gw"))
    return urlunsplit(parts._replace(path=f"/{(index + number * (16 // TEST_PROCESSES)) % 16}"))


VAR_DIR = Path(env_str("CONCORD_VAR_DIR", str(BASE_DIR / "var"))) / TEST_PROCESS
VAR_DIR.mkdir(parents=True, exist_ok=True)
# Public human-labelled data sets, as published (docs/formats.md §4). They are never copied into
# the repository: `load_demo` reads AB-ReDial from here when the folder is present.
PUBLIC_DATA_DIR = Path(env_str("CONCORD_PUBLIC_DATA_DIR",
                               str(BASE_DIR.parent / "shared" / "data" / "public")))

SECRET_KEY = env_str("SECRET_KEY")
if not SECRET_KEY:
    if PRODUCTION:
        raise ImproperlyConfigured("SECRET_KEY must be set when DJANGO_ENV=production")
    SECRET_KEY = "insecure-development-key-never-use-in-production-" + "x" * 20

DEBUG = env_bool("DEBUG", DJANGO_ENV == "development")
ALLOWED_HOSTS = env_list(
    "ALLOWED_HOSTS", [] if PRODUCTION else ["127.0.0.1", "localhost", "testserver"]
)
CSRF_TRUSTED_ORIGINS = env_list("CSRF_TRUSTED_ORIGINS", [])

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "django.contrib.humanize",
    "rest_framework",
    "rest_framework.authtoken",
    "drf_spectacular",
    "django_htmx",
    "csp",
    "evaluation",
    "leaderboard",
    "annotation",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "config.middleware.MalformedUrlMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "config.middleware.OversizedUploadMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "csp.middleware.CSPMiddleware",
    "django_htmx.middleware.HtmxMiddleware",
    "config.middleware.QueueUnavailableMiddleware",
]

ROOT_URLCONF = "config.urls"
WSGI_APPLICATION = "config.wsgi.application"
ASGI_APPLICATION = "config.asgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
                "core.roles.roles_context",
                "core.navigation.nav_context",
            ],
        },
    },
]

# --- database -------------------------------------------------------------------------------
_DEFAULT_SQLITE = f"sqlite:///{VAR_DIR / 'concord.sqlite3'}"
DATABASE_URL = env_str("DATABASE_URL")
if not DATABASE_URL and TESTING and _reachable("127.0.0.1", 5432):
    DATABASE_URL = "postgres://postgres@127.0.0.1:5432/concord"
DATABASES = {"default": dj_database_url.parse(DATABASE_URL or _DEFAULT_SQLITE, conn_max_age=60)}
if DATABASES["default"]["ENGINE"].endswith("sqlite3"):
    DATABASES["default"]["OPTIONS"] = {"timeout": 20, "transaction_mode": "IMMEDIATE"}
    # A file, not memory, so a real worker process in the tests can share the test database.
    DATABASES["default"]["TEST"] = {"NAME": str(VAR_DIR / "test.sqlite3")}
else:
    # Server-side binding lets psycopg prepare the statements a process repeats (every item page
    # and submission runs the same few): PostgreSQL then skips parsing and planning them
    # (docs/performance.md). Behind a transaction-pooling PgBouncer, set the threshold to -1.
    _threshold = env_int("DATABASE_PREPARE_THRESHOLD", 5)
    DATABASES["default"]["OPTIONS"] = {"server_side_binding": True,
                                       "prepare_threshold": None if _threshold < 0 else _threshold}
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

# --- caches ---------------------------------------------------------------------------------
# Both are per web process (nothing is shared between processes or machines, so nothing here
# needs a server). "items": what an annotation item page derives from an item snapshot, which
# never changes once written — its letters, cited reviews, candidates and a fresh item's
# rendered body (annotation.selectors; docs/hot-path.md); bounded, and kept ten minutes so that
# memory stays flat however many studies run.
CACHES = {
    "default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache",
                "LOCATION": "concord-default"},
    "items": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache",
              "LOCATION": "concord-items", "TIMEOUT": 600,
              "OPTIONS": {"MAX_ENTRIES": 2048}},
}

# --- auth -----------------------------------------------------------------------------------
AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
]
if TESTING:
    PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
# Django's database sessions and model backend, each read one statement (core/auth.py)
SESSION_ENGINE = "core.auth"
AUTHENTICATION_BACKENDS = ["core.auth.ModelBackend"]
LOGIN_URL = "login"
LOGIN_REDIRECT_URL = "home"
LOGOUT_REDIRECT_URL = "home"

# --- i18n, static, uploads ------------------------------------------------------------------
LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

STATIC_URL = "static/"
STATICFILES_DIRS = [BASE_DIR / "static"]
STATIC_ROOT = Path(env_str("STATIC_ROOT", str(VAR_DIR / "staticfiles")))
STATIC_ROOT.mkdir(parents=True, exist_ok=True)
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {
        "BACKEND": "whitenoise.storage.CompressedManifestStaticFilesStorage"
        if PRODUCTION
        else "django.contrib.staticfiles.storage.StaticFilesStorage"
    },
}
# Uploaded files live outside the static root and are never served by URL.
MEDIA_ROOT = Path(env_str("MEDIA_ROOT", str(VAR_DIR / "uploads")))
# A Trace run is scored in chunks of about this many answered turns, one Celery task each.
RUN_CHUNK_TURNS = env_int("CONCORD_RUN_CHUNK_TURNS", 1000)
MAX_UPLOAD_BYTES = env_int("CONCORD_MAX_UPLOAD_BYTES", 200 * 1024 * 1024)
# An upload larger than this is not validated in the web request: it is staged under MEDIA_ROOT
# and validated by a worker while the page shows a progress bar (the API answers 202), so a
# web request only ever checks a small file (docs/operations.md, "Failure modes").
INLINE_VALIDATION_BYTES = env_int("CONCORD_INLINE_VALIDATION_BYTES", 1024 * 1024)
# A benchmark bundle's files together, uncompressed (checked against an archive's declared
# sizes before anything is decompressed): parsing holds about four times this in memory.
MAX_BUNDLE_BYTES = env_int("CONCORD_MAX_BUNDLE_BYTES", 64 * 1024 * 1024)
# Accepted uploads per system and UTC day, counting runs that later fail (a system may override).
DAILY_SUBMISSION_QUOTA = env_int("CONCORD_DAILY_SUBMISSION_QUOTA", 5)
# --- simulations (docs/simulation.md, "Allowance") ---
# Simulations a researcher account may start per UTC day (web form and API; the command line is
# the operator's and is not counted), apart from the upload quota above. 0 turns them off.
DAILY_SIMULATION_QUOTA = env_int("CONCORD_DAILY_SIMULATION_QUOTA", 5)
# A run whose share of unanswered evaluated turns (metric `non_answer`) is above this is listed on
# the leaderboard with its count but not ranked: its means rest on the turns it did answer.
MAX_NON_ANSWER_SHARE = env_float("CONCORD_MAX_NON_ANSWER_SHARE", 0.1)
DATA_UPLOAD_MAX_MEMORY_SIZE = 10 * 1024 * 1024
FILE_UPLOAD_MAX_MEMORY_SIZE = 5 * 1024 * 1024

# --- security (production) ------------------------------------------------------------------
if PRODUCTION:
    SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
    SECURE_SSL_REDIRECT = env_bool("SECURE_SSL_REDIRECT", True)
    SECURE_HSTS_SECONDS = env_int("SECURE_HSTS_SECONDS", 31536000)
    SECURE_HSTS_INCLUDE_SUBDOMAINS = True
    SECURE_HSTS_PRELOAD = True
    SESSION_COOKIE_SECURE = True
    CSRF_COOKIE_SECURE = True
SECURE_CONTENT_TYPE_NOSNIFF = True
X_FRAME_OPTIONS = "DENY"
# Content-Security-Policy (django-csp): scripts only from this site (no inline script, no
# eval: htmx needs neither without hx-on), styles from this site plus inline `style`
# attributes (progress bars and SVG charts set widths and colours that way), no plugins, no
# framing. An injected <script> or <style> element would not run even if escaping failed.
CONTENT_SECURITY_POLICY = {
    "DIRECTIVES": {
        "default-src": ["'self'"],
        "script-src": ["'self'"],
        "style-src": ["'self'"],
        "style-src-attr": ["'unsafe-inline'"],
        "img-src": ["'self'", "data:"],
        "font-src": ["'self'"],
        "connect-src": ["'self'"],
        "object-src": ["'none'"],
        "base-uri": ["'self'"],
        "form-action": ["'self'"],
        "frame-ancestors": ["'none'"],
    },
}

# --- login throttling (core/throttle.py) --------------------------------------------------
LOGIN_FAILURE_LIMIT = env_int("CONCORD_LOGIN_FAILURE_LIMIT", 5)
LOGIN_FAILURE_WINDOW_SECONDS = env_int("CONCORD_LOGIN_FAILURE_WINDOW_SECONDS", 15 * 60)
# The counts must be shared by every web process: Redis in service mode (CONCORD_CACHE_URL, by
# default the broker's Redis server), process memory when there is one web process (and under
# pytest, whose tests clear it between them).
_CACHE_URL = "" if TESTING else env_str("CONCORD_CACHE_URL") or (
    env_str("CELERY_BROKER_URL") if env_str("CELERY_BROKER_URL").startswith("redis://") else "")
CACHES["throttle"] = (
    {"BACKEND": "django.core.cache.backends.redis.RedisCache", "LOCATION": _CACHE_URL,
     "KEY_PREFIX": "concord",
     # a dead server costs a request at most a second before the fallback takes over
     "OPTIONS": {"socket_connect_timeout": 1, "socket_timeout": 1}} if _CACHE_URL else
    {"BACKEND": "django.core.cache.backends.locmem.LocMemCache", "LOCATION": "throttle"})

# --- client addresses and Redis outages (core/throttle.py; docs/operations.md, "Client
# addresses, proxies and Redis outages") ----------------------------------------------------
# How many reverse proxies in front of the web processes append the address they received from
# to X-Forwarded-For: the client is that header's Nth entry from the right. 0 (direct): the
# header is ignored and the client is the connection's address (REMOTE_ADDR).
TRUSTED_PROXIES = env_int("CONCORD_TRUSTED_PROXIES", 0)
if TRUSTED_PROXIES < 0:
    raise ImproperlyConfigured(f"CONCORD_TRUSTED_PROXIES={TRUSTED_PROXIES} must be 0 or more")
# Where the throttle counts go while the "throttle" cache's Redis server does not answer: this
# process's memory (limits then hold per web process), never an error page.
CACHES["throttle-fallback"] = {"BACKEND": "django.core.cache.backends.locmem.LocMemCache",
                               "LOCATION": "throttle-fallback"}

# --- Celery ---------------------------------------------------------------------------------
BROKER_DIR = VAR_DIR / "broker"
CELERY_BROKER_URL = env_str("CELERY_BROKER_URL")
if not CELERY_BROKER_URL and TESTING and _reachable("127.0.0.1", 6379):
    CELERY_BROKER_URL = "redis://127.0.0.1:6379/15"
# Celery reads CELERY_BROKER_URL from the environment before these settings: a test process
# writes its own (derived) URL there, so that the tasks it sends reach its own workers.
CELERY_BROKER_URL = _redis_for_test_process(CELERY_BROKER_URL)
if TEST_PROCESS and CELERY_BROKER_URL:
    os.environ["CELERY_BROKER_URL"] = CELERY_BROKER_URL
if not CELERY_BROKER_URL:
    # Embedded mode: kombu's filesystem transport lets real worker processes consume
    # tasks with no broker server running. The transport ignores the host; naming one keeps
    # kombu from logging "No hostname was supplied" whenever a process first sends a task.
    CELERY_BROKER_URL = "filesystem://localhost//"
if CELERY_BROKER_URL.startswith("filesystem://"):
    for sub in ("queue", "processed", "control"):
        (BROKER_DIR / sub).mkdir(parents=True, exist_ok=True)
    CELERY_BROKER_TRANSPORT_OPTIONS = {
        "data_folder_in": str(BROKER_DIR / "queue"),
        "data_folder_out": str(BROKER_DIR / "queue"),
        "processed_folder": str(BROKER_DIR / "processed"),
        "control_folder": str(BROKER_DIR / "control"),
        "store_processed": False,
    }
# The LLM slots every process shares (CONCORD_LLM_MAX_CONCURRENCY): the cache's or the broker's
# Redis; empty (the embedded mode): per process.
LLM_SLOTS_REDIS_URL = env_str("CONCORD_CACHE_URL") or (
    CELERY_BROKER_URL if CELERY_BROKER_URL.startswith("redis://") else "")
# Progress and results are stored in the database by the tasks themselves; a run spread over
# workers is joined there too (finished chunks are counted in `RunChunk`), not by a chord,
# so no result backend is needed in either mode (docs/operations.md).
CELERY_RESULT_BACKEND = None
CELERY_TASK_IGNORE_RESULT = True
CELERY_TASK_ACKS_LATE = True
CELERY_TASK_REJECT_ON_WORKER_LOST = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_TASK_ALWAYS_EAGER = env_bool("CELERY_TASK_ALWAYS_EAGER", TESTING)
CELERY_TASK_EAGER_PROPAGATES = True
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True
# How long an upload or export waits for the broker before answering 503 (nothing stored).
CELERY_BROKER_CHECK_TIMEOUT = env_int("CONCORD_BROKER_CHECK_TIMEOUT", 3)
# Dead workers (evaluation.services.jobs): the process running a job beats every
# JOB_HEARTBEAT_SECONDS; a job silent for JOB_STALE_SECONDS reads as failed; each worker sweeps
# (fails stale jobs, resends unsent ones) on start and every JOB_SWEEP_SECONDS. Worst case from
# a worker's death to "failed" on every page: heartbeat + stale = 55 s by default.
JOB_HEARTBEAT_SECONDS = env_int("CONCORD_JOB_HEARTBEAT_SECONDS", 10)
JOB_STALE_SECONDS = env_int("CONCORD_JOB_STALE_SECONDS", 45)
JOB_SWEEP_SECONDS = env_int("CONCORD_JOB_SWEEP_SECONDS", 15)
if not 0 < JOB_HEARTBEAT_SECONDS < JOB_STALE_SECONDS:
    raise ImproperlyConfigured("CONCORD_JOB_HEARTBEAT_SECONDS must be positive and below "
                               "CONCORD_JOB_STALE_SECONDS")

# --- REST API -------------------------------------------------------------------------------
REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "rest_framework.authentication.TokenAuthentication",
        "rest_framework.authentication.SessionAuthentication",
    ],
    "DEFAULT_PERMISSION_CLASSES": ["rest_framework.permissions.IsAuthenticatedOrReadOnly"],
    "DEFAULT_SCHEMA_CLASS": "leaderboard.schema.ContractSchema",
    "DEFAULT_PAGINATION_CLASS": "leaderboard.pagination.StrictLimitOffsetPagination",
    "PAGE_SIZE": 100,
}
SPECTACULAR_SETTINGS = {
    "TITLE": "Concord API",
    "DESCRIPTION": "Benchmarks, systems, submissions, runs and leaderboards of Concord.",
    "VERSION": "0.1.0",
    # Request bodies apart from answers: what a write must match is not what is stored.
    "COMPONENT_SPLIT_REQUEST": True,
}

# --- models and LLMs ------------------------------------------------------------------------
# Local model weights are never downloaded at run time.
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
# Local weights load in well under a second; their tqdm bar ("Loading weights 0%|…") went to
# the worker's log, where Celery files a task's stderr as WARNING.
os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
NLI_MODEL_PATH = env_str("NLI_MODEL_PATH")
# The default LLM of CoRE, the Trace and PEPPER judges and the LLM baselines (docs/llm.md); a
# litellm model string such as "openai/gpt-4o-mini" or "openai/qwen3-8b" with an API base.
# These three make the implicit model profile `default` (below); commands may override its model
# (--model) or pick another profile (--profile). Unset: LLM evaluators refuse to start and say
# why; everything else runs.
LLM_MODEL = env_str("CONCORD_LLM_MODEL")
LLM_API_BASE = env_str("CONCORD_LLM_API_BASE")
LLM_API_KEY_ENV = env_str("CONCORD_LLM_API_KEY_ENV")  # the *name* of the variable with the key
LLM_TEMPERATURE = env_float("CONCORD_LLM_TEMPERATURE", 0.0)
LLM_MAX_TOKENS = env_int("CONCORD_LLM_MAX_TOKENS", 0)  # 0: the provider's default
# Site-wide: every process shares the slots through Redis (the broker's or CONCORD_CACHE_URL;
# LLM_SLOTS_REDIS_URL below); per process in the embedded mode (evaluation/lib/llm/limiter.py).
LLM_MAX_CONCURRENCY = env_int("CONCORD_LLM_MAX_CONCURRENCY", 4)
# How the default profile's answer formats are sent (openai, vllm, llama.cpp, concord-local).
LLM_BACKEND = env_str("CONCORD_LLM_BACKEND", "openai")
# A profile that gives its model's `parameters` under this is not evaluation-grade unless it
# says so: its runs are smoke tests, never published (docs/llm.md, "Smoke tests").
LLM_MIN_EVALUATION_PARAMS = env_int("CONCORD_LLM_MIN_EVALUATION_PARAMS", 1_000_000_000)
LLM_MAX_RETRIES = env_int("CONCORD_LLM_MAX_RETRIES", 4)
LLM_BACKOFF_SECONDS = env_float("CONCORD_LLM_BACKOFF_SECONDS", 1.0)
LLM_TIMEOUT_SECONDS = env_float("CONCORD_LLM_TIMEOUT_SECONDS", 120.0)
# An LLM run stops when its first N units all failed (a wrong model or prompt format fails
# every unit; retrying each would spend minutes for nothing). 0: never stop early.
LLM_STOP_AFTER_FAILED_UNITS = env_int("CONCORD_LLM_STOP_AFTER_FAILED_UNITS", 3)
if LLM_MAX_CONCURRENCY < 1 or LLM_MAX_RETRIES < 0 or LLM_BACKOFF_SECONDS < 0:
    raise ImproperlyConfigured("CONCORD_LLM_MAX_CONCURRENCY must be at least 1, "
                               "CONCORD_LLM_MAX_RETRIES and CONCORD_LLM_BACKOFF_SECONDS at least 0")

# --- credentials and model profiles (docs/operations.md, "Credentials and model profiles") ---
# No user input ever names an environment variable. CONCORD_CREDENTIALS names the secrets a
# researcher may choose for a live system ("crs-demo=CRS_DEMO_KEY,partner-x=PX_KEY@alice|bob":
# name=VARIABLE, optionally only for systems of the listed owners); CONCORD_LLM_PROFILES (JSON)
# the models users may pick for LLM runs, each with its address and optional credential, beside
# the implicit `default` profile made of CONCORD_LLM_MODEL/_API_BASE/_API_KEY_ENV.
try:
    CREDENTIALS = _parse_credentials(env_str("CONCORD_CREDENTIALS"))
    LLM_PROFILES = _parse_profiles(env_str("CONCORD_LLM_PROFILES"), credentials=CREDENTIALS,
                                   min_evaluation_params=LLM_MIN_EVALUATION_PARAMS)
except ValueError as _error:
    raise ImproperlyConfigured(str(_error)) from None

# --- LLM budgets (docs/operations.md, "LLM budgets") ------------------------------------------
# Every start that spends LLM money (an evaluator run by hand, a simulation with an LLM user, a
# FACE optimisation) reserves its estimate against its account's allowance for the UTC day and
# is refused over a per-run cap. 0 switches a limit off. A model without a known price counts
# by tokens only; with both token limits off it is refused while a dollar limit is on.
LLM_DAILY_BUDGET_USD = env_float("CONCORD_LLM_DAILY_BUDGET_USD", 20.0)
LLM_DAILY_BUDGET_TOKENS = env_int("CONCORD_LLM_DAILY_BUDGET_TOKENS", 5_000_000)
LLM_RUN_CAP_USD = env_float("CONCORD_LLM_RUN_CAP_USD", 10.0)
LLM_RUN_CAP_TOKENS = env_int("CONCORD_LLM_RUN_CAP_TOKENS", 2_000_000)
if min(LLM_DAILY_BUDGET_USD, LLM_DAILY_BUDGET_TOKENS, LLM_RUN_CAP_USD, LLM_RUN_CAP_TOKENS) < 0:
    raise ImproperlyConfigured("the CONCORD_LLM_DAILY_BUDGET_* and CONCORD_LLM_RUN_CAP_* "
                               "settings are 0 (no limit) or more")

# Live systems (docs/formats.md §4): the addresses Concord may call on a researcher's behalf.
# Entries are IP addresses, CIDR networks, host names or `public` (any global address). Loopback
# only in development; nothing in production until the operator lists what is allowed.
LIVE_ALLOWED_HOSTS = env_list(
    "CONCORD_LIVE_ALLOWED_HOSTS", [] if PRODUCTION else ["localhost", "127.0.0.0/8", "::1"])
# The ports a loopback address (this machine) may be called on, whichever entry allows it:
# never Concord's own database or queue (5432, 6379) unless listed. Tests: the ephemeral ports
# their servers bind (Linux 32768-60999, macOS and Windows 49152-65535). docs/operations.md.
LIVE_LOOPBACK_PORTS = env_port_ranges("CONCORD_LIVE_LOOPBACK_PORTS",
                                      "32768-65535" if TESTING else "8000-8999")

# The arena (docs/arena.md): threads per web process calling live systems, and rate limits
# (events per hour) per browser session and per client address.
ARENA_CALL_THREADS = env_int("CONCORD_ARENA_CALL_THREADS", 32)
ARENA_BATTLES_PER_HOUR_SESSION = env_int("CONCORD_ARENA_BATTLES_PER_HOUR_SESSION", 20)
ARENA_BATTLES_PER_HOUR_ADDRESS = env_int("CONCORD_ARENA_BATTLES_PER_HOUR_ADDRESS", 60)
ARENA_MESSAGES_PER_HOUR_SESSION = env_int("CONCORD_ARENA_MESSAGES_PER_HOUR_SESSION", 120)
ARENA_MESSAGES_PER_HOUR_ADDRESS = env_int("CONCORD_ARENA_MESSAGES_PER_HOUR_ADDRESS", 400)
# Whether a researcher's request to add their live system to a benchmark's arena waits for
# staff (approve or reject on /arena-requests/) or is granted at once (docs/operations.md).
ARENA_REQUIRE_APPROVAL = env_bool("CONCORD_ARENA_REQUIRE_APPROVAL", PRODUCTION)

# Deadlines on outbound calls (docs/operations.md, "Deadlines and hostile answers"): the threads
# per process that in-process baselines answer on (a caller waits at most the system's timeout;
# a stuck call keeps one of these threads, never more), and whether a web process or worker
# loads the in-process baselines' sentence-embedding model as it starts (else the first call
# of the Dense or Hybrid-RRF baseline loads it, within that call's deadline).
LIVE_INPROCESS_THREADS = env_int("CONCORD_LIVE_INPROCESS_THREADS", 8)
LIVE_WARM_UP = env_bool("CONCORD_LIVE_WARM_UP", True)
# A web process that does not fork (`make run`'s runserver) loads the Elo kernels and that model
# in a background thread and serves at once; never with gunicorn --preload (docs/operations.md).
WARM_UP_IN_BACKGROUND = env_bool("CONCORD_WARM_UP_IN_BACKGROUND", False)
if LIVE_INPROCESS_THREADS < 1:
    raise ImproperlyConfigured("CONCORD_LIVE_INPROCESS_THREADS must be at least 1")
if LLM_TIMEOUT_SECONDS <= 0:  # each LLM call's deadline (timeout × attempts in all)
    raise ImproperlyConfigured("CONCORD_LLM_TIMEOUT_SECONDS must be positive")

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "handlers": {"console": {"class": "logging.StreamHandler"}},
    # litellm logs every call at INFO; Concord's gateway logs retries and failures itself.
    "loggers": {"LiteLLM": {"level": env_str("LITELLM_LOG_LEVEL", "WARNING")}},
    "root": {
        "handlers": ["console"],
        "level": env_str("LOG_LEVEL", "WARNING" if TESTING else "INFO"),
    },
}
