"""Evaluation runs: hand-computed values end to end, upserts, NLI availability, job states,
unit-level exports and access to runs."""

from datetime import timedelta

import pytest
from django.utils import timezone

from evaluation.access import can_see_hidden_units, get_run_for_user, runs_for_user
from evaluation.lib.metrics.suite import SUITE_VERSION
from evaluation.models import Job, MetricSummary, Run, UnitScore
from evaluation.selectors.benchmarks import run_results, run_unit_rows
from evaluation.services.jobs import job_begin, jobs_fail_stale
from evaluation.services.runs import (
    run_chunk_process,
    run_create,
    run_finalize,
    run_plan,
    run_process,
)
from evaluation.services.submissions import submission_create, system_create
from evaluation.tasks import evaluate_run_job
from tests.evaluation.metrics.tiny_nli import build_tiny_nli
from tests.support.submissions import EXPECTED, write_lines

pytestmark = pytest.mark.django_db
ENTAILMENT = ("entailment", "entailment_t0.3", "entailment_t0.4", "entailment_t0.6",
              "entailment_t0.7", "cgsent")


@pytest.fixture(autouse=True)
def media_root(settings, tmp_path):
    settings.MEDIA_ROOT = tmp_path / "media"
    settings.NLI_MODEL_PATH = ""


@pytest.fixture
def submission(tiny_benchmark, researcher, tmp_path):
    system = system_create(name="Tiny System", owner=researcher)
    return submission_create(system=system, benchmark=tiny_benchmark,
                             path_or_file=write_lines(tmp_path / "tiny.jsonl"), user=researcher)


def evaluated(submission, **options) -> Run:
    run = run_create(submission=submission, enqueue=False, **options)
    run_process(job_id=run.job_id)
    run.refresh_from_db()
    assert run.job.status == Job.Status.SUCCEEDED, run.job.error
    return run


def summary(run, metric) -> MetricSummary:
    return run.summaries.get(metric=metric)


def test_hand_computed_recall_mrr_gs_and_tsr_on_the_tiny_bundle(submission):
    run = evaluated(submission)
    for metric, value in EXPECTED.items():
        assert summary(run, metric).value == pytest.approx(value), metric
    recall = summary(run, "recall@1")
    assert recall.n == 4 and recall.direction == "higher" and recall.axis == "Accuracy"
    assert 0 <= recall.ci_low <= recall.value <= recall.ci_high <= 1
    assert recall.std == pytest.approx(0.5)  # sample std of 0, 1, 1, 1
    turn = run.unit_scores.get(metric="gs", unit_id="d1#3")
    assert (turn.value, turn.unit_type, turn.dialogue_id) == (0.5, "turn", "d1")
    assert summary(run, "t2r").direction == "lower"
    assert run.config["splits"] == ["hidden", "test", "train"]


def test_run_records_evaluator_version_and_config_hash(submission):
    run = evaluated(submission, suite_options={"text_metrics": False})
    assert (run.evaluator, run.evaluator_version) == ("trace", SUITE_VERSION)
    assert len(run.config_hash) == 64
    assert "bootstrap" not in run.config  # every interval is a jackknife-t: no draws to set
    assert not run.summaries.filter(metric="bleu4").exists()
    other = evaluated(submission)
    assert other.config_hash != run.config_hash
    assert evaluated(submission).config_hash == other.config_hash


def test_running_a_run_twice_keeps_one_row_per_metric_and_unit(submission):
    run = evaluated(submission)
    counts = (run.unit_scores.count(), run.summaries.count())
    values = dict(run.summaries.values_list("metric", "value"))
    # Every chunk redone (as after its worker was killed) and the final task run again…
    Job.objects.filter(pk=run.job_id).update(status=Job.Status.RUNNING)
    run.chunks.update(finished_at=None)
    for chunk in run.chunks.all():
        run_chunk_process(run_id=run.pk, index=chunk.index, finalize=False)
    run_finalize(run_id=run.pk)
    run.job.refresh_from_db()
    assert run.job.status == Job.Status.SUCCEEDED
    Job.objects.filter(pk=run.job_id).update(status=Job.Status.QUEUED)
    evaluate_run_job(run.job_id)  # …and a re-delivered first task too
    assert (run.unit_scores.count(), run.summaries.count()) == counts
    assert dict(run.summaries.values_list("metric", "value")) == values
    assert UnitScore.objects.count() == counts[0]


