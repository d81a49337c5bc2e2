"""The run page's judge-bias probes (evaluation/selectors/judge_probes.py) for a Trace judge run
through the real litellm path against the scripted server: the self-preference flag names the
published system of the judge's family, the length probe says why it is not measured on four
turns, and position bias is not applicable to a judge that scores one answer at a time."""

import pytest
from django.urls import reverse

from evaluation.models import Submission
from evaluation.selectors.judge_probes import run_judge_probes
from evaluation.services.llm_runs import llm_run_create
from evaluation.services.submissions import submission_create, system_create
from tests.evaluation.llm_fixtures import server_config, succeeded
from tests.evaluation.test_llm_judge_runs import trace_answer, turn_submission  # noqa: F401
from tests.support.submissions import write_lines

pytestmark = pytest.mark.django_db(transaction=True)


def test_the_run_page_shows_the_probes(llm_server, turn_submission, client, researcher,  # noqa: F811
                                       tiny_benchmark, tmp_path):
    rival = system_create(name="GPT-4o zero-shot", owner=researcher)
    published = submission_create(system=rival, benchmark=tiny_benchmark, user=researcher,
                                  path_or_file=write_lines(tmp_path / "rival.jsonl"))
    Submission.objects.filter(pk=published.pk).update(is_public=True)
    server = llm_server(trace_answer)
    run = succeeded(llm_run_create(submission=turn_submission, evaluator="trace_judge",
                                   model=server_config(server, model="openai/gpt-4o-mini"),
                                   enqueue=False))
    probes = run_judge_probes(run=run, include_hidden=True)
    assert probes["flag"] is True
    assert probes["self_preference"][0]["systems"] == ["GPT-4o zero-shot"]
    # d1 has two judged turns, d2 and d3 one each: too few dialogues for a within slope
    lengths = {row["metric"]: row for row in probes["length"]}
    assert "judge.relevance" in lengths
    assert lengths["judge.relevance"]["value"] is None
    assert "needs 3 dialogues" in lengths["judge.relevance"]["reason"]
    client.force_login(researcher)
    page = client.get(reverse("run_detail", args=[run.pk])).content.decode()
    assert 'id="judge-probes"' in page and "Self-preference risk" in page
    assert "GPT-4o zero-shot" in page and "Not applicable" in page
