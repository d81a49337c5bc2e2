"""Paper-ready renderings of the report dicts (spec: statistics.md "Exports"; formats.md §6):
JSON (every number with its n, CI and method), CSV and LaTeX (booktabs) tables, and the files
of the export bundle with a README saying how each number was computed.

Pure Python: the inputs are the plain dicts of `reports`; nothing here touches the database.
A table is a `Table` (name, caption, columns, rows); the same tables feed the CSV and the
LaTeX output, and the report page shows the same values.
"""

from __future__ import annotations

import csv
import io
import json
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from evaluation.lib.stats.agreement import (
    ALPHA_INTERVAL,
    ALPHA_PAIR_INTERVAL,
    ALPHA_TEST_INTERVAL,
)
from evaluation.lib.stats.methods import METHOD_DESCRIPTIONS

FORMATS = ("json", "csv", "latex")
DASH = "—"


@dataclass
class Table:
    name: str
    caption: str
    columns: list[tuple[str, str]]  # (key, header)
    rows: list[dict] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    optional: frozenset[str] = frozenset()  # columns left out when no row fills them

    def shown_columns(self) -> list[tuple[str, str]]:
        return [(key, header) for key, header in self.columns
                if key not in self.optional or any(row.get(key) not in (None, "")
                                                   for row in self.rows)]


# --- building tables from the reports ---------------------------------------------------------


def _estimate_cells(estimate: Mapping | None, prefix: str = "") -> dict:
    estimate = estimate or {}
    return {f"{prefix}value": estimate.get("value"), f"{prefix}ci_low": estimate.get("ci_low"),
            f"{prefix}ci_high": estimate.get("ci_high"),
            f"{prefix}note": estimate.get("undefined_reason")
            or (estimate.get("params") or {}).get("ci_note") or ""}


def agreement_tables(report: Mapping) -> list[Table]:
    """Agreement per field, annotator pairs, leave-one-out, worst pairs, annotators,
    citation precision and blind recommendation."""
    tables = [_alpha_table(report), _pairs_table(report)]
    loo = report.get("leave_one_out") or {}
    if loo.get("rows"):
        tables.append(_leave_out_table("leave_one_out", "Alpha per field without each annotator "
                                       "(first row: everyone)", loo, loo["rows"]))
    if loo.get("pairs"):
        tables.append(_leave_out_table("worst_pairs", "Alpha per field without two annotators, "
                                       "highest mean first", loo, loo["pairs"]))
    if report.get("diagnostics"):
        tables.append(_diagnostics_table(report))
    if report.get("citation_precision"):
        tables.append(_citation_table(report))
    if report.get("blind_recommendation"):
        tables.append(_recommend_table(report))
    if report.get("pairwise_preferences"):
        tables += _preference_tables(report["pairwise_preferences"])
    return tables


# How each alpha interval was computed, as the tables name it (statistics.md, "Confidence
# interval", "Yes/no fields rated twice" and "Nominal fields: a test-inversion interval").
ALPHA_INTERVAL_NAMES = {ALPHA_INTERVAL: "jackknife-t", ALPHA_PAIR_INTERVAL: "profile likelihood",
                        ALPHA_TEST_INTERVAL: "test inversion"}
ALPHA_CI_CAPTION = ("95% CI over units: jackknife-t, test inversion or profile likelihood, as "
                    "the Interval column says")


def _alpha_table(report) -> Table:
    table = Table("agreement", f"Krippendorff's alpha per field ({ALPHA_CI_CAPTION})",
                  [("field", "Field"), ("level", "Level"), ("value", "Alpha"),
                   ("ci_low", "CI low"), ("ci_high", "CI high"), ("interval", "Interval"),
                   ("units", "Units"), ("annotators", "Annotators"),
                   ("pairable_values", "Pairable values"), ("note", "Note")])
    for entry in report.get("fields", []):
        for level, estimate in entry["alpha"].items():
            n = estimate.get("n", {})
            shown = estimate.get("ci_low") is not None
            method = (estimate.get("params") or {}).get("interval")
            table.rows.append({"field": entry["label"], "level": level,
                               **_estimate_cells(estimate),
                               "interval": ALPHA_INTERVAL_NAMES.get(method, "") if shown else "",
                               "units": n.get("units"), "annotators": n.get("annotators"),
                               "pairable_values": n.get("pairable_values")})
    return table


