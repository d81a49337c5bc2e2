"""The trust column: how far each metric column can be trusted on this benchmark — its best
measured agreement with human labels, or "not validated" (rule: `leaderboard.lib.trust`).

One statement for all the columns of a page: the stored metric-leaderboard rows
(`annotation.MetricValidation`, refreshed by `annotation.services.validation` when labels or
runs change) of the studies the viewer may open, as the metric leaderboard itself would show
them to that viewer: a public study's rows from public runs for everyone; the author and staff
also see their private studies' rows, and rows from every run.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass
from urllib.parse import urlencode

from django.db.models import Q
from django.urls import reverse

from annotation.models import MetricValidation
from evaluation.lib.stats.methods import OLDER_METHOD, interval_is_current
from leaderboard.lib import trust as rule

NOT_VALIDATED = "not validated"


@dataclass(frozen=True)
class Trust:
    """What a column's header shows: the chosen row, or nothing (not validated)."""

    chosen: rule.Candidate | None
    href: str = ""
    anchored_href: str = ""  # the optional human-anchored (PPI++) view of the column

    @property
    def text(self) -> str:
        return f"ρ {self.chosen.value:.2f}" if self.chosen else NOT_VALIDATED

    @property
    def ci(self) -> str:
        c = self.chosen
        if c is None:
            return ""
        return f"[{c.ci_low:.2f}, {c.ci_high:.2f}] · n {c.units}" + (
            "" if c.current else " · older method") + (
            " · simulated labels" if c.simulated else "")

    @property
    def title(self) -> str:
        c = self.chosen
        if c is None:
            return ("Not validated: no study on this benchmark with at least "
                    f"{rule.MIN_CLUSTERS} labelled dialogues measures this metric's agreement "
                    "with human labels.")
        return (f"Agreement with human labels: Spearman ρ {c.value:.3f}, 95% CI "
                f"[{c.ci_low:.3f}, {c.ci_high:.3f}], n = {c.units} units in {c.clusters} "
                f"dialogues; study “{c.study_title}”, aspect {c.aspect_label or c.aspect}. "
                f"Best of {c.candidates} measurement(s) by {rule.RULE}."
                + ("" if c.current else f" Its interval was {OLDER_METHOD}.")
                + (" The study's labels come from simulated annotators, not people: they show "
                   "how this row works, not how far the metric agrees with people."
                   if c.simulated else ""))

    def to_dict(self) -> dict | None:
        c = self.chosen
        if c is None:
            return None
        return {"correlation": "spearman", "value": c.value, "ci_low": c.ci_low,
                "ci_high": c.ci_high, "units": c.units, "dialogues": c.clusters,
                "study": c.study, "study_title": c.study_title, "aspect": c.aspect,
                "measurements": c.candidates, "url": self.href, "current_method": c.current,
                "simulated_labels": c.simulated}


def _visible(user) -> Q:
    public = Q(scope=MetricValidation.Scope.PUBLIC, study__is_public=True,
               study__benchmark__is_public=True)
    if user.is_authenticated and user.is_staff:
        return Q(scope=MetricValidation.Scope.ALL)
    if user.is_authenticated:
        return public | Q(scope=MetricValidation.Scope.ALL, study__author=user)
    return public


def column_trust(*, benchmark, columns: Iterable, user) -> dict[str, Trust]:
    """column key -> Trust, for every column (evaluator, metric, direction) given: one query."""
    columns = list(columns)
    if not columns:
        return {}
    rows = (MetricValidation.objects
            .filter(_visible(user), benchmark=benchmark,
                    metric__in={c.metric for c in columns},
                    evaluator__in={c.evaluator for c in columns},
                    clusters__gte=rule.MIN_CLUSTERS)
            .values_list("evaluator", "metric", "value", "ci_low", "ci_high", "units",
                         "clusters", "study__slug", "study__title", "aspect", "aspect_label",
                         "ci_method", "ci_version", "study__config__simulated_annotators"))
    by_column: dict[tuple[str, str], list[rule.Candidate]] = defaultdict(list)
    for row in rows:
        by_column[(row[0], row[1])].append(
            rule.Candidate(*row[:11], current=interval_is_current(row[11], row[12]),
                           simulated=bool(row[13])))
    board_url = reverse("annotation:metric_board", args=["__slug__"])
    anchored_url = reverse("annotation:metric_board_anchored", args=["__slug__"])
    out = {}
    for column in columns:
        chosen = rule.best(by_column.get((column.evaluator, column.metric), ()),
                           higher_is_better=column.direction == "higher")
        href = anchored = ""
        if chosen is not None:
            href = board_url.replace("__slug__", chosen.study) + "?" + urlencode(
                {"aspect": chosen.aspect})
            anchored = anchored_url.replace("__slug__", chosen.study) + "?" + urlencode(
                {"evaluator": column.evaluator, "metric": column.metric,
                 "aspect": chosen.aspect})
        out[f"{column.evaluator}:{column.metric}"] = Trust(chosen, href, anchored)
    return out


def trust_record(trust: Trust | None, base: str = "") -> dict:
    """The trust column as flat export fields (CSV/JSON), "not validated" when nothing
    qualifies."""
    chosen = trust.chosen if trust else None
    if chosen is None:
        return {"human_agreement": NOT_VALIDATED, "human_rho": None, "human_rho_ci_low": None,
                "human_rho_ci_high": None, "human_units": None, "human_dialogues": None,
                "human_study": "", "human_aspect": "", "human_url": ""}
    return {"human_agreement": "validated", "human_rho": chosen.value,
            "human_rho_ci_low": chosen.ci_low, "human_rho_ci_high": chosen.ci_high,
            "human_units": chosen.units, "human_dialogues": chosen.clusters,
            "human_study": chosen.study, "human_aspect": chosen.aspect,
            "human_url": base + trust.href}
