"""A simulated board's leakage column (docs/simulation.md, "Leakage audit"): per row, the
share of its simulation's dialogues that leaked a target (`report["leakage"]`, stored when the
simulation finished), and over the rows shown. Reads only, one query for every row.
On the sanitised board ("-Both") the same counts say how many dialogues each row's numbers
left out.

And its trust cells (docs/statistics.md, "Simulator validity"): per simulation column, Kendall
τ_b between the column's ranking and two kinds of human reference of the same systems — the
benchmark arena's Bradley–Terry ranking, and each visible study's numeric labels per system
(`annotation.report_selectors.benchmark_system_labels`: the label table the metric
leaderboards read) — with bootstrap CIs (`lib/stats/simulator_validity`), computed when read
(the votes, the users' scores and four statements for the studies' labels, cached per study
until a label changes) and kept in the process cache like the arena's tables."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field

from django.core.cache import cache
from django.db.models import Q
from django.urls import reverse

from annotation.report_selectors import benchmark_system_labels
from evaluation.lib.simulators.leakage import KIND_LABELS
from evaluation.lib.simulators.simulators import (
    SANITISED_SUFFIX,
    design_variant,
    simulated_protocol,
)
from evaluation.lib.stats.simulator_validity import METHODS, Validity, simulator_validity
from evaluation.models import Simulation, UnitScore
from evaluation.selectors.arena import arena_of_benchmark

from .arenas import arena_votes
from .runs import visible_runs_by_coverage


@dataclass(frozen=True)
class LeakCell:
    leaked: int | None  # None: the simulation was never audited
    dialogues: int
    first_turn: int
    by_kind: dict
    href: str  # the run page's leakage section

    @property
    def share(self) -> float | None:
        return self.leaked / self.dialogues if self.leaked is not None and self.dialogues \
            else None

    @property
    def text(self) -> str:
        if self.leaked is None:
            return "not audited"
        return f"{self.leaked}/{self.dialogues}"

    @property
    def title(self) -> str:
        if self.leaked is None:
            return ("finished before the leakage audit existed: manage.py audit_simulations "
                    "audits it")
        kinds = "; ".join(f"{KIND_LABELS[k]}: {n}" for k, n in self.by_kind.items() if n)
        return (f"{self.leaked} of {self.dialogues} dialogues leaked a target"
                + (f" ({kinds})" if kinds else "")
                + f"; {self.first_turn} found a target at the first turn")


@dataclass
class SimulatedAudit:
    sanitised: bool
    cells: dict[int, LeakCell] = field(default_factory=dict)  # run id -> its cell
    offered: bool = False  # some row has a sanitised run (the board's "-Both" option)

    @property
    def leaked(self) -> int:
        return sum(c.leaked for c in self.cells.values() if c.leaked is not None)

    @property
    def dialogues(self) -> int:
        return sum(c.dialogues for c in self.cells.values() if c.leaked is not None)

    @property
    def share(self) -> float | None:
        return self.leaked / self.dialogues if self.dialogues else None

    @property
    def unaudited(self) -> int:
        return sum(1 for c in self.cells.values() if c.leaked is None)

    def export(self, row) -> dict:
        cell = row.leak
        return {"dialogues": "sanitised (-Both)" if self.sanitised else "all",
                "leaked_dialogues": cell.leaked if cell else None,
                "simulated_dialogues": cell.dialogues if cell else None,
                "leaked_share": cell.share if cell else None}


def board_audit(*, rows, sanitised: bool) -> SimulatedAudit:
    """The leakage cells of a simulated board's ROWS (each gets `row.leak`)."""
    ids = [row.run.run_id for row in rows]
    audit = SimulatedAudit(sanitised=sanitised)
    if not ids:
        return audit
    found = (Simulation.objects.filter(Q(run_id__in=ids) | Q(sanitised_run_id__in=ids))
             .values_list("run_id", "sanitised_run_id", "report__leakage"))
    run_url = reverse("run_detail", args=[0]).replace("/0/", "/{}/")
    by_run = {}
    for run_id, sanitised_id, leakage in found:
        audit.offered = audit.offered or sanitised_id is not None
        leakage = leakage or {}
        cell = LeakCell(leakage.get("leaked"), leakage.get("dialogues", 0),
                        leakage.get("first_turn_success", 0), leakage.get("by_kind", {}),
                        run_url.format(run_id) + "#leakage")
        by_run[run_id] = by_run[sanitised_id] = cell
    for row in rows:
        row.leak = by_run.get(row.run.run_id)
        if row.leak is not None:
            audit.cells[row.run.run_id] = row.leak
    return audit


