"""An imported public data set gets the reference-free baselines: the lexical ones at import, the
embedding one from a worker job with progress; both reach the metric leaderboard with intervals
(issue 34, point 3)."""

import json

import pytest
from django.test import Client
from django.urls import reverse

from annotation.imports import public_dataset_import
from evaluation.models import Job, Run
from tests.support.broker import unreachable_broker

pytestmark = pytest.mark.django_db

ASKS = ["a comedy please", "something scary for tonight", "an old western", "a cartoon for kids",
        "a romantic film", "a space adventure"]
ANSWERS = ["Have you seen Airplane! (1980)? It is a very funny comedy.",
           "The weather is nice.", "Try The Good, the Bad and the Ugly, a classic western.",
           "I like trains.", "Casablanca is a romantic classic you could watch tonight.",
           "Bananas are yellow and so is the sun."]


def _conversation(k: int, system: str) -> dict:
    relevant = k % 2 == 0
    return {
        "conv_id": f"{system}_redial_0a1b2c3d-0000-0000-0000-0000000000{k:02d}",
        "dialogue": [
            {"turn_ind": 0, "role": "USER", "utterance": ASKS[k % 6]},
            {"turn_ind": 1, "role": "ASST", "utterance": ANSWERS[k % 6],
             "turn_level_aggregated": {"relevance": 2 if relevant else 0,
                                       "interestingness": 1}},
        ],
        "dial_level_aggregated": {"understanding": 1, "task_completion": int(relevant),
                                  "interest_arousal": 0, "efficiency": 1,
                                  "dialogue_overall": 2 if relevant else 0,
                                  "preference_elicitation": 0, "explanation": 0},
    }


@pytest.fixture
def small_set(tmp_path):
    data = [_conversation(k, system) for system in ("kbrd", "barcor") for k in range(12)]
    path = tmp_path / "crs_arena_eval.json"
    path.write_text(json.dumps(data))
    return path


def test_both_baselines_rank_on_the_metric_leaderboard(small_set, staff, settings, tmp_path,
                                                       django_capture_on_commit_callbacks):
    settings.MEDIA_ROOT = tmp_path / "media"
    with django_capture_on_commit_callbacks(execute=True):
        benchmark, study, summary = public_dataset_import(name="crs_arena_eval", path=small_set,
                                                          author=staff)
    assert summary["reference_free_runs"] == 2
    job = Job.objects.get(pk=summary["embedding_job"])
    assert job.status == Job.Status.SUCCEEDED, job.error
    assert job.stage == "embeddings" and job.done == job.total == 48  # 24 turns + 24 dialogues
    runs = Run.objects.filter(submission__benchmark=benchmark)
    assert sorted(runs.values_list("evaluator", flat=True)) == [
        "reference_free", "reference_free", "reference_free_embedding",
        "reference_free_embedding"]
    board = Client().get(reverse("annotation:metric_board", args=[study.slug]),
                         {"aspect": "relevance"}).content.decode()
    assert "reference_free_embedding" in board and "context_overlap" in board
    csv = Client().get(reverse("annotation:metric_board_download", args=[study.slug, "csv"]),
                       {"aspect": "relevance"}).content.decode().splitlines()
    rows = {line.split(",")[2]: line.split(",") for line in csv[1:]}
    # the answers on topic are the relevant ones: the embedding similarity agrees with people
    assert float(rows["embedding_similarity"][3]) > 0.5


def test_without_a_queue_the_import_keeps_the_lexical_baselines(small_set, staff, settings,
                                                                tmp_path):
    settings.MEDIA_ROOT = tmp_path / "media"
    with unreachable_broker():
        _, _, summary = public_dataset_import(name="crs_arena_eval", path=small_set,
                                              author=staff)
    assert summary["reference_free_runs"] == 2 and summary["embedding_job"] is None
