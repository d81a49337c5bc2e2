"""Label these next: a study that hands items out by the active policy (statistics.md, "Label
these next: active handout"; annotation/services/handout_policy.py).

On a benchmark of 16 one-turn dialogues answered by two systems (32 response items) and an
evaluator metric `quality` that scored every item: setting the policy (each bad choice refused
on its own field, nothing stored), the waves (wave 1 uniform, later ones active, each drawn
item's π and wave stored; wave 1 active too when the judge stored its uncertainty), the handout
(only drawn items, the next wave once the last is labelled, two annotators at once at a wave's
end), the weighted report against a hand computation, the exports. The two hand-out tests run
again on SQLite (tests/test_on_sqlite.py)."""

import copy
import csv
import io
import json
import threading

import numpy as np
import pytest
from django.contrib.auth.models import Group, User
from django.core.cache import cache
from django.core.exceptions import ValidationError
from django.core.files.base import ContentFile
from django.db import close_old_connections, connection
from django.urls import reverse

from annotation import report_selectors
from annotation.models import (
    Annotation,
    Assignment,
    HandoutDraw,
    HandoutWave,
    Study,
    StudyItem,
)
from annotation.selectors import item_layout, study_export_rows
from annotation.services.annotations import annotation_submit
from annotation.services.handout import assignment_next
from annotation.services.handout_policy import HandoutChoice, handout_policy_set
from annotation.services.members import study_member_add
from core.roles import STUDY_AUTHOR
from evaluation.models import Job, Run, Submission, System, UnitScore
from evaluation.services.benchmarks import benchmark_import
from tests.support.bundles import tiny_data, write_tiny

from .conftest import full_answers, make_study

DIALOGUES = 16
SYSTEMS = (("alpha-crs", "Alpha CRS"), ("beta-crs", "Beta CRS"))
ASPECT = "likert.naturalness"
JUDGE = "external:judge"


def human(system: int, dialogue: int) -> int:
    """The naturalness an annotator gives: 1–5, uneven across items."""
    return 1 + (dialogue * 7 + system * 3) % 5


def judge(system: int, dialogue: int) -> float:
    """The evaluator's score: close to the humans on most items, far on every third."""
    return human(system, dialogue) * 0.8 + (1.5 if dialogue % 3 == 0 else 0.1 * system)


def wide_data() -> dict:
    data = tiny_data()
    template = data["dialogues"][1]  # one user turn, one system turn citing a review
    data["dialogues"] = [{**copy.deepcopy(template), "id": f"w{n:02d}", "split": "test"}
                         for n in range(DIALOGUES)]
    return data


def make_world(tmp_path, owner) -> tuple:
    """The benchmark, the two systems' submissions and the evaluator's runs: `quality` on every
    item, `partial` on all but two, `dialogue_score` on dialogues."""
    benchmark = benchmark_import(path=write_tiny(tmp_path / "wide", wide_data()))
    submissions = []
    for n, (slug, name) in enumerate(SYSTEMS):
        system = System.objects.create(slug=slug, name=name, owner=owner)
        lines = "".join(json.dumps({
            "dialogue_id": f"w{d:02d}", "turn_index": 1,
            "response": f'{name} {d}: Old City Inn has "free parking" [R1].',
            "ranked_item_ids": ["h1"],
            "citations": [{"label": "R1", "review_id": "v4", "quote": "free parking"}]}) + "\n"
            for d in range(DIALOGUES))
        submission = Submission(uuid=f"00000000-0000-0000-0000-0000000001{n:02d}",
                                system=system, benchmark=benchmark, protocol="turn",
                                line_count=DIALOGUES, created_by=owner, is_public=True)
        submission.file.save("sub.jsonl", ContentFile(lines.encode()), save=False)
        submission.save()
        submissions.append(submission)
        job = Job.objects.create(kind=Job.Kind.EVALUATION, status=Job.Status.SUCCEEDED)
        run = Run.objects.create(submission=submission, evaluator=JUDGE, evaluator_version="1",
                                 config={}, config_hash="x", job=job)
        scores = [UnitScore(run=run, metric="quality", unit_type="turn", unit_id=f"w{d:02d}#1",
                            dialogue_id=f"w{d:02d}", value=judge(n, d))
                  for d in range(DIALOGUES)]
        scores += [UnitScore(run=run, metric="partial", unit_type="turn",
                             unit_id=f"w{d:02d}#1", dialogue_id=f"w{d:02d}", value=1.0)
                   for d in range(DIALOGUES) if not (n == 1 and d < 2)]
        scores += [UnitScore(run=run, metric="dialogue_score", unit_type="dialogue",
                             unit_id=f"w{d:02d}", dialogue_id=f"w{d:02d}", value=1.0)
                   for d in range(DIALOGUES)]
        UnitScore.objects.bulk_create(scores)
    return benchmark, submissions


