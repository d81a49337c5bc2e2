"""The one long-format label table every report is computed from (statistics.md, "Inter-annotator
agreement"; annotation.md, "A study can also be created by importing finished human labels").

A study's labels, native or imported, become rows `(unit_type, unit_id, dialogue_id, system,
annotator, field, value)`:

- unit ids are the benchmark's, so labels join with automated scores: `dialogue_id#turn_index`
  for a turn, `dialogue_id` for a dialogue; one quote of a response is `dialogue_id#turn#q<k>`;
- a unit is identified by (system, unit_id): the same turn answered by two systems is two units;
- `annotator` is "" for a label the data set's authors aggregated over annotators;
- `value` is a number (scales), a string (nominal) or a frozenset (set-valued answers).

`FieldSpec` says how a field is measured; its `alpha_levels` are the levels agreement is
reported at: ordinal fields (Likert and the like) at both the ordinal and the interval level,
set-valued fields with MASI distance. Pure Python: `native_rows` flattens one native annotation's
values and `native_fields` lists a native study's fields, each form contributing its own
(`form_registry.TaskForm.label_rows` and `.fields`); the database reads are in
`report_selectors`.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from annotation.lib import taskforms
from annotation.lib.form_registry import (
    LEVEL_ALPHAS,
    NUMERIC_LEVELS,
    REFERENCE,
    FieldSpec,
    LabelRow,
    Layout,
    NativeItem,
    UnitKey,
)
from annotation.lib.taskforms import (
    CHECKLIST_SET_FIELD,
    CITATION_FIELD,
    PAIRWISE_FIELD,
    RECOMMEND_FIELD,
)

__all__ = ["CHECKLIST_SET_FIELD", "CITATION_FIELD", "LEVEL_ALPHAS", "NUMERIC_LEVELS",
           "PAIRWISE_FIELD", "RECOMMEND_FIELD", "REFERENCE", "FieldSpec", "LabelRow",
           "NativeItem", "UnitKey"]


@dataclass
class LabelTable:
    """All labels of a study that count, the fields they belong to, and who was left out."""

    rows: list[LabelRow]
    fields: dict[str, FieldSpec]
    excluded: list[dict] = field(default_factory=list)  # {annotator, reason, excluded_at}

    def by_field(self) -> dict[str, list[LabelRow]]:
        grouped: dict[str, list[LabelRow]] = defaultdict(list)
        for row in self.rows:
            grouped[row.field].append(row)
        return grouped

    def annotators(self) -> list[str]:
        """Annotators with a name (aggregated labels have none), sorted."""
        return sorted({row.annotator for row in self.rows if row.annotator})

    def units(self) -> dict[UnitKey, dict]:
        """unit key -> {unit_type, unit_id, dialogue_id, system} for every labelled unit."""
        return {row.key: {"unit_type": row.unit_type, "unit_id": row.unit_id,
                          "dialogue_id": row.dialogue_id, "system": row.system}
                for row in self.rows}

    def human_means(self, name: str) -> dict[UnitKey, float]:
        """The human aggregate of a numeric field per unit: the mean of its labels."""
        totals: dict[UnitKey, list[float]] = defaultdict(list)
        for row in self.rows:
            if row.field == name and isinstance(row.value, int | float):
                totals[row.key].append(float(row.value))
        return {key: sum(values) / len(values) for key, values in totals.items()}

    def system_labels(self, name: str) -> dict[str, list[tuple[str, float]]]:
        """System -> [(dialogue id, value)] of every numeric label of field NAME (each
        annotator's label a pair; a system's labels of one dialogue, its turns' too, are one
        cluster), the reference responses' (system REFERENCE) left out: a system's human
        mean, clustered by dialogue, as simulator validity resamples it."""
        out: dict[str, list[tuple[str, float]]] = defaultdict(list)
        for row in self.rows:
            if (row.field == name and row.system != REFERENCE
                    and isinstance(row.value, int | float) and not isinstance(row.value, bool)):
                out[row.system].append((row.dialogue_id, float(row.value)))
        return dict(out)


@dataclass(frozen=True)
class SystemLabels:
    """One study's labels of one numeric field, per system: a human reference for a
    simulated ranking (leaderboard/selectors/simulated.py, docs/statistics.md, "Simulator
    validity")."""

    study: str  # slug
    study_title: str
    simulated: bool  # the study's annotators are simulated (the demo's), not people
    aspect: str  # the field's name
    aspect_label: str
    unit_type: str  # turn or dialogue
    labels: dict[str, list[tuple[str, float]]]  # system name -> [(dialogue id, value)]


# --- native studies: the fields of the enabled forms, and one annotation's rows --------------


def native_fields(forms: Iterable[str], likert_scales: Sequence[dict]) -> dict[str, FieldSpec]:
    """The report fields of a native study's enabled task forms, in registration order."""
    layout = Layout(forms=tuple(forms), likert_scales=tuple(likert_scales))
    return {spec.name: spec for form in taskforms.enabled(layout.forms)
            for spec in form.fields(layout)}


def native_rows(values: dict, item: NativeItem, annotator: str) -> list[LabelRow]:
    """The label rows of one submitted annotation (flagged items keep what was answered)."""
    return [row for form in taskforms.registered()
            for row in form.label_rows(values, item, annotator)]


# --- imported studies ------------------------------------------------------------------------


def imported_value(level: str, value_num: float | None, value_text: str):
    """An ImportedLabel's value as the table holds it (sets are stored joined by "|")."""
    if level == "set":
        return frozenset(part for part in value_text.split("|") if part)
    if level == "nominal":
        return value_text if value_text else value_num
    return value_num


def system_display(system: str) -> str:
    return system or "Reference / unknown"
