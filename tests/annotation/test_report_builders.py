"""The pure report builders, label flattening, charts and exports on hand-made data."""

import csv
import io
import json
import math

import pytest

from annotation.lib import exports, reports
from annotation.lib.labels import FieldSpec, LabelRow, LabelTable, NativeItem, native_rows
from evaluation.lib import charts

# Krippendorff (2011), example C: observers A–D × 12 units, None = missing.
EXAMPLE_C = {
    "A": [1, 2, 3, 3, 2, 1, 4, 1, 2, None, None, None],
    "B": [1, 2, 3, 3, 2, 2, 4, 1, 2, 5, None, 3],
    "C": [None, 3, 3, 3, 2, 3, 4, 2, 2, 5, 1, None],
    "D": [1, 2, 3, 3, 2, 4, 4, 1, 2, 5, 1, None],
}


def table_from(matrix: dict, name: str, level: str, **spec) -> LabelTable:
    rows = [LabelRow("turn", f"u{unit}", f"u{unit}", "", annotator, name, value)
            for annotator, values in matrix.items() for unit, value in enumerate(values)
            if value is not None]
    return LabelTable(rows, {name: FieldSpec(name, "turn", level, **spec)})


def alpha(report, field, level):
    entry = next(f for f in report["fields"] if f["field"] == field)
    return entry["alpha"][level]


def test_ordinal_fields_report_krippendorff_example_c_at_ordinal_and_interval_level():
    report = reports.build_agreement(table_from(EXAMPLE_C, "score", "ordinal"),
                                     n_resamples=200)
    ordinal, interval = alpha(report, "score", "ordinal"), alpha(report, "score", "interval")
    assert round(ordinal["value"], 3) == 0.815
    assert round(interval["value"], 3) == 0.849
    assert ordinal["n"] == {"units": 11, "units_total": 12, "annotators": 4,
                            "pairable_values": 40}
    assert ordinal["ci_low"] < ordinal["value"] < ordinal["ci_high"]
    assert ordinal["method"] == "krippendorff_alpha"


def test_nominal_field_gives_example_c_nominal_alpha_and_majority_ties():
    report = reports.build_agreement(table_from(EXAMPLE_C, "label", "nominal"), n_resamples=50)
    assert round(alpha(report, "label", "nominal")["value"], 3) == 0.743
    entry = report["fields"][0]
    assert entry["majority"]["ties"] == 1  # unit 6: 1, 2, 3, 4 (the single-value unit is no tie)
    assert "kappa" not in entry  # four annotators: no Cohen's kappa


def test_aggregated_labels_are_explained_not_nan():
    rows = [LabelRow("dialogue", f"d{i}", f"d{i}", "s", "", "overall", float(i % 3))
            for i in range(10)]
    table = LabelTable(rows, {"overall": FieldSpec("overall", "dialogue", "ordinal", 0, 2)})
    report = reports.build_agreement(table)
    assert report["aggregated_only"]
    estimate = alpha(report, "overall", "ordinal")
    assert estimate["value"] is None and "aggregated" in estimate["undefined_reason"]
    json.dumps(report, allow_nan=False)  # never NaN
    assert report["leave_one_out"]["rows"] == [] and report["leave_one_out"]["note"]


def test_leave_one_out_and_worst_pairs_rank_the_divergent_annotator():
    matrix = {"a": [1, 2, 3, 4, 5, 1, 2, 3], "b": [1, 2, 3, 4, 5, 1, 2, 3],
              "c": [1, 2, 3, 4, 4, 1, 2, 3], "odd": [5, 1, 4, 2, 1, 3, 5, 1]}
    report = reports.build_agreement(table_from(matrix, "score", "interval"), n_resamples=20)
    loo = report["leave_one_out"]
    assert loo["rows"][0]["dropped"] == []
    best = max(loo["rows"][1:], key=lambda row: row["mean_alpha"])
    assert best["dropped"] == ["odd"]
    assert "odd" in loo["pairs"][0]["dropped"]
    deviation = {d["annotator"]: d["mean_abs_deviation"]["score"] for d in report["diagnostics"]}
    assert max(deviation, key=deviation.get) == "odd"


