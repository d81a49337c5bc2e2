"""Public human-labelled data sets end to end (skipped when ../shared/data/public is absent):
import_public, import_scores, correlate --by dataset, agreement, the report and the metric
leaderboard on the real CRSArena-Eval, AB-ReDial, CRSArena-Dial and USR files."""

import io
import json

import pytest
from django.core.cache import cache
from django.core.management import call_command
from django.core.management.base import CommandError
from django.urls import reverse

from annotation import report_selectors
from annotation.imports import public_dataset_import, scores_import
from annotation.models import ImportedLabel, Study
from evaluation.models import Benchmark, Run, Submission
from tests.evaluation.formats.public_data import dataset

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def fresh_cache(settings, tmp_path):
    settings.MEDIA_ROOT = tmp_path / "media"
    cache.clear()
    yield
    cache.clear()


def length_scores(path, out):
    """A toy "metric": words per assistant turn, and assistant turns per conversation."""
    data = json.loads((path / "crs_arena_eval.json").read_text())
    lines = []
    for conversation in data:
        turns = [t for t in conversation["dialogue"] if t["role"] == "ASST"]
        lines += [{"metric": "response_length", "unit_type": "turn",
                   "unit_id": f"{conversation['conv_id']}#{t['turn_ind']}",
                   "value": len(t["utterance"].split())} for t in turns]
        lines.append({"metric": "assistant_turns", "unit_type": "dialogue",
                      "unit_id": conversation["conv_id"], "value": len(turns)})
    out.write_text("\n".join(json.dumps(line) for line in lines) + "\n")
    return out


def test_crs_arena_eval_metric_correlation_per_dataset(client, staff, tmp_path):
    folder = dataset("crs_arena_eval")
    out = io.StringIO()
    call_command("import_public", "crs_arena_eval", str(folder), stdout=out)
    printed = out.getvalue()
    assert "Benchmark crs-arena-eval: 467 dialogues, 9 systems (9 log submissions)" in printed
    assert "Study crs-arena-eval-labels: 7734 labels on 9 fields" in printed
    study = Study.objects.get(slug="crs-arena-eval-labels")
    assert study.source == "imported:crs_arena_eval" and study.is_public
    assert Submission.objects.filter(benchmark__slug="crs-arena-eval", protocol="log",
                                     is_public=True).count() == 9
    assert ImportedLabel.objects.filter(study=study, system="kbrd_redial").exists()
    assert Benchmark.objects.get(slug="crs-arena-eval").dialogues.filter(
        external_id__startswith="kbrd_redial_").first().scenario["source_dataset"] == "redial"

    scores = length_scores(folder, tmp_path / "length.jsonl")
    out = io.StringIO()
    call_command("import_scores", str(scores), evaluator="length", benchmark="crs-arena-eval",
                 stdout=out)
    assert out.getvalue().count("external:length on ") == 9

    out = io.StringIO()
    call_command("correlate", study=study.slug, evaluator="length", by="dataset",
                 format="json", stdout=out)
    report = json.loads(out.getvalue())
    assert report["by"] == "source_dataset" and report["subsets"] == ["opendialkg", "redial"]
    rows = {(r["metric"], r["aspect"], r["subset"]): r["correlations"]
            for r in report["item_level"]}
    relevance = rows[("response_length", "relevance", "all")]
    # 2,235 assistant turns, 5 without a relevance label (the release leaves them out)
    assert relevance["spearman"]["n"] == 2230
    assert relevance["spearman"]["statistic"] == pytest.approx(0.234, abs=1e-3)
    assert relevance["spearman"]["p_value"] < 1e-20
    by_dataset = {subset: rows[("response_length", "relevance", subset)]["pearson"]["n"]
                  for subset in ("opendialkg", "redial")}
    assert by_dataset == {"opendialkg": 934, "redial": 1296}
    overall = rows[("assistant_turns", "dialogue_overall", "all")]
    assert overall["kendall"]["n"] == 467
    system = [r for r in report["system_level"] if r["metric"] == "assistant_turns"
              and r["aspect"] == "dialogue_overall"]
    assert [(r["subset"], r["systems"]) for r in system] == [
        ("all", 9), ("opendialkg", 4), ("redial", 5)]

    client.force_login(staff)
    html = client.get(reverse("annotation:study_report", args=[study.slug]),
                      {"evaluator": "external:length", "by": "source_dataset",
                       "aspect": "relevance"}).content.decode()
    assert "0.234" in html.split('id="correlation-all"')[0]  # the headline row, chosen aspect
    every_row = client.get(reverse("annotation:study_report", args=[study.slug]),
                           {"evaluator": "external:length", "by": "source_dataset",
                            "aspect": "relevance", "rows": "all"}).content.decode()
    assert "opendialkg" in every_row.split('id="correlation-all"')[1]  # per-dataset rows
    assert "publishes only labels aggregated over annotators" in html

    client.logout()  # the metric leaderboard of a public data set is public
    board = client.get(reverse("annotation:metric_board", args=[study.slug]),
                       {"aspect": "relevance"})
    assert board.status_code == 200
    assert "external:length" in board.content.decode()
    assert client.get(reverse("annotation:study_report", args=[study.slug])).status_code == 302
    csv_board = client.get(reverse("annotation:metric_board_download", args=[study.slug, "csv"]),
                           {"aspect": "relevance"}).content.decode()
    external = [line for line in csv_board.splitlines() if ",external:length," in line]
    assert len(external) == 1 and ",external:length,response_length,0.234" in external[0]
    # the reference-free baselines, run at import, are ranked beside it with intervals
    baselines = [line.split(",") for line in csv_board.splitlines()
                 if ",reference_free," in line]
    assert {row[2] for row in baselines} == {"length", "distinct_1", "distinct_2",
                                             "context_overlap"}
    assert "what FACE-style papers compare an LLM evaluator against" in board.content.decode()
    assert Run.objects.filter(submission__benchmark__slug="crs-arena-eval",
                              evaluator="reference_free").count() == 9


