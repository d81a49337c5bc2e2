"""CoRE's mixture of evaluators (Appendix F): with several judge models and a human study with
CoRE ratings, each factor goes to the judge whose scores agree best (QWK) with the humans."""

import pytest
from django.utils import timezone

from annotation.core_ratings import human_factor_scores, study_conversation_logs
from annotation.models import Annotation, Assignment
from annotation.services.members import study_member_add
from annotation.services.studies import StudySpec, study_create
from evaluation.lib.llm.core_rubrics import FACTOR_KEYS
from evaluation.services.llm_runs import llm_run_create
from tests.evaluation.llm.helpers import factor_name
from tests.evaluation.llm_fixtures import core_answer, server_config, succeeded

pytestmark = pytest.mark.django_db(transaction=True)
HUMAN = {"d1": 4, "d2": 0, "d3": 2}  # every factor, per dialogue


def dialogue_of(text: str) -> str:
    return "d1" if "seafood" in text else "d2" if "parking" in text else "d3"


@pytest.fixture
def core_study(tiny_benchmark, author, annotator, llm_settings):
    study = study_create(
        benchmark=tiny_benchmark, author=author, title="CoRE ratings",
        spec=StudySpec(forms=("core",), sample_size=10))
    member = study_member_add(study=study, user=annotator)
    now = timezone.now()
    for position, item in enumerate(study.items.filter(mode="conversation"), start=1):
        assignment = Assignment.objects.create(member=member, item=item, position=position,
                                               status="submitted", handed_out_at=now,
                                               last_active_at=now, submitted_at=now)
        score = HUMAN[item.dialogue.external_id]
        Annotation.objects.create(assignment=assignment, item=item, annotator=annotator,
                                  submitted_at=now, updated_at=now,
                                  values={"core": {**dict.fromkeys(FACTOR_KEYS, score),
                                                   "overall": 50}})
    return study


def test_human_factor_scores_are_plain_data_per_factor_and_unit(core_study):
    scores = human_factor_scores(study=core_study)
    assert set(scores) == set(FACTOR_KEYS)
    logs = study_conversation_logs(study=core_study, unit_ids=list(scores["coherence"]))
    assert {log["dialogue_id"] for log in logs.values()} >= {"d1", "d2"}
    for unit, log in logs.items():
        assert scores["coherence"][unit] == HUMAN[log["dialogue_id"]]
        assert log["metadata"]["history_turns"] == 1  # the user's opening turn is context


def test_each_factor_goes_to_the_judge_that_agrees_best_with_the_humans(
        llm_server, log_submission, core_study):
    def judges(request):
        if "<guideline factor=" not in request.prompt_text:
            return core_answer(request)
        human = HUMAN[dialogue_of(request.prompt_text)]
        agrees = (request.model == "judge-b") == (factor_name(request) == "Coherence")
        return f"Counted.\n<rating>{human if agrees else 4 - human}</rating>"

    server = llm_server(judges)
    model_a, model_b = server_config(server, "openai/judge-a"), server_config(server,
                                                                            "openai/judge-b")
    run = succeeded(llm_run_create(submission=log_submission, evaluator="core", model=model_a,
                                   judges=[model_b], use_debate=False, enqueue=False))

    assert run.config["human_study"] == core_study.slug  # found on the benchmark
    routing = run.job.result["routing"]
    assert routing["mode"] == "qwk" and routing["study"] == core_study.slug
    assert routing["choices"]["coherence"]["model"] == "openai/judge-b"
    assert routing["choices"]["coherence"]["qwk"] == pytest.approx(1.0)
    assert {routing["choices"][f]["model"] for f in FACTOR_KEYS if f != "coherence"} == {
        "openai/judge-a"}
    run_prompts = [r for r in server.requests if "known for its crab cakes" in r.prompt_text
                   and "<guideline factor=" in r.prompt_text]
    assert len(run_prompts) == 12
    assert {(factor_name(r), r.model) for r in run_prompts if r.model == "judge-b"} == {
        ("Coherence", "judge-b")}
    assert run.usage["stages"]["routing"]["calls"] > 0
