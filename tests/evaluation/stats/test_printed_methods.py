"""Every printed method name is the method computed (issue 30.5).

Each number in a report carries the ``method`` of the function that produced it and the
``params`` of the interval it computed. The README of an export prints METHOD_DESCRIPTIONS[method]
next to it, the tables name the interval: these tests walk whole reports (agreement with
citations, picks and alpha; correlation with the sample-efficiency curve; arena ratings; run
means) and check, for every estimate, that the registered text describes the interval the
estimate records — and that a text promising a bootstrap belongs only to estimates that drew one,
with the B and seed it prints.
"""

import csv
import io
import re
from collections.abc import Iterator, Mapping

from annotation.lib import exports, reports
from annotation.lib.labels import FieldSpec, LabelRow, LabelTable
from evaluation.lib.stats import arena, clustered, comparison
from evaluation.lib.stats.methods import (
    INTERVAL_PHRASES,
    METHOD_DESCRIPTIONS,
    SAMPLE_EFFICIENCY_REPEATS,
    interval_kind,
)


def estimates(value) -> Iterator[Mapping]:
    """Every number in a report that names its method (a mapping with a value and a method)."""
    if isinstance(value, Mapping):
        if isinstance(value.get("method"), str) and ("value" in value or "statistic" in value):
            yield value
        for item in value.values():
            yield from estimates(item)
    elif isinstance(value, list | tuple):
        for item in value:
            yield from estimates(item)


def assert_text_matches(estimate: Mapping) -> None:
    method = estimate["method"]
    assert method in METHOD_DESCRIPTIONS, method
    text = METHOD_DESCRIPTIONS[method]
    params = estimate.get("params") or {}
    kind = interval_kind(params)
    if kind is not None and estimate.get("ci_low") is not None:
        assert INTERVAL_PHRASES[kind] in text, (method, kind)
    if "percentile bootstrap" in text and estimate.get("ci_low") is not None:
        assert kind == "percentile_bootstrap", (method, params)
        assert f"B = {params['n_resamples']:,} resamples" in text
        assert f"fixed seed ({params['seed']})" in text
    if kind == "percentile_bootstrap":
        assert "percentile bootstrap" in text, method


def study_table() -> LabelTable:
    rows = []
    for quote in range(24):
        dialogue = f"d{quote // 3}"
        verdicts = (["supported"] * 3 if quote % 4 else ["partial", "supported", "partial"])
        rows += [LabelRow("quote", f"{dialogue}#1#q{quote}", dialogue, "RAG", who, "citation", v)
                 for who, v in zip("abc", verdicts, strict=True)]
    for unit in range(12):
        for who, shift in zip("abc", (0, 1, 0), strict=True):
            rows.append(LabelRow("turn", f"t{unit}#1", f"t{unit}", "RAG", who, "quality",
                                 1 + (unit + shift * (unit % 3 == 0)) % 5))
    fields = {"citation": FieldSpec("citation", "quote", "nominal"),
              "quality": FieldSpec("quality", "turn", "ordinal", 1, 5)}
    return LabelTable(rows, fields)


def test_every_number_of_an_agreement_report_names_the_interval_it_has():
    report = reports.build_agreement(study_table(), n_resamples=50)
    found = list(estimates(report))
    assert {"citation_precision", "krippendorff_alpha"} <= {e["method"] for e in found}
    for estimate in found:
        assert_text_matches(estimate)
    (precision,) = report["citation_precision"]
    assert precision["ci_low"] is not None  # quotes carry their dialogues: an interval
    assert precision["params"]["interval"] == "jackknife_t_logit"
    assert "bootstrap" not in METHOD_DESCRIPTIONS["citation_precision"]


def test_the_export_readme_prints_the_registered_text_for_each_method_found():
    report = reports.build_agreement(study_table(), n_resamples=50)
    methods = exports.methods_used(report)
    readme = exports.bundle_readme({"study": "s"}, {"agreement.json": "agreement"}, methods)
    for method in {e["method"] for e in estimates(report)}:
        assert f"### {method}\n\n{METHOD_DESCRIPTIONS[method]}\n" in readme
    # the citation table's CSV and LaTeX print the same interval the JSON carries
    table = next(t for t in exports.agreement_tables(report) if t.name == "citation_precision")
    row = next(csv.DictReader(io.StringIO(exports.to_csv([table]))))
    (precision,) = report["citation_precision"]
    assert float(row["ci_low"]) == round(precision["ci_low"], 3) or \
        abs(float(row["ci_low"]) - precision["ci_low"]) < 1e-3


def test_the_sample_efficiency_text_prints_the_number_of_draws_the_report_makes():
    human = {("A", "u1"): 1, ("A", "u2"): 2, ("B", "u3"): 2, ("B", "u4"): 3, ("C", "u5"): 4,
             ("C", "u6"): 5}
    metric = {key: value / 10 for key, value in human.items()}
    rows = [LabelRow("turn", unit, unit, system, "", "quality", value)
            for (system, unit), value in human.items()]
    table = LabelTable(rows, {"quality": FieldSpec("quality", "turn", "interval", 0, 5)})
    report = reports.build_correlation(
        table, [reports.ScoreSet("external:toy", "quality", "turn", metric)],
        evaluator="external:toy", with_points=True)
    repeats = {p["n_repeats"] for p in report["scatter"][0]["efficiency"]}
    assert repeats == {SAMPLE_EFFICIENCY_REPEATS}
    text = METHOD_DESCRIPTIONS["sample_efficiency"]
    assert re.search(rf"repeated {SAMPLE_EFFICIENCY_REPEATS} times", text)
    for estimate in estimates(report):
        assert_text_matches(estimate)


def test_arena_ratings_print_the_bootstrap_they_draw():
    votes = [("A", "B", "a"), ("B", "A", "a"), ("A", "B", "tie"), ("A", "C", "a"),
             ("C", "B", "b"), ("B", "C", "a")] * 6
    for table in (arena.elo_with_ci(votes), arena.bradley_terry_with_ci(votes)):
        for estimate in table.values():
            assert_text_matches(estimate.to_dict())


def test_run_means_and_differences_name_their_interval():
    values = [0.2, 0.4, 0.9, 0.6, 0.5, 0.7]
    labels = ["a", "a", "b", "c", "c", "d"]
    for bounds in (None, (0.0, None), (0.0, 1.0)):
        assert_text_matches(clustered.cluster_mean(values, labels, bounds=bounds).to_dict())
    difference = clustered.paired_cluster_difference(values, labels, values[::-1], labels)
    assert_text_matches(difference.to_dict())
    few = [f"d{i}" for i in range(8)]  # 6–12 dialogues: the compare page's randomisation test
    compared = comparison.compare_systems("A", list(range(8)), few, "B", [3] * 8, few)
    assert compared.difference.method == comparison.RANDOMISATION_METHOD
    assert_text_matches(compared.difference.to_dict())


def test_a_text_that_promises_a_bootstrap_fails_the_check_on_a_jackknife_estimate(monkeypatch):
    # The check can fail: the pre-issue-30 citation text over today's estimate.
    import pytest

    report = reports.build_agreement(study_table(), n_resamples=50)
    (precision,) = report["citation_precision"]
    monkeypatch.setitem(METHOD_DESCRIPTIONS, "citation_precision",
                        "… the CI is a cluster bootstrap over dialogues. The 95% interval is a "
                        "percentile bootstrap: B = 1,000 resamples … fixed seed (42) … logit scale")
    with pytest.raises(AssertionError):
        assert_text_matches(precision)