@pytest.fixture(autouse=True)
def fresh_cache():
    cache.clear()  # the reports are cached under the study's fingerprint
    yield
    cache.clear()


@pytest.fixture
def world(db, tmp_path, author, media_root):
    return make_world(tmp_path, author)


def new_study(world, author, **options) -> Study:
    benchmark, submissions = world
    return make_study(benchmark, author, submissions=submissions,
                      **{"forms": ("likert",), "include_reference": False,
                         "sample_size": DIALOGUES, "overlap_k": 1, "tie_break_extra": False,
                         **options})


@pytest.fixture
def study(world, author):
    return new_study(world, author)


def active(budget=12, **over) -> HandoutChoice:
    return HandoutChoice(**{"policy": "active", "evaluator": JUDGE, "metric": "quality",
                            "aspect": ASPECT, "budget": budget, **over})


def label(assignment) -> None:
    item = assignment.item
    system = [name for _, name in SYSTEMS].index(item.system.name)
    dialogue = int(item.dialogue.external_id[1:])
    data = full_answers(item_layout(item, item.study))
    if item.mode == "response":
        data["likert-naturalness"] = str(human(system, dialogue))
    assert annotation_submit(assignment=assignment, data=data, focused_ms=1000).errors == []


def drain(member) -> list:
    got = []
    while (assignment := assignment_next(member=member)) is not None:
        got.append(assignment)
        label(assignment)
    return got


BAD_CHOICES = [
    (active(evaluator=""), "evaluator", "Name the evaluator whose scores drive"),
    (active(evaluator="external:nobody"), "evaluator", "No finished run of 'external:nobody'"),
    (active(metric="nope"), "metric", "external:judge has no metric 'nope'"),
    (active(metric="partial"), "metric",
     "scores 30 of the study's 32 response items; the active handout needs a score on every one"),
    (active(metric="dialogue_score"), "metric", "the study has no conversation items"),
    (active(aspect="likert.nope"), "aspect", "not 'likert.nope'"),
    (active(aspect=""), "aspect", "likert.informativeness, likert.naturalness"),
    (active(budget=0), "budget", "between 1 and 32"),
    (active(budget=33), "budget", "between 1 and 32"),
    (active(budget=None), "budget", "between 1 and 32"),
    (HandoutChoice(policy="sometimes"), "policy", "Choose 'uniform' or 'active'"),
]


@pytest.mark.parametrize(("choice", "field", "message"), BAD_CHOICES)
def test_a_bad_choice_is_refused_on_its_field_and_nothing_is_stored(study, choice, field,
                                                                    message):
    with pytest.raises(ValidationError) as refused:
        handout_policy_set(study=study, choice=choice)
    assert list(refused.value.message_dict) == [field]
    assert message in refused.value.message_dict[field][0]
    study.refresh_from_db()
    assert study.handout_policy == "uniform" and study.handout_metric == ""
    assert not HandoutWave.objects.filter(study=study).exists()


