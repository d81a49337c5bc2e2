"""Studies from an arena's battles (docs/arena.md, "Studies from battles"): the battle sides
stored as CRSArena-Dial's conversations are, one conversation item per side, blinded."""

import uuid

import pytest
from django.core.exceptions import ValidationError
from django.urls import reverse

from annotation.arena_studies import arena_study_create
from annotation.lib import taskforms
from annotation.models import Assignment, BlindingEntry, Study, StudyItem
from annotation.selectors import item_layout
from annotation.services.annotations import annotation_submit
from annotation.services.handout import assignment_next
from annotation.services.members import study_member_add
from evaluation.models import (
    Arena,
    Battle,
    BattleTurn,
    Benchmark,
    Dialogue,
    Submission,
    System,
    Vote,
)

from .conftest import full_answers

pytestmark = pytest.mark.django_db

NAMES = ("Quokka Secret Recommender", "Wombat Hidden Advisor", "Numbat Covert Guide")


def make_battle(arena, a, b, *, outcome="a", answers=("A says hi", "B says hi"), failed_b=False,
                status=Battle.Status.VOTED, position=None):
    battle = Battle.objects.create(uuid=uuid.uuid4(), arena=arena, system_a=a, system_b=b,
                                   session_key="s", scenario={"dialogue_id": "d1"},
                                   status=status)
    BattleTurn.objects.create(battle=battle, index=0, side="user", text="Somewhere quiet?")
    BattleTurn.objects.create(battle=battle, index=0, side="a", text=answers[0])
    if failed_b:
        BattleTurn.objects.create(battle=battle, index=0, side="b", state="error",
                                  error_kind="timeout", error=f"{b.name} timed out")
    else:
        BattleTurn.objects.create(battle=battle, index=0, side="b", text=answers[1])
    if status == Battle.Status.VOTED:
        Vote.objects.create(arena=arena, battle=battle, system_a=a, system_b=b, outcome=outcome,
                            position=Vote.objects.filter(arena=arena).count()
                            if position is None else position)
    return battle


@pytest.fixture
def systems(researcher):
    return [System.objects.create(slug=f"secret-{n}", name=name, owner=researcher)
            for n, name in enumerate(NAMES)]


@pytest.fixture
def arena(tiny_benchmark, systems, media_root):
    arena = Arena.objects.create(slug="tiny", name="Tiny arena", benchmark=tiny_benchmark)
    arena.systems.add(*systems)
    x, y, z = systems
    make_battle(arena, x, y, answers=("Harbor Grill is quiet.", "Noodle Nook is cheap."))
    make_battle(arena, y, z, outcome="b", failed_b=True)
    make_battle(arena, z, x, outcome="tie")
    make_battle(arena, x, z, status=Battle.Status.OPEN)  # not finished: not in the study
    return arena


def test_a_study_from_battles_has_one_blinded_conversation_per_battle_side(
        client, arena, author, annotator, systems):
    study = arena_study_create(arena=arena, author=author, title="Battle satisfaction",
                               forms=(taskforms.FACE,), overlap_k=1)
    benchmark = study.benchmark
    assert not benchmark.is_public and benchmark.owner == author
    assert study.config["arena_id"] == arena.pk and study.config["battles"] == 3
    # CRSArena-Dial's representation: one dialogue per conversation (battle side) and one
    # public `log` submission per system, on a `log` benchmark.
    assert benchmark.dialogues.count() == 6
    assert sorted(Submission.objects.filter(benchmark=benchmark).values_list(
        "system__name", "protocol")) == sorted((name, "log") for name in NAMES)
    items = list(study.items.order_by("position"))
    assert len(items) == 6 and {i.mode for i in items} == {StudyItem.Mode.CONVERSATION}
    assert sorted(i.system.name for i in items) == sorted(NAMES * 2)
    for item in items:
        assert item.blind.letter == "A" and item.blind.system_id == item.system_id
        assert [t["role"] for t in item.context] == ["user", "system"]
        assert item.context[1]["rated"] is True
    first = Battle.objects.filter(status="voted").order_by("created_at").first()
    side_a = Dialogue.objects.get(benchmark=benchmark, external_id=f"{first.uuid}-a")
    assert [t.text for t in side_a.turns.order_by("index")] == ["Somewhere quiet?",
                                                                "Harbor Grill is quiet."]
    failed = StudyItem.objects.get(study=study, context__1__text="(no answer: timeout)")
    assert failed.system.name == NAMES[2]
    assert BlindingEntry.objects.filter(study=study).count() == 6

    # The annotator's pages: every item, answered, and nothing names a system.
    client.force_login(annotator)
    client.post(reverse("annotation:study_join", args=[study.invite_token]))
    bodies = []
    for _ in range(10):
        response = client.post(reverse("annotation:study_next", args=[study.slug]))
        page = response["Location"]
        if page.endswith("?done=1"):
            break
        body = client.get(page).content.decode()
        bodies.append(body)
        assignment = Assignment.objects.get(member__user=annotator,
                                            position=int(page.rstrip("/").rsplit("/", 1)[1]))
        assert "Conversation with System A" in body
        client.post(page + "submit/", full_answers(item_layout(assignment.item, study)))
    assert len(bodies) == 6
    for body in bodies:
        lowered = body.lower()
        for system in systems:
            for secret in (system.name.lower(), system.slug, str(first.uuid)):
                assert secret not in lowered
        assert f"/arenas/{arena.slug}" not in lowered
    assert client.get(reverse("benchmark_detail", args=[benchmark.slug])).status_code == 404