def test_native_rows_flatten_every_form():
    values = {"citations": {"0": "supported", "1": "partial"},
              "errors": ["wrong_item", "too_vague"], "likert": {"naturalness": 4},
              "core": {"coherence": 3, "overall": 70},
              "face": {"turns": {"3": {"relevance": 2}}, "understanding": 1},
              "recommend": {"items": ["r1", "r2"]}, "pairwise": {"choice": "b"}}
    rows = native_rows(values, NativeItem("response", "d1", 3, "Alpha", "Beta"), "ann")
    got = {(r.field, r.unit_type, r.unit_id, r.system): r.value for r in rows}
    assert got[("citation", "quote", "d1#3#q1", "Alpha")] == "partial"
    assert got[("error.wrong_item", "turn", "d1#3", "Alpha")] == 1
    assert got[("error.fabricated_claim", "turn", "d1#3", "Alpha")] == 0
    assert got[("errors", "turn", "d1#3", "Alpha")] == frozenset({"wrong_item", "too_vague"})
    assert got[("likert.naturalness", "turn", "d1#3", "Alpha")] == 4
    assert got[("core.coherence", "dialogue", "d1", "Alpha")] == 3
    assert got[("core.overall", "dialogue", "d1", "Alpha")] == 70
    assert got[("face.relevance", "turn", "d1#3", "Alpha")] == 2
    assert got[("face.understanding", "dialogue", "d1", "Alpha")] == 1
    assert got[("recommend.items", "turn", "d1#3", "")] == frozenset({"r1", "r2"})
    assert got[("pairwise.choice", "turn", "d1#3", "Alpha vs Beta")] == "b"
    no_errors = native_rows({"errors": ["no_errors"]}, NativeItem("response", "d1", 3), "ann")
    assert {r.value for r in no_errors if r.field == "errors"} == {frozenset()}


def test_citation_precision_is_40_of_44_after_the_majority_vote():
    rows = []
    for quote in range(44):
        verdicts = ["supported"] * 3 if quote < 40 else ["partial", "supported", "partial"]
        rows += [LabelRow("quote", f"d{quote}#1#q0", f"d{quote}", "TF-IDF", who, "citation", v)
                 for who, v in zip("abc", verdicts, strict=True)]
    table = LabelTable(rows, {"citation": FieldSpec("citation", "quote", "nominal")})
    report = reports.build_agreement(table, n_resamples=50)
    (row,) = report["citation_precision"]
    assert row["system"] == "TF-IDF" and round(row["value"], 3) == 0.909
    assert row["n"]["quotes"] == 44 and row["n"]["supported"] == 40


def test_blind_recommendation_agreement_with_gold():
    rows = [LabelRow("turn", "d1#1", "d1", "", who, "recommend.items", frozenset(items))
            for who, items in (("a", {"r1"}), ("b", {"r1", "r2"}), ("c", {"r2"}))]
    rows += [LabelRow("turn", "d2#1", "d2", "", who, "recommend.items", frozenset({"h1"}))
             for who in "ab"]
    table = LabelTable(rows, {"recommend.items": FieldSpec("recommend.items", "turn", "set")})
    report = reports.build_agreement(table, recommend_gold={("", "d1#1"): ["r1"],
                                                            ("", "d2#1"): ["a1"]},
                                     n_resamples=20)
    rec = report["blind_recommendation"]
    # pairs: d1 {r1}/{r1,r2} .5, {r1}/{r2} 0, {r1,r2}/{r2} .5; d2 1 -> mean .5
    assert rec["mean_pairwise_jaccard"]["value"] == pytest.approx(0.5)
    assert rec["strict_majority_share"]["value"] == 1.0
    assert rec["majority_gold_agreement"]["value"] == 0.5
    assert alpha(report, "recommend.items", "masi")["method"] == "krippendorff_alpha"


# --- correlation ---------------------------------------------------------------------------------

HUMAN = {("A", "u1"): 1, ("A", "u2"): 2, ("B", "u3"): 2, ("B", "u4"): 3, ("C", "u5"): 4,
         ("C", "u6"): 5}
METRIC = {("A", "u1"): 0.1, ("A", "u2"): 0.3, ("B", "u3"): 0.2, ("B", "u4"): 0.2,
          ("C", "u5"): 0.9, ("C", "u6"): 0.7}


def three_system_table() -> LabelTable:
    rows = [LabelRow("turn", unit, unit, system, "", "quality", value)
            for (system, unit), value in HUMAN.items()]
    return LabelTable(rows, {"quality": FieldSpec("quality", "turn", "interval", 0, 5)})


