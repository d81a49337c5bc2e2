"""Automatic LLM evaluators on new uploads (issue 20, item 7): staff choose them per benchmark
in the web, with a model and budgets; an upload starts each one whose estimate fits (the run goes
through Celery, eager in tests, to a scripted OpenAI-compatible server on 127.0.0.1), and holds
the others for approval, showing their estimate on the submission's page."""

import json

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from evaluation.models import AutoEvaluation, AutoEvaluator, Benchmark, Job, Run, Submission
from evaluation.services.auto_evaluation import auto_evaluator_save
from evaluation.services.llm_models import model_options
from evaluation.services.llm_runs import llm_run_create, llm_run_estimate
from evaluation.services.submissions import system_create
from tests.conftest import PASSWORD
from tests.evaluation.llm_fixtures import LOGS, llm_settings  # noqa: F401
from tests.support.llm_server import scripted_llm_server
from tests.support.submissions import tiny_lines

pytestmark = pytest.mark.django_db

PRICED = "openai/gpt-4o-mini"  # in litellm's price map; served here by the scripted server
UNPRICED = "openai/scripted-judge"
PEPPER_ANSWER = ("The system asked about my needs.\n<proactiveness>4</proactiveness>\n"
                 "<coherence>3</coherence>\n<personalization>5</personalization>")


@pytest.fixture
def server(llm_settings):  # noqa: F811
    with scripted_llm_server(lambda request: PEPPER_ANSWER) as running:
        llm_settings.LLM_API_BASE = running.api_base
        yield running


def client_for(user) -> Client:
    client = Client(enforce_csrf_checks=True)
    assert client.login(username=user.username, password=PASSWORD)
    return client


def post(client, url, data, **extra):
    client.get(reverse("leaderboard:index"))
    return client.post(url, {**data, "csrfmiddlewaretoken": client.cookies["csrftoken"].value},
                       **extra)


def upload_logs(client, system, django_capture_on_commit_callbacks, protocol="log"):
    """The researcher's browser upload; the queued tasks run (eager Celery) on commit."""
    if protocol == "log":
        content, name = "".join(json.dumps(log) + "\n" for log in LOGS), "logs.jsonl"
    else:
        content, name = "".join(json.dumps(line) + "\n" for line in tiny_lines()), "s.jsonl"
    url = reverse("leaderboard:submission_create", args=[system.slug])
    with django_capture_on_commit_callbacks(execute=True):
        response = post(client, url, {"benchmark": "tiny", "protocol": protocol,
                                      "file": SimpleUploadedFile(name, content.encode())})
    assert response.status_code == 302, response.content.decode()[:2000]
    return Submission.objects.order_by("-pk").first()


@pytest.fixture
def mine(researcher):
    return system_create(name="Mine", owner=researcher)


def test_only_staff_configure_and_decide(log_benchmark, researcher, author, staff):
    url = reverse("leaderboard:auto_evaluators", args=["tiny"])
    assert client_for(researcher).get(url).status_code == 403
    assert client_for(author).get(url).status_code == 403
    assert post(client_for(author), url, {"evaluator": "pepper_judge",
                                          "model": PRICED}).status_code == 403
    assert Client().get(url).status_code == 302  # log in first
    assert client_for(staff).get(url).status_code == 200
    assert client_for(staff).get(reverse("leaderboard:auto_evaluators",
                                         args=["nope"])).status_code == 404
    assert not AutoEvaluator.objects.exists()
    detail = client_for(staff).get(reverse("benchmark_detail", args=["tiny"])).content
    assert b"auto-evaluators-link" in detail
    assert b"auto-evaluators-link" not in client_for(author).get(
        reverse("benchmark_detail", args=["tiny"])).content


