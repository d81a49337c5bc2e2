"""FACE end to end against a local OpenAI-compatible server that returns logprobs: optimize the
instructions of an aspect on an imported study (Algorithm 1), evaluate a log submission with the
optimized version, correlate with the study's labels (training and dev dialogues apart); and
the refusal of a server without logprobs."""

import io
import json
import math
import re

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from annotation import report_selectors
from annotation.imports import public_dataset_import
from evaluation.models import (
    FaceInstruction,
    FaceOptimization,
    FaceTurn,
    Job,
    LLMSpend,
    Run,
    Submission,
)
from evaluation.services.llm_runs import LLMRunFailed
from tests.evaluation.llm_fixtures import offer_profile
from tests.support.llm_server import RecordedRequest, with_logprobs

MODEL = "openai/scripted-face"
SYSTEMS = ("kbrd_redial", "unicrs_redial", "barcor_redial")
# Each assistant turn carries its hidden quality q (0-2); the humans' relevance label is q.
QUALITY = [[2, 1], [0, 2], [1, 0], [2, 2], [0, 1], [1, 1]]


def conversation(system: str, number: int, qualities) -> dict:
    dialogue = []
    for q in qualities:
        dialogue.append({"role": "USER", "utterance": f"Any film like number {number}?"})
        dialogue.append({"role": "ASST", "utterance": f"Try film {number}-{len(dialogue)} [q={q}]",
                         "turn_level_aggregated": {"relevance": q, "interestingness": q}})
    dialogue.append({"role": "USER", "utterance": "Thanks, bye."})
    for index, turn in enumerate(dialogue):
        turn["turn_ind"] = index
    mean = sum(qualities) / len(qualities)
    return {"conv_id": f"{system}_u{number}", "dialogue": dialogue,
            "dial_level_aggregated": {"understanding": round(mean), "task_completion": 1,
                                      "interest_arousal": 1, "efficiency": 1,
                                      "dialogue_overall": round(2 * mean)}}


@pytest.fixture
def study(staff, tmp_path, llm_settings):
    data = [conversation(system, n, QUALITY[n % len(QUALITY)])
            for n, system in enumerate(SYSTEMS * 4)]
    folder = tmp_path / "crs"
    folder.mkdir()
    (folder / "crs_arena_eval.json").write_text(json.dumps(data))
    _, study, _ = public_dataset_import(name="crs_arena_eval", path=folder, author=staff,
                                        study_slug="crs-labels")
    return study


def grade_reply(grade: int, top: float = 0.8) -> object:
    """An answer ending in `Score: grade`, with top logprobs at the grade token."""
    others = [(str(g), math.log((1 - top) / 2)) for g in (0, 1, 2) if g != grade]
    return with_logprobs([[("I weighed the particle.", -0.1)], [("\n", -0.01)],
                          [("Score", -0.01)], [(":", -0.01)], [(" ", -0.01)],
                          [(str(grade), math.log(top)), *others]])


def face_script(*, logprobs: bool = True):
    def answer(request: RecordedRequest):
        text = request.prompt_text
        if "Break the target assistant turn" in text:
            target = text.split("Target assistant turn:\n", 1)[1].split("\n\nUser's reply", 1)[0]
            return ("The assistant recommends one film.\n```json\n" + json.dumps(
                [{"dialogue_act": "recommendation", "mention": target,
                  "user_feedback": ""}]) + "\n```")
        if "Original instructions:" in text:
            gold = re.search(r"Human score of the whole turn that contains the particle: (\S+)",
                             text).group(1)
            return (f"<feedback>The grade ignores the marked quality (human {gold}).</feedback>\n"
                    f"<instructions>Task description: STRICT {gold}. Step 1: read q.</instructions>"
                    "\n<feedback>Be kinder.</feedback>\n"
                    f"<instructions>Task description: LOOSE {gold}. Step 1: guess.</instructions>")
        if "Target particle:" in text:
            quality = int(re.search(r"mention: .*\[q=(\d)\]", text).group(1))
            instruction = text.split("\n\nDialogue history:", 1)[0]
            # Only a STRICT instruction reads the quality; the others grade by the film number.
            number = int(re.search(r"mention: Try film (\d+)", text).group(1))
            grade = quality if "STRICT" in instruction else number % 3
            if not logprobs:
                return f"It is fine.\nScore: {grade}"
            return grade_reply(grade)
        raise AssertionError(f"unexpected prompt: {text[:200]}")
    return answer


