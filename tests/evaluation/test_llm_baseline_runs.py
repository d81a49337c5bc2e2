"""`run_baseline llm_zero_shot|rag_citation`: LLM answers through the gateway become a `turn`
submission that `submission_create` validates, then the Trace suite evaluates it."""

import io
import json
import re

import pytest
from django.core.management import CommandError, call_command

from evaluation.lib.metrics.suite import SUITE_VERSION
from evaluation.models import Submission
from evaluation.services.llm_responders import NO_ANSWER

pytestmark = pytest.mark.django_db(transaction=True)


def candidate_ids(prompt: str) -> list[str]:
    return re.findall(r"^- id: ([^;]+);", prompt, flags=re.MULTILINE)


def run_baseline(name: str, server, benchmark) -> tuple[str, str, Submission]:
    out, err = io.StringIO(), io.StringIO()
    call_command("run_baseline", name, benchmark=benchmark.slug, model="openai/scripted-llm",
                 profile=server.profile, no_text=True, no_nli=True, no_progress=True,
                 stdout=out, stderr=err)
    return out.getvalue(), err.getvalue(), Submission.objects.get()


def lines(submission) -> dict[str, dict]:
    with submission.file.open("rb") as handle:
        records = [json.loads(line) for line in handle if line.strip()]
    return {f"{r['dialogue_id']}#{r['turn_index']}": r for r in records}


def test_llm_zero_shot_writes_a_valid_submission_and_reasks_on_unmapped_labels(
        llm_server, llm_settings, tiny_benchmark):
    def answer(request):
        ids = candidate_ids(request.prompt_text)
        reasked = "could not be used" in request.last_user_text
        response = "Old City Inn has parking [R1]." if "parking" in request.prompt_text and \
            not reasked else f"I would go with {ids[-1]}."
        return json.dumps({"ranked_item_ids": list(reversed(ids)), "response": response})

    server = llm_server(answer)
    out, err, submission = run_baseline("llm_zero_shot", server, tiny_benchmark)

    answered = lines(submission)
    assert set(answered) == {"d1#1", "d1#3", "d2#1", "d3#1"} and not err
    assert answered["d2#1"] == {"dialogue_id": "d2", "turn_index": 1, "citations": [],
                                "response": "I would go with a1.", "ranked_item_ids": ["a1", "h1"]}
    assert server.request_count == 5  # d2#1 was re-asked: its first answer cited nothing real
    system = submission.system
    assert (system.name, system.family, system.is_baseline) == (
        "LLM Zero-Shot (openai/scripted-llm)", "LLM", True)
    assert f"trace {SUITE_VERSION}" in out and "recall@1" in out
    assert "LLM usage (openai/scripted-llm)" in out
    assert submission.runs.get().job.status == "succeeded"


def test_rag_citation_retries_the_quote_check_and_stores_a_failed_turn_as_a_non_answer(
        llm_server, llm_settings, tiny_benchmark):
    def answer(request):
        ids = candidate_ids(request.prompt_text)
        if "could not be used" not in request.last_user_text:
            return json.dumps({"ranked_item_ids": ids, "response": "A lovely place, trust me."})
        evidence = re.findall(r"^\[(R\d+)\] \([^)]*\) (.+)$", request.prompt_text, re.MULTILINE)
        label, sentence = max(evidence, key=lambda e: len(e[1].split()), default=("R1", "ok"))
        return json.dumps({"ranked_item_ids": ids,
                           "response": f'One guest wrote "{sentence}" [{label}].'})

    server = llm_server(answer)
    out, err, submission = run_baseline("rag_citation", server, tiny_benchmark)

    answered = lines(submission)
    assert answered["d1#1"]["citations"] == [{
        "label": "R1", "review_id": "v1",
        "quote": "The crab cakes were incredible and the room was quiet."}]
    # d2's candidates have no review sentence of ten words: three answers, then a non-answer.
    assert answered["d2#1"]["response"] == NO_ANSWER and answered["d2#1"]["ranked_item_ids"] == []
    assert server.request_count == 3 * 2 + 3
    retry = next(r for r in server.requests if "could not be used" in r.last_user_text)
    assert "no quote of at least 10 words copied exactly" in retry.last_user_text
    assert "1 of 4 turns have no answer" in err and "d2#1: unparseable after 3 answers" in err
    assert "1 of 4 turns unanswered" in submission.note
    run = submission.runs.get()
    assert run.job.status == "succeeded" and run.summaries.get(metric="gs").value == 1.0
    # The failed turn is a non-answer, counted and missing from every turn metric (its
    # placeholder text would otherwise score GS = PC = 1).
    assert answered["d2#1"]["metadata"] == {"no_answer": True}
    non_answer = run.summaries.get(metric="non_answer")
    assert (non_answer.value, non_answer.n) == (0.25, 4)
    assert not run.unit_scores.filter(unit_id="d2#1").exclude(metric="non_answer").exists()


