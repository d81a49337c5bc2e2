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
values (taskforms) and `native_fields` lists a native study's fields; the database reads are in
`report_selectors`.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from annotation.lib import taskforms

LEVEL_ALPHAS = {
    "nominal": ("nominal",),
    "ordinal": ("ordinal", "interval"),
    "interval": ("interval",),
    "ratio": ("ratio",),
    "set": ("masi",),
}
NUMERIC_LEVELS = ("ordinal", "interval", "ratio")
CITATION_FIELD = "citation"
CHECKLIST_SET_FIELD = "errors"
RECOMMEND_FIELD = "recommend.items"
PAIRWISE_FIELD = "pairwise.choice"
REFERENCE = ""  # the system of a benchmark's own reference responses (or of unknown origin)

UnitKey = tuple[str, str]  # (system, unit_id)


@dataclass(frozen=True)
class FieldSpec:
    """A labelled field: what a unit is, how values are measured, the scale if there is one."""

    name: str
    unit_type: str  # turn | dialogue | item | quote
    level: str  # nominal | ordinal | interval | ratio | set
    scale_min: float | None = None
    scale_max: float | None = None
    label: str = ""
    description: str = ""
    group: str = ""

    @property
    def alpha_levels(self) -> tuple[str, ...]:
        return LEVEL_ALPHAS[self.level]

    @property
    def primary_level(self) -> str:
        return self.alpha_levels[0]

    @property
    def is_numeric(self) -> bool:
        return self.level in NUMERIC_LEVELS

    @property
    def title(self) -> str:
        return self.label or self.name

    def to_dict(self) -> dict:
        return {"field": self.name, "label": self.title, "unit_type": self.unit_type,
                "level": self.level, "alpha_levels": list(self.alpha_levels),
                "scale_min": self.scale_min, "scale_max": self.scale_max,
                "description": self.description}


@dataclass(frozen=True)
class LabelRow:
    unit_type: str
    unit_id: str
    dialogue_id: str
    system: str
    annotator: str
    field: str
    value: object

    @property
    def key(self) -> UnitKey:
        return (self.system, self.unit_id)


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


# --- native studies: the fields of the enabled forms, and one annotation's rows --------------


def native_fields(forms: Iterable[str], likert_scales: Sequence[dict]) -> dict[str, FieldSpec]:
    """The report fields of a native study's enabled task forms, in form order."""
    forms = set(forms)
    specs: list[FieldSpec] = []
    if taskforms.CITATION in forms:
        specs.append(FieldSpec(CITATION_FIELD, "quote", "nominal", label="Citation verdict",
                               description="Supported / Partial / Not supported, per quote",
                               group=taskforms.CITATION))
    if taskforms.CHECKLIST in forms:
        for choice in taskforms.ERROR_CATEGORIES:
            if choice.value != taskforms.NO_ERRORS:
                specs.append(FieldSpec(f"error.{choice.value}", "turn", "nominal", 0, 1,
                                       label=f"Error: {choice.label.lower()}",
                                       description="ticked (1) or not (0)",
                                       group=taskforms.CHECKLIST))
        specs.append(FieldSpec(CHECKLIST_SET_FIELD, "turn", "set", label="Error checklist (set)",
                               description="the ticked categories as one set (No errors = "
                               "the empty set)", group=taskforms.CHECKLIST))
    if taskforms.LIKERT in forms:
        for scale in likert_scales:
            specs.append(FieldSpec(f"likert.{scale['key']}", "turn", "ordinal", scale["min"],
                                   scale["max"], label=scale.get("label", scale["key"]),
                                   description=scale.get("question", ""), group=taskforms.LIKERT))
    if taskforms.CORE in forms:
        for factor in taskforms.CORE_FACTORS:
            specs.append(FieldSpec(f"core.{factor.key}", "dialogue", "ordinal", taskforms.CORE_MIN,
                                   taskforms.CORE_MAX, label=f"CoRE: {factor.name}",
                                   description=factor.definition, group=taskforms.CORE))
        specs.append(FieldSpec("core.overall", "dialogue", "interval", taskforms.CORE_OVERALL_MIN,
                               taskforms.CORE_OVERALL_MAX, label="CoRE overall (0–100)",
                               description=taskforms.CORE_OVERALL_QUESTION, group=taskforms.CORE))
    if taskforms.FACE in forms:
        for unit_type, aspects in (("turn", taskforms.FACE_TURN_ASPECTS),
                                   ("dialogue", taskforms.FACE_DIALOGUE_ASPECTS)):
            for aspect in aspects:
                specs.append(FieldSpec(f"face.{aspect.key}", unit_type, "ordinal", aspect.low,
                                       aspect.high, label=f"FACE {aspect.label.lower()}",
                                       description=aspect.question, group=taskforms.FACE))
    if taskforms.RECOMMEND in forms:
        specs.append(FieldSpec(RECOMMEND_FIELD, "turn", "set", label="Blind recommendation picks",
                               description="the 1–3 items an annotator picked",
                               group=taskforms.RECOMMEND))
    if taskforms.PAIRWISE in forms:
        specs.append(FieldSpec(PAIRWISE_FIELD, "turn", "nominal", label="Pairwise preference",
                               description="a (first response) / b (second) / tie",
                               group=taskforms.PAIRWISE))
    return {spec.name: spec for spec in specs}


@dataclass(frozen=True)
class NativeItem:
    """What the label table needs to know about a study item."""

    mode: str
    dialogue_id: str
    turn_index: int | None
    system: str = REFERENCE
    system_b: str = REFERENCE


def native_rows(values: dict, item: NativeItem, annotator: str) -> list[LabelRow]:
    """The label rows of one submitted annotation (flagged items keep what was answered)."""
    turn_unit = f"{item.dialogue_id}#{item.turn_index}"
    rows: list[LabelRow] = []

    def add(unit_type: str, unit_id: str, name: str, value, system: str = item.system):
        rows.append(LabelRow(unit_type, unit_id, item.dialogue_id, system, annotator, name,
                             value))

    for index, verdict in sorted(values.get("citations", {}).items(), key=lambda kv: int(kv[0])):
        add("quote", f"{turn_unit}#q{index}", CITATION_FIELD, verdict)
    if "errors" in values:
        chosen = set(values["errors"]) - {taskforms.NO_ERRORS}
        for choice in taskforms.ERROR_VALUES:
            if choice != taskforms.NO_ERRORS:
                add("turn", turn_unit, f"error.{choice}", int(choice in chosen))
        add("turn", turn_unit, CHECKLIST_SET_FIELD, frozenset(chosen))
    for key, value in values.get("likert", {}).items():
        add("turn", turn_unit, f"likert.{key}", value)
    for key, value in values.get("core", {}).items():
        add("dialogue", item.dialogue_id, f"core.{key}", value)
    face = values.get("face", {})
    for index, turn in sorted(face.get("turns", {}).items(), key=lambda kv: int(kv[0])):
        for key, value in turn.items():
            add("turn", f"{item.dialogue_id}#{index}", f"face.{key}", value)
    for aspect in taskforms.FACE_DIALOGUE_ASPECTS:
        if aspect.key in face:
            add("dialogue", item.dialogue_id, f"face.{aspect.key}", face[aspect.key])
    picks = values.get("recommend", {}).get("items")
    if picks:
        add("turn", turn_unit, RECOMMEND_FIELD, frozenset(picks), system=REFERENCE)
    choice = values.get("pairwise", {}).get("choice")
    if choice:
        add("turn", turn_unit, PAIRWISE_FIELD, choice,
            system=f"{item.system or 'reference'} vs {item.system_b or 'reference'}")
    return rows


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