def llm_options(server, model: str = MODEL) -> dict:
    # Worker threads commit cache entries outside the test's transaction: a test that must not
    # meet another's cached answers names its own model.
    return {"model": model, "profile": server.profile}


@pytest.mark.django_db(transaction=True)  # the cache writes from the gateway's threads
def test_optimize_evaluate_correlate(study, llm_server, client, staff):
    server = llm_server(face_script())
    out = io.StringIO()
    call_command("face_optimize", study=study.slug, aspect="relevance", iterations=2, beam=2,
                 candidates=3, gradients=2, seed=3, gradient_particles=2, ucb_sample=6,
                 no_progress=True, stdout=out, stderr=io.StringIO(), **llm_options(server))
    optimization = FaceOptimization.objects.get()
    assert optimization.name == "relevance-v1" and optimization.iterations_done == 2
    assert optimization.job.status == Job.Status.SUCCEEDED
    assert optimization.label_field == "relevance"
    # Split by dialogue: 12 conversations, 20% held out.
    assert len(optimization.dev_dialogues) == 2 and len(optimization.train_dialogues) == 10
    assert not set(optimization.dev_dialogues) & set(optimization.train_dialogues)
    # Every instruction version keeps its parent and gradient; rewrites of iteration 2 descend
    # from iteration 1's beam.
    seed = optimization.instructions.get(iteration=0)
    first = optimization.instructions.filter(iteration=1)
    assert first.exists() and all(i.parent_id == seed.pk and i.gradient for i in first)
    second = optimization.instructions.filter(iteration=2)
    assert {i.parent.iteration for i in second} == {1}
    pool = optimization.instructions.filter(in_pool=True)
    assert pool.count() <= 6 and all(i.train_correlation is not None for i in pool)
    assert set(optimization.beams) == {"1", "2", "3"}
    selected = list(optimization.instructions.filter(selected=True))
    assert len(selected) == 2 and all("STRICT" in i.text for i in selected)
    assert optimization.dev_correlation == pytest.approx(1.0)
    assert [u["iteration"] for u in optimization.usage] == [1, 2, "final"]
    assert optimization.usage[0]["calls"] > 0 and optimization.usage[0]["cost_usd"] is None
    # Its estimate was reserved on the operator's LLM budget, then settled to what it spent.
    spend = LLMSpend.objects.get(job=optimization.job)
    assert spend.kind == "face_optimization" and spend.account.key == "operator"
    assert spend.estimated_tokens > 0 and spend.status == "settled"
    assert spend.spent_tokens == sum(u["total_tokens"] for u in optimization.usage) > 0
    assert spend.spent_usd is None  # unpriced model: unknown, never $0
    printed = out.getvalue()
    assert "iteration 1:" in printed and "relevance-v1" in printed and "dev correlation 1.000" \
        in printed

    # Evaluate every system's conversations with the optimized version.
    calls_before = server.request_count
    for submission in Submission.objects.filter(benchmark=study.benchmark).order_by("pk"):
        result = io.StringIO()
        call_command("evaluate", benchmark=study.benchmark.slug, submission_id=submission.pk,
                     evaluator="face", instructions=["relevance-v1"],
                     aspects=["relevance", "overall"], no_progress=True, stdout=result,
                     stderr=io.StringIO(), **llm_options(server))
        assert "face.relevance" in result.getvalue()
    run = Run.objects.filter(evaluator="face").order_by("pk").first()
    assert run.config["instructions"]["relevance"]["version"] == "relevance-v1"
    assert run.config["instructions"]["overall"]["version"] is None  # the initial instruction
    assert run.config["train_dialogues"] == optimization.train_dialogues
    turns = FaceTurn.objects.filter(run=run).order_by("unit_id", "turn_index")
    assert turns.count() == 4 * 2  # four conversations of two assistant turns each
    particle = turns[0].particles[0]
    assert particle["act"] == "recommendation" and "[q=" in particle["mention"]
    relevance = particle["scores"]["relevance"]
    assert len(relevance["per_instruction"]) == 2
    score = run.unit_scores.get(metric="face.relevance", unit_id=f"{turns[0].unit_id}#1")
    quality = int(re.search(r"\[q=(\d)\]", particle["mention"]).group(1))
    # STRICT instructions put 0.8 on the quality and 0.1 on each other grade (Eq. 1).
    expected = {0: 0.3, 1: 1.0, 2: 1.7}[quality]
    assert score.value == pytest.approx(expected)
    # Its uncertainty: the sd of the grade distribution (0.8 on the quality, 0.1 on each other
    # grade; both instructions alike, so the mixture is that distribution): variance 0.41 at
    # q = 0 or 2 (E g² − mean² = 0.5 − 0.09, 3.3 − 2.89), 0.2 at q = 1.
    uncertainty = score.detail["uncertainty"]
    assert uncertainty["sd"] == pytest.approx(math.sqrt({0: 0.41, 1: 0.2, 2: 0.41}[quality]))
    assert uncertainty["within_sd"] == pytest.approx(uncertainty["sd"])
    assert uncertainty["distributions"] == 2 and "top logprobs" in uncertainty["source"]
    assert relevance["per_instruction"][0]["mass_outside"] == pytest.approx(0.0, abs=1e-9)
    assert run.unit_scores.filter(metric="face.overall", unit_type="dialogue").count() == 4
    assert server.request_count > calls_before

    # Correlation with the study: held-out dialogues as `face`, trained-on ones as `face:train`.
    report_selectors.cache.clear()
    sets = report_selectors.evaluator_score_sets(benchmark=study.benchmark)
    # and the import's two baselines (the embedding one is its job on commit)
    assert set(sets) == {"face", "face:train", "reference_free", "reference_free_embedding"}
    dev_units = {key for s in sets["face"] for key in s.values}
    assert {unit[1].split("#")[0] for unit in dev_units} <= set(optimization.dev_dialogues)
    correlation = report_selectors.study_correlation(study=study, evaluator="face")
    rows = [r for r in correlation["item_level"] if r["metric"] == "face.relevance"
            and r["aspect"] == "relevance" and r["subset"] == "all"]
    assert rows and rows[0]["correlations"]["spearman"]["statistic"] == pytest.approx(1.0)

    # The run page shows each system turn with its particles and their scores.
    client.force_login(staff)
    page = client.get(f"/runs/{run.pk}/").content.decode()
    assert "relevance relevance-v1" in page and "overall initial (untrained)" in page
    assert particle["mention"] in page and "face:train" in page
    assert f'id="turn-{turns[0].unit_id}-1"' in page

    # The study's FACE page lists every instruction version with its parent and gradient.
    face_page = client.get(f"/studies/{study.slug}/face/").content.decode()
    assert "relevance-v1" in face_page and "selected" in face_page
    assert f'href="#instruction-{seed.pk}"' in face_page and "The grade ignores" in face_page
    assert "Evaluate the benchmark" in face_page

    # A re-run is free: every answer comes from the cache.
    before = server.request_count
    call_command("evaluate", benchmark=study.benchmark.slug, submission_id=run.submission_id,
                 evaluator="face", instructions=["relevance-v1"], aspects=["relevance"],
                 no_progress=True, stdout=io.StringIO(), stderr=io.StringIO(),
                 **llm_options(server))
    assert server.request_count == before

    # "Evaluate with FACE" queues one run per log submission, each reserved on the budget of
    # whoever started it (the ones a worker has not started yet would be refused as twins).
    from evaluation.services.face_optimization import face_runs_create

    model = {**llm_options(server, "openai/scripted-face"), "api_key_env": None,
             "temperature": 0.0, "max_tokens": None}
    runs = face_runs_create(benchmark=study.benchmark, versions=["relevance-v1"], model=model,
                            user=staff)
    spends = LLMSpend.objects.filter(job__in=[r.job_id for r in runs])
    assert len(runs) == spends.count() == Submission.objects.filter(
        benchmark=study.benchmark, protocol="log").count()
    assert {s.account.key for s in spends} == {f"user:{staff.pk}"}