def test_setting_the_policy_draws_a_uniform_first_wave_and_then_it_stays_active(study):
    study = handout_policy_set(study=study, choice=active(budget=12))
    assert (study.handout_policy, study.handout_aspect, study.handout_budget) == \
        ("active", ASPECT, 12)
    (wave,) = HandoutWave.objects.filter(study=study)
    assert (wave.number, wave.of, wave.rule) == (1, 4, "uniform")
    draws = list(HandoutDraw.objects.filter(wave=wave))
    assert len(draws) == wave.units == 8  # a quarter of each system's 16 items
    assert all(d.pi == pytest.approx(12 / 32) for d in draws)
    assert wave.drawn == sum(d.drawn for d in draws)
    with pytest.raises(ValidationError, match="stays active"):
        handout_policy_set(study=study, choice=HandoutChoice())
    study = handout_policy_set(study=study, choice=active(budget=20))  # the budget may change
    assert study.handout_budget == 20 and HandoutWave.objects.filter(study=study).count() == 1
    Study.objects.filter(pk=study.pk).update(is_open=False)
    with pytest.raises(ValidationError, match="closed"):
        handout_policy_set(study=study, choice=active(budget=24))


def test_a_study_created_with_a_bad_active_choice_is_not_created(world, author):
    before = Study.objects.count()
    with pytest.raises(ValidationError) as refused:
        new_study(world, author, handout=active(metric="partial"))
    assert "scores 30 of" in refused.value.message_dict["metric"][0]
    assert Study.objects.count() == before and not StudyItem.objects.filter(
        study__title="Tiny study").exists()
    study = new_study(world, author, handout=active(budget=8))
    assert study.handout_policy == "active" and study.handout_waves.count() == 1


def test_the_settings_page_names_the_field_at_fault(client, study, author, annotator):
    url = reverse("annotation:study_handout", args=[study.slug])
    client.force_login(author)
    page = client.get(url)
    assert page.status_code == 200
    assert b'id="handout-choices"' in page.content and b"quality" in page.content
    response = client.post(url, {"handout_policy": "active", "handout_metric": "quality",
                                 "handout_budget": "10"})
    assert response.status_code == 400
    assert "Name the evaluator whose scores drive the active handout." in \
        response.context["form"].errors["handout_evaluator"]
    response = client.post(url, {"handout_policy": "active", "handout_evaluator": JUDGE,
                                 "handout_metric": "partial", "handout_aspect": ASPECT,
                                 "handout_budget": "10"})
    assert response.status_code == 400
    assert "scores 30 of the study's 32" in response.context["form"].errors["handout_metric"][0]
    assert not HandoutWave.objects.filter(study=study).exists()
    response = client.post(url, {"handout_policy": "active", "handout_evaluator": JUDGE,
                                 "handout_metric": "quality", "handout_aspect": ASPECT,
                                 "handout_budget": "10"})
    assert response.status_code == 302
    dashboard = client.get(reverse("annotation:study_dashboard", args=[study.slug]))
    text = dashboard.content.decode()
    assert "Hand-out policy: active" in text and "Wave <strong>1 of 4</strong>" in text
    drawn = HandoutWave.objects.get(study=study).drawn
    assert f"{drawn} / 32</span><span class=\"tile-label\">items drawn for labelling" in text
    assert f"<strong>{drawn}</strong> label{'s' if drawn != 1 else ''} left" in text
    assert 'id="handout-uncertain"' in text and "#label-plan-uncertain" in text
    client.force_login(annotator)
    study_member_add(study=study, user=annotator)
    assert client.post(url, {"handout_policy": "uniform"}).status_code == 403


def test_the_creation_form_shows_a_bad_choice_on_its_field(client, world, author):
    benchmark, submissions = world
    data = {"title": "Active study", "benchmark": benchmark.slug, "task_forms": ["likert"],
            "submissions": [s.pk for s in submissions], "sample_size": DIALOGUES, "seed": 0,
            "stratify": "", "overlap_k": 1, "calibration_count": 0, "gold_count": 0,
            "gold_rate": 0, "gold_pass_threshold": 0.7, "seconds_per_item": 90,
            "assignment_timeout_minutes": 30, "likert_scales": "", "instructions": "",
            "handout_policy": "active", "handout_evaluator": JUDGE,
            "handout_metric": "quality", "handout_aspect": ASPECT, "handout_budget": 40}
    client.force_login(author)
    response = client.post(reverse("annotation:study_create"), data)
    assert response.status_code == 200
    assert "between 1 and 32" in response.context["form"].errors["handout_budget"][0]
    assert not Study.objects.filter(title="Active study").exists()
    response = client.post(reverse("annotation:study_create"), {**data, "handout_budget": 16})
    assert response.status_code == 302
    assert Study.objects.get(title="Active study").handout_waves.count() == 1