def agreement_headline_table(report: Mapping) -> Table:
    """The headline of the agreement table: each field's alpha at its own level of measurement
    (the first of its levels; the others are in the full table)."""
    table = Table("agreement_headline", "Krippendorff's alpha per field at its level of "
                  f"measurement ({ALPHA_CI_CAPTION})",
                  [("field", "Field"), ("level", "Level"), ("value", "Alpha"),
                   ("ci_low", "CI low"), ("ci_high", "CI high"), ("interval", "Interval"),
                   ("units", "Units"), ("annotators", "Annotators"), ("note", "Note")])
    full = _alpha_table(report).rows
    for entry in report.get("fields", []):
        level = entry["alpha_levels"][0]
        row = next(row for row in full if row["field"] == entry["label"]
                   and row["level"] == level)
        table.rows.append({key: row[key] for key, _ in table.columns})
    return table


def _pairs_table(report) -> Table:
    table = Table("annotator_pairs", "Mean correlation over annotator pairs (numeric fields), "
                  "majority-vote ties and Cohen's kappa (nominal fields)",
                  [("field", "Field"), ("pearson", "Mean pairwise r"),
                   ("spearman", "Mean pairwise rho"), ("pairs", "Pairs"), ("ties", "Ties"),
                   ("units", "Units"), ("kappa", "Cohen's kappa"), ("note", "Note")],
                  optional=frozenset({"pearson", "spearman", "pairs", "ties", "units", "kappa"}))
    for entry in report.get("fields", []):
        pairwise, majority = entry.get("pairwise"), entry.get("majority")
        if not pairwise and not majority:
            continue
        row = {"field": entry["label"], "note": ""}
        if pairwise:
            row.update(pearson=pairwise["pearson"]["value"],
                       spearman=pairwise["spearman"]["value"],
                       pairs=pairwise["pearson"]["n"].get("pairs"),
                       note=pairwise["pearson"]["undefined_reason"] or "")
        if majority:
            row.update(ties=majority["ties"], units=majority["units"])
        if entry.get("kappa"):
            row.update(kappa=entry["kappa"]["value"],
                       note=entry["kappa"]["undefined_reason"] or row["note"])
        table.rows.append(row)
    return table


def _leave_out_table(name, caption, loo, rows) -> Table:
    columns = [("dropped", "Without")] + [(f, f) for f in loo["fields"]] + [("mean", "Mean")]
    table = Table(name, caption, columns)
    for row in rows:
        table.rows.append({"dropped": " + ".join(row["dropped"]) or "(nobody)",
                           **row["alphas"], "mean": row["mean_alpha"]})
    if loo.get("note"):
        table.notes.append(loo["note"])
    return table


def _diagnostics_table(report) -> Table:
    scales = sorted({name for d in report["diagnostics"] for name in d["mean_rating"]})
    columns = [("annotator", "Annotator"), ("labels", "Labels")]
    columns += [(f"mean:{s}", f"mean {s}") for s in scales]
    columns += [(f"dev:{s}", f"|dev| {s}") for s in scales]
    columns += [("flag_rate", "Any-error rate"), ("mean_errors", "Mean errors"),
                ("gold", "Gold accuracy")]
    table = Table("annotators", "Per-annotator diagnostics (deviation: from the mean of the "
                  "other annotators on the same unit)", columns,
                  optional=frozenset({"flag_rate", "mean_errors", "gold"}))
    for d in report["diagnostics"]:
        row = {"annotator": d["annotator"], "labels": d["n"].get("labels"),
               "flag_rate": d["flag_rate"], "mean_errors": d["mean_error_categories"],
               "gold": d["gold_accuracy"]}
        row.update({f"mean:{s}": d["mean_rating"].get(s) for s in scales})
        row.update({f"dev:{s}": d["mean_abs_deviation"].get(s) for s in scales})
        table.rows.append(row)
    return table