def pearson(xs, ys):
    mx, my = sum(xs) / len(xs), sum(ys) / len(ys)
    cov = sum((x - mx) * (y - my) for x, y in zip(xs, ys, strict=True))
    return cov / math.sqrt(sum((x - mx) ** 2 for x in xs) * sum((y - my) ** 2 for y in ys))


def test_three_system_correlation_matches_hand_computed_values():
    score = reports.ScoreSet("external:toy", "quality", "turn", dict(METRIC))
    report = reports.build_correlation(three_system_table(), [score], evaluator="external:toy",
                                       groups={key: key[0] for key in HUMAN}, by="system")
    item = next(r for r in report["item_level"] if r["subset"] == "all"
                and r["aspect"] == "quality")
    expected = pearson([METRIC[k] for k in HUMAN], list(HUMAN.values()))
    assert item["correlations"]["pearson"]["statistic"] == pytest.approx(expected)
    assert item["correlations"]["pearson"]["n"] == 6
    system = next(r for r in report["system_level"] if r["subset"] == "all")
    # system means: metric A .2, B .2, C .8; human A 1.5, B 2.5, C 4.5
    assert system["correlations"]["spearman"]["statistic"] == pytest.approx(1.5 / math.sqrt(3))
    assert system["correlations"]["kendall"]["statistic"] == pytest.approx(2 / math.sqrt(6))
    assert system["systems"] == 3
    per_system = [r for r in report["item_level"] if r["subset"] == "A"]
    assert per_system[0]["correlations"]["pearson"]["undefined_reason"] == \
        "fewer than 3 shared units"


def test_the_scatter_data_carry_a_sample_efficiency_curve_up_to_every_unit():
    score = reports.ScoreSet("external:toy", "quality", "turn", dict(METRIC))
    report = reports.build_correlation(three_system_table(), [score], evaluator="external:toy",
                                       with_points=True)
    curve = report["scatter"][0]["efficiency"]
    assert [p["dialogues_per_system"] for p in curve] == [1, 2]  # two units per system
    assert all(p["n_repeats"] == reports.EFFICIENCY_REPEATS for p in curve)
    # all units: the system-level Spearman ρ itself, with no sampling left
    assert curve[1]["mean"] == pytest.approx(1.5 / math.sqrt(3))
    assert curve[1]["ci_low"] == curve[1]["ci_high"] == pytest.approx(curve[1]["mean"])
    assert -1 <= curve[0]["ci_low"] <= curve[0]["mean"] <= curve[0]["ci_high"] <= 1
    assert "efficiency" not in json.dumps(reports.build_correlation(
        three_system_table(), [score], evaluator="external:toy"))  # not in the exports


def test_metrics_named_like_fields_are_matched_else_compared_with_every_field():
    fields = {"face.relevance": FieldSpec("face.relevance", "turn", "ordinal", 0, 2),
              "face.overall": FieldSpec("face.overall", "dialogue", "ordinal", 0, 4),
              "likert.clarity": FieldSpec("likert.clarity", "turn", "ordinal", 1, 5)}
    named = [reports.ScoreSet("e", "relevance", "turn"), reports.ScoreSet("e", "overall",
                                                                         "dialogue")]
    pairs, by_name = reports.match_aspects(named, fields)
    assert by_name and {(s.metric, f.name) for s, f in pairs} == {
        ("relevance", "face.relevance"), ("overall", "face.overall")}
    pairs, by_name = reports.match_aspects([reports.ScoreSet("e", "length", "turn")], fields)
    assert not by_name and {f.name for _, f in pairs} == {"face.relevance", "likert.clarity"}


def test_qwk_is_reported_when_a_judge_scores_on_the_human_scale():
    table = three_system_table()
    judge = reports.ScoreSet("judge", "quality", "turn",
                             {key: float(min(5, value)) for key, value in HUMAN.items()})
    report = reports.build_correlation(table, [judge], evaluator="judge")
    row = next(r for r in report["item_level"] if r["aspect"] == "quality")
    assert row["qwk"]["value"] == pytest.approx(1.0)


