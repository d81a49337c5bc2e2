"""A simulated board's leakage column (docs/simulation.md, "Leakage audit"): per row, the
share of its simulation's dialogues that leaked a target (`report["leakage"]`, stored when the
simulation finished), and over the rows shown. Reads only, one query for every row.
On the sanitised board ("-Both") the same counts say how many dialogues each row's numbers
left out.

And its trust cells (docs/statistics.md, "Simulator validity"): per simulation column, Kendall
τ_b between the column's ranking and the benchmark arena's Bradley–Terry ranking of the same
systems, with its bootstrap CI (`lib/stats/simulator_validity`), computed when read (two
queries: the votes, the users' scores) and kept in the process cache like the arena's tables."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field

from django.core.cache import cache
from django.db.models import Q
from django.urls import reverse

from evaluation.lib.simulators.leakage import KIND_LABELS
from evaluation.lib.simulators.simulators import (
    SANITISED_SUFFIX,
    design_variant,
    simulated_protocol,
)
from evaluation.lib.stats.simulator_validity import Validity, simulator_validity
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


@dataclass(frozen=True)
class ValidityTrust:
    """A simulated column's trust cell: the τ_b of its ranking with the arena's (`Trust`'s
    interface, so the trust row draws it)."""

    validity: Validity | None
    href: str = ""
    reason: str = ""
    anchored_href: str = ""  # no PPI++ view for a simulated column

    @property
    def agreement(self):
        return self.validity.agreements[VALIDITY_METHOD] if self.validity else None

    @property
    def chosen(self) -> bool:
        return self.agreement is not None and self.agreement.value is not None

    @property
    def text(self) -> str:
        return f"τb {self.agreement.value:.2f}" if self.chosen else "not validated"

    @property
    def ci(self) -> str:
        a = self.agreement
        if not self.chosen or a.ci_low is None:
            return ""
        return f"[{a.ci_low:.2f}, {a.ci_high:.2f}] · {a.n_systems} systems"

    @property
    def title(self) -> str:
        if not self.chosen:
            why = self.reason or (self.agreement.undefined_reason if self.agreement else "")
            return f"Simulator validity not measured: {why}"
        v, a = self.validity, self.agreement
        rho = v.agreements["spearman"]
        return (f"Simulator validity: Kendall τ_b {a.value:.3f} (95% CI {_interval(a)}) and "
                f"Spearman ρ {_number(rho.value)} (95% CI {_interval(rho)}) between this "
                f"column's ranking and the arena's Bradley–Terry ranking of the same "
                f"{a.n_systems} systems; percentile bootstrap resampling the {v.n_users} "
                f"simulated users and the {v.n_human} votes ({v.n_resamples} replicates).")


    def export(self) -> dict:
        """The export's fields: τ_b and Spearman with the arena, their CIs, n systems."""
        out = {"simulator_validity": "measured" if self.chosen else "not validated"}
        for method in ("kendall_tau_b", "spearman"):
            a = self.validity.agreements[method] if self.validity else None
            out.update({f"arena_{method}": a.value if a else None,
                        f"arena_{method}_ci_low": a.ci_low if a else None,
                        f"arena_{method}_ci_high": a.ci_high if a else None})
        out["arena_systems"] = self.agreement.n_systems if self.agreement else None
        return out


def _number(value) -> str:
    return "—" if value is None else f"{value:.3f}"


def _interval(agreement) -> str:
    if agreement.ci_low is None:
        return "—"
    return f"[{agreement.ci_low:.3f}, {agreement.ci_high:.3f}]"


def _validity_cached(scores: dict, votes: list) -> Validity:
    """`simulator_validity`, kept in this process's cache under a hash of its inputs (as the
    arena page keeps its tables): a new vote or run can never get a stale result."""
    key = "simulator-validity:" + hashlib.sha256(repr((
        sorted((s, sorted(u.items())) for s, u in scores.items()), votes,
        VALIDITY_RESAMPLES)).encode()).hexdigest()
    found = cache.get(key)
    if found is None:
        found = simulator_validity(scores, votes=votes, n_resamples=VALIDITY_RESAMPLES)
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