@pytest.mark.django_db(transaction=True)  # the cache writes from the gateway's threads
def test_resume_continues_after_the_last_finished_iteration(study, llm_server):
    server = llm_server(face_script())
    call_command("face_optimize", study=study.slug, aspect="relevance", iterations=1, beam=1,
                 candidates=2, gradients=2, seed=1, gradient_particles=1, ucb_sample=4,
                 no_progress=True, stdout=io.StringIO(), stderr=io.StringIO(),
                 **llm_options(server))
    optimization = FaceOptimization.objects.get()
    # Pretend the worker died during iteration 2 of a longer optimization.
    optimization.params = {**optimization.params, "iterations": 2}
    optimization.save(update_fields=["params"])
    FaceInstruction.objects.create(optimization=optimization, iteration=2, text="half-done")
    first_ids = set(optimization.instructions.filter(iteration=1).values_list("pk", flat=True))
    call_command("face_optimize", resume="relevance-v1", no_progress=True, stdout=io.StringIO(),
                 stderr=io.StringIO())
    optimization.refresh_from_db()
    assert optimization.iterations_done == 2
    assert set(optimization.instructions.filter(iteration=1).values_list("pk", flat=True)) \
        == first_ids  # not recomputed
    assert not optimization.instructions.filter(text="half-done").exists()
    # The continuation reserved only what was left: one iteration, no decomposition.
    first, resumed = LLMSpend.objects.order_by("pk")
    assert resumed.job_id == optimization.job_id
    assert 0 < resumed.estimated_tokens < first.estimated_tokens


