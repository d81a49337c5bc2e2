"""`manage.py evaluate --evaluator core|trace_judge|pepper_judge` with --profile/--model, and a
re-run of a stored submission (`--submission-id`) answered entirely from the cache."""

import io
import json

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from evaluation.models import Run, Submission
from tests.evaluation.llm_fixtures import LOGS, core_answer

pytestmark = pytest.mark.django_db(transaction=True)


def evaluate(**options) -> str:
    out = io.StringIO()
    call_command("evaluate", benchmark="tiny", no_progress=True, stdout=out, **options)
    return out.getvalue()


def test_evaluate_core_from_the_command_line_then_again_for_free(llm_server, llm_settings,
                                                                 tiny_benchmark, tmp_path):
    server = llm_server(core_answer)
    path = tmp_path / "chatty.jsonl"
    path.write_text("".join(json.dumps(log) + "\n" for log in LOGS), encoding="utf-8")

    first = evaluate(evaluator="core", submission=str(path), model="openai/scripted-judge",
                     profile=server.profile, no_debate=True)
    assert "core 1.1.0" in first and "core.coherence" in first and "LLM judge" in first
    assert ("LLM usage (openai/scripted-judge): 26 calls answered: 26 by the model, 0 from "
            "the cache (free)") in first
    assert "cost unknown (no price for this model)" in first

    submission = Submission.objects.get()
    assert submission.protocol == "log"
    again = json.loads(evaluate(evaluator="core", submission_id=submission.pk, json=True,
                                model="openai/scripted-judge", profile=server.profile,
                                no_debate=True))
    assert server.request_count == 26
    assert again["usage"]["calls"] == 0 and again["usage"]["cached_calls"] == 26
    assert again["metrics"]["core.coherence"]["value"] == 4
    assert Run.objects.count() == 2
    # The printed summary of a fully cached re-run agrees with itself on every line: no call
    # reached the model, so no paid token and $0; all 26 (and their tokens) came from the cache.
    text = evaluate(evaluator="core", submission_id=submission.pk,
                    model="openai/scripted-judge", profile=server.profile, no_debate=True)
    usage = again["usage"]
    cached_tokens = usage["cached_prompt_tokens"] + usage["cached_completion_tokens"]
    assert cached_tokens > 0 and usage["total_tokens"] == 0 and usage["cost_usd"] == 0
    assert ("26 calls answered: 0 by the model, 26 from the cache (free); 0 failed\n"
            "  paid (by the model): 0 prompt + 0 completion tokens, cost $0.000000\n"
            f"  from the cache: {usage['cached_prompt_tokens']} prompt + "
            f"{usage['cached_completion_tokens']} completion tokens, cost $0\n") in text
    stages = usage["stages"]
    assert sum(stage["cached_calls"] for stage in stages.values()) == 26
    for name, stage in stages.items():
        assert (f"  {name}: 0 calls by the model (0 tokens), {stage['cached_calls']} from the "
                f"cache ({stage['cached_prompt_tokens'] + stage['cached_completion_tokens']} "
                "tokens)") in text
    assert server.request_count == 26


def test_evaluate_refuses_an_llm_evaluator_without_a_model(llm_settings, tiny_benchmark,
                                                          tmp_path):
    path = tmp_path / "chatty.jsonl"
    path.write_text(json.dumps(LOGS[0]) + "\n", encoding="utf-8")
    with pytest.raises(CommandError, match=r"offers a model profile \(docs/llm.md\) "
                                           r"\(or pass --model\)"):
        evaluate(evaluator="pepper_judge", submission=str(path))
    assert not Submission.objects.exists()
    from evaluation.services.llm_models import NO_MODEL  # what web pages say: no flags

    assert "--" not in NO_MODEL and "CONCORD_LLM_MODEL" in NO_MODEL
