"""The study report on a native study: the label table, the page, access, the downloads and
commands (same numbers), exclusions, imported metric scores and the paper bundle."""

import io
import json
import zipfile

import pytest
from django.contrib.auth.models import User
from django.core.cache import cache
from django.core.management import call_command
from django.urls import reverse

from annotation import report_selectors
from annotation.imports import scores_import
from annotation.lib import taskforms
from annotation.models import StudyMember
from annotation.selectors import item_layout
from annotation.services.annotations import annotation_submit
from annotation.services.handout import assignment_next
from annotation.services.members import study_member_add, study_member_set_excluded
from evaluation.models import Job, MetricSummary, Run, UnitScore

from .conftest import full_answers, make_study

pytestmark = pytest.mark.django_db
FORMS = (taskforms.CITATION, taskforms.CHECKLIST, taskforms.LIKERT, taskforms.RECOMMEND)


@pytest.fixture(autouse=True)
def fresh_cache():
    cache.clear()
    yield
    cache.clear()


def answers(assignment, style: str) -> dict:
    """A complete answer; 'odd' disagrees with the others on verdicts, scales and picks."""
    layout = item_layout(assignment.item, assignment.item.study)
    data = full_answers(layout)
    if style == "odd":
        data.update({f"citation-{i}": "not_supported" for i in range(layout.quote_count)})
        data.update({f"likert-{s['key']}": str(s["min"]) for s in layout.likert_scales})
        data["error"] = ["fabricated_claim", "too_vague"]
        if layout.candidate_ids:
            data["rec-item"] = [layout.candidate_ids[-1]]
        data.update({f"core-{f.key}": "0" for f in taskforms.CORE_FACTORS})
    elif style == "mild" and layout.likert_scales:
        data[f"likert-{layout.likert_scales[0]['key']}"] = "4"
    if style == "mild" and taskforms.CORE in layout.forms:
        data.update({f"core-{f.key}": str(n % 5) for n, f in enumerate(taskforms.CORE_FACTORS)})
    return data


def label_all(study, user, style: str) -> None:
    member = study_member_add(study=study, user=user)
    while (assignment := assignment_next(member=member)) is not None:
        result = annotation_submit(assignment=assignment,
                                   data=answers(assignment, style))
        assert not result.errors, result.errors


@pytest.fixture
def labelled_study(tiny_benchmark, author, annotator, other_annotator, submissions):
    study = make_study(tiny_benchmark, author, forms=FORMS, submissions=submissions,
                       overlap_k=3, tie_break_extra=False, slug="native-study")
    odd = User.objects.create_user("odd-one")
    for user, style in ((annotator, "plain"), (other_annotator, "mild"), (odd, "odd")):
        label_all(study, user, style)
    return study


def test_label_table_uses_benchmark_unit_ids_and_one_unit_per_system(labelled_study):
    table = report_selectors.study_label_table(study=labelled_study)
    assert table.annotators() == ["annotator", "annotator2", "odd-one"]
    units = {(row.system, row.unit_id) for row in table.rows
             if row.field == "likert.informativeness"}
    # The sample takes one turn per dialogue; each system's answer to it is its own unit.
    assert {("Zeta Secret CRS", "d2#1"), ("Omega Hidden Rec", "d2#1"), ("", "d2#1")} <= units
    assert {row.unit_id for row in table.rows if row.field == "citation"} >= {"d2#1#q0",
                                                                             "d2#1#q1"}
    assert {row.system for row in table.rows if row.field == "recommend.items"} == {""}


def test_agreement_report_covers_every_form(labelled_study):
    report = report_selectors.study_agreement(study=labelled_study)
    fields = {f["field"]: f for f in report["fields"]}
    assert set(fields["likert.informativeness"]["alpha"]) == {"ordinal", "interval"}
    assert set(fields["errors"]["alpha"]) == {"masi"}
    assert set(fields["citation"]["alpha"]) == {"nominal"}
    assert fields["likert.informativeness"]["alpha"]["ordinal"]["n"]["annotators"] == 3
    assert {row["system"] for row in report["citation_precision"]} == {
        "Reference / unknown", "Zeta Secret CRS", "Omega Hidden Rec"}
    assert report["citation_precision"][0]["value"] == 1.0  # two of three say Supported
    assert report["blind_recommendation"]["mean_pairwise_jaccard"]["n"]["pairs"] > 0
    assert [row["dropped"] for row in report["leave_one_out"]["rows"]][:2] == [[], ["annotator"]]
    flag_rates = {d["annotator"]: d["flag_rate"] for d in report["diagnostics"]}
    assert flag_rates == {"annotator": 0.0, "annotator2": 0.0, "odd-one": 1.0}
    json.dumps(report, allow_nan=False)


