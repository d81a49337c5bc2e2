"""Tiny models are labelled, not published (docs/llm.md, "Smoke tests"): a run through a profile
that is not evaluation-grade is stored as a smoke test, says why on its page, and never reaches
a leaderboard, a benchmark's board counts or a metric leaderboard (hence the trust column); the
same run through an evaluation-grade profile does."""

import pytest
from django.urls import reverse

from annotation.report_selectors import latest_runs
from evaluation.services.llm_runs import llm_run_create
from leaderboard.selectors.boards import benchmark_leaderboard_counts
from leaderboard.selectors.runs import board_runs
from tests.evaluation.llm_fixtures import offer_profile, server_config, succeeded

pytestmark = pytest.mark.django_db(transaction=True)

PEPPER = ("Asks good questions.\n<proactiveness>4</proactiveness><coherence>3</coherence>"
          "<personalization>5</personalization>")


def _run(server, submission, profile: str):
    return succeeded(llm_run_create(submission=submission, evaluator="pepper_judge",
                                    model={**server_config(server), "profile": profile},
                                    enqueue=False))


def test_a_smoke_test_is_stored_labelled_and_kept_off_every_published_surface(
        llm_server, log_submission, settings, client, researcher):
    server = llm_server(lambda request: PEPPER)
    offer_profile(settings, "laptop", server.api_base, backend="concord-local")
    offer_profile(settings, "tiny", server.api_base, model="openai/tiny", parameters=135_000_000)
    offer_profile(settings, "big", server.api_base, model="openai/big", parameters=8_000_000_000)
    log_submission.is_public = True
    log_submission.save(update_fields=["is_public"])
    benchmark = log_submission.benchmark

    smoke = _run(server, log_submission, "laptop")
    assert not smoke.evaluation_grade
    assert "built-in local server" in smoke.smoke_test_reason
    # answered and scored like any run: only where its numbers may go differs
    assert smoke.summaries.get(metric="pepper.proactiveness").value == 4
    assert board_runs(benchmark=benchmark, protocol="log") == []
    assert benchmark_leaderboard_counts([benchmark]).get((benchmark.pk, "log"), 0) == 0
    assert latest_runs(benchmark=benchmark, include_private=True) == []

    client.force_login(researcher)
    page = client.get(reverse("run_detail", args=[smoke.pk])).content.decode()
    assert 'id="smoke-test"' in page and "A smoke test, never published." in page
    assert "built-in local server" in page

    tiny = _run(server, log_submission, "tiny")
    assert not tiny.evaluation_grade and "135,000,000 parameters" in tiny.smoke_test_reason
    assert board_runs(benchmark=benchmark, protocol="log") == []

    graded = _run(server, log_submission, "big")
    assert graded.evaluation_grade and graded.smoke_test_reason == ""
    assert [run.run_id for run in board_runs(benchmark=benchmark, protocol="log")] == [
        graded.pk]
    assert benchmark_leaderboard_counts([benchmark])[(benchmark.pk, "log")] == 1
    assert [run.pk for run in latest_runs(benchmark=benchmark, include_private=True)] == [
        graded.pk]
    page = client.get(reverse("run_detail", args=[graded.pk])).content.decode()
    assert 'id="smoke-test"' not in page


def test_the_operator_can_declare_a_built_in_server_model_evaluation_grade(
        llm_server, log_submission, settings):
    server = llm_server(lambda request: PEPPER)
    offer_profile(settings, "workstation", server.api_base, backend="concord-local",
                  evaluation_grade=True)

    run = _run(server, log_submission, "workstation")

    assert run.evaluation_grade
