"""Moving System and Submission from `leaderboard` to `evaluation` (evaluation 0005/0006,
leaderboard 0004, annotation 0003) keeps every row and every foreign key: a database that holds
data of the previous schema is migrated forward and checked."""

import uuid

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

BEFORE = [("evaluation", "0004_llm_cache_and_debate"),
          ("leaderboard", "0003_baseline_submissions_public"),
          ("annotation", "0002_imported_labels")]


def _migrate(targets):
    executor = MigrationExecutor(connection)
    executor.loader.build_graph()
    executor.migrate(targets)
    return MigrationExecutor(connection).loader.project_state(targets).apps


@pytest.mark.django_db(transaction=True)
def test_the_move_keeps_rows_foreign_keys_and_content_types():
    executor = MigrationExecutor(connection)
    latest = executor.loader.graph.leaf_nodes()
    old = _migrate(BEFORE)
    try:
        User = old.get_model("auth", "User")
        owner = User.objects.create(username="owner")
        benchmark = old.get_model("evaluation", "Benchmark").objects.create(
            slug="tiny", name="Tiny", version="1.0")
        System = old.get_model("leaderboard", "System")
        Submission = old.get_model("leaderboard", "Submission")
        system = System.objects.create(slug="echo", name="Echo", owner=owner)
        submission = Submission.objects.create(uuid=uuid.uuid4(), system=system,
                                               benchmark=benchmark, protocol="turn",
                                               file="submissions/echo.jsonl", created_by=owner)
        job = old.get_model("evaluation", "Job").objects.create(kind="evaluation")
        run = old.get_model("evaluation", "Run").objects.create(
            submission=submission, job=job, evaluator="trace", evaluator_version="1.0.0")
        study = old.get_model("annotation", "Study").objects.create(
            slug="s", title="S", benchmark=benchmark, author=owner, invite_token="t")
        dialogue = old.get_model("evaluation", "Dialogue").objects.create(
            benchmark=benchmark, external_id="d1", split="test")
        item = old.get_model("annotation", "StudyItem").objects.create(
            study=study, dialogue=dialogue, position=1, mode="response", turn_index=1,
            response_text="An answer.", system=system,
            submission=submission)
        ContentType = old.get_model("contenttypes", "ContentType")
        ContentType.objects.filter(app_label="evaluation", model__in=["system", "submission"]
                                   ).delete()  # as in a database of the previous schema
        old_types = {model: ContentType.objects.get_or_create(app_label="leaderboard",
                                                              model=model)[0].pk
                     for model in ("system", "submission")}
    finally:
        new = _migrate(latest)

    System = new.get_model("evaluation", "System")
    Submission = new.get_model("evaluation", "Submission")
    assert System.objects.count() == 1 and Submission.objects.count() == 1
    moved = Submission.objects.get(pk=submission.pk)
    assert moved.system_id == system.pk and moved.benchmark_id == benchmark.pk
    assert moved.created_by_id == owner.pk and str(moved.uuid) == str(submission.uuid)
    assert System.objects.get(pk=system.pk).owner_id == owner.pk
    assert new.get_model("evaluation", "Run").objects.get(pk=run.pk).submission_id == moved.pk
    StudyItem = new.get_model("annotation", "StudyItem")
    assert StudyItem.objects.filter(pk=item.pk, system_id=system.pk,
                                    submission_id=moved.pk).exists()
    # the foreign keys point at evaluation's tables in the database, not only in the state
    with connection.cursor() as cursor:
        for table, column in (("evaluation_run", "submission_id"),
                              ("annotation_studyitem", "submission_id"),
                              ("annotation_studyitem", "system_id")):
            constraints = connection.introspection.get_constraints(cursor, table)
            targets = {c["foreign_key"][0] for c in constraints.values()
                       if c["foreign_key"] and c["columns"] == [column]}
            assert targets and all(t.startswith("evaluation_") for t in targets), (table, targets)
    # the content types move too, keeping their ids (permissions and admin log entries)
    ContentType = new.get_model("contenttypes", "ContentType")
    for model, pk in old_types.items():
        assert ContentType.objects.get(pk=pk).app_label == "evaluation"
        assert not ContentType.objects.filter(app_label="leaderboard", model=model).exists()


@pytest.mark.django_db(transaction=True)
def test_summaries_stored_before_methods_were_recorded_read_as_an_older_method():
    # evaluation 0020 (docs/statistics.md, "Stored intervals and their method"): existing rows
    # get no method and version 0, so recompute_intervals and the pages treat them as older;
    # rows stored afterwards get today's method and version.
    from evaluation.lib.stats.methods import INTERVAL_VERSIONS

    executor = MigrationExecutor(connection)
    latest = executor.loader.graph.leaf_nodes()
    old = _migrate([("evaluation", "0019_job_submission_validation")])
    try:
        User = old.get_model("auth", "User")
        owner = User.objects.create(username="owner")
        benchmark = old.get_model("evaluation", "Benchmark").objects.create(
            slug="tiny", name="Tiny", version="1.0")
        system = old.get_model("evaluation", "System").objects.create(
            slug="echo", name="Echo", owner=owner)
        submission = old.get_model("evaluation", "Submission").objects.create(
            uuid=uuid.uuid4(), system=system, benchmark=benchmark, protocol="turn",
            file="submissions/echo.jsonl", created_by=owner)
        job = old.get_model("evaluation", "Job").objects.create(kind="evaluation")
        run = old.get_model("evaluation", "Run").objects.create(
            submission=submission, job=job, evaluator="trace", evaluator_version="1.0.0")
        old.get_model("evaluation", "MetricSummary").objects.create(
            run=run, metric="recall@1", axis="recommendation", direction="higher", value=0.5,
            ci_low=0.4, ci_high=0.6, n=10)
    finally:
        new = _migrate(latest)
    from evaluation.models import MetricSummary

    stored = MetricSummary.objects.get(run_id=run.pk)
    assert (stored.ci_method, stored.ci_version, stored.ci_is_current) == ("", 0, False)
    fresh = MetricSummary.objects.create(run_id=run.pk, metric="mrr", axis="recommendation",
                                         direction="higher")
    assert (fresh.ci_method, fresh.ci_version) == (
        "cluster_t_mean", INTERVAL_VERSIONS["cluster_t_mean"]) and fresh.ci_is_current
    assert new.get_model("evaluation", "MetricSummary").objects.count() == 2
