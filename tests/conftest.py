"""Test personas and shared fixtures (healthchecks-style: owner, teammate, outsider…)."""


import pytest
from django.core.servers.basehttp import WSGIRequestHandler

from core.roles import ANNOTATOR, RESEARCHER, STUDY_AUTHOR
from tests.support.bundles import write_tiny

PASSWORD = "pw-for-tests-123"

# The live server (browsers, schemathesis) keeps connections alive: without this every request
# after a connection's first waits 40 ms for a delayed ACK, as `make run` would (config/wsgi.py).
WSGIRequestHandler.disable_nagle_algorithm = True


@pytest.fixture(scope="session")
def django_db_setup(request, django_test_environment, django_db_blocker, django_db_use_migrations,
                    django_db_keepdb, django_db_createdb, django_db_modify_db_settings):
    """pytest-django's fixture, but on PostgreSQL each parallel test process copies its database
    from a template migrated once per run (tests/support/databases.py)."""
    from django.db import connection
    from django.test.utils import setup_databases, teardown_databases
    from pytest_django.fixtures import _disable_migrations, _get_databases_for_setup

    from tests.support import databases

    if not django_db_use_migrations:  # --nomigrations: pytest-django's own path
        _disable_migrations()
    keepdb = django_db_keepdb and not django_db_createdb
    aliases, serialized = _get_databases_for_setup(request.session.items)
    verbosity = request.config.option.verbose
    if aliases != {"default"} or not django_db_use_migrations or not databases.clones(
            connection, keepdb=keepdb, serialized=bool(serialized)):
        with django_db_blocker.unblock():
            config = setup_databases(verbosity=verbosity, interactive=False, aliases=aliases,
                                     serialized_aliases=serialized, keepdb=keepdb)
            databases.HOW.update({alias: "migrated" for alias in aliases})
        yield
        if not keepdb:
            with django_db_blocker.unblock():
                teardown_databases(config, verbosity=verbosity)
        return
    with django_db_blocker.unblock():
        original = databases.clone_test_database(connection, verbosity=verbosity)
    yield
    with django_db_blocker.unblock():
        databases.drop_template(connection)
        connection.creation.destroy_test_db(original, verbosity=verbosity)


def _user(username, *roles, staff=False):
    # Imported here so that pure-computation tests run without Django (-p no:django).
    from django.contrib.auth.models import Group, User

    user = User.objects.create_user(username, password=PASSWORD, is_staff=staff,
                                    is_superuser=staff)
    user.groups.add(*[Group.objects.get_or_create(name=role)[0] for role in roles])
    return user


@pytest.fixture
def staff(db):
    return _user("staff", staff=True)


@pytest.fixture
def author(db):
    return _user("author", STUDY_AUTHOR)


@pytest.fixture
def researcher(db):
    return _user("researcher", RESEARCHER)


@pytest.fixture
def annotator(db):
    return _user("annotator", ANNOTATOR)


@pytest.fixture
def other_annotator(db):
    return _user("annotator2", ANNOTATOR)


@pytest.fixture
def outsider(db):
    return _user("outsider")


@pytest.fixture
def tiny_bundle_dir(tmp_path):
    return write_tiny(tmp_path / "tiny")


@pytest.fixture
def tiny_benchmark(db, tiny_bundle_dir):
    """The tiny benchmark with its hidden phase over, so runs score d3 too (the worked values
    of tests/support/submissions.py); tests of the hidden phase import their own."""
    from django.utils import timezone

    from evaluation.services.benchmarks import benchmark_import

    benchmark = benchmark_import(path=tiny_bundle_dir)
    benchmark.hidden_released_at = timezone.now()
    benchmark.save(update_fields=["hidden_released_at"])
    return benchmark