def _citation_table(report) -> Table:
    table = Table("citation_precision", "Citation precision per system: Supported quotes / all "
                  "quotes after the per-quote majority vote (ties count as Partial)",
                  [("system", "System"), ("value", "Precision"), ("ci_low", "CI low"),
                   ("ci_high", "CI high"), ("supported", "Supported"), ("quotes", "Quotes"),
                   ("partial", "Partial"), ("not_supported", "Not supported"),
                   ("ties", "Ties")])
    for row in report["citation_precision"]:
        table.rows.append({"system": row["system"], **_estimate_cells(row), **row["n"]})
    return table


RECOMMEND_LABELS = {
    "mean_pairwise_jaccard": "Mean pairwise Jaccard of the picked items",
    "strict_majority_share": "Dialogues with a strict-majority pick",
    "majority_gold_agreement": "Majority pick is a gold item",
}


def _recommend_table(report) -> Table:
    table = Table("blind_recommendation", "Blind recommendation agreement",
                  [("statistic", "Statistic"), ("value", "Value"), ("n", "n"),
                   ("note", "Note")])
    for name, estimate in report["blind_recommendation"].items():
        table.rows.append({"statistic": RECOMMEND_LABELS.get(name, name),
                           **_estimate_cells(estimate),
                           "n": ", ".join(f"{k} {v}" for k, v in estimate["n"].items())})
    return table


def _preference_tables(summary: Mapping) -> list[Table]:
    """Per system pair: wins, ties, losses and the win rate; over all systems: Bradley–Terry."""
    pairs = Table("pairwise_pairs", "Pairwise preferences per system pair: the first system's "
                  "wins, ties and losses, and its win rate (wins + ties/2) / votes with a 95% "
                  "studentized cluster interval over dialogues on the logit scale "
                  "(cluster_t_logit_mean)",
                  [("system", "System"), ("opponent", "Opponent"), ("wins", "Wins"),
                   ("ties", "Ties"), ("losses", "Losses"), ("votes", "Votes"),
                   ("value", "Win rate"), ("ci_low", "CI low"), ("ci_high", "CI high"),
                   ("dialogues", "Dialogues"), ("note", "Note")])
    for row in summary["pairs"]:
        estimate = row["win_rate"]
        pairs.rows.append({**{key: row[key] for key in ("system", "opponent", "wins", "ties",
                                                         "losses", "votes")},
                           **_estimate_cells(estimate),
                           "dialogues": estimate["n"].get("clusters")})
    strengths = Table("pairwise_bradley_terry", "Bradley–Terry strengths from the pairwise "
                      "preferences (Elo scale, mean 1000; a tie is half a win for each side), "
                      "95% percentile-bootstrap intervals over votes and rank intervals "
                      "(bradley_terry, the arena's code)",
                      [("system", "System"), ("value", "Strength"), ("ci_low", "CI low"),
                       ("ci_high", "CI high"), ("rank", "Rank"), ("rank_interval", "Rank interval"),
                       ("votes", "Votes"), ("wins", "Wins"), ("ties", "Ties"),
                       ("losses", "Losses"), ("note", "Note")])
    for row in summary["strengths"]:
        interval = (f"{row['rank_low']}–{row['rank_high']}" if row["rank_low"] is not None
                    else "")
        strengths.rows.append({"system": row["system"], **_estimate_cells(row["strength"]),
                               "rank": row["rank"], "rank_interval": interval,
                               **{key: row[key] for key in ("votes", "wins", "ties", "losses")}})
    return [pairs, strengths]


def correlation_tables(report: Mapping) -> list[Table]:
    """Item-level and system-level metric–human correlation of one evaluator."""
    item = Table("item_level", f"Item-level correlation of {report['evaluator']} with the "
                 "human labels (p two-sided)",
                 [("metric", "Metric"), ("aspect", "Aspect"), ("subset", "Subset"),
                  ("pearson", "Pearson r"), ("pearson_p", "p"), ("spearman", "Spearman rho"),
                  ("spearman_p", "p"), ("kendall", "Kendall tau-b"), ("kendall_p", "p"),
                  ("n", "n"), ("qwk", "QWK"), ("note", "Note")], optional=frozenset({"qwk"}))
    for row in report.get("item_level", []):
        item.rows.append(_correlation_cells(row, ("pearson", "spearman", "kendall")))
    system = Table("system_level", f"System-level correlation of {report['evaluator']}: "
                   "system means on the units both sides scored",
                   [("metric", "Metric"), ("aspect", "Aspect"), ("subset", "Subset"),
                    ("spearman", "Spearman rho"), ("spearman_p", "p"),
                    ("kendall", "Kendall tau-b"), ("kendall_p", "p"), ("n", "Systems"),
                    ("note", "Note")])
    for row in report.get("system_level", []):
        system.rows.append(_correlation_cells(row, ("spearman", "kendall")))
    return [item, system]


