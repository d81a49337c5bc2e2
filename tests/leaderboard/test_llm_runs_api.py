"""`POST /api/submissions/<uuid>/llm-runs/` (issue 34.2): a researcher runs an LLM evaluator on
their own submission with one of the operator's model profiles, sees the estimate first, and
the start counts against their budget; others get a 403 that says who may."""

import pytest
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from evaluation.models import Job, LLMSpend, Run, Submission
from evaluation.services.llm_models import model_options
from evaluation.services.llm_runs import llm_run_estimate
from tests.conftest import _user
from tests.evaluation.llm_fixtures import MODEL, llm_settings, log_submission  # noqa: F401
from tests.support.llm_server import scripted_llm_server

pytestmark = pytest.mark.django_db
PEPPER_ANSWER = ("The system asked about my needs.\n<proactiveness>4</proactiveness>\n"
                 "<coherence>3</coherence>\n<personalization>5</personalization>")


def _api(user) -> APIClient:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {Token.objects.get_or_create(user=user)[0].key}")
    return client


def _url(submission) -> str:
    return f"/api/submissions/{submission.uuid}/llm-runs/"


@pytest.mark.django_db(transaction=True)  # the cache writes from the gateway's threads
def test_the_owner_sees_the_estimate_first_then_starts_the_run(
        log_submission, researcher, llm_settings, django_capture_on_commit_callbacks):  # noqa: F811
    llm_settings.LLM_MODEL = MODEL
    client = _api(researcher)
    body = {"evaluator": "pepper_judge", "profile": "default", "limit": 1}
    estimate = client.post(_url(log_submission), body, format="json")
    assert estimate.status_code == 200, estimate.content
    expected = llm_run_estimate(submission=log_submission, evaluator="pepper_judge",
                                model=model_options(model=MODEL), limit=1)
    data = estimate.json()
    assert data["estimate"] == expected.to_dict() and data["problem"] is None
    assert data["allowance"]["tokens_limit"] == llm_settings.LLM_DAILY_BUDGET_TOKENS
    assert not Run.objects.exists() and not Job.objects.exists()  # nothing stored
    with scripted_llm_server(lambda request: PEPPER_ANSWER) as server:
        llm_settings.LLM_API_BASE = server.api_base
        with django_capture_on_commit_callbacks(execute=True):  # eager Celery runs it here
            started = client.post(_url(log_submission), {**body, "confirm": True,
                                                         "api_base": "http://127.0.0.1:9/v1"},
                                  format="json")
    assert started.status_code == 202, started.content
    run = Run.objects.get()
    assert started.json()["run"] == run.pk and started.json()["url"].endswith(
        f"/api/runs/{run.pk}/")
    assert run.job.created_by == researcher and run.config["model"]["profile"] == "default"
    run.job.refresh_from_db()
    assert run.job.status == Job.Status.SUCCEEDED, run.job.error
    assert LLMSpend.objects.filter(job=run.job).exists()  # counted against their allowance


def test_bad_choices_and_budgets_store_nothing(log_submission, researcher,  # noqa: F811
                                               llm_settings):  # noqa: F811
    llm_settings.LLM_MODEL = MODEL
    client = _api(researcher)
    bad = client.post(_url(log_submission), {"evaluator": "pepper_judge",
                                             "profile": "SECRET_KEY"}, format="json")
    assert bad.status_code == 400
    assert "is not a model profile the operator offers" in bad.json()["profile"][0]
    wrong = client.post(_url(log_submission), {"evaluator": "trace_judge",
                                               "profile": "default"}, format="json")
    assert wrong.status_code == 400 and "evaluator" in wrong.json()  # reads turn files
    llm_settings.LLM_DAILY_BUDGET_TOKENS = 10
    preview = client.post(_url(log_submission), {"evaluator": "pepper_judge",
                                                 "profile": "default"}, format="json")
    assert preview.status_code == 200 and preview.json()["problem"]
    over = client.post(_url(log_submission), {"evaluator": "pepper_judge", "profile": "default",
                                              "confirm": True}, format="json")
    assert over.status_code == 429 and "tokens" in over.json()["detail"]
    assert not Run.objects.exists() and not Job.objects.exists()


def test_only_staff_authors_and_the_owner_may(log_submission, llm_settings):  # noqa: F811
    llm_settings.LLM_MODEL = MODEL
    body = {"evaluator": "pepper_judge", "profile": "default"}
    other = _user("other-researcher", "researcher")
    assert _api(other).post(_url(log_submission), body, format="json").status_code == 404
    Submission.objects.filter(pk=log_submission.pk).update(is_public=True)
    refused = _api(other).post(_url(log_submission), body, format="json")
    assert refused.status_code == 403
    assert "researchers may start one on their own systems" in refused.json()["detail"]
    assert _api(_user("an-author", "study_author")).post(
        _url(log_submission), body, format="json").status_code == 200
    assert APIClient().post(_url(log_submission), body, format="json").status_code == 401
