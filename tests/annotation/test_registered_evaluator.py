"""An LLM evaluator is one registered object (issue 29, item 1): a throwaway evaluator defined
in this module only, registered for these tests and unregistered after them, is a choice of
`manage.py evaluate`, is offered by a submission's "run an LLM evaluator" page (and the staff's
automatic runs), is estimated there, runs against the scripted OpenAI-compatible server, has
its run page, and is ranked on a study's metric leaderboard, with no other file touched
(transactional: the gateway's threads write the cache on their own connections)."""

import dataclasses
import io

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.urls import reverse

from annotation.lib import taskforms
from evaluation.lib.llm import estimate, registry
from evaluation.lib.llm.judging import judge_aspects, tagged_scores_format
from evaluation.lib.llm.registry import LLMEvaluator, Prompt
from evaluation.lib.metrics.types import MetricSpec
from evaluation.models import Job, Run
from evaluation.services.llm_runs import llm_run_create
from tests.evaluation.llm_fixtures import (  # noqa: F401 - fixtures
    executed,
    llm_server,
    llm_settings,
    server_config,
    succeeded,
)

from .conftest import make_study
from .test_report import label_all

pytestmark = pytest.mark.django_db(transaction=True)

NAME = "toy_judge"
ANSWER_FORMAT = tagged_scores_format("toy_judge", ("helpful",), low=1, high=5)


def toy_messages(turn) -> list[dict]:
    return [{"role": "user", "content": (
        f"How helpful is this travel advice?\n<response>{turn.response}</response>\n"
        "Reason in one sentence, then rate it <helpful>N</helpful>, N from 1 to 5.")}]


def toy_score(turn, ctx):
    return judge_aspects(ctx.gateway, ctx.config, toy_messages(turn), ("helpful",), low=1,
                         high=5, max_reasks=ctx.max_reasks, meter=ctx.meter,
                         answer_format=ANSWER_FORMAT)


TOY = LLMEvaluator(
    NAME, "0.1.0", "turn", "turn", "Toy helpfulness judge",
    (MetricSpec("toy.helpful", "LLM judge", "turn", "higher", (1, 5), "Helpfulness (1–5)."),),
    scores="turns", docs="A throwaway judge defined in a test.",
    prompts=(Prompt("judge", "one sentence, then <helpful>", ANSWER_FORMAT,
                    example="Useful.\n<helpful>4</helpful>"),),
    estimate=lambda turns, price, inputs: estimate.estimate_one_call_per_unit(
        turns, price, kind="toy", messages=toy_messages, answer_tokens=30),
    score=toy_score, metric_of=lambda aspect: f"toy.{aspect}",
    columns=(("toy.helpful", "Toy helpfulness"),))


@pytest.fixture
def toy_evaluator():
    registry.register(TOY)
    yield TOY
    registry.unregister(NAME)


def toy_answer(request) -> str:
    # Zeta's answers ("Answer 0: …") are helpful, Omega's ("Answer 1: …") less so.
    helpful = 5 if "Answer 0:" in request.prompt_text else 2
    if "Noodle Nook" in request.prompt_text:
        helpful -= 1
    return f"Names a place and quotes a review.\n<helpful>{helpful}</helpful>"


@pytest.fixture
def toy_study(tiny_benchmark, author, annotator, other_annotator, submissions):
    study = make_study(tiny_benchmark, author, forms=(taskforms.LIKERT,),
                       submissions=submissions, overlap_k=2, tie_break_extra=False,
                       slug="toy-study")
    label_all(study, annotator, "plain")
    label_all(study, other_annotator, "mild")
    return study


def test_the_registry_is_left_as_it_was(toy_evaluator):
    assert registry.names() == ("core", "trace_judge", "pepper_judge", "face", NAME)
    with pytest.raises(ValueError, match="already registered"):
        registry.register(TOY)