# --- simulator validity: the trust cell of a simulated board and the simulators page ---------

VALIDITY_METHOD = "kendall_tau_b"
VALIDITY_RESAMPLES = 1000
# A labels reference named like these is a column's headline one (a study's overall judgement
# or the user's satisfaction), chosen before any agreement is looked at.
HEADLINE_ASPECTS = ("overall", "satisf")


@dataclass(frozen=True)
class Reference:
    """One human reference a simulated column's ranking is compared with — the benchmark's
    arena (its Bradley–Terry strengths), or one study's labels of one numeric field (each
    system's mean label) — and the validity measured against it (None: not measured, REASON
    says why)."""

    kind: str  # "arena" or "labels"
    validity: Validity | None
    reason: str = ""
    study: str = ""  # a labels reference's study (slug), title, field and its level
    study_title: str = ""
    aspect: str = ""
    aspect_label: str = ""
    unit_type: str = ""
    simulated: bool = False  # the study's labels come from simulated annotators (the demo's)

    @property
    def name(self) -> str:
        if self.kind == "arena":
            return "arena"
        return f"labels ({self.aspect_label})" if self.aspect_label else "labels"

    def agreement(self, method: str = VALIDITY_METHOD):
        return self.validity.agreements[method] if self.validity else None

    @property
    def measured(self) -> bool:
        agreement = self.agreement()
        return agreement is not None and agreement.value is not None

    @property
    def why(self) -> str:
        """Why it is not measured ("" when it is)."""
        if self.measured:
            return ""
        agreement = self.agreement()
        return self.reason or (agreement.undefined_reason if agreement else "")

    @property
    def text(self) -> str:
        value = f"{self.agreement().value:.2f}" if self.measured else "not measured"
        return f"τb vs {self.name} {value}"

    @property
    def ci(self) -> str:
        a = self.agreement()
        if not self.measured or a.ci_low is None:
            return ""
        return f"[{a.ci_low:.2f}, {a.ci_high:.2f}] · {a.n_systems} systems" + (
            " · simulated labels" if self.simulated else "")

    @property
    def source(self) -> str:
        """The reference in words."""
        if self.kind == "arena":
            return "the arena's Bradley–Terry ranking"
        if not self.study:
            return "human labels"
        return (f"the systems' mean {self.unit_type}-level “{self.aspect_label}” label in the "
                f"study “{self.study_title}”" + (
                    " (labels of simulated annotators, not people: they show how this cell "
                    "works, not how far the simulator agrees with people)"
                    if self.simulated else ""))

    @property
    def title(self) -> str:
        if not self.measured:
            return f"Simulator validity against {self.source} not measured: {self.why}."
        v, a, rho = self.validity, self.agreement(), self.agreement("spearman")
        human = (f"the {v.n_human} votes" if self.kind == "arena" else
                 f"each system's labelled dialogues ({v.n_human} in all)")
        return (f"Simulator validity: Kendall τ_b {a.value:.3f} (95% CI {_interval(a)}) and "
                f"Spearman ρ {_number(rho.value)} (95% CI {_interval(rho)}) between this "
                f"column's ranking and {self.source}, over the same {a.n_systems} systems; "
                f"percentile bootstrap resampling the {v.n_users} simulated users and {human} "
                f"({v.n_resamples} replicates).")

    def as_json(self) -> dict:
        """The reference, its numbers and its counts (the JSON export)."""
        v = self.validity
        out = {"reference": self.kind, "measured": self.measured, "reason": self.why}
        if self.kind == "labels":
            out.update(study=self.study, study_title=self.study_title, aspect=self.aspect,
                       aspect_label=self.aspect_label, unit_type=self.unit_type,
                       simulated_labels=self.simulated)
        for method in METHODS:
            a = self.agreement(method)
            out[method] = {"value": a.value if a else None, "ci_low": a.ci_low if a else None,
                           "ci_high": a.ci_high if a else None}
        out.update(systems=self.agreement().n_systems if v else 0,
                   simulated_users=v.n_users if v else 0,
                   **{"votes" if self.kind == "arena" else "labelled_dialogues":
                      v.n_human if v else 0},
                   resamples=v.n_resamples if v else 0)
        return out

    def export(self, prefix: str) -> dict:
        """Flat export fields (the same keys whatever the outcome: CSV columns)."""
        out = {f"{prefix}_validity": "measured" if self.measured
               else f"not validated: {self.why}"}
        for method in METHODS:
            a = self.agreement(method)
            out.update({f"{prefix}_{method}": a.value if a else None,
                        f"{prefix}_{method}_ci_low": a.ci_low if a else None,
                        f"{prefix}_{method}_ci_high": a.ci_high if a else None})
        out[f"{prefix}_systems"] = self.agreement().n_systems if self.validity else None
        return out


