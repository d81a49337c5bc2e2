"""Data for `manage.py bench_annotation`: a demo benchmark, a Trace Task 1 study, annotators
with their own queues, logged-in sessions, and the SQL query count of both measured requests.

Runs only in the benchmark's own database (the command points DATABASE_URL at it).
"""

from __future__ import annotations

import io
import tempfile
from importlib import import_module

from django.conf import settings
from django.contrib.auth import BACKEND_SESSION_KEY, HASH_SESSION_KEY, SESSION_KEY
from django.contrib.auth.models import Group, User
from django.core.management import call_command
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from annotation.lib import handout, taskforms
from annotation.services.members import study_member_add
from annotation.services.studies import StudySpec, study_create
from core.roles import ANNOTATOR, STUDY_AUTHOR

from .models import Assignment

FORMS = (taskforms.CITATION, taskforms.CHECKLIST, taskforms.LIKERT)
ANSWERS = {**{f"citation-{i}": "supported" for i in range(12)}, "error": ["no_errors"],
           "likert-informativeness": "4", "likert-naturalness": "5", "comment": "ok"}


def _user(username: str, role: str) -> User:
    user = User.objects.create_user(username, password=None)
    user.groups.add(Group.objects.get_or_create(name=role)[0])
    return user


def _session(user: User) -> str:
    session = import_module(settings.SESSION_ENGINE).SessionStore()
    session[SESSION_KEY] = str(user.pk)
    session[BACKEND_SESSION_KEY] = settings.AUTHENTICATION_BACKENDS[0]
    session[HASH_SESSION_KEY] = user.get_session_auth_hash()
    session.create()
    return session.session_key


def _queue(member, items: list, count: int) -> list[int]:
    """Hand the member COUNT items in their own random order (what the hand-out would do)."""
    now = timezone.now()
    chosen = sorted(items, key=lambda item: handout.order_key(member.order_seed, item.pk))[:count]
    Assignment.objects.bulk_create([
        Assignment(member=member, item=item, position=n, handed_out_at=now, last_active_at=now,
                   reason="needs_labels", queue_total=count, seconds_left=60 * count)
        for n, item in enumerate(chosen, 1)])
    return list(range(1, len(chosen) + 1))


def _count_queries(member_user: User, slug: str) -> dict[str, int]:
    client = Client()
    client.force_login(member_user)
    page = f"/studies/{slug}/items/1/"
    client.get(page)  # warm caches, as a running server has them
    with CaptureQueriesContext(connection) as get_queries:
        assert client.get(page).status_code == 200
    with CaptureQueriesContext(connection) as post_queries:
        assert client.post(page + "submit/", ANSWERS).status_code == 307
    return {"item page (GET)": len(get_queries), "submit (POST)": len(post_queries)}


def seed_study(*, annotators: int, items: int, stdout=None) -> dict:
    with tempfile.TemporaryDirectory() as folder:
        quiet = io.StringIO()
        call_command("make_demo_benchmark", folder, seed=42, stdout=quiet, stderr=quiet)
        call_command("import_benchmark", folder, stdout=quiet, stderr=quiet)
    from evaluation.models import Benchmark

    benchmark = Benchmark.objects.get(slug="demo-tourism")
    author = _user("bench-author", STUDY_AUTHOR)
    study = study_create(
        benchmark=benchmark, author=author, title="Benchmark study", slug="bench-study",
        spec=StudySpec(forms=FORMS, sample_size=items, seed=1),
        overlap_k=min(50, annotators + 1))
    pool = list(study.items.filter(kind="normal"))
    plan = {"slug": study.slug, "answers": ANSWERS, "annotators": []}
    for n in range(1, annotators + 1):
        user = _user(f"bench-annotator-{n}", ANNOTATOR)
        member = study_member_add(study=study, user=user)
        plan["annotators"].append({"session": _session(user),
                                   "positions": _queue(member, pool, items)})
    probe = _user("bench-probe", ANNOTATOR)
    _queue(study_member_add(study=study, user=probe), pool, 2)
    plan["queries"] = _count_queries(probe, study.slug)
    plan["warm_up"] = {"session": _session(probe), "position": 2}
    if stdout is not None:
        stdout.write(f"{len(pool)} items, {annotators} annotators x {items} items each; "
                     f"SQL per request: {plan['queries']}")
    return plan