def correlation_headline_table(report: Mapping, aspect: str, keep=None,
                               label: str | None = None) -> Table:
    """The item-level rows of ASPECT on all units (only those whose metric
    KEEP(evaluator, metric) keeps, when given), each with its system-level Spearman rho: the
    values of the full tables, fewer rows and columns. LABEL names the aspect in the caption
    (its title; the field name by default)."""
    table = Table("correlation_headline", f"{report['evaluator']} against the human "
                  f"{label or aspect or 'labels'}: item level (p two-sided) and system level",
                  [("metric", "Metric"), ("spearman", "Spearman rho"), ("spearman_p", "p"),
                   ("kendall", "Kendall tau-b"), ("kendall_p", "p"), ("pearson", "Pearson r"),
                   ("pearson_p", "p"), ("n", "n"), ("qwk", "QWK"),
                   ("system_spearman", "System-level rho"), ("systems", "Systems"),
                   ("note", "Note")], optional=frozenset({"qwk"}))
    systems = {(row["metric"], row["aspect"]): row for row in report.get("system_level", [])
               if row["subset"] == "all"}
    for row in report.get("item_level", []):
        if row["aspect"] != aspect or row["subset"] != "all" or (
                keep is not None and not keep(row["evaluator"], row["metric"])):
            continue
        cells = _correlation_cells(row, ("pearson", "spearman", "kendall"))
        system = systems.get((row["metric"], row["aspect"]))
        if system is not None:
            cells["system_spearman"] = system["correlations"]["spearman"]["statistic"]
            cells["systems"] = system["correlations"]["spearman"]["n"]
        table.rows.append({key: cells.get(key) for key, _ in table.columns})
    return table


def _correlation_cells(row: Mapping, methods: Sequence[str]) -> dict:
    cells = {"metric": row["metric"], "aspect": row["aspect"], "subset": row["subset"]}
    notes = []
    for method in methods:
        c = row["correlations"].get(method, {})
        cells[method], cells[f"{method}_p"] = c.get("statistic"), c.get("p_value")
        cells["n"] = c.get("n")
        if c.get("undefined_reason") and c["undefined_reason"] not in notes:
            notes.append(c["undefined_reason"])
    if row.get("qwk"):
        cells["qwk"] = row["qwk"]["value"]
    cells["note"] = "; ".join(notes)
    return cells


def metric_board_table(board: Mapping) -> Table:
    table = Table("metric_leaderboard", f"Evaluators ranked by {board['method']} correlation "
                  f"with the human {board['aspect_label']} "
                  "(95% dialogue-jackknife CI; ranks Holm-corrected)",
                  [("rank", "Rank"), ("evaluator", "Evaluator"), ("metric", "Metric"),
                   ("value", board["method"].capitalize()), ("ci_low", "CI low"),
                   ("ci_high", "CI high"), ("n", "Units"), ("note", "Note"),
                   ("pa", "Pairwise acc."), ("pa_low", "PA CI low"), ("pa_high", "PA CI high"),
                   ("spa", "Soft pairwise acc."), ("spa_low", "SPA CI low"),
                   ("spa_high", "SPA CI high"), ("tc", "Tie-calibrated acc."),
                   ("tc_low", "TC CI low"), ("tc_high", "TC CI high"),
                   ("epsilon", "Tie threshold")],
                  notes=["System level: " + "; ".join(
                      f"{key}: {text}" for key, text in
                      board.get("inference", {}).get("system_level", {}).items())])
    for row in board.get("rows", []):
        level = row.get("system_level") or {}
        cells = {}
        for short, name in (("pa", "pairwise_accuracy"), ("spa", "soft_pairwise_accuracy"),
                            ("tc", "tie_calibrated_accuracy")):
            part = level.get(name) or {}
            cells.update({short: part.get("value"), f"{short}_low": part.get("ci_low"),
                          f"{short}_high": part.get("ci_high")})
        table.rows.append({"rank": row["rank"], "evaluator": row["evaluator"],
                           "metric": row["metric"], **_estimate_cells(row),
                           "n": row["n"].get("units"), **cells,
                           "epsilon": level.get("epsilon")})
    return table