def test_excluded_annotators_leave_the_report_and_are_recorded(labelled_study):
    member = StudyMember.objects.get(study=labelled_study, user__username="odd-one")
    study_member_set_excluded(member=member, excluded=True, reason="failed gold")
    report = report_selectors.study_agreement(study=labelled_study)
    assert report["annotators"] == ["annotator", "annotator2"]
    assert report["study"]["excluded"][0]["annotator"] == "odd-one"
    assert report["study"]["excluded"][0]["reason"] == "failed gold"


def test_report_page_is_for_the_author_and_staff_only(client, labelled_study, author, staff,
                                                      annotator, outsider):
    url = reverse("annotation:study_report", args=[labelled_study.slug])
    client.force_login(author)
    html = client.get(url).content.decode()
    for heading in ("Inter-annotator agreement", "Leave one annotator out", "Annotators",
                    "Citation precision per system", "Blind recommendation",
                    "Metric–human correlation"):
        assert heading in html
    assert "nan" not in html.lower().replace("nanny", "")
    client.force_login(staff)
    assert client.get(url).status_code == 200
    client.force_login(annotator)
    assert client.get(url).status_code == 403
    client.force_login(outsider)
    assert client.get(url).status_code == 404


def test_downloads_print_what_the_commands_print(client, labelled_study, author):
    client.force_login(author)
    for fmt in ("json", "csv", "latex"):
        response = client.get(reverse("annotation:study_report_download",
                                      args=[labelled_study.slug, "agreement", fmt]))
        assert response.status_code == 200
        out = io.StringIO()
        call_command("agreement", labelled_study.slug, format=fmt, stdout=out)
        assert response.content.decode() == out.getvalue()
        if fmt == "json":
            assert json.loads(out.getvalue())["kind"] == "agreement"
    latex = client.get(reverse("annotation:study_report_download",
                               args=[labelled_study.slug, "agreement", "latex"])).content
    assert b"\\toprule" in latex and b"Citation precision" in latex


def score_file(tmp_path, submissions, *, metric="likert.informativeness"):
    """An external metric on every answered turn of both systems (and one reference turn)."""
    lines = []
    for n, submission in enumerate(submissions):
        for unit, base in (("d1#1", 1.0), ("d1#3", 3.0), ("d2#1", 2.0)):
            lines.append({"metric": metric, "unit_type": "turn", "unit_id": unit,
                          "value": base + n, "system": submission.system.slug})
    path = tmp_path / "scores.jsonl"
    path.write_text("\n".join(json.dumps(line) for line in lines) + "\n")
    return path


def test_imported_scores_become_runs_and_join_the_report(client, labelled_study, author,
                                                         submissions, tmp_path):
    runs = scores_import(path=score_file(tmp_path, submissions),
                         benchmark=labelled_study.benchmark, evaluator="toy")
    assert {run.evaluator for run in runs} == {"external:toy"} and len(runs) == 2
    assert all(run.job.status == Job.Status.SUCCEEDED for run in runs)
    assert UnitScore.objects.filter(run__in=runs).count() == 6
    summary = MetricSummary.objects.get(run=runs[0])
    assert summary.n == 3 and summary.ci_low <= summary.value <= summary.ci_high
    report = report_selectors.study_correlation(study=labelled_study, evaluator="external:toy")
    row = next(r for r in report["item_level"] if r["aspect"] == "likert.informativeness")
    # 2 systems × the 2 sampled turns (d1#1 is scored but nobody labelled it)
    assert row["correlations"]["spearman"]["n"] == 4
    client.force_login(author)
    html = client.get(reverse("annotation:study_report", args=[labelled_study.slug]),
                      {"evaluator": "external:toy", "by": "system"}).content.decode()
    assert html.count('class="pt"') == 4
    assert "Zeta Secret CRS" in html
    out = io.StringIO()
    call_command("correlate", study=labelled_study.slug, evaluator="toy", by="system",
                 format="json", stdout=out)
    assert json.loads(out.getvalue())["subsets"] == ["Omega Hidden Rec", "Zeta Secret CRS"]


