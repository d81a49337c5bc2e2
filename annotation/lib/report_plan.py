"""What a study's report will show once labels arrive, and how many labels each part needs
(the empty report of a new study says this instead of rows of dashes).

Plain data in (the study's forms, overlap, item count), plain data out; the thresholds are the
ones the report's statistics use (evaluation/lib/stats/agreement.py, annotation/lib/reports.py).
"""

from __future__ import annotations

from dataclasses import dataclass

from annotation.lib import taskforms


@dataclass(frozen=True)
class PlannedPart:
    title: str
    shows: str
    needs: str


def report_plan(*, forms: list[str], overlap_k: int, items: int,
                evaluators: int) -> list[PlannedPart]:
    """The report's parts, in page order, each with what it will show and what it needs."""
    fields = taskforms.report_fields(forms)
    full = overlap_k * items
    parts = [
        PlannedPart(
            "Inter-annotator agreement",
            "Krippendorff's alpha per field with a 95% interval"
            + (f" — {'; '.join(fields)}" if fields else ""),
            f"an item counts once two annotators have labelled it; alpha needs at least two "
            f"such items. With {items} item{'s' if items != 1 else ''} × {overlap_k} "
            f"annotators per item the study collects {full} labels"),
        PlannedPart(
            "Leave one annotator out and worst pairs",
            "alpha without each annotator in turn, and which pairs agree least",
            "three annotators for leave-one-out; four for the worst pairs (dropping two must "
            "leave two)"),
        PlannedPart(
            "Annotators",
            "each annotator's label count, time per item, agreement with the others and gold "
            "accuracy", "one submitted label per annotator"),
    ]
    parts += [PlannedPart(part.title, part.shows, part.needs)
              for part in taskforms.report_parts(forms)]
    parts.append(PlannedPart(
        "Metric–human correlation",
        "Pearson, Spearman and Kendall between each evaluator's scores and the mean human "
        "label, with scatter plots and sample-efficiency curves",
        ("three labelled units that the evaluator also scored" if evaluators else
         "an evaluator with runs on the benchmark (none yet) and three labelled units it "
         "scored")))
    return parts
