"""The `evaluate`, `compare` and `bench_metrics` commands: output shapes, exit codes, storage."""

import json
from io import StringIO

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from evaluation.models import Job, Run, Submission, System, UnitScore
from tests.support.submissions import EXPECTED, stored_files, tiny_lines, write_lines

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def media_root(settings, tmp_path):
    settings.MEDIA_ROOT = tmp_path / "media"
    settings.NLI_MODEL_PATH = ""


def evaluate(*args) -> str:
    out = StringIO()
    call_command("evaluate", *args, "--no-progress", stdout=out, stderr=StringIO())
    return out.getvalue()


def test_evaluate_json_gives_value_ci_n_and_direction_per_metric(tiny_benchmark, tmp_path):
    path = write_lines(tmp_path / "mine.jsonl")
    data = json.loads(evaluate("--benchmark", "tiny", "--submission", str(path), "--json"))
    assert data["system"] == "mine" and data["benchmark"] == "tiny"
    assert data["evaluator"] == "trace" and len(data["config_hash"]) == 64
    assert "bootstrap" not in data
    recall = data["metrics"]["recall@1"]
    assert recall["value"] == pytest.approx(EXPECTED["recall@1"])
    assert recall["n"] == 4 and recall["direction"] == "higher" and len(recall["ci"]) == 2
    assert data["metrics"]["route_km"]["direction"] == "lower"
    assert "entailment" in data["unavailable"]
    assert Job.objects.get(pk=data["job"]).status == Job.Status.SUCCEEDED


def test_evaluate_prints_a_table_and_writes_unit_rows(tiny_benchmark, tmp_path):
    path = write_lines(tmp_path / "mine.jsonl")
    units = tmp_path / "units.jsonl"
    text = evaluate("--benchmark", "tiny", "--submission", str(path), "--system", "Mine",
                    "--per-unit", str(units), "--split", "train", "--split", "test")
    assert "recall@1" in text and "95% CI" in text and "higher" in text
    assert "entailment" in text and "n/a" in text
    rows = [json.loads(line) for line in units.read_text().splitlines()]
    # Turn units: the recommend/compare turns, plus one unit per rejection episode (keyed by the
    # rejecting user turn, d1#2) for the pooled rejection recovery.
    assert {row["unit_id"] for row in rows if row["unit_type"] == "turn"
            and row["metric"] != "rejection_recovery"} == {"d1#1", "d1#3", "d2#1"}
    assert {row["unit_id"] for row in rows if row["metric"] == "rejection_recovery"} == {"d1#2"}
    assert {"system", "benchmark", "evaluator", "metric", "unit_type", "unit_id",
            "value"} == set(rows[0])
    assert Run.objects.get().config["splits"] == ["test", "train"]


def test_hidden_units_are_exported_only_with_include_hidden(tiny_benchmark, tmp_path):
    path = write_lines(tmp_path / "mine.jsonl")
    units = tmp_path / "units.jsonl"
    evaluate("--benchmark", "tiny", "--submission", str(path), "--per-unit", str(units),
             "--include-hidden")
    assert "d3#1" in units.read_text()


def test_evaluate_rejects_a_bad_file_with_line_numbers_and_stores_nothing(tiny_benchmark,
                                                                          tmp_path):
    lines = tiny_lines()
    lines[1]["ranked_item_ids"] = ["h1"]
    path = write_lines(tmp_path / "bad.jsonl", lines)
    with pytest.raises(CommandError) as caught:
        evaluate("--benchmark", "tiny", "--submission", str(path), "--system", "Bad")
    assert ("bad.jsonl:2: $.ranked_item_ids[0]: item 'h1' is not in the dialogue's candidate "
            "pool") in str(caught.value)
    assert not System.objects.exists() and not Submission.objects.exists()
    assert not Run.objects.exists() and not UnitScore.objects.exists()
    assert not (tmp_path / "media").exists() or not stored_files(tmp_path / "media")


@pytest.mark.django_db(transaction=True)
def test_evaluate_through_the_worker_path(tiny_benchmark, tmp_path):
    # Committed transactions enqueue at once; the (eager) task runs and the command follows
    # the job in the database until it is finished.
    path = write_lines(tmp_path / "mine.jsonl")
    data = json.loads(evaluate("--benchmark", "tiny", "--submission", str(path), "--json",
                               "--worker"))
    assert data["status"] == "succeeded"
    assert data["metrics"]["gs"]["value"] == pytest.approx(EXPECTED["gs"])


def test_compare_reports_the_paired_difference_and_t_test(tiny_benchmark, tmp_path):
    evaluate("--benchmark", "tiny", "--submission", str(write_lines(tmp_path / "a.jsonl")),
             "--system", "A")
    worse = tiny_lines()
    for line in worse:
        line["ranked_item_ids"] = line["ranked_item_ids"][::-1]
    evaluate("--benchmark", "tiny", "--submission", str(write_lines(tmp_path / "b.jsonl", worse)),
             "--system", "B")
    out = StringIO()
    call_command("compare", "--benchmark", "tiny", "--systems", "A", "B", "--json", stdout=out)
    data = json.loads(out.getvalue())
    assert (data["a"]["system"], data["b"]["system"], data["same_config"]) == ("A", "B", True)
    rows = {row["metric"]: row for row in data["metrics"]}
    recall = rows["recall@1"]
    # A: 0, 1, 1, 1 per turn; B (reversed rankings): 1, 0, 0, 0 -> A − B = 0.75 − 0.25.
    assert recall["difference"] == pytest.approx(0.5)
    assert recall["shared_dialogues"] == 3 and len(recall["ci"]) == 2
    assert set(recall["t_test"]) >= {"t", "p_value", "n", "mean_difference"}
    assert recall["t_test"]["n"] == 3
    assert rows["gs"]["difference"] == 0 and rows["gs"]["significant"] is False
    text = StringIO()
    call_command("compare", "--benchmark", "tiny", "--systems", "A", "B", stdout=text)
    assert "recall@1" in text.getvalue() and "95% CI" in text.getvalue()


def test_compare_needs_finished_runs(tiny_benchmark):
    with pytest.raises(CommandError, match="no system 'X'"):
        call_command("compare", "--benchmark", "tiny", "--systems", "X", "Y")


def test_bench_metrics_prints_turns_per_second():
    out = StringIO()
    call_command("bench_metrics", "--turns", "200", stdout=out)
    lines = out.getvalue().splitlines()
    assert len(lines) == 2 and all("turns/s/core" in line for line in lines)
    assert "text metrics on" in lines[0] and "text metrics off" in lines[1]