def test_staff_configure_an_evaluator_and_bad_choices_store_nothing(log_benchmark, staff,
                                                                    llm_settings):  # noqa: F811
    url = reverse("leaderboard:auto_evaluators", args=["tiny"])
    client = client_for(staff)
    page = client.get(url).content.decode()
    assert "New <code>turn</code> submissions" in page and "New <code>log</code>" in page
    assert 'value="trace_judge"' in page and 'value="face"' in page
    for data, message in [
        ({"evaluator": "pepper_judge", "model": "<script>x</script>"}, "A model name is"),
        ({"evaluator": "pepper_judge", "model": PRICED, "instructions": "relevance-v1"},
         "for FACE only"),
        ({"evaluator": "face", "model": PRICED, "instructions": "relevance-v9"},
         "no FACE instruction version"),
        ({"evaluator": "core", "model": PRICED, "max_cost_per_day": "-1"},
         "greater than or equal to 0"),
    ]:
        response = post(client, url, data)
        assert response.status_code == 400 and message in response.content.decode(), message
        assert "<script>x" not in response.content.decode()
    assert not AutoEvaluator.objects.exists()
    response = post(client, url, {"evaluator": "pepper_judge", "model": PRICED,
                                  "max_cost_per_submission": "0.5", "enabled": "on"})
    assert response.status_code == 302
    config = AutoEvaluator.objects.get()
    assert (config.evaluator, config.model, config.max_cost_per_submission,
            config.max_cost_per_day, config.enabled, config.updated_by) == (
        "pepper_judge", PRICED, 0.5, None, True, staff)
    page = client.get(url).content.decode()
    assert 'id="auto-pepper_judge"' in page and "$0.5000" in page
    # saving the same evaluator again replaces its settings
    post(client, url, {"evaluator": "pepper_judge", "model": UNPRICED})
    config.refresh_from_db()
    assert (AutoEvaluator.objects.count(), config.model, config.max_cost_per_submission,
            config.enabled) == (1, UNPRICED, None, False)
    # a turn-only benchmark takes no log evaluator
    Benchmark.objects.filter(pk=log_benchmark.pk).update(protocols=["turn"])
    log_benchmark.refresh_from_db()
    with pytest.raises(ValueError, match="does not take"):
        auto_evaluator_save(benchmark=log_benchmark, evaluator="core", model=PRICED, user=staff)
    remove = reverse("leaderboard:auto_evaluator_remove", args=["tiny", config.pk])
    assert post(client, remove, {}).status_code == 302 and not AutoEvaluator.objects.exists()


@pytest.mark.django_db(transaction=True)  # the cache writes from the gateway's threads
def test_an_upload_within_budget_starts_the_run_through_celery(
        log_benchmark, staff, researcher, mine, server, django_capture_on_commit_callbacks):
    auto_evaluator_save(benchmark=log_benchmark, evaluator="pepper_judge", model=PRICED,
                        user=staff, max_cost_per_submission=1.0, max_cost_per_day=5.0)
    auto_evaluator_save(benchmark=log_benchmark, evaluator="trace_judge", model=PRICED,
                        user=staff)  # reads turn files: not started on a log upload
    submission = upload_logs(client_for(researcher), mine, django_capture_on_commit_callbacks)
    evaluation = AutoEvaluation.objects.get()
    expected = llm_run_estimate(submission=submission, evaluator="pepper_judge",
                                model=model_options(model=PRICED))
    assert evaluation.status == "started" and evaluation.reason == ""
    assert evaluation.estimate == expected.to_dict()
    assert evaluation.cost_usd == pytest.approx(expected.cost_usd) and expected.cost_usd > 0
    run = evaluation.run
    run.job.refresh_from_db()
    assert run.evaluator == "pepper_judge" and run.submission == submission
    assert run.job.status == Job.Status.SUCCEEDED, run.job.error  # the task ran on commit
    assert run.job.created_by == researcher  # the uploader follows it
    assert run.config["model"]["profile"] == "default"  # at CONCORD_LLM_API_BASE: the server
    assert "api_base" not in run.config["model"] and "api_key_env" not in run.config["model"]
    # one PEPPER score per log (the answers may come from the gateway's shared cache, whose
    # rows other tests' worker threads committed)
    assert run.usage["units"] == 2 and run.unit_scores.filter(value__isnull=False).exists()
    page = client_for(researcher).get(reverse("leaderboard:submission_detail",
                                              args=[submission.uuid])).content.decode()
    assert 'id="auto-evaluation-' in page and f"run #{run.pk}" in page
    assert "approve-button" not in page