def anchored_tables(report: Mapping) -> list[Table]:
    """The human-anchored report (annotation/lib/anchored.py): per system the PPI++, human-only
    and evaluator-only means with 95% CIs, then every pairwise PPI++ difference. A study handed
    out by the active policy (annotation/lib/anchored_active.py) names its estimator instead of
    PPI++ and adds a table of its labelled items with their wave and inclusion probability π."""
    title = f"{report['evaluator']} · {report['metric']} anchored on the human {report['aspect']}"
    short = report.get("estimator_short", "PPI++")
    method = report.get("estimator", "PPI++")
    human = "Human only (Horvitz–Thompson)" if report.get("policy") == "active" else "Human only"
    systems = Table("anchored_systems", f"{title}: {method} per system (95% CIs clustered by "
                    "dialogue; ranks Holm-corrected)",
                    [("rank", "Rank"), ("system", "System"), ("value", short),
                     ("ci_low", "CI low"), ("ci_high", "CI high"), ("human", human),
                     ("human_ci_low", "Human CI low"), ("human_ci_high", "Human CI high"),
                     ("evaluator", "Evaluator only"), ("evaluator_ci_low", "Evaluator CI low"),
                     ("evaluator_ci_high", "Evaluator CI high"), ("lambda", "Lambda"),
                     ("effective_labels", "Effective labels"), ("n_labelled", "Labelled"),
                     ("n_unlabelled", "Unlabelled"), ("note", "Note")],
                    notes=list(report.get("notes", [])))
    ranks = {row["system"]: row["rank"] for row in report.get("ranking", [])}
    for row in report.get("systems", []):
        human, judge = row["human_only"], row["evaluator_only"]
        systems.rows.append({
            "rank": ranks.get(row["system"]), "system": row["display"],
            **_estimate_cells(row["estimate"]), "human": human["mean"],
            "human_ci_low": human["ci"][0], "human_ci_high": human["ci"][1],
            "evaluator": judge["mean"], "evaluator_ci_low": judge["ci"][0],
            "evaluator_ci_high": judge["ci"][1], "lambda": row["lambda"],
            "effective_labels": row["effective_labels"], "n_labelled": row["n_labelled"],
            "n_unlabelled": row["n_unlabelled"]})
    names = {row["system"]: row["display"] for row in report.get("systems", [])}
    differences = Table("anchored_differences", f"{title}: {method} differences A − B (95% CI)",
                        [("a", "A"), ("b", "B"), ("value", "Difference"), ("ci_low", "CI low"),
                         ("ci_high", "CI high"), ("p_value", "p"), ("note", "Note")])
    for row in report.get("differences", []):
        differences.rows.append({"a": names.get(row["a"], row["a"]),
                                 "b": names.get(row["b"], row["b"]), **_estimate_cells(row),
                                 "p_value": (row.get("params") or {}).get("p_value")})
    tables = [systems, differences]
    if report.get("policy") == "active":
        draws = Table("anchored_draws", f"{title}: the items drawn for the humans, each with its "
                      "handout wave and inclusion probability π (its label is weighted by 1/π)",
                      [("system", "System"), ("unit_id", "Unit"), ("wave", "Wave"),
                       ("pi", "π"), ("label", "Human mean"), ("in_estimate", "In the estimate")])
        draws.rows = [{**{key: row[key] for key in ("system", "unit_id", "wave", "pi", "label")},
                       "in_estimate": "yes" if row["in_estimate"] else "no"}
                      for row in report.get("draws", []) if row["drawn"]]
        tables.append(draws)
    return tables


# --- rendering ----------------------------------------------------------------------------------


def _csv_cell(value):
    if value is None:
        return ""
    if isinstance(value, float):
        return "" if not math.isfinite(value) else f"{value:.6g}"
    return value