def test_metric_leaderboard_ranks_the_better_metric_first():
    table = three_system_table()
    good = reports.ScoreSet("external:good", "score", "turn",
                            {k: v + 0.01 * i for i, (k, v) in enumerate(HUMAN.items())})
    bad = reports.ScoreSet("external:bad", "score", "turn",
                           {k: -v for k, v in HUMAN.items()})
    board = reports.build_metric_leaderboard(table, [bad, good], "quality", n_resamples=200)
    assert [row["evaluator"] for row in board["rows"]] == ["external:good", "external:bad"]
    assert board["rows"][0]["rank"] == 1 and board["rows"][1]["rank"] == 2
    assert board["rows"][0]["ci_low"] is not None


def test_coupling_per_rater_type():
    rows = []
    for i in range(6):
        rows += [LabelRow("dialogue", f"d{i}", f"d{i}", "", "a", "core.coherence", i % 5),
                 LabelRow("dialogue", f"d{i}", f"d{i}", "", "a", "core.novelty", (i * 2) % 5)]
    fields = {name: FieldSpec(name, "dialogue", "ordinal", 0, 4)
              for name in ("core.coherence", "core.novelty")}
    judge = [reports.ScoreSet("core", name, "dialogue", {("", f"d{i}"): float(i)
                                                          for i in range(6)})
             for name in fields]
    coupling = reports.build_coupling(LabelTable(rows, fields), {"core": judge})
    assert [r["rater"] for r in coupling["raters"]] == ["humans", "core"]
    assert coupling["raters"][1]["values"][0][1] == pytest.approx(1.0)


# --- charts and exports -----------------------------------------------------------------------


def test_heatmap_has_one_cell_per_factor_pair_and_scatter_one_point_per_unit():
    chart = charts.heatmap(["a", "b", "c"], [[1, 0.5, None], [0.5, 1, -0.2], [None, -0.2, 1]])
    assert len(chart["cells"]) == 9
    assert chart["cells"][2]["fill"] == "#e5e7eb" and chart["cells"][5]["fill"] != "#ffffff"
    plot = charts.scatter([charts.ScatterPoint("", x, y, group=g)
                           for x, y, g in [(0.1, 1, "x"), (0.5, 2, "y"), (0.9, 3, "x")]],
                          x_label="m", y_label="h")
    assert len(plot["points"]) == 3 and len(plot["legend"]) == 2
    assert plot["points"][0]["cx"] < plot["points"][2]["cx"]
    assert plot["points"][0]["cy"] > plot["points"][2]["cy"]  # higher is up


def test_curve_draws_the_defined_means_and_their_band_from_minus_one_to_one():
    chart = charts.curve([(1, None, None, None), (2, 0.2, -0.4, 0.6), (5, 1.0, 1.0, 1.0)],
                         x_label="turns per system", y_label="ρ")
    assert [label for _, label in chart["x_ticks"]] == ["1", "2", "5"]
    assert len(chart["dots"]) == 2 and len(chart["line"].split()) == 2
    assert len(chart["band"].split()) == 4  # two upper corners, two lower
    top, bottom = chart["plot"]["top"], chart["plot"]["bottom"]
    assert chart["dots"][1]["cy"] == top  # ρ = 1 at the top
    assert chart["y_ticks"][0] == (bottom, "-1.0")  # -1 at the bottom
    assert charts.curve([(1, None, None, None)], x_label="x", y_label="y")["line"] == ""


def test_exports_render_the_same_numbers_as_csv_latex_and_json():
    report = reports.build_agreement(table_from(EXAMPLE_C, "my_score", "ordinal"),
                                     n_resamples=100, snapshot={"study": "s"})
    tables = exports.agreement_tables(report)
    rows = list(csv.DictReader(io.StringIO(exports.to_csv(tables[:1]))))
    assert rows[0]["level"] == "ordinal" and float(rows[0]["value"]) == pytest.approx(0.815,
                                                                                      abs=5e-4)
    latex = exports.to_latex(tables[:1])
    assert r"\toprule" in latex and r"\bottomrule" in latex and r"my\_score" in latex
    assert "0.815" in latex and "0.849" in latex
    data = json.loads(exports.to_json(report))
    assert data["fields"][0]["alpha"]["ordinal"]["n"]["pairable_values"] == 40
    display = exports.display_table(tables[0])
    assert display["rows"][0][2]["text"].startswith("0.815 [")


def test_latex_explains_undefined_values_instead_of_printing_nan():
    report = reports.build_agreement(table_from({"a": [1, 2, 3]}, "x", "interval"))
    latex = exports.to_latex(exports.agreement_tables(report)[:1])
    assert "nan" not in latex.lower() and "fewer than two annotators" in latex