def test_work_in_progress_is_not_stopped_by_its_own_stale_heartbeat(submission):
    """An in-process run whose long step beat no heartbeat (SQLite has no heartbeat thread) or a
    chunk that waited behind others in a busy queue reads as failed on pages once its heartbeat
    is stale; the work itself must go on and finish, not leave the run running with no values
    (found by load_demo under load: 4 of 7 baselines stuck)."""
    run = run_create(submission=submission, enqueue=False)
    job_begin(run.job_id)
    chunks = run_plan(run=run)
    Job.objects.filter(pk=run.job_id).update(heartbeat_at=timezone.now() - timedelta(hours=1))
    assert Job.objects.get(pk=run.job_id).status == Job.Status.FAILED  # what a page shows
    for chunk in chunks:
        run_chunk_process(run_id=run.pk, index=chunk.index, finalize=False)
    run_finalize(run_id=run.pk)
    run.refresh_from_db()
    assert run.job.status == Job.Status.SUCCEEDED, run.job.error
    assert summary(run, "recall@1").value == pytest.approx(EXPECTED["recall@1"])


def test_a_stored_failure_still_stops_the_remaining_chunks(submission):
    run = run_create(submission=submission, enqueue=False)
    job_begin(run.job_id)
    chunks = run_plan(run=run)
    jobs_fail_stale(now=timezone.now() + timedelta(hours=1))  # the sweep wrote it down
    for chunk in chunks:
        run_chunk_process(run_id=run.pk, index=chunk.index, finalize=False)
    run_finalize(run_id=run.pk)
    assert not run.unit_scores.exists() and not run.summaries.exists()
    assert Job.objects.filter(pk=run.job_id).values_list("status", flat=True).get() == "failed"


def test_a_duplicate_delivery_of_a_finished_run_does_nothing(submission):
    run = evaluated(submission)
    finished = run.job.finished_at
    evaluate_run_job(run.job_id)
    run.job.refresh_from_db()
    assert run.job.finished_at == finished and run.job.attempts == 1


def test_without_an_nli_model_entailment_is_unavailable_and_the_rest_runs(submission):
    run = evaluated(submission)
    assert set(run.unavailable) == set(ENTAILMENT)
    assert "NLI_MODEL_PATH" in run.unavailable["entailment"]
    entailment = summary(run, "entailment")
    assert entailment.value is None and "NLI_MODEL_PATH" in entailment.undefined_reason
    assert summary(run, "cgs").value is not None
    assert not run.unit_scores.filter(metric__startswith="entailment").exists()


def test_a_broken_nli_path_is_reported_as_the_reason(submission, settings, tmp_path):
    settings.NLI_MODEL_PATH = str(tmp_path / "missing-model")
    run = evaluated(submission)
    assert "not found" in run.unavailable["entailment"]


def test_a_local_nli_model_gives_entailment_grounding(submission, settings, tmp_path):
    model_dir = build_tiny_nli(tmp_path / "nli", {0: "entailment", 1: "neutral",
                                                  2: "contradiction"}, entailment_bias=20.0)
    settings.NLI_MODEL_PATH = str(model_dir)
    run = evaluated(submission)
    assert run.unavailable == {}
    assert run.config["nli"] == {"enabled": True, "model_path": str(model_dir)}
    # The bias makes every claim entailed; the turn without citations has nothing to entail it.
    entailment = summary(run, "entailment")
    assert entailment.n == 4 and 0 < entailment.value <= 1
    assert run.unit_scores.get(metric="entailment", unit_id="d1#1").value == 1.0
    assert run.unit_scores.get(metric="entailment", unit_id="d2#1").value == 0.0
    assert summary(run, "cgsent").value is not None