def test_paper_bundle_job_builds_a_zip_with_readme_and_tables(
        client, labelled_study, author, submissions, tmp_path, media_root,
        django_capture_on_commit_callbacks):
    scores_import(path=score_file(tmp_path, submissions), benchmark=labelled_study.benchmark,
                  evaluator="toy")
    member = StudyMember.objects.get(study=labelled_study, user__username="odd-one")
    study_member_set_excluded(member=member, excluded=True, reason="careless")
    client.force_login(author)
    with django_capture_on_commit_callbacks(execute=True):
        client.post(reverse("annotation:study_export", args=[labelled_study.slug]),
                    {"format": "bundle"}, HTTP_HX_REQUEST="true")
    job = Job.objects.get(kind=Job.Kind.STUDY_EXPORT)
    assert job.status == Job.Status.SUCCEEDED, job.error
    response = client.get(reverse("annotation:study_export_download",
                                  args=[labelled_study.slug, job.pk]))
    assert response["Content-Type"] == "application/zip"
    archive = zipfile.ZipFile(io.BytesIO(b"".join(response.streaming_content)))
    names = set(archive.namelist())
    assert {"annotations.csv", "agreement.json", "agreement.csv", "agreement.tex",
            "correlation/external-toy.json", "correlation/external-toy.tex", "coupling.json",
            "study.json", "README.md"} <= names
    readme = archive.read("README.md").decode()
    assert "odd-one: careless" in readme and "### krippendorff_alpha" in readme
    assert "### citation_precision" in readme and "### spearman" in readme
    assert "### system_level_correlation" in readme
    agreement = json.loads(archive.read("agreement.json"))
    assert agreement["annotators"] == ["annotator", "annotator2"]
    config = json.loads(archive.read("study.json"))
    assert config["forms"] == list(FORMS) and config["overlap_k"] == 3
    assert b"annotator_excluded" in archive.read("annotations.csv")
    assert Run.objects.filter(evaluator="external:toy").count() == 2


def test_a_core_judge_gets_its_own_coupling_heatmap_and_qwk(tiny_benchmark, author, annotator,
                                                           other_annotator, submissions):
    study = make_study(tiny_benchmark, author, forms=(taskforms.CORE,), submissions=submissions,
                       include_reference=False, overlap_k=2, tie_break_extra=False)
    label_all(study, annotator, "plain")
    label_all(study, other_annotator, "mild")
    units = 0
    for n, submission in enumerate(submissions):
        job = Job.objects.create(kind=Job.Kind.EVALUATION, status=Job.Status.SUCCEEDED)
        run = Run.objects.create(submission=submission, evaluator="core", evaluator_version="1",
                                 config={}, config_hash="x", job=job)
        for d, dialogue in enumerate(("d1", "d2")):
            units += 1
            UnitScore.objects.bulk_create([
                UnitScore(run=run, metric=f"core.{f.key}", unit_type="dialogue",
                          unit_id=f"log-{n}-{dialogue}", dialogue_id=dialogue,
                          value=float((i + d + 2 * n) % 5))
                for i, f in enumerate(taskforms.CORE_FACTORS)])
    coupling = report_selectors.study_coupling(study=study)
    assert [rater["rater"] for rater in coupling["raters"]] == ["humans", "core"]
    judge = coupling["raters"][1]
    assert len(judge["factors"]) == 12 and judge["n"][0][1] == units
    correlation = report_selectors.study_correlation(study=study, evaluator="core")
    coherence = next(r for r in correlation["item_level"]
                     if r["aspect"] == "core.coherence" and r["subset"] == "all")
    assert coherence["correlations"]["kendall"]["n"] == 4  # logs joined via their dialogue
    assert coherence["qwk"]["method"] == "quadratic_weighted_kappa"


def test_metric_leaderboards_list_public_data_sets_and_your_own(client, labelled_study, author,
                                                                staff, outsider):
    index = reverse("annotation:metric_board_index")
    assert labelled_study.title not in client.get(index).content.decode()  # private study
    client.force_login(author)
    assert labelled_study.title in client.get(index).content.decode()
    client.force_login(staff)
    assert labelled_study.title in client.get(index).content.decode()
    client.force_login(outsider)
    board = reverse("annotation:metric_board", args=[labelled_study.slug])
    assert client.get(board).status_code == 404
    labelled_study.is_public = True
    labelled_study.save(update_fields=["is_public"])
    assert client.get(board).status_code == 200
    assert labelled_study.title in client.get(index).content.decode()


def test_report_page_leaves_out_correlations_without_shared_units(client, labelled_study,
                                                                   author, submissions, tmp_path):
    lines = [{"metric": "likert.informativeness", "unit_type": "turn", "unit_id": "d1#1",
              "value": 1.0, "system": submission.system.slug} for submission in submissions]
    path = tmp_path / "unlabelled.jsonl"
    path.write_text("\n".join(json.dumps(line) for line in lines) + "\n")
    scores_import(path=path, benchmark=labelled_study.benchmark, evaluator="nobody")
    client.force_login(author)
    html = client.get(reverse("annotation:study_report", args=[labelled_study.slug]),
                      {"evaluator": "external:nobody"}).content.decode()
    assert "No metric shares a unit with the human labels yet." in html
    assert "1 row without a shared unit left out here" in html
    assert 'class="pt"' not in html  # no empty scatter plots
    out = io.StringIO()
    call_command("correlate", study=labelled_study.slug, evaluator="nobody", format="json",
                 stdout=out)
    assert len(json.loads(out.getvalue())["item_level"]) >= 1  # downloads keep every row
