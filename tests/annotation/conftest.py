"""Fixtures for the annotation tests: systems with submissions on the tiny benchmark, studies."""

import json

import pytest
from django.core.files.base import ContentFile

from annotation.lib import taskforms
from annotation.services.members import study_member_add
from annotation.services.studies import StudySpec, study_create
from evaluation.models import Submission, System

SYSTEM_NAMES = {"zeta-secret-crs": "Zeta Secret CRS", "omega-hidden-rec": "Omega Hidden Rec"}


def _answers(style: str) -> list[dict]:
    return [
        {"dialogue_id": "d1", "turn_index": 1,
         "response": f'{style}: Harbor Grill, "the room was quiet" [R1].',
         "ranked_item_ids": ["r1"],
         "citations": [{"label": "R1", "review_id": "v1", "quote": "the room was quiet"}]},
        {"dialogue_id": "d1", "turn_index": 3,
         "response": f'{style}: Noodle Nook, "the broth is rich" [R1].',
         "ranked_item_ids": ["r2"],
         "citations": [{"label": "R1", "review_id": "v3", "quote": "the broth is rich"}]},
        {"dialogue_id": "d2", "turn_index": 1,
         "response": f'{style}: Old City Inn, "Friendly staff" [R1] and "a rooftop spa" [R2].',
         "ranked_item_ids": ["h1"],
         "citations": [{"label": "R1", "review_id": "v4", "quote": "Friendly staff"},
                       {"label": "R2", "review_id": "v4", "quote": "a rooftop spa"}]},
    ]


@pytest.fixture
def media_root(settings, tmp_path):
    settings.MEDIA_ROOT = tmp_path / "media"
    return settings.MEDIA_ROOT


@pytest.fixture
def submissions(db, tiny_benchmark, researcher, media_root):
    return make_submissions(tiny_benchmark, researcher)


def make_submissions(benchmark, owner) -> list[Submission]:
    """Two systems whose turn-protocol submissions answer the tiny benchmark's turns."""
    made = []
    for n, (slug, name) in enumerate(SYSTEM_NAMES.items()):
        system = System.objects.create(slug=slug, name=name, owner=owner)
        lines = "\n".join(json.dumps(r) for r in _answers(f"Answer {n}")) + "\n"
        submission = Submission(uuid=f"00000000-0000-0000-0000-00000000000{n}", system=system,
                                benchmark=benchmark, protocol="turn", line_count=3,
                                created_by=owner)
        submission.file.save("sub.jsonl", ContentFile(lines.encode()), save=False)
        submission.save()
        made.append(submission)
    return made


def make_study(benchmark, author, *, forms=(taskforms.CITATION, taskforms.CHECKLIST,
                                           taskforms.LIKERT), submissions=(), **options):
    spec_fields = {key: options.pop(key) for key in list(options)
                   if key in StudySpec.__dataclass_fields__}
    spec = StudySpec(forms=tuple(forms),
                     submission_ids=tuple(s.pk for s in submissions),
                     **{"sample_size": 10, **spec_fields})
    return study_create(benchmark=benchmark, author=author, title="Tiny study",
                        spec=spec, **options)


@pytest.fixture
def study(tiny_benchmark, author):
    return make_study(tiny_benchmark, author)


@pytest.fixture
def member(study, annotator):
    return study_member_add(study=study, user=annotator)


def full_answers(item_or_layout) -> dict:
    """A complete POST for an item's layout (every question answered)."""
    from annotation.selectors import item_layout

    layout = item_or_layout
    if not isinstance(layout, taskforms.Layout):
        layout = item_layout(item_or_layout, item_or_layout.study)
    data: dict = {}
    for i in range(layout.quote_count):
        data[f"citation-{i}"] = "supported"
    if taskforms.CHECKLIST in layout.forms:
        data["error"] = ["no_errors"]
    for scale in layout.likert_scales:
        data[f"likert-{scale['key']}"] = str(scale["max"])
    if taskforms.CORE in layout.forms:
        for factor in taskforms.CORE_FACTORS:
            data[f"core-{factor.key}"] = "3"
        data["core-overall"] = "70"
    if taskforms.FACE in layout.forms:
        for index in layout.rated_turns:
            for aspect in taskforms.FACE_TURN_ASPECTS:
                data[f"face-turn-{index}-{aspect.key}"] = "1"
        for aspect in taskforms.FACE_DIALOGUE_ASPECTS:
            data[f"face-{aspect.key}"] = "1"
    if taskforms.RECOMMEND in layout.forms:
        data["rec-item"] = [layout.candidate_ids[0]]
        data["rec-text"] = "I recommend it."
    if taskforms.PAIRWISE in layout.forms:
        data["pair-choice"] = "left"
    return data
