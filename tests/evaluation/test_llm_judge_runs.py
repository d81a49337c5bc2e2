"""The Trace LLM judge on the tiny benchmark's recommend/compare turns and the PEPPER judge on
logs, through the real litellm code path against a scripted server (transactional: the gateway's
threads write the cache on their own connections)."""

import re

import pytest
from django.urls import reverse

from evaluation.services.llm_runs import llm_run_create
from evaluation.services.submissions import submission_create, system_create
from tests.evaluation.llm_fixtures import server_config, succeeded
from tests.support.submissions import write_lines

pytestmark = pytest.mark.django_db(transaction=True)
CRITERIA = ("relevance", "informativeness", "grounding_quality", "natural_flow",
            "justification")


def trace_answer(request) -> str:
    # Turn d1#3 quotes a dumpling claim its review does not support: grounding 2, else 4.
    unsupported = "best dumplings" in request.prompt_text
    scores = {c: 4 for c in CRITERIA} | {"grounding_quality": 2 if unsupported else 5}
    tags = "".join(f"<{c}>{n}</{c}>" for c, n in scores.items())
    return f"The response addresses the request.\n{tags}"


@pytest.fixture
def turn_submission(tiny_benchmark, researcher, llm_settings, tmp_path):
    system = system_create(name="Quoting CRS", owner=researcher)
    return submission_create(system=system, benchmark=tiny_benchmark, user=researcher,
                             path_or_file=write_lines(tmp_path / "turns.jsonl"))


def test_trace_judge_scores_every_recommend_turn_with_context_and_cited_reviews(
        llm_server, turn_submission, client, researcher):
    server = llm_server(trace_answer)
    run = succeeded(llm_run_create(submission=turn_submission, evaluator="trace_judge",
                                   model=server_config(server), enqueue=False))

    assert run.config["splits"] == ["hidden", "test", "train"]
    units = set(run.unit_scores.values_list("unit_id", flat=True))
    assert units == {"d1#1", "d1#3", "d2#1", "d3#1"} and server.request_count == 4
    d1_3 = next(r for r in server.requests if "best dumplings" in r.prompt_text)
    assert "<user>I want quiet seafood.</user>" in d1_3.prompt_text  # the reference context
    assert "Too pricey, something cheaper?" in d1_3.prompt_text
    assert "Cheap, fast noodles; the broth is rich." in d1_3.prompt_text  # review v3, cited
    assert re.search(r"\[R1\] \(Noodle Nook, review v3\)", d1_3.prompt_text)
    grounding = run.unit_scores.get(metric="judge.grounding_quality", unit_id="d1#3")
    assert grounding.value == 2 and grounding.unit_type == "turn"
    assert grounding.detail["rationale"] == "The response addresses the request."
    summary = run.summaries.get(metric="judge.grounding_quality")
    assert (summary.value, summary.n, summary.axis) == (pytest.approx(4.25), 4, "LLM judge")

    client.force_login(researcher)  # not the benchmark's owner: hidden d3 is not listed
    page = client.get(reverse("run_detail", args=[run.pk])).content.decode()
    assert "Grounding quality" in page and "d1#3" in page and "d3#1" not in page
    assert "Dialogues of the hidden split are not listed." in page


def test_pepper_judge_scores_logs_and_records_a_missing_aspect(llm_server, log_submission):
    def pepper_answer(request):
        assert "conversation between a User and a conversational recommender" in (
            request.prompt_text)
        assert "about tourism" in request.prompt_text  # the benchmark's domain
        personal = ("" if "parking" in request.prompt_text
                    else "<personalization>5</personalization>")
        return ("Asks good questions.\n<proactiveness>4</proactiveness><coherence>3</coherence>"
                + personal)

    server = llm_server(pepper_answer)
    run = succeeded(llm_run_create(submission=log_submission, evaluator="pepper_judge",
                                   model=server_config(server), enqueue=False))

    assert run.unit_scores.get(metric="pepper.proactiveness", unit_id="log-d2").value == 4
    missing = run.unit_scores.get(metric="pepper.personalization", unit_id="log-d2")
    assert missing.value is None and "no <personalization>" in missing.detail["failure"]
    assert server.request_count == 1 + 3  # log-d2 was re-asked twice, then recorded
    assert run.summaries.get(metric="pepper.personalization").n == 1
    assert run.job.result["failed_units"] == 1