@pytest.mark.django_db(transaction=True)  # the cache writes from the gateway's threads
def test_an_estimate_over_the_budget_waits_for_staff_approval(
        log_benchmark, staff, researcher, mine, server, django_capture_on_commit_callbacks):
    auto_evaluator_save(benchmark=log_benchmark, evaluator="pepper_judge", model=PRICED,
                        user=staff, max_cost_per_submission=0.000001)
    submission = upload_logs(client_for(researcher), mine, django_capture_on_commit_callbacks)
    evaluation = AutoEvaluation.objects.get()
    assert evaluation.status == "waiting" and evaluation.run is None
    assert not Run.objects.exists() and server.request_count == 0
    assert evaluation.reason == (f"the estimated ${evaluation.cost_usd:.4f} is over the budget "
                                 "of $0.0000 per submission")
    detail = reverse("leaderboard:submission_detail", args=[submission.uuid])
    owner_page = client_for(researcher).get(detail).content.decode()
    assert 'data-status="waiting"' in owner_page and "over the budget" in owner_page
    assert f"{evaluation.estimate['total_tokens']}" in owner_page
    assert "approve-button" not in owner_page
    approve = reverse("leaderboard:auto_evaluation_approve", args=[evaluation.pk])
    assert post(client_for(researcher), approve, {}).status_code == 404
    staff_client = client_for(staff)
    assert "approve-button" in staff_client.get(detail).content.decode()
    operator = staff_client.get(reverse("leaderboard:auto_evaluators", args=["tiny"]))
    assert f'id="auto-evaluation-{evaluation.pk}"' in operator.content.decode()
    with django_capture_on_commit_callbacks(execute=True):
        response = post(staff_client, approve, {"next": "submission"})
    assert response.status_code == 302 and response["Location"] == detail
    evaluation.refresh_from_db()
    assert (evaluation.status, evaluation.decided_by) == ("started", staff)
    evaluation.run.job.refresh_from_db()
    assert evaluation.run.job.status == Job.Status.SUCCEEDED, evaluation.run.job.error
    assert evaluation.run.usage["units"] == 2
    again = post(staff_client, approve, {}, follow=True)
    assert "already started" in again.content.decode()
    assert Run.objects.count() == 1


def test_a_rejected_run_never_starts_and_an_unknown_cost_under_a_budget_waits(
        log_benchmark, staff, researcher, mine, server, django_capture_on_commit_callbacks):
    auto_evaluator_save(benchmark=log_benchmark, evaluator="pepper_judge", model=UNPRICED,
                        user=staff, max_cost_per_day=100.0)
    upload_logs(client_for(researcher), mine, django_capture_on_commit_callbacks)
    evaluation = AutoEvaluation.objects.get()
    assert evaluation.status == "waiting" and evaluation.cost_usd is None
    assert "is unknown" in evaluation.reason
    reject = reverse("leaderboard:auto_evaluation_reject", args=[evaluation.pk])
    with django_capture_on_commit_callbacks(execute=True):
        post(client_for(staff), reject, {"next": "operator"})
    evaluation.refresh_from_db()
    assert (evaluation.status, evaluation.decided_by, evaluation.run) == ("rejected", staff, None)
    assert not Run.objects.exists() and server.request_count == 0