def board_validity(*, benchmark, rows, columns, simulators_url: str) -> dict[str, ValidityTrust]:
    """Column key -> its trust cell, for a simulated board's simulation columns."""
    evaluator_columns = [c for c in columns if c.evaluator.startswith("simulation.")]
    if not evaluator_columns:
        return {}
    arena = arena_of_benchmark(benchmark)
    if arena is None:
        return {c.key: ValidityTrust(None, reason="this benchmark has no arena with ratings "
                                     "to compare the simulated ranking with")
                for c in evaluator_columns}
    votes, _ = arena_votes(arena)
    runs = {row.runs[c.evaluator].run_id: row.run.system_id for row in rows
            for c in evaluator_columns[:1] if c.evaluator in row.runs}
    scores = user_scores(runs, {c.metric for c in evaluator_columns})
    out = {}
    for column in evaluator_columns:
        if not votes:
            out[column.key] = ValidityTrust(None, reason="the benchmark's arena has no votes")
            continue
        out[column.key] = ValidityTrust(
            _validity_cached(scores.get(column.metric, {}), votes), href=simulators_url)
    return out


HEADLINE_METRIC = "pc@10"  # the simulated boards' default sort (PEPPER's PC@10)


def simulators_page(*, benchmark, user) -> dict:
    """The page that compares a benchmark's simulators: per simulated board and design (the
    viewer's runs, the newest per system), its agreement with the arena on HEADLINE_METRIC and
    its users' behaviour — mean user-turn length, share of dialogues with a target at the first
    turn, share leaked — over the design's simulations."""
    arena = arena_of_benchmark(benchmark)
    votes = arena_votes(arena)[0] if arena is not None else []
    designs = []
    simulators = (Simulation.objects.filter(benchmark=benchmark, run__isnull=False)
                  .values_list("simulator", flat=True).distinct().order_by("simulator"))
    for protocol in [simulated_protocol(s) for s in simulators]:
        by_coverage = visible_runs_by_coverage(benchmark=benchmark, protocol=protocol,
                                               user=user)
        for coverage, runs in by_coverage.items():
            runs = [r for r in runs if r.evaluator.startswith("simulation.")]
            if runs:
                designs.append(_design_row(benchmark, protocol, coverage, runs, votes, arena))
    return {"benchmark": benchmark, "designs": designs, "arena": arena, "votes": len(votes),
            "metric": HEADLINE_METRIC}


def _design_row(benchmark, protocol, coverage, runs, votes, arena) -> dict:
    reports = list(Simulation.objects.filter(run_id__in=[r.run_id for r in runs])
                   .values_list("report__leakage", "report__behaviour"))
    leak = [r for r, _ in reports if r]
    behaviour = [b for _, b in reports if b]
    dialogues = sum(r["dialogues"] for r in leak)
    user_turns = sum(b["user_turns"] for b in behaviour)
    words = sum((b["mean_user_turn_words"] or 0) * b["user_turns"] for b in behaviour)
    scores = user_scores({r.run_id: r.system_id for r in runs}, [HEADLINE_METRIC])
    names = {r.system_id: r.name for r in runs}
    if arena is None or not votes:
        trust = ValidityTrust(None, reason="no arena votes on this benchmark")
    else:
        trust = ValidityTrust(_validity_cached(scores.get(HEADLINE_METRIC, {}), votes))
    return {
        "protocol": protocol, "coverage": coverage, "label": runs[0].coverage_label,
        "board_url": reverse("leaderboard:board", args=[benchmark.slug, protocol])
        + f"?splits={design_variant(coverage, False)}"
        + ("&dialogues=both" if coverage.endswith(SANITISED_SUFFIX) else ""),
        "systems": len(runs), "trust": trust,
        "tau": trust.validity.agreements["kendall_tau_b"] if trust.validity else None,
        "rho": trust.validity.agreements["spearman"] if trust.validity else None,
        "compared": [names[s] for s in trust.validity.systems] if trust.validity else [],
        "audited": len(leak), "simulations": len(reports), "dialogues": dialogues,
        "leaked_share": sum(r["leaked"] for r in leak) / dialogues if dialogues else None,
        "first_turn_share": (sum(r["first_turn_success"] for r in leak) / dialogues
                             if dialogues else None),
        "mean_user_words": words / user_turns if user_turns else None,
    }