def test_a_judge_that_stores_its_uncertainty_drives_wave_one(study):
    """Where the judge stored its own uncertainty on the units (UnitScore.detail["uncertainty"]
    ["sd"], as FACE does), wave 1 is already active: each system's wave-1 π is
    inclusion_probabilities of the prior ê (active.error_model with no label: ê² = mean(u²) +
    u²), spending 12 × (its items) / 32; the stored ê is that prior; not uniform."""
    from evaluation.lib.stats import active as active_stats

    def reported(dialogue: int) -> float:
        return 1.5 if dialogue % 3 == 0 else 0.2 + 0.05 * (dialogue % 4)

    for score in UnitScore.objects.filter(run__evaluator=JUDGE, metric="quality"):
        score.detail = {"uncertainty": {"sd": reported(int(score.dialogue_id[1:])),
                                        "source": "test"}}
        score.save(update_fields=["detail"])
    study = handout_policy_set(study=study, choice=active(budget=12))
    (wave,) = HandoutWave.objects.filter(study=study)
    assert (wave.number, wave.rule, wave.labels_used) == (1, "active", 0)
    draws = {d.item_id: d for d in HandoutDraw.objects.filter(wave=wave)}
    for n, (_, name) in enumerate(SYSTEMS):
        items = list(StudyItem.objects.filter(study=study, system__name=name, mode="response")
                     .select_related("dialogue").order_by("dialogue__external_id"))
        dialogues = [int(item.dialogue.external_id[1:]) for item in items]
        model = active_stats.error_model([judge(n, d) for d in dialogues], [], [],
                                         uncertainty=[reported(d) for d in dialogues])
        assert model.predictor == "prior"
        chunk = [i for i, item in enumerate(items) if item.pk in draws]
        expected = active_stats.inclusion_probabilities(model.error[chunk],
                                                        12 * len(chunk) / 32)
        assert [draws[items[i].pk].pi for i in chunk] == pytest.approx(list(expected))
        assert [draws[items[i].pk].predicted_error for i in chunk] == pytest.approx(
            list(model.error[chunk]))
    assert max(d.pi for d in draws.values()) > 1.5 * min(d.pi for d in draws.values())


def test_only_drawn_items_are_handed_out_wave_by_wave_and_each_records_its_pi(study, annotator):
    study = handout_policy_set(study=study, choice=active(budget=12))
    got = drain(study_member_add(study=study, user=annotator))
    waves = list(HandoutWave.objects.filter(study=study).order_by("number"))
    assert [(w.number, w.rule) for w in waves] == [(1, "uniform"), (2, "active"),
                                                   (3, "active"), (4, "active")]
    draws = {d.item_id: d for d in HandoutDraw.objects.filter(wave__study=study)
             .select_related("wave")}
    assert len(draws) == 32  # every pool item was considered in exactly one wave
    handed = [a.item_id for a in got]
    assert sorted(handed) == sorted(pk for pk, d in draws.items() if d.drawn)
    assert not Annotation.objects.filter(item__study=study).exclude(item_id__in=handed).exists()
    numbers = [draws[pk].wave.number for pk in handed]
    assert numbers == sorted(numbers)  # a wave only after the one before was labelled
    for wave in waves:
        mine = [d for d in draws.values() if d.wave_id == wave.pk]
        assert sum(d.pi for d in mine) == pytest.approx(12 * len(mine) / 32)
        assert wave.budget == pytest.approx(sum(d.pi for d in mine))
        assert all(0 < d.pi <= 1 for d in mine)
    assert all((d.predicted_error is None) == (d.wave.number == 1) for d in draws.values())
    assert waves[1].labels_used == waves[0].drawn
    # the long-format export carries every labelled item's wave and π
    rows = list(study_export_rows(study=study))
    positions = dict(StudyItem.objects.filter(study=study).values_list("position", "pk"))
    for row in rows:
        draw = draws[positions[row["item"]]]
        assert (row["handout_wave"], row["inclusion_probability"]) == (draw.wave.number,
                                                                      draw.pi)


