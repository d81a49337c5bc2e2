"""The test database of each parallel test process on PostgreSQL: one migration per run.

`make test` runs pytest-xdist, and each test process gwK has its own database (pytest-django
names it test_<name>_gwK). Migrating each from scratch costs every process the same seconds of
CPU; here the first process to get there migrates a template database once, and every process
(that one too) copies it with `CREATE DATABASE … TEMPLATE`, which PostgreSQL does by copying
files. The copy holds everything the migrations wrote, rows included, under the same name as
before, so nothing else changes.

A lock file orders the processes, and a marker file says that the template is ready, both named
after the run (the parent pytest's process id). The first process to finish drops the template
and both files; a process that starts later (xdist replacing a crashed one) finds no marker and
migrates the template again. Anything else (one process, SQLite, --reuse-db, serialized
rollback) takes pytest-django's own path.
"""

from __future__ import annotations

import fcntl
import os
import tempfile
from contextlib import contextmanager
from pathlib import Path

# How each database of this process was made: "cloned" or "migrated" (tests/test_settings.py).
HOW: dict[str, str] = {}


def clones(connection, *, keepdb: bool, serialized: bool) -> bool:
    """Whether this process copies its database from the run's template."""
    return (connection.vendor == "postgresql" and "PYTEST_XDIST_WORKER" in os.environ
            and not keepdb and not serialized)


def _files(run: int) -> tuple[Path, Path]:
    folder = Path(tempfile.gettempdir())
    return folder / f"concord-test-template-{run}.lock", folder / f"concord-test-template-{run}"


@contextmanager
def _locked(path: Path):
    with open(path, "a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _template_name(mine: str, run: int) -> str:
    return f"{mine.rsplit('_gw', 1)[0]}_template_{run}"[:63]


def clone_test_database(connection, *, verbosity: int) -> str:
    """Make this process's test database a copy of the run's template (migrating the template
    first when no process has yet); returns the original database name, for teardown."""
    creation, run = connection.creation, os.getppid()
    original = connection.settings_dict["NAME"]
    mine = creation._get_test_db_name()
    template = _template_name(mine, run)
    lock, ready = _files(run)
    quote = connection.ops.quote_name
    with _locked(lock):
        if not ready.exists():
            connection.settings_dict["TEST"]["NAME"] = template
            try:
                creation.create_test_db(verbosity=verbosity, autoclobber=True, serialize=False)
            finally:
                connection.settings_dict["TEST"]["NAME"] = mine
            connection.close()  # PostgreSQL copies a template only while nobody is connected
            ready.touch()
        with creation._nodb_cursor() as cursor:
            cursor.execute(f"DROP DATABASE IF EXISTS {quote(mine)}")
            cursor.execute(f"CREATE DATABASE {quote(mine)} TEMPLATE {quote(template)}")
    from django.conf import settings

    connection.close()
    settings.DATABASES[connection.alias]["NAME"] = mine
    connection.settings_dict["NAME"] = mine
    connection.ensure_connection()
    HOW[connection.alias] = "cloned"
    return original


def drop_template(connection) -> None:
    """Drop the run's template once the first process is done (see the module's docstring)."""
    run = os.getppid()
    lock, ready = _files(run)
    template = _template_name(connection.settings_dict["NAME"], run)
    with _locked(lock):
        if ready.exists():
            with connection.creation._nodb_cursor() as cursor:
                cursor.execute(f"DROP DATABASE IF EXISTS {connection.ops.quote_name(template)}")
            ready.unlink()
        lock.unlink(missing_ok=True)
