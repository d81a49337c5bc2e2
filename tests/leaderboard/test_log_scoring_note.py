"""A `log` upload says plainly what will score it and when (issue 34.2): the upload form lists,
per benchmark, the evaluators the operator runs on new log files; the submission's status card
says whether one started by itself (and its run), waits for staff, or that nothing will until
someone starts one, and who can."""

import pytest
from django.urls import reverse

from evaluation.models import AutoEvaluation
from evaluation.services.auto_evaluation import auto_evaluator_save
from tests.evaluation.llm_fixtures import llm_settings  # noqa: F401
from tests.leaderboard.test_auto_evaluators import (  # noqa: F401
    PRICED,
    client_for,
    mine,
    server,
    upload_logs,
)

pytestmark = pytest.mark.django_db


def _status(client, submission) -> str:
    return client.get(reverse("leaderboard:submission_status",
                              args=[submission.uuid])).content.decode()


def test_without_an_automatic_evaluator_the_page_says_nothing_will_and_who_can(
        log_benchmark, researcher, author, mine,  # noqa: F811
        django_capture_on_commit_callbacks):
    client = client_for(researcher)
    form = client.get(reverse("leaderboard:submission_create", args=[mine.slug])).content
    assert ("<li>Tiny Tourism: nothing; staff or a study author starts an LLM evaluator from "
            "the submission's page</li>") in form.decode()
    submission = upload_logs(client, mine, django_capture_on_commit_callbacks)
    body = _status(client, submission)
    assert ("Nothing scores it by itself: the operator runs no LLM evaluator on new "
            "<code>log</code> uploads of Tiny Tourism.") in body
    # the owner (a researcher) may start one on their own submission, estimate first
    assert "Start one now:" in body
    assert 'id="scoring-started"' not in body and 'id="scoring-waiting"' not in body
    # a study author who may see it is offered the evaluator page too
    submission.is_public = True
    submission.save(update_fields=["is_public"])
    body = _status(client_for(author), submission)
    assert "Start one now:" in body and "you see its estimate before anything is spent" in body


@pytest.mark.django_db(transaction=True)  # the cache writes from the gateway's threads
def test_an_automatic_evaluator_starts_by_itself_and_the_page_says_so(
        log_benchmark, staff, researcher, mine, server,  # noqa: F811
        django_capture_on_commit_callbacks):
    auto_evaluator_save(benchmark=log_benchmark, evaluator="pepper_judge", model=PRICED,
                        user=staff, max_cost_per_submission=1.0)
    client = client_for(researcher)
    form = client.get(reverse("leaderboard:submission_create", args=[mine.slug])).content
    assert (f"<li>Tiny Tourism: pepper_judge ({PRICED}), started by the operator's "
            "automatic evaluators") in form.decode()
    submission = upload_logs(client, mine, django_capture_on_commit_callbacks)
    run = AutoEvaluation.objects.get().run
    body = _status(client, submission)
    assert ("Started by itself when the file arrived (the leaderboard's automatic "
            f'evaluators): pepper_judge (<a href="/runs/{run.pk}/">run #{run.pk}</a>, '
            "succeeded)") in body
    assert 'id="scoring-none"' not in body


def test_an_automatic_run_over_budget_says_it_waits_for_an_operator(
        log_benchmark, staff, researcher, mine, server,  # noqa: F811
        django_capture_on_commit_callbacks):
    auto_evaluator_save(benchmark=log_benchmark, evaluator="pepper_judge", model=PRICED,
                        user=staff, max_cost_per_submission=0.000001)
    client = client_for(researcher)
    submission = upload_logs(client, mine, django_capture_on_commit_callbacks)
    body = _status(client, submission)
    assert "Waiting for an operator: pepper_judge (the estimated $" in body
    assert "It starts as soon as staff approve it" in body
    assert 'id="scoring-none"' not in body
