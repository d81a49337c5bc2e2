"""The task-form registry: a form defined and registered here, and nowhere else, is offered to
authors, creates its items, renders, validates, is exported and reaches the agreement report."""

import csv
import io

import pytest
from django.test import Client

from annotation.forms import StudyCreateForm
from annotation.lib import exports, form_registry, labels, taskforms
from annotation.lib.form_registry import (
    Choice,
    ChoiceField,
    FieldsForm,
    Layout,
    NativeItem,
    ScaleField,
    TextField,
)
from annotation.lib.report_plan import report_plan
from annotation.models import Annotation, Assignment
from annotation.report_selectors import study_agreement
from annotation.services.annotations import annotation_submit
from annotation.services.handout import assignment_next
from annotation.services.members import study_member_add
from annotation.services.studies import default_instructions
from annotation.services.study_exports import study_export_write
from tests.annotation.conftest import make_study

TONE = FieldsForm(
    key="tone", label="Tone check", report_fields="the tone check's warmth and register",
    instructions="- **Tone.** Say how warm the response sounds and which register it uses.\n",
    questions=(
        ScaleField("warmth", "Warmth", 1, 4, question="How warm does it sound?",
                   anchors=((1, "cold"), (4, "warm"))),
        ChoiceField("register", "Register", (Choice("formal", "Formal", "f"),
                                             Choice("casual", "Casual", "c"))),
        TextField("note", "Note"),
    ))


@pytest.fixture
def tone():
    form_registry.register(TONE)
    yield TONE
    form_registry.unregister(TONE.key)


def test_the_built_in_forms_are_registered_in_their_order():
    assert taskforms.keys()[:7] == taskforms.ALL_FORMS
    assert taskforms.keys_for_mode("response") == ("citation", "checklist", "likert")
    assert [f.key for f in taskforms.in_panel_order(["core", "face"])] == ["face", "core"]
    assert all(form.template and form.report_fields for form in taskforms.registered())


@pytest.mark.parametrize("form, message", [
    (FieldsForm(key="citation", label="Again", questions=()), "already registered"),
    (FieldsForm(key="Bad-Key", label="Bad", questions=()), "lowercase"),
    (FieldsForm(key="comment", label="Footer", questions=()), "reserved"),
    (FieldsForm(key="odd", label="Odd", mode="battle", questions=()), "mode must be one of"),
    (FieldsForm(key="nameless", label="", questions=()), "needs a label"),
])
def test_register_refuses_a_form_that_would_clash(form, message):
    with pytest.raises(ValueError, match=message):
        form_registry.register(form)
    assert form.key not in taskforms.keys() or form.key == "citation"


def test_a_registered_form_parses_validates_and_flattens(tone):
    layout = Layout(forms=("likert", "tone"), likert_scales=taskforms.DEFAULT_LIKERT_SCALES)
    data = {"likert-informativeness": "4", "likert-naturalness": "5", "tone-warmth": "3",
            "tone-register": "casual", "tone-note": "  friendly  "}
    parsed = taskforms.parse_post(data, layout, partial=False)
    assert parsed.errors == []
    assert parsed.values["tone"] == {"warmth": 3, "register": "casual", "note": "friendly"}
    assert taskforms.flatten(parsed.values)[-3:] == [
        ("tone.warmth", 3), ("tone.register", "casual"), ("tone.note", "friendly")]
    assert taskforms.field_label("tone.register") == "Tone check: Register"

    bad = taskforms.parse_post({"tone-warmth": "9", "tone-register": "shouty"},
                               Layout(forms=("tone",)), partial=False)
    assert "tone" not in bad.values
    assert bad.errors == ["Warmth: '9' is outside 1\u20134.", "Register: unknown choice 'shouty'.",
                          "Tone check: answer warmth.", "Tone check: answer register."]


