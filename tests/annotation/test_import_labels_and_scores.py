"""import_judgments and import_scores on small hand-made files: levels, aggregated labels,
line-numbered errors that store nothing, systems of units, the reference system."""

import io
import json

import pytest
from django.core.cache import cache
from django.core.management import call_command
from django.core.management.base import CommandError

from annotation import report_selectors
from annotation.models import ImportedLabel, Study
from evaluation.lib.formats.submission import iter_log_records
from evaluation.models import MetricSummary, Run, Submission
from evaluation.services.benchmarks import benchmark_import
from tests.support.bundles import tiny_data, write_tiny

pytestmark = pytest.mark.django_db

# Krippendorff (2011) example B: two observers, twelve units, nominal -> 0.692.
EXAMPLE_B = ([1, 1, 2, 2, 4, 3, 3, 3, 5, 4, 4, 1], [2, 1, 2, 2, 2, 3, 3, 3, 5, 4, 4, 4])


@pytest.fixture(autouse=True)
def fresh_cache(settings, tmp_path):
    settings.MEDIA_ROOT = tmp_path / "media"
    cache.clear()


@pytest.fixture
def twelve(tmp_path, staff):
    """The tiny benchmark plus nine one-turn dialogues: twelve dialogues to label."""
    data = tiny_data()
    data["benchmark"]["slug"] = "twelve"
    for n in range(4, 13):
        data["dialogues"].append({"id": f"d{n}", "split": "test", "candidate_item_ids": [],
                                  "turns": [{"index": 0, "role": "user", "text": "hi",
                                             "action": "greet_and_seek"}]})
    return benchmark_import(path=write_tiny(tmp_path / "twelve", data))


def test_per_annotator_judgments_reproduce_krippendorff_example_b(twelve, tmp_path):
    path = tmp_path / "labels.csv"
    rows = ["unit_type,unit_id,annotator_id,field,value"]
    for annotator, values in zip("AB", EXAMPLE_B, strict=True):
        rows += [f"dialogue,d{unit + 1},{annotator},label,{value}"
                 for unit, value in enumerate(values)]
    path.write_text("\n".join(rows) + "\n")
    out = io.StringIO()
    call_command("import_judgments", str(path), study="Example B", benchmark="twelve",
                 level=["label=nominal"], stdout=out)
    assert "Study example-b on twelve: 24 labels on 1 fields from 2 named annotators" in \
        out.getvalue()
    study = Study.objects.get(slug="example-b")
    assert study.source == "imported:labels.csv" and not study.is_public
    report = report_selectors.study_agreement(study=study)
    (entry,) = report["fields"]
    assert round(entry["alpha"]["nominal"]["value"], 3) == 0.692
    assert entry["kappa"]["method"] == "cohen_kappa"  # two annotators: Cohen's kappa too


def test_aggregated_judgments_and_an_inferred_interval_field(twelve, tmp_path, staff):
    path = tmp_path / "aggregate.jsonl"
    path.write_text("\n".join(json.dumps({"unit_type": "dialogue", "unit_id": f"d{n}",
                                          "field": "overall", "value": n % 4})
                              for n in range(1, 13)) + "\n")
    call_command("import_judgments", str(path), study="Aggregates", benchmark="twelve",
                 public=True, stdout=io.StringIO())
    study = Study.objects.get(slug="aggregates")
    assert study.is_public and ImportedLabel.objects.filter(study=study, annotator="").count() == 12
    field = study.imported_fields.get()
    assert (field.level, field.scale_min, field.scale_max) == ("interval", 0, 3)
    assert report_selectors.study_agreement(study=study)["aggregated_only"]


def test_bad_judgments_name_the_line_and_store_nothing(twelve, tmp_path):
    path = tmp_path / "bad.csv"
    path.write_text("unit_type,unit_id,annotator_id,field,value\n"
                    "dialogue,d1,A,label,1\ndialogue,d99,A,label,2\n")
    with pytest.raises(CommandError, match=r"bad.csv:3: \$.unit_id: unknown dialogue id 'd99'"):
        call_command("import_judgments", str(path), study="Bad", benchmark="twelve")
    path.write_text("unit_type,unit_id,annotator_id,field,value\ndialogue,d1,A,label,1\n")
    with pytest.raises(CommandError, match="--level names 'nope'"):
        call_command("import_judgments", str(path), study="Bad", benchmark="twelve",
                     level=["nope=ordinal"])
    assert not Study.objects.exists()


# --- scores --------------------------------------------------------------------------------------


def write_scores(path, lines):
    path.write_text("\n".join(json.dumps(line) for line in lines) + "\n")
    return path