@pytest.mark.django_db(transaction=True)  # the cache writes from the gateway's threads
def test_a_server_without_logprobs_is_refused(study, llm_server):
    server = llm_server(face_script(logprobs=False))
    options = llm_options(server, "openai/scripted-face-without-logprobs")
    submission = Submission.objects.filter(benchmark=study.benchmark).first()
    with pytest.raises(CommandError, match="no top log-probabilities.*no fallback"):
        call_command("evaluate", benchmark=study.benchmark.slug, submission_id=submission.pk,
                     evaluator="face", aspects=["relevance"], no_progress=True,
                     stdout=io.StringIO(), stderr=io.StringIO(), **options)
    assert not Run.objects.get(evaluator="face").unit_scores.exclude(value=None).exists()
    with pytest.raises(CommandError, match="no top log-probabilities"):
        call_command("face_optimize", study=study.slug, aspect="relevance", no_progress=True,
                     stdout=io.StringIO(), stderr=io.StringIO(), **options)


def test_bad_requests_get_clear_errors(study, llm_server):
    server = llm_server(face_script())
    with pytest.raises(CommandError, match="no study 'nope'"):
        call_command("face_optimize", study="nope", aspect="relevance", **llm_options(server))
    with pytest.raises(CommandError, match="unknown FACE aspect"):
        call_command("face_optimize", study=study.slug, aspect="charm", **llm_options(server))
    with pytest.raises(CommandError, match="no FACE instruction version 'relevance-v9'"):
        call_command("evaluate", benchmark=study.benchmark.slug, evaluator="face",
                     submission_id=Submission.objects.first().pk, instructions=["relevance-v9"],
                     **llm_options(server))
    assert not FaceOptimization.objects.exists()


def test_the_study_page_starts_an_optimization_for_its_author_only(study, client, staff,
                                                                     outsider, settings):
    settings.LLM_MODEL = "openai/scripted-face-page"
    client.force_login(outsider)
    assert client.get(f"/studies/{study.slug}/face/").status_code == 404
    assert client.post(f"/studies/{study.slug}/face/optimize/",
                       {"aspect": "relevance"}).status_code == 404
    client.force_login(staff)
    page = client.get(f"/studies/{study.slug}/face/").content.decode()
    assert '<option value="relevance">' in page and '<option value="overall">' in page
    refused = client.post(f"/studies/{study.slug}/face/optimize/",
                          {"aspect": "relevance", "beam": 4, "candidates": 2}, follow=True)
    assert "at least the beam width" in refused.content.decode()
    assert not FaceOptimization.objects.exists()
    choice = {"aspect": "overall", "iterations": 1, "beam": 1, "candidates": 2,
              "gradients": 1, "seed": 5}
    estimate = client.post(f"/studies/{study.slug}/face/optimize/", choice)
    page = estimate.content.decode()
    assert estimate.status_code == 200 and 'id="budget-tokens"' in page
    assert 'id="confirm-button"' in page and not FaceOptimization.objects.exists()
    response = client.post(f"/studies/{study.slug}/face/optimize/", {**choice, "confirm": "1"})
    optimization = FaceOptimization.objects.get()
    assert response.status_code == 302 and response["Location"] == f"/jobs/{optimization.job_id}/"
    assert optimization.name == "overall-v1" and optimization.label_field == "dialogue_overall"
    assert optimization.params["seed"] == 5 and optimization.job.created_by == staff
    assert optimization.model["model"] == "openai/scripted-face-page"