def _headline_order(reference: Reference) -> tuple:
    """Which labels reference a cell shows first, read before any agreement: a measured one,
    from people (not simulated annotators), named like HEADLINE_ASPECTS, dialogue-level (a
    simulator ranks whole conversations), over more systems, with more labelled dialogues;
    then by study and field."""
    words = f"{reference.aspect} {reference.aspect_label}".lower()
    v = reference.validity
    return (not reference.measured, reference.simulated,
            not any(word in words for word in HEADLINE_ASPECTS),
            reference.unit_type != "dialogue",
            -(reference.agreement().n_systems if v else 0), -(v.n_human if v else 0),
            reference.study, reference.aspect)


@dataclass(frozen=True)
class ValidityTrust:
    """A simulated column's trust cell: the τ_b of its ranking with the arena's and with each
    study's labels per system (`Trust`'s interface, so the trust row draws it; the cell shows
    the arena and the headline labels reference, the simulators page every one)."""

    arena: Reference
    labels: tuple[Reference, ...] = ()  # the headline first (`_headline_order`)
    href: str = ""
    anchored_href: str = ""  # no PPI++ view for a simulated column

    @property
    def validity(self) -> Validity | None:
        """The arena's (the cell's first reference)."""
        return self.arena.validity

    @property
    def references(self) -> tuple[Reference, ...]:
        """What the cell shows: the arena, then the headline labels reference."""
        return (self.arena, *self.labels[:1])

    @property
    def more(self) -> int:
        """Labels references the cell leaves to the simulators page."""
        return max(len(self.labels) - 1, 0)

    @property
    def chosen(self) -> bool:
        return any(r.measured for r in (self.arena, *self.labels))

    @property
    def text(self) -> str:
        return " · ".join(r.text for r in self.references)

    @property
    def title(self) -> str:
        return " ".join(r.title for r in self.references)

    def export(self) -> dict:
        """The export's fields: τ_b and Spearman with the arena and with the headline labels
        reference, their CIs, n systems (every labels reference: the JSON export's
        `simulator_validity`)."""
        headline = self.labels[0] if self.labels else Reference("labels", None)
        return {"simulator_validity": "measured" if self.chosen else "not validated",
                **self.arena.export("arena"),
                "labels_study": headline.study, "labels_aspect": headline.aspect,
                "labels_simulated_annotators": headline.simulated,
                **headline.export("labels"),
                "labels_references": sum(1 for r in self.labels if r.study)}

    def as_json(self) -> dict:
        return {"arena": self.arena.as_json(), "labels": [r.as_json() for r in self.labels]}


def _number(value) -> str:
    return "—" if value is None else f"{value:.3f}"


def _interval(agreement) -> str:
    if agreement.ci_low is None:
        return "—"
    return f"[{agreement.ci_low:.3f}, {agreement.ci_high:.3f}]"


def _digest(value) -> str:
    return hashlib.sha256(repr(value).encode()).hexdigest()