def test_a_registered_form_has_label_fields_rows_and_ties(tone):
    fields = labels.native_fields(["tone", "checklist"], ())
    assert list(fields)[-2:] == ["tone.warmth", "tone.register"]
    assert fields["tone.warmth"].alpha_levels == ("ordinal", "interval")
    assert (fields["tone.warmth"].scale_min, fields["tone.warmth"].scale_max) == (1, 4)
    assert fields["tone.register"].level == "nominal"
    values = {"tone": {"warmth": 2, "register": "formal", "note": "text is not a label"}}
    rows = labels.native_rows(values, NativeItem("response", "d1", 3, "Alpha"), "ann")
    assert [(r.unit_id, r.system, r.field, r.value) for r in rows] == [
        ("d1#3", "Alpha", "tone.warmth", 2), ("d1#3", "Alpha", "tone.register", "formal")]
    split = [{"tone": {"register": "formal"}}, {"tone": {"register": "casual"}}]
    assert taskforms.categorical_tie(split)
    assert not taskforms.categorical_tie(split + [{"tone": {"register": "casual"}}])


def test_a_registered_form_is_offered_documented_and_planned(tone):
    assert ("tone", "Tone check") in StudyCreateForm.base_fields["task_forms"].choices
    text = default_instructions(["citation", "tone"])
    assert text.index("## Judging a response") < text.index("**Citation check.**") \
        < text.index("**Tone.**")
    plan = report_plan(forms=["tone"], overlap_k=2, items=3, evaluators=0)
    assert "the tone check's warmth and register" in plan[0].shows


def test_without_registration_the_form_is_unknown():
    assert "tone" not in taskforms.keys()
    assert taskforms.flatten({"tone": {"warmth": 2}}) == []


def _answer(assignment, **data):
    result = annotation_submit(assignment=assignment, data=data)
    assert result.errors == []


@pytest.mark.django_db
def test_a_registered_form_runs_a_whole_study(tone, tiny_benchmark, author, annotator,
                                              other_annotator, settings, tmp_path):
    settings.MEDIA_ROOT = tmp_path / "media"
    study = make_study(tiny_benchmark, author, forms=("tone",), overlap_k=2)
    items = list(study.items.filter(kind="normal"))
    assert items and {item.mode for item in items} == {"response"}
    registers = {annotator: "formal", other_annotator: "casual"}
    for user, register in registers.items():
        member = study_member_add(study=study, user=user)
        while (assignment := assignment_next(member=member)) is not None:
            bad = annotation_submit(assignment=assignment, data={"tone-warmth": "0"})
            assert bad.errors[0] == "Warmth: '0' is outside 1\u20134."
            assert not Annotation.objects.filter(assignment=assignment).exists()
            warmth = str(1 + assignment.item.position % 4)  # the two agree on every item
            _answer(assignment, **{"tone-warmth": warmth, "tone-register": register,
                                   "tone-note": "<b>fine</b>"})

    report = study_agreement(study=study)
    by_field = {entry["field"]: entry for entry in report["fields"]}
    assert by_field["tone.warmth"]["alpha"]["ordinal"]["value"] == pytest.approx(1.0)
    assert by_field["tone.register"]["alpha"]["nominal"]["value"] < 0
    table = exports.to_csv(exports.agreement_tables(report)[:1])
    assert "Warmth,ordinal,1," in table and "Register,nominal," in table

    path = tmp_path / "export.csv"
    study_export_write(study=study, path=path)
    rows = list(csv.DictReader(io.StringIO(path.read_text())))
    fields = {(row["annotator"], row["field"], row["value"]) for row in rows}
    assert ("annotator", "tone.register", "formal") in fields
    assert ("annotator2", "tone.note", "<b>fine</b>") in fields
    assert len(rows) == 3 * 2 * len(items)


@pytest.mark.django_db
def test_the_generic_template_renders_the_fields_and_escapes_answers(tone, tiny_benchmark,
                                                                     author, annotator):
    study = make_study(tiny_benchmark, author, forms=("tone",))
    member = study_member_add(study=study, user=annotator)
    assignment = assignment_next(member=member)
    client = Client()
    client.force_login(annotator)
    page = f"/studies/{study.slug}/items/{assignment.position}/"
    client.post(page + "draft/", {"tone-warmth": "4", "tone-note": "<script>x()</script>"})
    html = client.get(page).content.decode()
    assert 'id="form-tone"' in html and "<h2>Tone check</h2>" in html
    assert 'id="row-tone-warmth"' in html and 'id="row-tone-register"' in html
    assert 'name="tone-warmth" value="4" data-key="4" checked' in html
    assert "<b>4</b> warm" in html  # the anchor
    assert "&lt;script&gt;x()&lt;/script&gt;</textarea>" in html
    assert "<script>x()" not in html
    assert Assignment.objects.get(pk=assignment.pk).status == "active"