def garbage_decomposer(request: RecordedRequest):
    if "Break the target assistant turn" in request.prompt_text:
        return "I would rather not."
    return face_script()(request)


@pytest.mark.django_db(transaction=True)  # the cache writes from the gateway's threads
def test_a_hopeless_run_stops_after_its_first_units(study, llm_server):
    server = llm_server(garbage_decomposer)
    submission = Submission.objects.filter(benchmark=study.benchmark).order_by("pk").first()
    with pytest.raises(CommandError) as raised:
        call_command("evaluate", benchmark=study.benchmark.slug, submission_id=submission.pk,
                     evaluator="face", aspects=["relevance"], stop_after=2, max_reasks=0,
                     no_progress=True, stdout=io.StringIO(), stderr=io.StringIO(),
                     **llm_options(server, "openai/scripted-face-garbage"))
    message = str(raised.value)
    assert "stopped early: the first 2 units all failed, so the other 2 were not tried" \
        in message and "no JSON list found" in message
    assert "start the evaluation again" in message and "--stop-after" not in message
    assert "LLM usage" in message and "Traceback" not in message
    run = Run.objects.get(evaluator="face")
    # Two logs of two assistant turns, one answer each: nothing more was asked.
    assert server.request_count == 4
    assert FaceTurn.objects.filter(run=run).values("unit_id").distinct().count() == 2
    assert all(t.failure and t.answer == "I would rather not."
               for t in FaceTurn.objects.filter(run=run))


@pytest.mark.django_db(transaction=True)  # the cache writes from the gateway's threads
def test_a_trial_on_a_few_units_with_progress_per_unit(study, llm_server):
    from evaluation.services.llm_runs import llm_run_create
    from evaluation.services.runs import run_process

    server = llm_server(face_script())
    submission = Submission.objects.filter(benchmark=study.benchmark).order_by("pk").first()
    options = llm_options(server, "openai/scripted-face-trial")
    model = {**options, "temperature": 0.0, "max_tokens": None}
    run = llm_run_create(submission=submission, evaluator="face", model=model, limit=3,
                         enqueue=False, face={"aspects": ["overall"]})
    seen = []
    run_process(job_id=run.job_id, progress=lambda stage, done, total: seen.append(
        (stage, done, total)))
    run.refresh_from_db()
    assert run.job.status == Job.Status.SUCCEEDED, run.job.error
    assert [s for s in seen if s[0] == "score"] == [("score", n, 3) for n in range(4)]
    assert run.unit_scores.filter(metric="face.overall").count() == 3
    dialogue = run.unit_scores.first().dialogue_id
    only = llm_run_create(submission=submission, evaluator="face", model=model,
                          dialogues=[dialogue], enqueue=False, face={"aspects": ["overall"]})
    run_process(job_id=only.job_id)
    assert set(only.unit_scores.values_list("dialogue_id", flat=True)) == {dialogue}
    runs = Run.objects.count()
    with pytest.raises(LLMRunFailed, match="none of the dialogues nope is in the submission"):
        llm_run_create(submission=submission, evaluator="face", model=model,
                       dialogues=["nope"], enqueue=False, face={"aspects": ["overall"]})
    assert Run.objects.count() == runs  # refused by its estimate: nothing stored


def test_a_refused_connection_is_reported_as_such(study, llm_settings):
    submission = Submission.objects.filter(benchmark=study.benchmark).first()
    offer_profile(llm_settings, "nobody-home", "http://127.0.0.1:9/v1")
    with pytest.raises(CommandError) as raised:
        call_command("evaluate", benchmark=study.benchmark.slug, submission_id=submission.pk,
                     evaluator="face", aspects=["relevance"], no_progress=True,
                     stdout=io.StringIO(), stderr=io.StringIO(),
                     model="openai/nobody-home", profile="nobody-home")
    message = str(raised.value)
    assert "connection refused at http://127.0.0.1:9/v1" in message
    assert "InternalServerError" not in message
    assert re.search(r"LLM usage \(openai/nobody-home\): 0 calls answered.*; [1-9]\d* failed",
                     message)