def hand_estimate(f, pi, xi, y):
    """The active-inference mean by its formula (one unit a dialogue): λ and the intercept c
    tuned together (least squares of −Y w on f (1 − w) and 1 − w; λ clipped to [0, 1], then c
    refitted), the summands Z = Y w + (λ f + c)(1 − w), their mean and the normal interval's
    half-width; and the Horvitz–Thompson mean."""
    w = np.where(xi, 1 / pi, 0.0)
    a, b, d = y * w, f * (1 - w), 1 - w
    design = np.column_stack([b - b.mean(), d - d.mean()])
    lam, _ = np.linalg.lstsq(design, -(a - a.mean()), rcond=None)[0]
    lam = float(np.clip(lam, 0, 1))
    rest = a + lam * b
    c = -np.mean((rest - rest.mean()) * (d - d.mean())) / np.var(d)
    z = rest + c * d
    return z.mean(), 1.959964 * z.std(ddof=1) / np.sqrt(len(z)), lam, a.mean()


def test_the_report_weights_each_label_by_one_over_pi(client, study, annotator, author):
    study = handout_policy_set(study=study, choice=active(budget=20))
    drain(study_member_add(study=study, user=annotator))
    report = report_selectors.study_anchored(study=study, evaluator=JUDGE, aspect=ASPECT,
                                             metric="quality")
    assert report["policy"] == "active"
    assert report["estimator"] == "active inference (Zrnic & Candès 2024), IPW"
    draws = HandoutDraw.objects.filter(wave__study=study).select_related(
        "item__system", "item__dialogue")
    for s, (_, name) in enumerate(SYSTEMS):
        mine = sorted((d for d in draws if d.item.system.name == name),
                      key=lambda d: d.item.dialogue.external_id)
        dialogues = [int(d.item.dialogue.external_id[1:]) for d in mine]
        f = np.array([judge(s, n) for n in dialogues])
        pi = np.array([d.pi for d in mine])
        xi = np.array([d.drawn for d in mine])
        y = np.array([human(s, n) if d.drawn else 0 for n, d in zip(dialogues, mine,
                                                                    strict=True)], float)
        value, half, lam, horvitz_thompson = hand_estimate(f, pi, xi, y)
        row = next(r for r in report["systems"] if r["system"] == name)
        assert row["ppi"]["method"] == "active_ipw_mean"
        assert row["ppi"]["mean"] == pytest.approx(value)
        assert row["ppi"]["ci"][1] - row["ppi"]["mean"] == pytest.approx(half, rel=1e-5)
        assert row["lambda"] == pytest.approx(lam)
        assert row["human_only"]["mean"] == pytest.approx(horvitz_thompson)
        assert row["n_labelled"] == xi.sum() and row["n_labelled"] + row["n_unlabelled"] == 16
    labelled = [d for d in report["draws"] if d["drawn"]]
    assert len(labelled) == sum(d.drawn for d in draws) and all(d["in_estimate"]
                                                                for d in labelled)
    client.force_login(author)
    page = client.get(reverse("annotation:study_report", args=[study.slug]),
                      {"evaluator": JUDGE, "aspect": ASPECT, "metric": "quality"})
    text = page.content.decode()
    assert "Human-anchored system scores (active inference (Zrnic &amp; Candès 2024), IPW)" \
        in text
    assert 'data-study-policy="active"' in text and "hands items out by the active policy" in text
    assert 'id="anchored-draws"' in text
    download = client.get(reverse("annotation:study_report_download",
                                  args=[study.slug, "anchored", "csv"]),
                          {"evaluator": JUDGE, "aspect": ASPECT, "metric": "quality"})
    body = download.content.decode()
    assert "# anchored_draws" in body
    block = body.split("# anchored_draws\n", 1)[1]
    header, *rows = list(csv.reader(io.StringIO(block)))
    assert header == ["system", "unit_id", "wave", "pi", "label", "in_estimate"]
    assert len(rows) == len(labelled)