def test_the_day_budget_counts_the_runs_already_started_today(
        log_benchmark, staff, researcher, mine, server, django_capture_on_commit_callbacks,
        settings):
    settings.DAILY_SUBMISSION_QUOTA = 10
    client = client_for(researcher)
    first = upload_logs(client, mine, django_capture_on_commit_callbacks)  # none configured
    cost = llm_run_estimate(submission=first, evaluator="pepper_judge",
                            model=model_options(model=PRICED)).cost_usd
    auto_evaluator_save(benchmark=log_benchmark, evaluator="pepper_judge", model=PRICED,
                        user=staff, max_cost_per_day=cost * 2.5)
    upload_logs(client, mine, django_capture_on_commit_callbacks)
    upload_logs(client, mine, django_capture_on_commit_callbacks)
    upload_logs(client, mine, django_capture_on_commit_callbacks)
    statuses = list(AutoEvaluation.objects.order_by("pk").values_list("status", flat=True))
    assert statuses == ["started", "started", "waiting"]
    waiting = AutoEvaluation.objects.get(status="waiting")
    assert waiting.reason == (f"the estimated ${cost:.4f} would bring today's automatic "
                              f"pepper_judge runs to ${3 * cost:.4f}, over the budget of "
                              f"${2.5 * cost:.4f} per day")


def test_a_turn_evaluator_runs_on_turn_uploads_over_the_scored_splits(
        log_benchmark, staff, researcher, mine, server, django_capture_on_commit_callbacks):
    auto_evaluator_save(benchmark=log_benchmark, evaluator="trace_judge", model=PRICED,
                        user=staff)
    auto_evaluator_save(benchmark=log_benchmark, evaluator="pepper_judge", model=PRICED,
                        user=staff)
    Benchmark.objects.filter(pk=log_benchmark.pk).update(hidden_released_at=None)
    submission = upload_logs(client_for(researcher), mine, django_capture_on_commit_callbacks,
                             protocol="turn")
    evaluation = AutoEvaluation.objects.get()
    assert (evaluation.evaluator, evaluation.status) == ("trace_judge", "started")
    trace = Run.objects.get(submission=submission, evaluator="trace")
    # before the release neither scores the hidden d3#1: d1#1, d1#3 and d2#1 are judged
    assert evaluation.run.config["splits"] == trace.config["splits"] == ["test", "train"]
    assert evaluation.estimate["units"] == 3
    # a run started by hand covers the same splits by default: no hidden turn before the release
    assert llm_run_estimate(submission=submission, evaluator="trace_judge",
                            model=model_options(model=PRICED)).units == 3
    manual = llm_run_create(submission=submission, evaluator="trace_judge",
                            model=model_options(model=PRICED), enqueue=False)
    assert manual.config["splits"] == ["test", "train"]
    Benchmark.objects.filter(pk=log_benchmark.pk).update(hidden_released_at=timezone.now())
    submission.benchmark.refresh_from_db()
    assert llm_run_estimate(submission=submission, evaluator="trace_judge",
                            model=model_options(model=PRICED)).units == 4  # with d3#1
    Benchmark.objects.filter(pk=log_benchmark.pk).update(hidden_released_at=None)
    submission.benchmark.refresh_from_db()
    assert evaluation.estimate == llm_run_estimate(
        submission=submission, evaluator="trace_judge", model=model_options(model=PRICED),
        splits=["test", "train"]).to_dict()


def test_a_broken_or_paused_configuration_never_fails_the_upload(
        log_benchmark, staff, researcher, mine, server, django_capture_on_commit_callbacks):
    face = auto_evaluator_save(benchmark=log_benchmark, evaluator="face", model=PRICED,
                               user=staff)
    AutoEvaluator.objects.filter(pk=face.pk).update(instructions="relevance-v9")  # deleted
    auto_evaluator_save(benchmark=log_benchmark, evaluator="pepper_judge", model=PRICED,
                        user=staff, enabled=False)
    submission = upload_logs(client_for(researcher), mine, django_capture_on_commit_callbacks)
    evaluation = AutoEvaluation.objects.get()
    assert (evaluation.evaluator, evaluation.status, evaluation.submission) == (
        "face", "waiting", submission)
    assert evaluation.reason.startswith("no estimate: ") and "relevance-v9" in evaluation.reason
    assert not Run.objects.exists()