@pytest.fixture(scope="session", autouse=True)
def _flush_only_filled_tables(request):
    """Transactional tests end by emptying the tables they filled rather than by truncating
    every table (tests/support/flush.py): the same empty database, about 2 s sooner each."""
    if request.config.pluginmanager.hasplugin("django"):
        from tests.support.flush import install

        install()
    yield


@pytest.fixture(autouse=True)
def _fresh_login_throttle():
    """Failed-login counts (core/throttle.py) are per test, and so is the memory they fall
    back to while Redis is down."""
    from django.core.cache import caches

    caches["throttle"].clear()
    caches["throttle-fallback"].clear()
    yield


@pytest.fixture(autouse=True)
def _fresh_item_cache():
    """Web processes keep item pages in the "items" cache (annotation.selectors); primary keys
    repeat between tests, so each test starts without."""
    yield
    from django.core.cache import caches

    caches["items"].clear()


# --- the URL walks' world (tests/test_url_access.py, tests/test_reads_never_write.py) ------

@pytest.fixture
def personas(db, outsider, annotator, researcher, author, staff):
    return {"anonymous": None, "outsider": outsider, "annotator": annotator,
            "researcher": researcher, "author": author, "staff": staff}


@pytest.fixture
def tiny_study(db, tiny_benchmark, author, annotator):
    """A study on the tiny benchmark: the author owns it, the annotator holds item 1."""
    from annotation.services.handout import assignment_next
    from annotation.services.members import study_member_add
    from annotation.services.studies import StudySpec, study_create

    study = study_create(benchmark=tiny_benchmark, author=author, title="Tiny study",
                         slug="tiny-study", spec=StudySpec(forms=("citation",)))
    study.invite_token = "tiny-invite"
    study.save(update_fields=["invite_token"])
    assignment_next(member=study_member_add(study=study, user=annotator))
    return study


@pytest.fixture
def leaderboard_world(db, tiny_benchmark, researcher, settings, tmp_path):
    from tests.support.leaderboard import make_world

    settings.MEDIA_ROOT = tmp_path / "media"
    return make_world(benchmark=tiny_benchmark, owner=researcher, folder=tmp_path)


# The slowest files first: pytest-xdist (`make test`, --dist loadfile --no-loadscope-reorder)
# hands files out in collection order, so a slow file collected last would run alone at the end
# while the other process has nothing left to do. (Without --no-loadscope-reorder xdist hands
# out the files with the most tests first, and these one-test files last.) Durations: pytest's
# --durations report.
SLOW_FIRST = (  # every file over about 15 s, the longest first (2 cores, 3 processes)
    "tests/browser/test_report_pages.py",
    "tests/browser/test_accessibility.py",
    "tests/evaluation/test_run_workers.py",
    "tests/test_on_sqlite.py",  # the arena's and the hand-out's tests again on SQLite
    "tests/leaderboard/test_calibration.py",
    "tests/leaderboard/test_api_schemathesis.py",
    "tests/leaderboard/test_arena_pages.py",
    "tests/annotation/test_active_handout.py",
    "tests/browser/test_annotation_forms.py",
    "tests/evaluation/stats/test_category_test.py",
    "tests/test_reads_never_write.py",
    "tests/evaluation/test_demo_generator.py",
    "tests/evaluation/arena/test_adaptive_pairing.py",
    "tests/evaluation/test_baselines.py",
    "tests/annotation/test_import_public.py",
    "tests/evaluation/llm/test_declared_formats_random_model.py",
    "tests/annotation/test_bench_annotation.py",
    "tests/evaluation/test_migrations.py",
    "tests/test_settings.py",
    "tests/browser/test_demo_trust_row.py",
    "tests/browser/test_log_upload_flow.py",
    "tests/browser/test_leaderboard.py",
    "tests/test_url_access.py",
)


def pytest_collection_modifyitems(config, items):
    rank = {path: k for k, path in enumerate(SLOW_FIRST)}
    items.sort(key=lambda item: rank.get(item.nodeid.split("::", 1)[0], len(rank)))