def test_run_create_enqueues_the_task_on_commit(submission, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True) as callbacks:
        run = run_create(submission=submission)
    # The run is enqueued on commit; its first task queues its one chunk, the chunk the final
    # task; once the run succeeds, the leaderboard's ranks are refreshed.
    assert [c.__qualname__.split(".")[0] for c in callbacks] == [
        "task_enqueue", "task_enqueue", "task_enqueue", "results_changed_notify",
        "task_enqueue"]
    run.job.refresh_from_db()
    assert run.job.status == Job.Status.SUCCEEDED and run.job.kind == Job.Kind.EVALUATION
    assert run.job.done == run.job.total > 0


def test_a_run_whose_worker_died_is_failed_not_left_running(submission):
    run = run_create(submission=submission, enqueue=False)
    job_begin(run.job_id)
    assert jobs_fail_stale(now=timezone.now() + timedelta(minutes=11)) == 1
    run.job.refresh_from_db()
    assert run.job.status == Job.Status.FAILED and "stopped reporting" in run.job.error
    assert run_process(job_id=run.job_id) is None  # a late redelivery does not revive it


def test_a_run_that_cannot_read_its_file_fails_with_the_reason(submission):
    run = run_create(submission=submission, enqueue=False)
    submission.file.storage.delete(submission.file.name)
    run_process(job_id=run.job_id)
    run.job.refresh_from_db()
    assert run.job.status == Job.Status.FAILED and "FileNotFoundError" in run.job.error


def test_unit_export_hides_hidden_dialogues_unless_asked(submission):
    run = evaluated(submission)
    public = list(run_unit_rows(run=run, include_hidden=False))
    everything = list(run_unit_rows(run=run, include_hidden=True))
    assert {row["unit_id"] for row in everything if row["unit_id"].startswith("d3")}
    assert not {row["unit_id"] for row in public if row["unit_id"].startswith("d3")}
    assert set(public[0]) == {"system", "benchmark", "evaluator", "metric", "unit_type",
                              "unit_id", "value"}
    assert public[0]["evaluator"] == f"trace@{SUITE_VERSION}:{run.config_hash[:12]}"
    assert public[0]["system"] == "tiny-system" and public[0]["benchmark"] == "tiny"


def test_results_list_every_metric_with_ci_n_and_direction(submission):
    results = run_results(run=evaluated(submission))
    row = results["metrics"]["recall@1"]
    assert set(row) == {"axis", "unit", "direction", "value", "ci", "std", "n",
                        "undefined_reason", "ci_current"}
    assert row["ci_current"] is True  # computed by today's interval method
    assert row["unit"] == "turn" and results["metrics"]["tsr"]["unit"] == "dialogue"
    assert results["metrics"]["entailment"]["value"] is None


def test_runs_are_visible_to_staff_and_the_system_owner_until_published(
        submission, researcher, outsider, staff, rf):
    run = evaluated(submission)
    assert get_run_for_user(researcher, run.pk) == run
    assert get_run_for_user(staff, run.pk) == run
    assert not runs_for_user(outsider).exists()
    submission.is_public = True
    submission.save()
    assert runs_for_user(outsider).get() == run
    assert not can_see_hidden_units(researcher, run) and can_see_hidden_units(staff, run)


def test_a_run_redelivered_after_its_worker_died_is_finished_by_the_next_delivery(
        submission, django_capture_on_commit_callbacks):
    run = run_create(submission=submission, enqueue=False)
    job_begin(run.job_id)  # the first worker claimed it, then died without a word
    with django_capture_on_commit_callbacks(execute=True):
        evaluate_run_job(run.job_id)  # the broker re-delivers the unacknowledged task
    run.job.refresh_from_db()
    assert run.job.status == Job.Status.SUCCEEDED and run.job.attempts == 2
    assert summary(run, "recall@1").value == pytest.approx(EXPECTED["recall@1"])