def to_csv(tables: Iterable[Table]) -> str:
    """One CSV block per table (header row first); blocks are separated by a blank line and a
    `# <table name>` line when there are several."""
    tables = list(tables)
    out = io.StringIO()
    for position, table in enumerate(tables):
        if len(tables) > 1:
            if position:
                out.write("\n")
            out.write(f"# {table.name}\n")
        writer = csv.writer(out, lineterminator="\n")
        writer.writerow([key for key, _ in table.columns])
        for row in table.rows:
            writer.writerow([_csv_cell(row.get(key)) for key, _ in table.columns])
    return out.getvalue()


LATEX_SPECIALS = {"\\": r"\textbackslash{}", "&": r"\&", "%": r"\%", "$": r"\$", "#": r"\#",
                  "_": r"\_", "{": r"\{", "}": r"\}", "~": r"\textasciitilde{}",
                  "^": r"\textasciicircum{}"}


def latex_escape(text: str) -> str:
    return "".join(LATEX_SPECIALS.get(ch, ch) for ch in str(text))


def _latex_cell(value, key: str) -> str:
    if value is None or value == "":
        return "--"
    if isinstance(value, float):
        if not math.isfinite(value):
            return "--"
        if key.endswith("_p"):
            return "$<$0.001" if value < 0.001 else f"{value:.3f}"
        return f"{value:.3f}"
    return latex_escape(value)


def to_latex(tables: Iterable[Table]) -> str:
    """Each table as a booktabs `table` environment (needs \\usepackage{booktabs})."""
    parts = []
    for table in tables:
        columns = [(key, header) for key, header in table.shown_columns() if key != "note"]
        align = "".join("l" if not _is_numeric_column(table, key) else "r" for key, _ in columns)
        lines = [r"\begin{table}[t]", r"\centering", r"\small",
                 rf"\caption{{{latex_escape(table.caption)}}}",
                 rf"\label{{tab:{table.name.replace('_', '-')}}}",
                 rf"\begin{{tabular}}{{{align}}}", r"\toprule",
                 " & ".join(latex_escape(header) for _, header in columns) + r" \\",
                 r"\midrule"]
        for row in table.rows:
            lines.append(" & ".join(_latex_cell(row.get(key), key) for key, _ in columns)
                         + r" \\")
        lines += [r"\bottomrule", r"\end{tabular}"]
        notes = [row["note"] for row in table.rows if row.get("note")] + table.notes
        if notes:
            unique = list(dict.fromkeys(notes))
            lines.append(r"\par\footnotesize " + latex_escape("Undefined values: "
                                                              + "; ".join(unique) + "."))
        lines.append(r"\end{table}")
        parts.append("\n".join(lines))
    return "\n\n".join(parts) + "\n"


def _is_numeric_column(table: Table, key: str) -> bool:
    values = [row.get(key) for row in table.rows if row.get(key) not in (None, "")]
    return bool(values) and all(isinstance(v, int | float) for v in values)


def to_json(report: Mapping) -> str:
    """The report as it is, without the scatter points (they are the data, not statistics)."""
    plain = {key: value for key, value in report.items() if key != "scatter"}
    return json.dumps(plain, indent=2, ensure_ascii=False, sort_keys=False) + "\n"


def render(report: Mapping, tables: Sequence[Table], fmt: str) -> str:
    if fmt == "json":
        return to_json(report)
    if fmt == "csv":
        return to_csv(tables)
    if fmt == "latex":
        return to_latex(tables)
    raise ValueError(f"format must be one of {', '.join(FORMATS)}")


# --- the bundle's README ----------------------------------------------------------------------


def methods_used(*reports: Mapping) -> list[str]:
    """Every `method` key that appears anywhere in the reports, in METHOD_DESCRIPTIONS order."""
    found: set[str] = set()

    def walk(value):
        if isinstance(value, Mapping):
            method = value.get("method")
            if isinstance(method, str):
                found.add(method)
            level = (value.get("params") or {}).get("level")
            if level == "masi":
                found.add("masi_distance")
            elif level == "system":
                found.add("system_level_correlation")
            for item in value.values():
                walk(item)
        elif isinstance(value, list | tuple):
            for item in value:
                walk(item)

    for report in reports:
        walk(report)
    return [key for key in METHOD_DESCRIPTIONS if key in found]