def test_scores_of_units_without_a_system_go_to_the_reference_system(client, tiny_benchmark,
                                                                    staff, tmp_path):
    path = write_scores(tmp_path / "s.jsonl", [
        {"metric": "m", "unit_type": "turn", "unit_id": unit, "value": value}
        for unit, value in (("d1#1", 0.5), ("d1#3", 0.25), ("d2#1", 1.0))])
    out = io.StringIO()
    call_command("import_scores", str(path), evaluator="ref-metric", benchmark="tiny",
                 direction="lower", stdout=out)
    run = Run.objects.get(evaluator="external:ref-metric")
    assert run.submission.system.name == "Tiny Tourism reference"
    assert run.submission.protocol == "log" and run.submission.is_public
    with run.submission.file.open("rb") as handle:
        logs = [record["log_id"] for record in iter_log_records(handle)]
    assert logs == ["d1", "d2"]  # the hidden dialogue d3 stays out of the file
    summary = MetricSummary.objects.get(run=run)
    assert summary.direction == "lower" and summary.value == pytest.approx(1.75 / 3)
    assert summary.axis == "external" and summary.n == 3
    assert report_selectors.evaluator_names(benchmark=tiny_benchmark) == ["external:ref-metric"]
    client.force_login(staff)  # the run page shows an imported run like any other
    page = client.get(f"/runs/{run.pk}/")
    assert page.status_code == 200 and b"external:ref-metric" in page.content
    call_command("import_scores", str(path), evaluator="again", benchmark="tiny",
                 stdout=io.StringIO())
    assert Submission.objects.filter(system__name="Tiny Tourism reference").count() == 1


def test_scores_name_their_system_and_bad_lines_store_nothing(tiny_benchmark, submissions,
                                                             tmp_path):
    good = write_scores(tmp_path / "good.jsonl", [
        {"metric": "m", "unit_type": "dialogue", "unit_id": "d1", "value": 1,
         "system": "zeta-secret-crs"},
        {"metric": "m", "unit_type": "dialogue", "unit_id": "d1", "value": 2,
         "system": "Omega Hidden Rec"}])
    call_command("import_scores", str(good), evaluator="m", benchmark="tiny",
                 stdout=io.StringIO())
    assert sorted(Run.objects.values_list("submission__system__slug", flat=True)) == [
        "omega-hidden-rec", "zeta-secret-crs"]
    bad = write_scores(tmp_path / "bad.jsonl", [
        {"metric": "m", "unit_type": "dialogue", "unit_id": "d1", "value": 1,
         "system": "nobody"},
        {"metric": "m", "unit_type": "item", "unit_id": "r1", "value": 1},
        {"metric": "m", "unit_type": "turn", "unit_id": "d7#1", "value": 1}])
    with pytest.raises(CommandError) as error:
        call_command("import_scores", str(bad), evaluator="bad", benchmark="tiny")
    assert "bad.jsonl:3: $.unit_id: unknown turn id 'd7#1'" in str(error.value)
    bad.write_text("\n".join(bad.read_text().splitlines()[:2]) + "\n")
    with pytest.raises(CommandError) as error:
        call_command("import_scores", str(bad), evaluator="bad", benchmark="tiny")
    assert "no system 'nobody' has a submission" in str(error.value)
    assert "item scores cannot become a run" in str(error.value)
    assert not Run.objects.filter(evaluator="external:bad").exists()
    with pytest.raises(CommandError, match="without spaces"):
        call_command("import_scores", str(good), evaluator="two words", benchmark="tiny")


def test_an_imported_study_has_a_dashboard_and_a_bundle_of_its_labels(client, twelve, tmp_path,
                                                                      staff):
    import csv
    import zipfile

    from annotation.services.study_exports import study_bundle_write

    path = tmp_path / "labels.csv"
    path.write_text("unit_type,unit_id,annotator_id,field,value\n" + "".join(
        f"dialogue,d{unit + 1},{who},label,{value}\n"
        for who, values in zip("AB", EXAMPLE_B, strict=True)
        for unit, value in enumerate(values)))
    call_command("import_judgments", str(path), study="Example B", benchmark="twelve",
                 stdout=io.StringIO())
    study = Study.objects.get(slug="example-b")
    client.force_login(staff)
    dashboard = client.get(f"/studies/{study.slug}/dashboard/").content.decode()
    assert f"/studies/{study.slug}/report/" in dashboard
    result = study_bundle_write(study=study, path=tmp_path / "bundle.zip")
    archive = zipfile.ZipFile(tmp_path / "bundle.zip")
    rows = list(csv.DictReader(io.StringIO(archive.read("annotations.csv").decode())))
    assert len(rows) == 24 == result["annotation_rows"]
    assert {"unit_id", "annotator", "field", "value", "system", "dialogue_id"} <= set(rows[0])
    assert json.loads(archive.read("study.json"))["source"] == "imported:labels.csv"
