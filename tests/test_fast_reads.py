"""The hand-written statements of core.rows and core.auth must do what the ORM and Django's
own session store and backend do, and `rows.batched` must change nothing but the waiting
(docs/performance-history.md, "Annotation")."""

import subprocess
import sys
from datetime import timedelta

import pytest
from django.conf import settings
from django.contrib.auth.models import User
from django.contrib.sessions.models import Session
from django.db import IntegrityError, connection, transaction
from django.test import Client
from django.test.utils import override_script_prefix
from django.utils import timezone

from core import rows
from core.auth import ModelBackend, SessionStore
from core.navigation import nav_context

pytestmark = pytest.mark.django_db


def _fields(instance):
    return {f.attname: getattr(instance, f.attname) for f in instance._meta.concrete_fields}


def test_one_returns_what_the_orm_returns(annotator):
    found = rows.one(User, (("pk", "="),), [annotator.pk])
    assert _fields(found) == _fields(User.objects.get(pk=annotator.pk))
    assert found._state.adding is False and found._state.db == "default"
    assert rows.one(User, (("pk", "="),), [annotator.pk + 1000]) is None


def test_statements_name_tables_and_columns_from_the_models(monkeypatch):
    from django.db import connection

    from annotation.models import Assignment

    quote = connection.ops.quote_name
    assert rows.table(Assignment) == quote(Assignment._meta.db_table)
    # a foreign key by either name is its column; "pk" the primary key's
    member = Assignment._meta.get_field("member")
    assert rows.column(Assignment, "member", "a") == f"a.{quote(member.column)}"
    assert rows.column(Assignment, "member_id") == quote(member.column)
    assert rows.where(Assignment, (("member", "="), ("position", ">")), "a") == (
        f"a.{quote(member.column)} = %s AND a.{quote('position')} > %s")
    # a renamed column (a migration's db_column) is followed, not hard-coded
    monkeypatch.setattr(Assignment._meta.get_field("position"), "column", "place")
    assert rows.column(Assignment, "position", "a") == f"a.{quote('place')}"
    assert rows.column(User, "pk") == quote(User._meta.pk.column)


def test_insert_stores_what_the_orm_would_store(annotator):
    now = timezone.now()
    session = rows.insert(Session(session_key="k" * 32, session_data="data", expire_date=now))
    assert session.pk == "k" * 32 and session._state.adding is False
    assert Session.objects.get(pk="k" * 32).expire_date == now
    # an automatic primary key comes back from the INSERT; JSON and dates round-trip
    from evaluation.models import Job

    job = rows.insert(Job(kind=Job.Kind.STUDY_EXPORT, params={"study": 3, "x": [1, "é"]},
                          created_by=annotator))
    stored = Job.objects.get(pk=job.pk)
    assert stored.params == {"study": 3, "x": [1, "é"]} and stored.created_by_id == annotator.pk
    assert _fields(stored) == _fields(job)


def test_insert_without_returning_stores_the_row_and_reads_nothing(annotator):
    from evaluation.models import Job

    job = rows.insert(Job(kind=Job.Kind.STUDY_EXPORT, params={"n": 1}, created_by=annotator),
                      returning=False)
    assert job.pk is None and job._state.adding is False
    assert Job.objects.get(params__n=1).created_by_id == annotator.pk


def _in_flight() -> bool:
    """Statements were sent to PostgreSQL and their replies not read yet."""
    if connection.vendor != "postgresql":
        return False
    from psycopg import pq

    pgconn = connection.connection.pgconn
    return (pgconn.pipeline_status == pq.PipelineStatus.ON
            and pgconn.transaction_status == pq.TransactionStatus.ACTIVE)


def test_batched_statements_are_sent_without_waiting_and_all_land(annotator):
    from evaluation.models import Job

    with transaction.atomic(), rows.batched():
        for n in range(3):
            rows.insert(Job(kind=Job.Kind.STUDY_EXPORT, params={"n": n}, created_by=annotator),
                        returning=False)
        # on PostgreSQL the inserts are in flight: nothing has waited for a reply yet
        assert _in_flight() == (connection.vendor == "postgresql")
        assert Job.objects.filter(params__has_key="n").count() == 3  # a read waits for them
    assert not _in_flight()
    assert sorted(Job.objects.values_list("params__n", flat=True)) == [0, 1, 2]


def test_a_failing_batched_statement_raises_djangos_error_and_stores_nothing(annotator):
    now = timezone.now()
    rows.insert(Session(session_key="d" * 32, session_data="x", expire_date=now))
    with pytest.raises(IntegrityError), transaction.atomic(), rows.batched():
        rows.insert(Session(session_key="e" * 32, session_data="x", expire_date=now),
                    returning=False)
        rows.insert(Session(session_key="d" * 32, session_data="x", expire_date=now),
                    returning=False)  # a duplicate key, noticed at the latest when the block ends
    assert not Session.objects.filter(pk="e" * 32).exists()
    assert Session.objects.filter(pk="d" * 32).count() == 1  # and the connection still works


def test_sessions_load_like_djangos_and_expire(annotator):
    store = SessionStore()
    store["answer"] = 42
    store.create()
    assert SessionStore(store.session_key).load() == {"answer": 42}
    assert SessionStore("no-such-session-key-0123456789ab").load() == {}
    Session.objects.filter(pk=store.session_key).update(
        expire_date=timezone.now() - timedelta(seconds=1))
    expired = SessionStore(store.session_key)
    assert expired.load() == {} and expired.session_key is None


def test_the_backend_logs_in_active_users_only(annotator):
    backend = ModelBackend()
    assert _fields(backend.get_user(annotator.pk)) == _fields(annotator)
    assert backend.get_user(annotator.pk + 1000) is None
    client = Client()
    client.force_login(annotator)
    assert client.get("/studies/").context["user"].pk == annotator.pk
    User.objects.filter(pk=annotator.pk).update(is_active=False)
    assert backend.get_user(annotator.pk) is None
    logged_out = client.get("/studies/")  # an inactive user's session no longer logs them in
    assert logged_out.status_code == 302 and "/accounts/login/" in logged_out["Location"]
    assert settings.SESSION_ENGINE == "core.auth"
    assert settings.AUTHENTICATION_BACKENDS == ["core.auth.ModelBackend"]


def test_navigation_links_follow_the_url_prefix(client, rf):
    assert nav_context(rf.get("/"))["nav"]["studies"] == "/studies/"
    with override_script_prefix("/concord/"):  # served under a prefix (SCRIPT_NAME)
        prefixed = client.get("/").content.decode()
    assert 'href="/concord/studies/"' in prefixed and 'href="/concord/benchmarks/"' in prefixed
    plain = client.get("/").content.decode()
    assert 'href="/studies/"' in plain and "/concord/" not in plain


def test_the_wsgi_module_warms_up_and_leaves_no_connection_open():
    templates = len(list((settings.BASE_DIR / "templates").rglob("*.html")))
    code = ("import gc, sys, config.wsgi; from django.db import connection; "
            "from django.template import engines; "
            "assert 'annotation.views' in sys.modules and 'leaderboard.views' in sys.modules; "
            "assert 'evaluation.lib.stats.elo_kernel' in sys.modules; "  # the arena's kernels
            "assert connection.connection is None and gc.get_freeze_count() > 100000; "
            "cache = engines['django'].engine.template_loaders[0].get_template_cache; "
            f"assert len(cache) >= {templates}, len(cache); "
            "print(config.wsgi.warm_up())")
    done = subprocess.run([sys.executable, "-c", code], cwd=settings.BASE_DIR,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0 and done.stdout.strip() == str(templates), done.stderr