def test_limit_answers_only_the_first_turns_and_stores_nothing(llm_server, llm_settings,
                                                               tiny_benchmark):
    def answer(request):
        ids = candidate_ids(request.prompt_text)
        return json.dumps({"ranked_item_ids": ids[:2], "response": f"Try {ids[0]}."})

    server = llm_server(answer)
    out = io.StringIO()
    call_command("run_baseline", "llm_zero_shot", benchmark=tiny_benchmark.slug, limit=2,
                 model="openai/scripted-llm", profile=server.profile, no_progress=True,
                 stdout=out)
    text = out.getvalue()
    assert server.request_count == 2  # the first two of the tiny benchmark's four turns
    assert "A trial of 2 turns: nothing stored or evaluated." in text
    assert text.count("#") == 2 and "d1#1: Try " in text
    assert "2 calls answered: 2 by the model, 0 from the cache" in text
    assert not Submission.objects.exists()
    with pytest.raises(CommandError, match="--limit and --dialogues are for LLM baselines"):
        call_command("run_baseline", "popularity", benchmark=tiny_benchmark.slug, limit=2)
    with pytest.raises(CommandError, match="at least 1"):
        call_command("run_baseline", "llm_zero_shot", benchmark=tiny_benchmark.slug, limit=0,
                     model="openai/scripted-llm", profile=server.profile)


def test_dialogues_answers_only_their_turns_and_stores_nothing(llm_server, llm_settings,
                                                              tiny_benchmark):
    def answer(request):
        ids = candidate_ids(request.prompt_text)
        return json.dumps({"ranked_item_ids": ids[:2], "response": f"Try {ids[0]}."})

    server = llm_server(answer)
    out = io.StringIO()
    call_command("run_baseline", "llm_zero_shot", benchmark=tiny_benchmark.slug,
                 dialogues=["d1,d2"], model="openai/scripted-llm", profile=server.profile,
                 no_progress=True, stdout=out)
    text = out.getvalue()
    assert server.request_count == 3  # d1#1, d1#3 and d2#1; not d3#1
    assert "A trial of 3 turns: nothing stored or evaluated." in text
    assert "d1#3: Try " in text and "d2#1: Try " in text and "d3#" not in text
    assert not Submission.objects.exists()
    out = io.StringIO()
    call_command("run_baseline", "llm_zero_shot", benchmark=tiny_benchmark.slug,
                 dialogues=["d1"], limit=1, model="openai/scripted-llm",
                 profile=server.profile, no_progress=True, stdout=out)
    assert "A trial of 1 turns" in out.getvalue() and "d1#1: Try " in out.getvalue()
    with pytest.raises(CommandError, match="no turn to answer in dialogue nope"):
        call_command("run_baseline", "llm_zero_shot", benchmark=tiny_benchmark.slug,
                     dialogues=["nope"], model="openai/scripted-llm", profile=server.profile)
    with pytest.raises(CommandError, match="--limit and --dialogues are for LLM baselines"):
        call_command("run_baseline", "popularity", benchmark=tiny_benchmark.slug,
                     dialogues=["d1"])
