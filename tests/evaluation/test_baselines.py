"""Reference baselines (Trace Appendix F) on a freshly generated demo benchmark: ordering,
verbatim grounding, valid submissions, no access to gold; and the run_baseline command."""

import copy
import json
from io import StringIO

import pytest
from django.core.management import call_command

from evaluation.lib.demo import generate_demo_bundle
from evaluation.lib.formats.bundle import Bundle, write_bundle
from evaluation.lib.formats.submission import (
    SubmissionReference,
    item_infos,
    reference_dialogue,
    review_infos,
    submitted_turn,
    validate_turn_submission,
    write_turn_submission,
)
from evaluation.lib.metrics.suite import SuiteConfig, evaluate_submission
from evaluation.lib.rankers import BASELINES, baseline_class, generate_submission
from evaluation.models import Job, Run, System
from evaluation.services.reference_rankers import baselines_ensure

SPLIT = "test"


@pytest.fixture(scope="module")
def demo():
    return generate_demo_bundle(seed=42)


@pytest.fixture(scope="module")
def outputs(demo):
    return {name: generate_submission(name, items=demo["items"], reviews=demo["reviews"],
                                      dialogues=demo["dialogues"], splits=[SPLIT])
            for name in BASELINES}


@pytest.fixture(scope="module")
def means(demo, outputs):
    dialogues = [reference_dialogue(d) for d in demo["dialogues"] if d["split"] == SPLIT]
    items, reviews = item_infos(demo["items"]), review_infos(demo["reviews"])
    config = SuiteConfig(text_metrics=False)
    return {name: evaluate_submission(dialogues, items, reviews,
                                      [submitted_turn(line) for line in lines], config).means()
            for name, lines in outputs.items()}


def test_tfidf_beats_popularity_on_recall_at_1(means):
    assert means["tfidf"]["recall@1"] > means["popularity"]["recall@1"] + 0.2


def test_every_baseline_quotes_verbatim_so_gs_is_close_to_1(means):
    for name, values in means.items():
        assert values["gs"] >= 0.99, name
        assert values["gs_exact"] >= 0.99, name
        assert values["cd"] >= 0.05, name  # quotes are a real share of the answer


def test_itinerary_keeps_tfidf_first_choice_and_orders_the_rest_by_route(means, outputs):
    assert means["itinerary"]["recall@1"] == means["tfidf"]["recall@1"]
    first = [line["ranked_item_ids"][0] for line in outputs["itinerary"]]
    assert first == [line["ranked_item_ids"][0] for line in outputs["tfidf"]]
    assert any("For a short walk from there:" in line["response"]
               for line in outputs["itinerary"])


def test_baseline_outputs_are_valid_submissions_citing_real_review_text(demo, outputs, tmp_path):
    reference = SubmissionReference.from_records(items=demo["items"], reviews=demo["reviews"],
                                                 dialogues=demo["dialogues"])
    texts = {review["id"]: review["text"] for review in demo["reviews"]}
    for name, lines in outputs.items():
        path = tmp_path / f"{name}.jsonl"
        write_turn_submission(lines, path)
        summary = validate_turn_submission(path, reference=reference, splits=[SPLIT])
        assert summary.splits == (SPLIT,) and summary.line_count == len(lines)
        for line in lines:
            for citation in line["citations"]:
                assert citation["quote"] in texts[citation["review_id"]]
                assert f'"{citation["quote"]}" [{citation["label"]}]' in line["response"]


def test_baselines_never_read_gold_targets_or_scenarios(demo, outputs):
    blind = copy.deepcopy(demo)
    for dialogue in blind["dialogues"]:
        dialogue["scenario"] = {}
        dialogue["target_item_ids"] = []
        for turn in dialogue["turns"]:
            turn["gold_item_ids"], turn["alternative_item_ids"] = [], []
    for name in ("tfidf", "aspect", "spatial", "itinerary"):
        again = generate_submission(name, items=blind["items"], reviews=blind["reviews"],
                                    dialogues=blind["dialogues"], splits=[SPLIT])
        assert again == outputs[name], name


def test_baseline_names_are_forgiving():
    assert baseline_class("TF-IDF").key == "tfidf"
    assert baseline_class("Hybrid-RRF").key == baseline_class("hybrid").key == "hybrid-rrf"
    with pytest.raises(KeyError):
        baseline_class("oracle")


@pytest.mark.django_db
def test_run_baseline_command_stores_baseline_systems_and_evaluates(demo, tmp_path, settings):
    settings.MEDIA_ROOT = tmp_path / "media"
    settings.NLI_MODEL_PATH = ""
    write_bundle(Bundle(**demo), tmp_path / "demo")
    call_command("import_benchmark", str(tmp_path / "demo"), "--no-progress", stdout=StringIO())
    recall = {}
    for name in ("popularity", "tfidf"):
        out = StringIO()
        call_command("run_baseline", name, "--benchmark", "demo-tourism", "--split", SPLIT,
                     "--no-text", "--json", "--no-progress", stdout=out, stderr=StringIO())
        (result,) = json.loads(out.getvalue())
        assert result["splits"] == [SPLIT] and result["metrics"]["gs"]["value"] >= 0.99
        recall[name] = result["metrics"]["recall@1"]["value"]
    assert recall["tfidf"] > recall["popularity"]
    tfidf = System.objects.get(slug="baseline-tfidf")
    assert tfidf.is_baseline and tfidf.family == "retrieval" and tfidf.name == "TF-IDF"
    assert tfidf.submissions.get().line_count > 100


@pytest.mark.django_db
def test_baselines_ensure_is_idempotent(tiny_benchmark, tmp_path, settings):
    settings.MEDIA_ROOT = tmp_path / "media"
    first = baselines_ensure(benchmark=tiny_benchmark, names=["popularity"],
                             suite_options={"text_metrics": False})
    (_, run, created), = first
    assert created and run.job.status == Job.Status.SUCCEEDED
    assert run.submission.is_public, "reference baselines are public without being published"
    # leaderboards rank one split set at a time (test by default): a test-only run beside it
    test_runs = Run.objects.filter(submission=run.submission, config__splits=["test"])
    assert run.config["splits"] != ["test"] and test_runs.count() == 1
    assert test_runs.get().job.status == Job.Status.SUCCEEDED
    (_, again, created), = baselines_ensure(benchmark=tiny_benchmark, names=["popularity"])
    assert not created and again.pk == run.pk and test_runs.count() == 1
    assert System.objects.filter(is_baseline=True).count() == 1


def test_without_an_embedding_model_dense_says_why_and_hybrid_fuses_three_rankers(tmp_path):
    from evaluation.lib.rankers import EmbeddingsUnavailable, SentenceEncoder
    from tests.support.bundles import tiny_data

    data = tiny_data()
    missing = SentenceEncoder(tmp_path / "no-model")
    with pytest.raises(EmbeddingsUnavailable, match="could not load"):
        generate_submission("dense", items=data["items"], reviews=data["reviews"],
                            dialogues=data["dialogues"], encoder=missing)
    lines = generate_submission("hybrid-rrf", items=data["items"], reviews=data["reviews"],
                                dialogues=data["dialogues"], encoder=missing)
    assert [(line["dialogue_id"], line["turn_index"]) for line in lines] == [
        ("d1", 1), ("d1", 3), ("d2", 1), ("d3", 1)]
