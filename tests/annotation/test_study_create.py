"""Creating a study: sampling, snapshots, blinding map, calibration and gold items."""

import pytest
from django.core.exceptions import ValidationError
from django.db import IntegrityError
from django.urls import reverse

from annotation.lib import taskforms
from annotation.models import BlindingEntry, Study, StudyItem
from annotation.services.demo import DEMO_STUDY_SLUG, demo_study_create
from annotation.services.studies import FABRICATED_CLAIMS
from evaluation.models import Dialogue, Submission

from .conftest import SYSTEM_NAMES, make_study

pytestmark = pytest.mark.django_db


def test_a_study_from_reference_turns_snapshots_context_response_and_citations(study):
    items = list(study.items.filter(kind="normal").order_by("position"))
    assert {(i.dialogue.external_id, i.turn_index) for i in items} <= {("d1", 1), ("d1", 3),
                                                                       ("d2", 1)}
    assert len({i.dialogue_id for i in items}) == 2  # one turn per sampled dialogue
    d2 = next(i for i in items if i.dialogue.external_id == "d2")
    assert d2.response_text == 'Old City Inn has "free parking" [R1].'
    assert d2.citations == [{"label": "R1", "review_id": "v4", "quote": "free parking"}]
    assert [t["text"] for t in d2.context] == ["A hotel with parking?"]
    assert d2.system is None and d2.blind.letter == "A" and d2.target_labels == study.overlap_k
    assert study.invite_token and study.likert_scales == list(taskforms.DEFAULT_LIKERT_SCALES)
    assert "Citation check" in study.instructions


def test_the_hidden_split_is_never_sampled(tiny_benchmark, author):
    study = make_study(tiny_benchmark, author, sample_size=50, gold_count=4,
                       calibration_count=2)
    hidden = Dialogue.objects.get(benchmark=tiny_benchmark, external_id="d3")
    assert not study.items.filter(dialogue=hidden).exists()
    with pytest.raises(ValidationError):  # only the benchmark's owner may ask for them
        make_study(tiny_benchmark, author, splits=("hidden",))


def test_submissions_are_blinded_by_a_stored_random_permutation_per_dialogue(
        tiny_benchmark, author, submissions):
    study = make_study(tiny_benchmark, author, submissions=submissions)
    for dialogue_id in {i.dialogue_id for i in study.items.all()}:
        entries = BlindingEntry.objects.filter(study=study, dialogue_id=dialogue_id)
        assert sorted(e.letter for e in entries) == ["A", "B", "C"]
        assert {e.system.slug if e.system else None for e in entries} == {
            None, *SYSTEM_NAMES}
    normal = study.items.filter(kind="normal", mode="response")
    assert normal.count() == 6  # 2 dialogues x 3 systems
    for item in normal:
        assert item.blind.dialogue_id == item.dialogue_id
        assert item.blind.system_id == item.system_id
    with pytest.raises(IntegrityError):
        entry = BlindingEntry.objects.filter(study=study).first()
        BlindingEntry.objects.create(study=study, dialogue=entry.dialogue, letter=entry.letter,
                                     source_key="another")


def test_pairwise_items_pair_every_two_systems_on_the_same_turn(tiny_benchmark, author,
                                                                 submissions):
    study = make_study(tiny_benchmark, author, forms=["pairwise"], submissions=submissions)
    pairs = study.items.filter(mode="pairwise")
    assert pairs.count() == 2 * 3
    for item in pairs:
        assert item.response_text and item.response_b_text
        assert item.blind.letter != item.blind_b.letter


def test_conversation_items_rate_only_the_systems_own_turns(tiny_benchmark, author,
                                                             submissions):
    study = make_study(tiny_benchmark, author, forms=["core", "face"],
                       submissions=submissions[:1])
    d1 = [i for i in study.items.filter(mode="conversation") if i.dialogue.external_id == "d1"]
    reference = next(i for i in d1 if i.system is None)
    system = next(i for i in d1 if i.system is not None)
    assert [t["index"] for t in reference.context if t["rated"]] == [1, 3]
    assert [t["text"][:8] for t in system.context if t["rated"]] == ["Answer 0", "Answer 0"]
    assert system.context[0]["text"] == "I want quiet seafood."