def _validity_cached(scores: dict, human_key: str, *, votes=(), labels=None) -> Validity:
    """`simulator_validity` against VOTES or LABELS, kept in this process's cache under a hash
    of its inputs (HUMAN_KEY: the human side's, `_digest`ed once per page) as the arena page
    keeps its tables: a new vote, label or run can never get a stale result."""
    key = "simulator-validity:" + _digest((
        sorted((s, sorted(u.items())) for s, u in scores.items()), human_key,
        VALIDITY_RESAMPLES))
    found = cache.get(key)
    if found is None:
        found = simulator_validity(scores, votes=votes, labels=labels,
                                   n_resamples=VALIDITY_RESAMPLES)
        cache.set(key, found, 3600)
    return found


def user_scores(run_ids: dict[int, int], metrics) -> dict[str, dict[int, dict[str, float]]]:
    """metric -> system id -> {simulated user: value} of the runs (RUN_IDS: run id -> system
    id), one query."""
    out: dict[str, dict[int, dict[str, float]]] = {}
    rows = (UnitScore.objects.filter(run_id__in=list(run_ids), metric__in=list(metrics))
            .exclude(value=None).values_list("run_id", "metric", "unit_id", "value"))
    for run_id, metric, unit_id, value in rows:
        out.setdefault(metric, {}).setdefault(run_ids[run_id], {})[unit_id] = value
    return out


@dataclass
class HumanSides:
    """The human references of a benchmark, read once per page: the arena's counted votes and
    every visible study's numeric labels per system (`benchmark_system_labels`)."""

    arena: object
    votes: list
    label_sets: list

    @classmethod
    def read(cls, *, benchmark, user) -> HumanSides:
        arena = arena_of_benchmark(benchmark)
        votes = arena_votes(arena)[0] if arena is not None else []
        return cls(arena, votes, benchmark_system_labels(benchmark=benchmark, user=user))

    def __post_init__(self):
        self.votes_key = _digest(("arena", self.votes))
        self.labels_keys = [_digest(("labels", s.study, s.aspect, sorted(s.labels.items())))
                            for s in self.label_sets]

    def trust(self, scores: dict, names: dict[int, str], href: str = "") -> ValidityTrust:
        """The cell of one simulated column: SCORES (system id -> {user: value}) against the
        arena and each labels set; NAMES (system id -> name) match systems to the labels (by
        name, as a study's metric leaderboard matches runs; a name two systems share matches
        neither)."""
        return ValidityTrust(self._arena(scores), self._labels(scores, names), href=href)

    def _arena(self, scores) -> Reference:
        if self.arena is None:
            return Reference("arena", None, "this benchmark has no arena with ratings to "
                             "compare the simulated ranking with")
        if not self.votes:
            return Reference("arena", None, "the benchmark's arena has no votes")
        return Reference("arena", _validity_cached(scores, self.votes_key, votes=self.votes))

    def _labels(self, scores, names) -> tuple[Reference, ...]:
        by_name: dict[str, list[int]] = {}
        for system_id, name in names.items():
            by_name.setdefault(name, []).append(system_id)
        unique = {name: ids[0] for name, ids in by_name.items() if len(ids) == 1}
        references = []
        for found, key in zip(self.label_sets, self.labels_keys, strict=True):
            labels = {unique[name]: rows for name, rows in found.labels.items()
                      if name in unique}
            if not labels:
                continue
            matched = (key, sorted((unique[name], name) for name in found.labels
                                   if name in unique))  # a renamed system: another key
            references.append(Reference(
                "labels", _validity_cached(scores, _digest(matched), labels=labels),
                study=found.study,
                study_title=found.study_title, aspect=found.aspect,
                aspect_label=found.aspect_label, unit_type=found.unit_type,
                simulated=found.simulated))
        if references:
            return tuple(sorted(references, key=_headline_order))
        if not self.label_sets:
            why = ("no study on this benchmark that you may open has numeric human labels "
                   "(a Likert scale, a score)")
        else:
            studies = len({s.study for s in self.label_sets})
            why = (f"the numeric human labels of this benchmark's {studies} "
                   f"stud{'ies' if studies != 1 else 'y'} are of other systems")
        return (Reference("labels", None, why),)