def test_readme_names_methods_snapshot_and_exclusions():
    report = reports.build_agreement(table_from(EXAMPLE_C, "x", "ordinal"), n_resamples=10)
    snapshot = {"study": "s", "title": "S", "concord_version": "0.1.0",
                "generated_at": "2026-01-01T00:00:00", "counts": {"labels": 40},
                "excluded": [{"annotator": "zed", "reason": "failed gold",
                              "excluded_at": "2026-01-01"}]}
    readme = exports.bundle_readme(snapshot, {"agreement.json": "agreement"},
                                   exports.methods_used(report))
    assert "### krippendorff_alpha" in readme and "### leave_one_annotator_out" in readme
    assert "zed: failed gold" in readme and "Concord 0.1.0" in readme


def test_a_rare_label_reports_alpha_with_why_it_has_no_interval(monkeypatch):
    # Three categories, 4 values outside "n" among 30: alpha, but no interval (statistics.md,
    # "Too few values of the rarer categories"); the page's table, the CSV and the LaTeX say
    # why in the note. The rule serves nominal designs too large for the test inversion to
    # simulate; the limit is lowered to nothing to reach it with a small study.
    from evaluation.lib.stats import agreement

    monkeypatch.setattr(agreement, "MAX_OUTCOMES", 0)
    rare = {"A": ["y", "n", "n", "n", "n", "n", "n", "n", "n", "n"],
            "B": ["y", "n", "n", "n", "n", "n", "n", "n", "m", "n"],
            "C": ["y", "n", "n", "n", "n", "n", "n", "n", "n", "n"]}
    report = reports.build_agreement(table_from(rare, "error.x", "nominal"))
    estimate = alpha(report, "error.x", "nominal")
    assert estimate["value"] is not None and estimate["ci_low"] is None
    tables = exports.agreement_tables(report)
    row = next(csv.DictReader(io.StringIO(exports.to_csv(tables[:1]))))
    assert row["ci_low"] == "" and "too few values outside the most frequent" in row["note"]
    assert "too few values outside the most frequent" in exports.to_latex(tables[:1])
    display = exports.display_table(tables[0])
    assert any("too few values" in cell["text"] for cell in display["rows"][0])


def test_the_agreement_tables_name_each_fields_interval():
    # Yes/no answers get the profile-likelihood interval from two annotators, the test
    # inversion from three (the same rare field that the jackknife's rules left without one),
    # a 1-5 score the jackknife-t (statistics.md, "Yes/no fields rated twice" and "Nominal
    # fields: a test-inversion interval"); the CSV and LaTeX say which.
    pairs = {"A": ["y", "n", "n", "y", "n", "n", "y", "n", "n", "n", "y", "n"],
             "B": ["y", "n", "y", "y", "n", "n", "n", "n", "n", "n", "y", "n"]}
    report = reports.build_agreement(table_from(pairs, "error.x", "nominal"))
    tables = exports.agreement_tables(report)
    row = next(csv.DictReader(io.StringIO(exports.to_csv(tables[:1]))))
    assert row["interval"] == "profile likelihood" and row["ci_low"] != ""
    assert "test inversion or profile likelihood, as the Interval column says" in \
        tables[0].caption
    assert "profile likelihood" in exports.to_latex(tables[:1])
    rare = {"A": ["y", "n", "n", "n", "n", "n", "n", "n", "n", "n"],
            "B": ["y", "n", "n", "n", "n", "n", "n", "n", "y", "n"],
            "C": ["y", "n", "n", "n", "n", "n", "n", "n", "n", "n"]}
    three = reports.build_agreement(table_from(rare, "error.x", "nominal"))
    row = next(csv.DictReader(io.StringIO(exports.to_csv(exports.agreement_tables(three)[:1]))))
    assert row["interval"] == "test inversion" and row["note"] == ""
    assert float(row["ci_low"]) < float(row["value"]) < float(row["ci_high"])
    assert "test inversion" in exports.to_latex(exports.agreement_tables(three)[:1])
    scores = reports.build_agreement(table_from(EXAMPLE_C, "my_score", "ordinal"))
    first = next(csv.DictReader(io.StringIO(exports.to_csv(exports.agreement_tables(scores)[:1]))))
    assert first["interval"] == "jackknife-t"