def test_gold_and_calibration_items_carry_expected_answers(tiny_benchmark, author):
    study = make_study(tiny_benchmark, author, forms=["citation", "recommend"],
                       calibration_count=1, gold_count=2)
    gold = list(study.items.filter(kind="gold", mode="response").order_by("position"))
    assert len(gold) == 2
    assert all(set(g.expected.values()) <= {"supported", "not_supported"} for g in gold)
    corrupted = [g for g in gold if "not_supported" in g.expected.values()]
    assert len(corrupted) == 1
    assert "fabricated" in corrupted[0].reference["built_from"]
    assert any(claim in corrupted[0].response_text for claim in FABRICATED_CLAIMS)
    rec_gold = study.items.filter(kind="gold", mode="recommend").first()
    assert rec_gold.expected["recommend.items"]
    assert study.items.filter(kind="calibration").count() == 2
    assert study.config["gold_items"] == 2 and study.config["calibration_items"] == 1
    with pytest.raises(IntegrityError):
        StudyItem.objects.filter(pk=rec_gold.pk).update(expected={})


def test_invalid_requests_are_refused(tiny_benchmark, author, submissions):
    with pytest.raises(ValidationError):
        make_study(tiny_benchmark, author, forms=["nonsense"])
    with pytest.raises(ValidationError):
        make_study(tiny_benchmark, author, forms=["likert"], likert_scales=[{"key": "x"}])
    with pytest.raises(ValidationError):
        make_study(tiny_benchmark, author, forms=["pairwise"])  # one system only
    Submission.objects.filter(pk=submissions[0].pk).update(protocol="log")
    with pytest.raises(ValidationError):
        make_study(tiny_benchmark, author, submissions=submissions)


def test_database_rejects_impossible_study_settings(study):
    with pytest.raises(IntegrityError):
        Study.objects.filter(pk=study.pk).update(overlap_k=0)


def test_demo_study_is_built_once_with_the_demo_annotators(tiny_benchmark, author, annotator,
                                                            other_annotator):
    first = demo_study_create(benchmark=tiny_benchmark, author=author,
                              annotators=[annotator, other_annotator])
    again = demo_study_create(benchmark=tiny_benchmark, author=author,
                              annotators=[annotator])
    assert first.pk == again.pk and first.slug == DEMO_STUDY_SLUG
    assert set(first.members.values_list("user__username", flat=True)) == {"annotator",
                                                                           "annotator2"}
    assert first.items.filter(mode="recommend").exists()


def test_an_author_creates_a_study_in_the_browser_form(client, author, tiny_benchmark):
    client.force_login(author)
    response = client.post(reverse("annotation:study_create"), {
        "title": "Form study", "benchmark": "tiny", "task_forms": ["citation", "likert"],
        "include_reference": "on", "sample_size": "5", "seed": "1", "stratify": "",
        "overlap_k": "2", "calibration_count": "0", "gold_count": "1", "gold_rate": "0.1",
        "gold_pass_threshold": "0.7", "seconds_per_item": "60",
        "assignment_timeout_minutes": "20", "likert_scales": "", "instructions": "# Hello"})
    study = Study.objects.get(title="Form study")
    assert response.status_code == 302 and response["Location"].endswith(
        f"/studies/{study.slug}/dashboard/")
    assert study.overlap_k == 2 and study.instructions == "# Hello"
    assert study.items.filter(kind="gold").count() == 1


def test_the_create_form_reports_bad_likert_json(client, author, tiny_benchmark):
    client.force_login(author)
    response = client.post(reverse("annotation:study_create"), {
        "title": "x", "benchmark": "tiny", "task_forms": ["likert"], "include_reference": "on",
        "sample_size": "5", "seed": "1", "overlap_k": "2", "calibration_count": "0",
        "gold_count": "0", "gold_rate": "0.1", "gold_pass_threshold": "0.7",
        "seconds_per_item": "60", "assignment_timeout_minutes": "20",
        "likert_scales": "[{\"key\": \"x\", \"min\": 5, \"max\": 1}]"})
    assert response.status_code == 200 and b"min and max must be integers" in response.content
    assert not Study.objects.exists()


def test_only_study_authors_may_create_studies(client, annotator):
    client.force_login(annotator)
    assert client.get(reverse("annotation:study_create")).status_code == 403
