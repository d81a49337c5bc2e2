"""A simulated board's leakage column (docs/simulation.md, "Leakage audit"): per row, the
share of its simulation's dialogues that leaked a target (`report["leakage"]`, stored when the
simulation finished), and over the rows shown. Reads only, one query for every row.

On the sanitised board ("-Both") the same counts say how many dialogues each row's numbers
left out."""

from __future__ import annotations

from dataclasses import dataclass, field

from django.db.models import Q
from django.urls import reverse

from evaluation.lib.simulators.leakage import KIND_LABELS
from evaluation.models import Simulation


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