def bundle_readme(snapshot: Mapping, files: Mapping[str, str], methods: Sequence[str]) -> str:
    counts = snapshot.get("counts", {})
    lines = [
        f"# {snapshot.get('title', snapshot.get('study', 'Study'))}: annotations and statistics",
        "",
        f"Exported by Concord {snapshot.get('concord_version', '')} on "
        f"{snapshot.get('generated_at', '')} from study `{snapshot.get('study', '')}` "
        f"({snapshot.get('source', '')}) on benchmark `{snapshot.get('benchmark', '')}`.",
        "",
        "## Snapshot",
        "",
    ]
    lines += [f"- {key.replace('_', ' ')}: {value}" for key, value in counts.items()]
    excluded = snapshot.get("excluded") or []
    if excluded:
        lines.append("- excluded annotators (left out of every statistic; their labels stay in "
                     "the annotations CSV, marked):")
        lines += [f"  - {e['annotator']}: {e['reason']} ({e.get('excluded_at', '')})"
                  for e in excluded]
    else:
        lines.append("- excluded annotators: none")
    lines += ["", "## Files", ""]
    lines += [f"- `{name}`: {what}" for name, what in files.items()]
    lines += [
        "", "## How each number was computed", "",
        "Every number in the JSON files carries `n` (what was counted), `method` (one of the "
        "keys below), a 95% interval where one is meaningful (`ci_low`, `ci_high`) and, when "
        "it could not be computed, `undefined_reason` instead of a value. Intervals are "
        "jackknife-t intervals, or, for alpha of a nominal field, test-inversion intervals or "
        "profile-likelihood intervals (a yes/no field rated twice per unit; `params.interval` "
        "says which); the test inversion's simulations use a fixed seed (`params.seed`), so "
        "the same data always give the same numbers.",
        "",
    ]
    for key in methods:
        lines += [f"### {key}", "", METHOD_DESCRIPTIONS[key], ""]
    lines += ["The long form of these descriptions is docs/statistics.md in the Concord "
              "repository.", ""]
    return "\n".join(lines)


# --- the same tables, formatted for the report page ----------------------------------------------


def _display_number(value, key: str) -> str:
    if value is None or value == "":
        return DASH
    if isinstance(value, bool):
        return str(value)
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if key.endswith("_p"):
            return "p < 0.001" if value < 0.001 else f"p = {value:.3f}"
        return f"{value:.3f}"
    return str(value)


def display_table(table: Table) -> dict:
    """Rows of display cells: a value and its CI share a cell ("0.309 [0.207, 0.399]"), and a
    coefficient its p-value; every undefined number is a dash with the reason in the note."""
    keys = [key for key, _ in table.columns]
    headers, plan = [], []
    for key, header in table.shown_columns():
        if key in ("ci_low", "ci_high") and "value" in keys:
            continue
        if key.endswith("_p") and key[:-2] in keys:
            continue
        if key.endswith(("_ci_low", "_ci_high")) and key.rsplit("_ci_", 1)[0] in keys:
            continue  # shown with its value, like ci_low and ci_high
        if (key == "value" and "ci_low" in keys) or f"{key}_ci_low" in keys:
            header = f"{header} [95% CI]"
        plan.append(key)
        headers.append(header)
    rows = []
    for row in table.rows:
        cells = []
        for key in plan:
            value = row.get(key)
            text = (value or "") if key == "note" else _display_number(value, key)
            low = "ci_low" if key == "value" else f"{key}_ci_low"
            if low in keys and row.get(low) is not None:
                high = row[low.replace("_low", "_high")]
                text += f" [{row[low]:.3f}, {high:.3f}]"
            if f"{key}_p" in keys and row.get(f"{key}_p") is not None:
                text += f" ({_display_number(row[f'{key}_p'], f'{key}_p')})"
            cells.append({"text": text, "numeric": isinstance(value, int | float)
                          and not isinstance(value, bool), "key": key,
                          "undefined": value is None and key not in ("note",)})
        rows.append(cells)
    numeric = [any(row[i]["numeric"] for row in rows) for i in range(len(plan))]
    return {"name": table.name, "caption": table.caption, "rows": rows, "keys": plan,
            "headers": [{"text": text, "numeric": flag} for text, flag in zip(
                headers, numeric, strict=True)], "notes": table.notes}