def test_a_registered_evaluator_is_everywhere_evaluators_are(
        toy_evaluator, llm_server, llm_settings, client, staff, author, toy_study,  # noqa: F811
        submissions):
    server = llm_server(toy_answer)
    zeta, omega = submissions
    assert zeta.system.name == "Zeta Secret CRS"

    # the command line: a choice, and a run against the scripted server
    out = io.StringIO()
    call_command("evaluate", "--benchmark", zeta.benchmark.slug, "--submission-id", str(zeta.pk),
                 "--evaluator", NAME, "--profile", server.profile, "--model",
                 server_config(server)["model"], "--no-progress", "--no-budget", stdout=out)
    assert "toy.helpful" in out.getvalue()
    with pytest.raises(CommandError, match="invalid choice: 'toy_judge_2'"):
        call_command("evaluate", "--benchmark", zeta.benchmark.slug, "--submission-id",
                     str(zeta.pk), "--evaluator", "toy_judge_2")
    run = Run.objects.get(evaluator=NAME, submission=zeta)
    assert run.job.status == Job.Status.SUCCEEDED and run.evaluator_version == "0.1.0"
    assert run.unit_scores.get(unit_id="d1#3").value == 4
    assert run.summaries.get(metric="toy.helpful").n == run.unit_scores.count()
    sent = server.requests[0]
    assert "How helpful is this travel advice?" in sent.prompt_text
    # a regex cannot be sent to an OpenAI-compatible API: it is only checked (docs/llm.md)
    assert "response_format" not in sent.body

    # the web: offered for a turn submission, estimated, started
    client.force_login(staff)
    page = reverse("leaderboard:submission_evaluate", args=[omega.uuid])
    assert f'value="{NAME}"' in client.get(page).content.decode()
    confirm = client.get(page, {"evaluator": NAME, "profile": server.profile})
    html = confirm.content.decode()
    assert confirm.status_code == 200 and "toy 30" in html  # its typical answer, as declared
    started = client.post(reverse("leaderboard:submission_evaluate_start", args=[omega.uuid]),
                          {"evaluator": NAME, "profile": server.profile})
    assert started.status_code == 302
    other = Run.objects.get(evaluator=NAME, submission=omega)
    succeeded(other)  # the task was sent on commit; here the test runs it itself
    assert other.unit_scores.get(unit_id="d1#1").value == 2

    # the staff's automatic runs on new uploads offer it too
    auto = client.get(reverse("leaderboard:auto_evaluators", args=[omega.benchmark.slug]))
    assert f'value="{NAME}"' in auto.content.decode()

    # its run page: the generic table with its columns and the judge's rationale
    html = client.get(reverse("run_detail", args=[run.pk])).content.decode()
    assert NAME in html and "<th class=\"num\">Toy helpfulness</th>" in html
    assert "Names a place and quotes a review." in html and "tokens per turn" in html

    # the study's metric leaderboard ranks its metric against the human labels
    client.force_login(author)
    board = client.get(reverse("annotation:metric_board", args=[toy_study.slug]))
    html = board.content.decode()
    assert board.status_code == 200 and NAME in html and "toy.helpful" in html


def test_an_answer_copying_the_prompt_is_refused_with_that_reason(
        toy_evaluator, llm_server, llm_settings, submissions):  # noqa: F811
    def placeholder_messages(turn):
        messages = toy_messages(turn)
        messages[0]["content"] += "\nBegin with <one word on the advice, in capitals>."
        return messages

    def score(turn, ctx):
        return judge_aspects(ctx.gateway, ctx.config, placeholder_messages(turn), ("helpful",),
                             low=1, high=5, max_reasks=ctx.max_reasks, meter=ctx.meter,
                             answer_format=ANSWER_FORMAT)

    registry.register(dataclasses.replace(TOY, name="toy_copier", score=score))
    try:
        server = llm_server(lambda request: "<one word on the advice, in capitals> Fine."
                                            "\n<helpful>4</helpful>")
        run = llm_run_create(submission=submissions[0], evaluator="toy_copier",
                             model=server_config(server), enqueue=False, max_reasks=1,
                             limit=1)
        executed(run)
    finally:
        registry.unregister("toy_copier")
    assert run.job.status == Job.Status.FAILED and server.request_count == 2
    value = run.unit_scores.get()
    assert value.value is None
    assert value.detail["failure"] == ("unparseable after 2 answers: the answer copies the "
                                       "prompt's placeholder <one word on the advice, in "
                                       "capitals>")
    assert "copies the prompt's placeholder" in run.job.error