def test_ab_redial_agreement_per_field_with_intervals(staff, tmp_path):
    benchmark, study, summary = public_dataset_import(name="ab_redial",
                                                      path=dataset("ab_redial"), author=staff)
    assert summary["annotators"] == 4 and summary["systems"] == 0
    out = io.StringIO()
    call_command("agreement", study.slug, format="json", stdout=out)
    report = json.loads(out.getvalue())
    fields = {f["field"]: f["alpha"] for f in report["fields"]}
    assert set(fields) == {"understanding", "task_completion", "interest_arousal", "efficiency",
                           "dialogue_overall", "relevance", "interestingness", "turn_overall"}
    relevance = fields["relevance"]
    assert relevance["ordinal"]["value"] == pytest.approx(0.523, abs=1e-3)
    assert relevance["interval"]["value"] == pytest.approx(0.549, abs=1e-3)
    assert relevance["ordinal"]["n"]["units"] == 600
    assert relevance["ordinal"]["n"]["annotators"] == 4
    for alphas in fields.values():
        for estimate in alphas.values():
            assert estimate["ci_low"] < estimate["value"] < estimate["ci_high"]
    assert len(report["leave_one_out"]["rows"]) == 5  # everyone, then without each slot

    # Scores on units without a system belong to "AB-ReDial reference" and still join.
    path = tmp_path / "turns.csv"
    turn_units = sorted({label.unit_id for label in ImportedLabel.objects.filter(
        study=study, field="relevance")})
    path.write_text("metric,unit_type,unit_id,value\n" + "".join(
        f"relevance,turn,{unit},{i % 5}\n" for i, unit in enumerate(turn_units)))
    (run,) = scores_import(path=path, benchmark=benchmark, evaluator="toy")
    assert run.submission.system.name == "AB-ReDial reference"
    correlation = report_selectors.study_correlation(study=study, evaluator="external:toy")
    (row,) = [r for r in correlation["item_level"] if r["aspect"] == "relevance"]
    assert row["correlations"]["pearson"]["n"] == 600


def test_crs_arena_dial_and_usr_import_as_studies(staff):
    _, dial, _ = public_dataset_import(name="crs_arena_dial", path=dataset("crs_arena_dial"),
                                       author=staff)
    report = report_selectors.study_agreement(study=dial)
    (satisfaction,) = report["fields"]
    assert satisfaction["alpha"]["nominal"]["undefined_reason"] == (
        "no unit has values from two or more annotators (no pairable values)")
    _, usr, summary = public_dataset_import(name="usr", path=dataset("usr"), author=staff)
    assert summary["labels"] == 11880
    report = report_selectors.study_agreement(study=usr)
    overall = next(f for f in report["fields"] if f["field"] == "overall")["alpha"]["ordinal"]
    assert overall["value"] is not None and overall["n"]["units"] == 660


def test_a_failing_import_stores_nothing(staff, tmp_path):
    broken = tmp_path / "crs_arena_eval.json"
    broken.write_text('[{"conv_id": "nope"}]')
    with pytest.raises(CommandError, match="nothing was stored"):
        call_command("import_public", "crs_arena_eval", str(broken))
    assert not Benchmark.objects.exists() and not Study.objects.exists()
    assert not Run.objects.exists()