def test_labels_of_items_the_policy_did_not_draw_from_keep_the_unweighted_report(world,
                                                                                  author,
                                                                                  annotator):
    """A study of responses (Likert) and conversations (FACE), active on the turn-level metric:
    the conversations are handed out as under uniform, so FACE's turn-level labels (the same
    turn units) are reported with unweighted PPI++, the Likert ones with the weights."""
    study = new_study(world, author, forms=("likert", "face"), handout=active(budget=16))
    got = drain(study_member_add(study=study, user=annotator))
    conversations = StudyItem.objects.filter(study=study, mode="conversation")
    assert {a.item_id for a in got} >= set(conversations.values_list("pk", flat=True))
    face = report_selectors.study_anchored(study=study, evaluator=JUDGE,
                                           aspect="face.relevance", metric="quality")
    assert face["policy"] == "uniform" and face["systems"][0]["ppi"]["method"] == "ppi_mean"
    likert = report_selectors.study_anchored(study=study, evaluator=JUDGE, aspect=ASPECT,
                                             metric="quality")
    assert likert["policy"] == "active"


def test_a_uniform_study_keeps_its_unweighted_report_and_export(client, study, annotator,
                                                                author):
    drain(study_member_add(study=study, user=annotator))
    assert Annotation.objects.filter(item__study=study).count() == 32  # every item
    report = report_selectors.study_anchored(study=study, evaluator=JUDGE, aspect=ASPECT,
                                             metric="quality")
    assert report["policy"] == "uniform" and "draws" not in report
    assert report["systems"][0]["ppi"]["method"] == "ppi_mean"
    assert "handout_wave" not in next(study_export_rows(study=study))
    client.force_login(author)
    text = client.get(reverse("annotation:study_dashboard", args=[study.slug])).content.decode()
    assert "Hand-out policy: uniform" in text
    page = client.get(reverse("annotation:study_report", args=[study.slug]),
                      {"evaluator": JUDGE, "aspect": ASPECT, "metric": "quality"})
    assert "Human-anchored system scores (PPI++)" in page.content.decode()
    assert 'data-study-policy="uniform"' in page.content.decode()


@pytest.mark.django_db(transaction=True)
def test_annotators_asking_at_once_at_a_waves_end_get_one_new_wave_and_distinct_items(
        tmp_path, settings):
    """Wave 1 is labelled; four annotators ask for their next item at the same moment: wave 2
    is drawn once (under the study row's lock), each gets a different drawn item of it, and no
    item holds more than its one label slot."""
    settings.MEDIA_ROOT = tmp_path / "media"
    owner = User.objects.create_user("owner")
    owner.groups.add(Group.objects.get_or_create(name=STUDY_AUTHOR)[0])
    study = new_study(make_world(tmp_path, owner), owner, handout=active(budget=24))
    first = study_member_add(study=study, user=User.objects.create_user("first"))
    wave_one = HandoutWave.objects.get(study=study).drawn
    for _ in range(wave_one):
        label(assignment_next(member=first))
    members = [study_member_add(study=study, user=User.objects.create_user(f"a{n}"))
               for n in range(4)]
    barrier, results, errors = threading.Barrier(len(members)), [], []

    def ask(member):
        close_old_connections()
        try:
            barrier.wait()
            results.append(assignment_next(member=member))
        except Exception as error:  # noqa: BLE001 (reported by the assertion below)
            errors.append(error)
        finally:
            connection.close()

    threads = [threading.Thread(target=ask, args=(m,)) for m in members]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    assert errors == [] and len(results) == len(members)
    assert HandoutWave.objects.filter(study=study).count() == 2
    drawn_two = set(HandoutDraw.objects.filter(wave__study=study, wave__number=2, drawn=True)
                    .values_list("item_id", flat=True))
    items = [a.item_id for a in results if a is not None]
    assert len(items) == len(set(items)) == min(len(members), len(drawn_two))
    assert set(items) <= drawn_two
    for item in StudyItem.objects.filter(study=study):
        held = Assignment.objects.filter(item=item, status__in=["active", "submitted"]).count()
        assert held <= item.target_labels