def board_validity(*, benchmark, rows, columns, user,
                   simulators_url: str) -> dict[str, ValidityTrust]:
    """Column key -> its trust cell, for a simulated board's simulation columns."""
    evaluator_columns = [c for c in columns if c.evaluator.startswith("simulation.")]
    if not evaluator_columns:
        return {}
    sides = HumanSides.read(benchmark=benchmark, user=user)
    runs = {row.runs[c.evaluator].run_id: row.run.system_id for row in rows
            for c in evaluator_columns[:1] if c.evaluator in row.runs}
    names = {row.run.system_id: row.run.name for row in rows}
    scores = user_scores(runs, {c.metric for c in evaluator_columns})
    return {column.key: sides.trust(scores.get(column.metric, {}), names, simulators_url)
            for column in evaluator_columns}


HEADLINE_METRIC = "pc@10"  # the simulated boards' default sort (PEPPER's PC@10)


def simulators_page(*, benchmark, user) -> dict:
    """The page that compares a benchmark's simulators: per simulated board and design (the
    viewer's runs, the newest per system), its agreement on HEADLINE_METRIC with the arena and
    with every visible study's numeric labels per system, and its users' behaviour — mean
    user-turn length, share of dialogues with a target at the first turn, share leaked — over
    the design's simulations."""
    sides = HumanSides.read(benchmark=benchmark, user=user)
    designs = []
    simulators = (Simulation.objects.filter(benchmark=benchmark, run__isnull=False)
                  .values_list("simulator", flat=True).distinct().order_by("simulator"))
    for protocol in [simulated_protocol(s) for s in simulators]:
        by_coverage = visible_runs_by_coverage(benchmark=benchmark, protocol=protocol,
                                               user=user)
        for coverage, runs in by_coverage.items():
            runs = [r for r in runs if r.evaluator.startswith("simulation.")]
            if runs:
                designs.append(_design_row(benchmark, protocol, coverage, runs, sides))
    return {"benchmark": benchmark, "designs": designs, "arena": sides.arena,
            "votes": len(sides.votes), "metric": HEADLINE_METRIC,
            "studies": len({s.study for s in sides.label_sets})}


def _design_row(benchmark, protocol, coverage, runs, sides: HumanSides) -> dict:
    reports = list(Simulation.objects.filter(run_id__in=[r.run_id for r in runs])
                   .values_list("report__leakage", "report__behaviour"))
    leak = [r for r, _ in reports if r]
    behaviour = [b for _, b in reports if b]
    dialogues = sum(r["dialogues"] for r in leak)
    user_turns = sum(b["user_turns"] for b in behaviour)
    words = sum((b["mean_user_turn_words"] or 0) * b["user_turns"] for b in behaviour)
    scores = user_scores({r.run_id: r.system_id for r in runs}, [HEADLINE_METRIC])
    names = {r.system_id: r.name for r in runs}
    trust = sides.trust(scores.get(HEADLINE_METRIC, {}), names)
    references = [{"ref": ref, "tau": ref.agreement(), "rho": ref.agreement("spearman"),
                   "compared": [names[s] for s in ref.validity.systems] if ref.validity
                   else []} for ref in (trust.arena, *trust.labels)]
    return {
        "protocol": protocol, "coverage": coverage, "label": runs[0].coverage_label,
        "board_url": reverse("leaderboard:board", args=[benchmark.slug, protocol])
        + f"?splits={design_variant(coverage, False)}"
        + ("&dialogues=both" if coverage.endswith(SANITISED_SUFFIX) else ""),
        "systems": len(runs), "trust": trust, "references": references,
        "tau": references[0]["tau"], "rho": references[0]["rho"],
        "compared": references[0]["compared"],
        "audited": len(leak), "simulations": len(reports), "dialogues": dialogues,
        "leaked_share": sum(r["leaked"] for r in leak) / dialogues if dialogues else None,
        "first_turn_share": (sum(r["first_turn_success"] for r in leak) / dialogues
                             if dialogues else None),
        "mean_user_words": words / user_turns if user_turns else None,
    }