def test_bad_requests_store_nothing(arena, author):
    before = (Benchmark.objects.count(), Submission.objects.count(), Study.objects.count())
    with pytest.raises(ValidationError, match="CoRE, FACE or both"):
        arena_study_create(arena=arena, author=author, title="x", forms=(taskforms.CITATION,))
    with pytest.raises(ValidationError, match="at least one battle"):
        arena_study_create(arena=arena, author=author, title="x", forms=(taskforms.FACE,),
                           sample_size=0)
    empty = Arena.objects.create(slug="empty", name="Empty")
    with pytest.raises(ValidationError, match="no voted battle"):
        arena_study_create(arena=empty, author=author, title="x", forms=(taskforms.CORE,))
    broken = Battle.objects.create(uuid=uuid.uuid4(), arena=arena, system_a=arena.systems.first(),
                                   system_b=arena.systems.last(), session_key="s",
                                   status=Battle.Status.VOTED)  # voted, yet no message stored
    with pytest.raises(ValidationError, match=f"battle {broken.uuid} has no message"):
        arena_study_create(arena=arena, author=author, title="x", forms=(taskforms.CORE,))
    assert (Benchmark.objects.count(), Submission.objects.count(),
            Study.objects.count()) == before


def test_an_arena_without_a_benchmark(systems, author, media_root):
    bare = Arena.objects.create(slug="bare", name="Bare arena")  # e.g. imported votes' arena
    make_battle(bare, systems[0], systems[1])
    study = arena_study_create(arena=bare, author=author, title="Bare", forms=(taskforms.CORE,))
    assert study.benchmark.domain == "arena" and study.items.count() == 2


def test_a_seeded_sample_of_battles(arena, author):
    one = arena_study_create(arena=arena, author=author, title="one", forms=(taskforms.CORE,),
                             sample_size=2, seed=7)
    two = arena_study_create(arena=arena, author=author, title="two", forms=(taskforms.CORE,),
                             sample_size=2, seed=7)
    assert one.items.count() == 4 and one.config["battles"] == 2
    ids = sorted(d.split("-")[0] for d in one.benchmark.dialogues.values_list(
        "external_id", flat=True))
    assert ids == sorted(d.split("-")[0] for d in two.benchmark.dialogues.values_list(
        "external_id", flat=True))
    assert one.benchmark.slug == "tiny-battles" and two.benchmark.slug == "tiny-battles-2"


def test_labels_of_a_battle_study_are_dialogue_labels_per_system(arena, author, annotator):
    study = arena_study_create(arena=arena, author=author, title="s", forms=(taskforms.FACE,),
                               overlap_k=1)
    member = study_member_add(study=study, user=annotator)
    while (assignment := assignment_next(member=member)) is not None:
        annotation_submit(assignment=assignment, data=full_answers(
            item_layout(assignment.item, study)))
    from annotation.report_selectors import study_label_table
    rows = [r for r in study_label_table(study=study).rows if r.field == "face.overall"]
    assert len(rows) == 6 and {r.system for r in rows} == set(NAMES)