def test_a_run_in_many_chunks_stores_what_a_run_in_one_chunk_stores(submission, settings):
    settings.RUN_CHUNK_TURNS = 10_000
    whole = evaluated(submission)
    settings.RUN_CHUNK_TURNS = 1  # one chunk per dialogue
    chunked = evaluated(submission)
    assert (whole.chunks.count(), chunked.chunks.count()) == (1, 3)
    assert chunked.job.result["chunks"] == 3 and chunked.chunks.filter(values__gt=0).count() == 3
    units = ("metric", "unit_id", "dialogue_id", "value")
    assert sorted(chunked.unit_scores.values_list(*units)) == \
        sorted(whole.unit_scores.values_list(*units))
    fields = ("metric", "undefined_reason", "n", "value", "ci_low", "ci_high", "std")
    rows = {row[0]: row for row in whole.summaries.values_list(*fields)}
    assert len(rows) == chunked.summaries.count() > 50
    for row in chunked.summaries.values_list(*fields):
        assert row[:3] == rows[row[0]][:3]
        numbers = [0.0 if n is None else n for n in row[3:]]
        assert numbers == pytest.approx([0.0 if n is None else n for n in rows[row[0]][3:]],
                                        rel=1e-9, abs=1e-12), row[0]
    # Each chunk read only its own lines of the file.
    ranges = [chunk.line_ranges for chunk in chunked.chunks.order_by("index")]
    assert all(len(r) == 1 for r in ranges) and ranges[0][0][1] <= ranges[1][0][0]


def _grouped(run):
    """The database's own reduction of the run's stored unit values."""
    from django.db.models import Count, F, Sum
    rows = (UnitScore.objects.filter(run=run).exclude(value=None)
            .values_list("metric", "dialogue_id")
            .annotate(total=Sum("value"), n=Count("value"), squares=Sum(F("value") * F("value")))
            .order_by())
    return {(metric, dialogue): (total, n, squares) for metric, dialogue, total, n, squares in rows}


def test_the_chunks_reductions_are_the_databases_reduction_of_the_stored_values(
        submission, settings):
    from evaluation.selectors.run_chunks import run_cluster_sums
    settings.RUN_CHUNK_TURNS = 1  # one chunk per dialogue
    run = evaluated(submission)
    assert all(part is not None for part in run.chunks.values_list("cluster_sums", flat=True))
    merged = run_cluster_sums(run=run)
    grouped = _grouped(run)
    assert {(m, d) for m, (clusters, *_) in merged.items() for d in clusters} == set(grouped)
    for metric, (clusters, totals, counts, squares) in merged.items():
        for dialogue, total, n in zip(clusters, totals, counts, strict=True):
            assert (total, n) == pytest.approx(grouped[metric, dialogue][:2], rel=1e-12)
        assert squares == pytest.approx(
            sum(v[2] for (m, _), v in grouped.items() if m == metric), rel=1e-12)


def test_chunks_without_stored_reductions_give_the_same_summaries(submission, settings):
    """Chunks finished before they stored their reductions: the final task reduces the unit
    values in the database instead, to the same summaries."""
    settings.RUN_CHUNK_TURNS = 1
    run = evaluated(submission)
    fields = ("metric", "n", "value", "ci_low", "ci_high", "std")
    before = sorted(run.summaries.values_list(*fields))
    run.chunks.update(cluster_sums=None)
    run.summaries.all().delete()
    Job.objects.filter(pk=run.job_id).update(status=Job.Status.RUNNING, finished_at=None)
    run_finalize(run_id=run.pk)
    after = sorted(run.summaries.values_list(*fields))
    assert [row[:2] for row in after] == [row[:2] for row in before] and len(after) > 50
    for old, new in zip(before, after, strict=True):
        assert [0.0 if x is None else x for x in new[2:]] == pytest.approx(
            [0.0 if x is None else x for x in old[2:]], rel=1e-9, abs=1e-12), old[0]
