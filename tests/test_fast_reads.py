"""The hand-written statements of config.rows and config.auth must do what the ORM and Django's
own session store and backend do (docs/performance.md, "Annotation")."""

import subprocess
import sys
from datetime import timedelta

import pytest
from django.conf import settings
from django.contrib.auth.models import User
from django.contrib.sessions.models import Session
from django.test import Client
from django.test.utils import override_script_prefix
from django.utils import timezone

from config import rows
from config.auth import ModelBackend, SessionStore
from config.navigation import nav_context

pytestmark = pytest.mark.django_db


def _fields(instance):
    return {f.attname: getattr(instance, f.attname) for f in instance._meta.concrete_fields}


def test_one_returns_what_the_orm_returns(annotator):
    found = rows.one(User, "t.id = %s", [annotator.pk])
    assert _fields(found) == _fields(User.objects.get(pk=annotator.pk))
    assert found._state.adding is False and found._state.db == "default"
    assert rows.one(User, "t.id = %s", [annotator.pk + 1000]) is None


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
    assert settings.SESSION_ENGINE == "config.auth"
    assert settings.AUTHENTICATION_BACKENDS == ["config.auth.ModelBackend"]


def test_navigation_links_follow_the_url_prefix(client, rf):
    assert nav_context(rf.get("/"))["nav"]["studies"] == "/studies/"
    with override_script_prefix("/concord/"):  # served under a prefix (SCRIPT_NAME)
        prefixed = client.get("/").content.decode()
    assert 'href="/concord/studies/"' in prefixed and 'href="/concord/benchmarks/"' in prefixed
    plain = client.get("/").content.decode()
    assert 'href="/studies/"' in plain and "/concord/" not in plain


def test_the_wsgi_module_imports_every_view_and_leaves_no_connection_open():
    code = ("import sys, config.wsgi; from django.db import connection; "
            "assert 'annotation.views' in sys.modules and 'leaderboard.views' in sys.modules; "
            "assert connection.connection is None; print('ok')")
    done = subprocess.run([sys.executable, "-c", code], cwd=settings.BASE_DIR,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0 and done.stdout.strip() == "ok", done.stderr
