"""The task-form registry: every annotation task form is one registered `TaskForm` object.

A form says, in one place, everything Concord does with it: its label on the author's page,
the kind of study item it is asked on (`mode`), how it renders (`template`, fed by
`panel_context`), how a POST is read and checked (`parse`, `missing`), its long-format export
rows (`flatten`, `export_detail`), its label-table rows and fields for agreement (`fields`,
`label_rows`), what the report shows for it (`report_fields`, `report_parts`), its paragraph
of the default instructions and its keyboard shortcuts. Every place that lists or branches on
forms iterates `registered()`; nothing else names a form. The functions at the end walk every
registered form for an item's answers: `parse_post`, `missing_answers`, `flatten`,
`categorical_tie`, `export_detail`, `field_label`, `instructions`, `report_fields`,
`report_parts` (callers reach them through `taskforms`, which also registers the built-ins).

The built-in forms are in `annotation.lib.taskforms` (which registers them on import); a new
form is either a `TaskForm` subclass with its own template, or a `FieldsForm` built from typed
fields (`ScaleField`, `ChoiceField`, `TextField`) that the generic template
`annotation/_form_fields.html` renders (docs/architecture.md, "Adding a task form").

Pure Python: values arrive as a mapping of form field names to lists of strings (a QueryDict or
a plain dict) and leave as a JSON-ready dict.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field

# The kinds of study item a form can be asked on (annotation.models.StudyItem.Mode), in the
# order the default instructions and the item creation walk them.
MODES = ("response", "conversation", "recommend", "pairwise")
MAX_TEXT = 5000
REFERENCE = ""  # the system of a benchmark's own reference responses (or of unknown origin)

LEVEL_ALPHAS = {
    "nominal": ("nominal",),
    "ordinal": ("ordinal", "interval"),
    "interval": ("interval",),
    "ratio": ("ratio",),
    "set": ("masi",),
}
NUMERIC_LEVELS = ("ordinal", "interval", "ratio")


# --- what a form is made of -----------------------------------------------------------------

@dataclass(frozen=True)
class Choice:
    value: str
    label: str
    key: str  # keyboard shortcut
    help: str = ""


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


UnitKey = tuple[str, str]  # (system, unit_id)


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


@dataclass(frozen=True)
class NativeItem:
    """What the label table needs to know about a study item."""

    mode: str
    dialogue_id: str
    turn_index: int | None
    system: str = REFERENCE
    system_b: str = REFERENCE

    @property
    def turn_unit(self) -> str:
        return f"{self.dialogue_id}#{self.turn_index}"

    @property
    def pair_system(self) -> str:
        return f"{self.system or 'reference'} vs {self.system_b or 'reference'}"

    def row(self, annotator: str, unit_type: str, unit_id: str, name: str, value,
            system: str | None = None) -> LabelRow:
        return LabelRow(unit_type, unit_id, self.dialogue_id,
                        self.system if system is None else system, annotator, name, value)


@dataclass(frozen=True)
class Layout:
    """What one item asks for: the forms that apply and what they range over."""

    forms: tuple[str, ...]
    quote_count: int = 0
    likert_scales: tuple[dict, ...] = ()
    rated_turns: tuple[int, ...] = ()  # FACE turn-level: indexes of the rated system turns
    candidate_ids: tuple[str, ...] = ()  # blind recommendation
    quote_checker: object = None  # callable(review_id, start, end, text, item_id) -> bool
    swapped: bool = False  # pairwise: the second response is shown on the left


@dataclass
class Parsed:
    values: dict
    errors: list[str] = field(default_factory=list)


@dataclass
class Point:
    value: str
    label: str
    key: str = ""
    anchor: str = ""
    checked: bool = False


@dataclass
class ScaleRow:
    """One single-choice question: a citation verdict, a Likert scale, a factor, an aspect."""

    name: str
    label: str
    points: list[Point]
    question: str = ""
    help: str = ""
    group: str = ""
    current: str | None = None


def scale_row(name, label, low, high, current, *, question="", help="", group="",
              anchors=None) -> ScaleRow:
    """The radio row of an integer scale LOW..HIGH (keys 0-9 for the first ten values)."""
    anchors = anchors or {}
    points = [Point(str(v), str(v), str(v) if v <= 9 else "", anchors.get(str(v), ""),
                    current is not None and str(current) == str(v))
              for v in range(low, high + 1)]
    return ScaleRow(name, label, points, question, help, group,
                    None if current is None else str(current))


@dataclass(frozen=True)
class KnownFacts:
    """What a reference turn offers an item with known answers (practice and gold items)."""

    text: str = ""  # the reference response (response items)
    acceptable: tuple[str, ...] = ()  # the turn's gold and alternative items (recommend items)


@dataclass(frozen=True)
class KnownAnswers:
    """A practice or gold item of a form: its expected answers (flattened field -> value)."""

    expected: dict
    text: str = ""  # the response the item shows (response items; possibly altered)
    how: str = ""  # how the item was built, kept in its reference record


@dataclass(frozen=True)
class ReportPart:
    """A section of the study report a form adds (report_plan: what it shows, what it needs)."""

    title: str
    shows: str
    needs: str


# --- reading a POST -------------------------------------------------------------------------

def one(data: Mapping, name: str) -> str | None:
    """The last non-empty value posted under NAME, stripped (None when absent or blank)."""
    raw = data.get(name)
    if isinstance(raw, list | tuple):
        raw = raw[-1] if raw else None
    if raw is None:
        return None
    raw = str(raw).strip()
    return raw or None


def many(data: Mapping, name: str) -> list[str]:
    """Every non-empty value posted under NAME (checkboxes), stripped."""
    getlist = getattr(data, "getlist", None)
    raw = getlist(name) if getlist else data.get(name, [])
    if isinstance(raw, str):
        raw = [raw]
    return [str(v).strip() for v in raw if str(v).strip()]


def int_in(raw: str | None, low: int, high: int) -> int | None:
    if raw is None:
        return None
    try:
        value = int(raw)
    except ValueError:
        return None
    return value if low <= value <= high else None


# --- the form object ------------------------------------------------------------------------

class TaskForm(ABC):
    """One annotation task form. Subclasses set the attributes, define `parse` and override
    what else they need."""

    key: str = ""  # stored in Study.forms; also the key of its answers in Annotation.values
    label: str = ""  # the author's checkbox
    mode: str = "response"  # one of MODES: the kind of item it is asked on
    template: str = ""  # the panel template, rendered with `form` and `ctx` (panel_context)
    report_fields: str = ""  # how the report's agreement section names its fields
    instructions: str = ""  # its paragraph of the default instructions (Markdown)
    shortcuts: tuple[tuple[str, str], ...] = ()  # (keys, what they do) for the help box
    panel_order: int = 0  # forms of one item show by (panel_order, registration order)
    categorical: tuple[str, ...] = ()  # flattened-name prefixes whose ties ask for a label more
    offers_known_answers: bool = False  # builds practice (calibration) and gold items

    @abstractmethod
    def parse(self, data: Mapping, layout: Layout, parsed: Parsed) -> None:
        """Read this form's answers from DATA into parsed.values; report what is invalid."""

    def missing(self, values: dict, layout: Layout) -> list[str]:
        """What a complete submission still lacks on this form."""
        return []

    def flatten(self, values: dict) -> list[tuple[str, object]]:
        """This form's (field, value) rows of the long-format export, in a stable order."""
        return []

    def export_detail(self, name: str, values: dict, quotes: Callable[[], list]) -> str | None:
        """The export's `detail` cell of flattened field NAME, or None when NAME is not ours.
        QUOTES() gives the item's extracted quotes (computed once per item)."""
        return None

    def field_label(self, name: str) -> str | None:
        """How practice feedback names flattened field NAME (None: not this form's)."""
        return None

    def fields(self, layout: Layout) -> list[FieldSpec]:
        """The label-table fields this form contributes to agreement reports."""
        return []

    def label_rows(self, values: dict, item: NativeItem, annotator: str) -> list[LabelRow]:
        """The label-table rows of one submitted annotation's answers on this form."""
        return []

    def panel_context(self, values: dict, layout: Layout) -> dict:
        """What the panel template shows beside the item (the current answers filled in)."""
        return {}

    def turn_rows(self, values: dict, index: int) -> list[ScaleRow]:
        """Rows a conversation item shows inside rated system turn INDEX (FACE's per-turn
        aspects)."""
        return []

    def known_answers(self, facts: KnownFacts, *, corrupt: bool, rng) -> KnownAnswers | None:
        """A practice or gold item from a reference turn's FACTS (CORRUPT: the variant with a
        planted mistake, drawn with the random.Random RNG); None when the turn offers none."""
        return None

    def report_parts(self) -> tuple[ReportPart, ...]:
        """Report sections beyond agreement per field that this form's labels feed."""
        return ()


# --- generic forms built from typed fields ----------------------------------------------------

@dataclass(frozen=True)
class ScaleField:
    """An integer scale LOW..HIGH (ordinal by default: alpha at the ordinal and interval level)."""

    key: str
    label: str
    low: int
    high: int
    question: str = ""
    anchors: tuple[tuple[int, str], ...] = ()
    level: str = "ordinal"
    required: bool = True
    kind = "scale"


@dataclass(frozen=True)
class ChoiceField:
    """One of a few named options (a nominal field; a tie among annotators asks for one more)."""

    key: str
    label: str
    choices: tuple[Choice, ...]
    question: str = ""
    required: bool = True
    kind = "choice"


@dataclass(frozen=True)
class TextField:
    """Free text (exported, never part of agreement)."""

    key: str
    label: str
    question: str = ""
    required: bool = False
    kind = "text"


UNIT_OF_MODE = {"response": "turn", "conversation": "dialogue", "recommend": "turn",
                "pairwise": "turn"}


@dataclass(frozen=True, eq=False, kw_only=True)
class FieldsForm(TaskForm):
    """A form made of typed fields, rendered by the generic template. Its answers are stored as
    values[key][field key]; they flatten to `key.field`, which is also the label-table field."""

    key: str
    label: str
    questions: tuple[ScaleField | ChoiceField | TextField, ...]
    mode: str = "response"
    template: str = "annotation/_form_fields.html"
    report_fields: str = ""
    instructions: str = ""
    panel_order: int = 0

    @property
    def categorical(self) -> tuple[str, ...]:
        return tuple(f"{self.key}.{f.key}" for f in self.questions if f.kind == "choice")

    def _input(self, spec) -> str:
        return f"{self.key}-{spec.key}"

    def _read(self, spec, data, errors: list[str]):
        raw = one(data, self._input(spec))
        if raw is None:
            return None
        if spec.kind == "scale":
            value = int_in(raw, spec.low, spec.high)
            if value is None:
                errors.append(f"{spec.label}: {raw!r} is outside {spec.low}\u2013{spec.high}.")
            return value
        if spec.kind == "choice":
            if raw in {c.value for c in spec.choices}:
                return raw
            errors.append(f"{spec.label}: unknown choice {raw!r}.")
            return None
        return raw[:MAX_TEXT]

    def parse(self, data, layout, parsed):
        answers = {}
        for spec in self.questions:
            value = self._read(spec, data, parsed.errors)
            if value is not None:
                answers[spec.key] = value
        if answers:
            parsed.values[self.key] = answers

    def missing(self, values, layout):
        given = values.get(self.key, {})
        return [f"{self.label}: answer {spec.label.lower()}." for spec in self.questions
                if spec.required and spec.key not in given]

    def flatten(self, values):
        given = values.get(self.key, {})
        return [(f"{self.key}.{spec.key}", given[spec.key]) for spec in self.questions
                if spec.key in given]

    def field_label(self, name):
        for spec in self.questions:
            if name == f"{self.key}.{spec.key}":
                return f"{self.label}: {spec.label}"
        return None

    def fields(self, layout):
        unit = UNIT_OF_MODE[self.mode]
        specs = []
        for spec in self.questions:
            if spec.kind == "scale":
                specs.append(FieldSpec(f"{self.key}.{spec.key}", unit, spec.level, spec.low,
                                       spec.high, label=spec.label, description=spec.question,
                                       group=self.key))
            elif spec.kind == "choice":
                specs.append(FieldSpec(f"{self.key}.{spec.key}", unit, "nominal",
                                       label=spec.label, description=" / ".join(
                                           c.label for c in spec.choices), group=self.key))
        return specs

    def label_rows(self, values, item, annotator):
        unit = UNIT_OF_MODE[self.mode]
        unit_id = item.dialogue_id if unit == "dialogue" else item.turn_unit
        system = {"recommend": REFERENCE, "pairwise": item.pair_system}.get(self.mode)
        given = values.get(self.key, {})
        return [item.row(annotator, unit, unit_id, f"{self.key}.{spec.key}", given[spec.key],
                         system=system)
                for spec in self.questions if spec.kind != "text" and spec.key in given]

    def panel_context(self, values, layout):
        given = values.get(self.key, {})
        rows = []
        for spec in self.questions:
            name, current = self._input(spec), given.get(spec.key)
            if spec.kind == "scale":
                row = scale_row(name, spec.label, spec.low, spec.high, current,
                                question=spec.question,
                                anchors={str(k): v for k, v in spec.anchors})
            elif spec.kind == "choice":
                row = ScaleRow(name, spec.label, [
                    Point(c.value, c.label, c.key, c.help, c.value == current)
                    for c in spec.choices], question=spec.question, current=current)
            else:
                row = None
            rows.append({"kind": spec.kind, "name": name, "label": spec.label,
                         "question": spec.question, "row": row, "text": current or ""})
        return {"rows": rows}


# --- the registry ---------------------------------------------------------------------------

_REGISTRY: dict[str, TaskForm] = {}


def register(form: TaskForm) -> TaskForm:
    """Add FORM to the registry (after the forms already there); returns it."""
    key = form.key
    if not key or not key.replace("_", "").isalnum() or not key.islower():
        raise ValueError(f"A task form's key must be lowercase letters, digits or _: {key!r}.")
    if key in _REGISTRY:
        raise ValueError(f"A task form {key!r} is already registered.")
    if key in ("comment", "flag", "flag_reason"):
        raise ValueError(f"{key!r} is reserved for the item footer.")
    if form.mode not in MODES:
        raise ValueError(f"Task form {key!r}: mode must be one of {', '.join(MODES)}.")
    if not form.label or not form.template:
        raise ValueError(f"Task form {key!r} needs a label and a template.")
    _REGISTRY[key] = form
    return form


def unregister(key: str) -> None:
    """Remove a form (tests that register a throwaway form clean up with this)."""
    _REGISTRY.pop(key, None)


def registered() -> tuple[TaskForm, ...]:
    return tuple(_REGISTRY.values())


def keys() -> tuple[str, ...]:
    return tuple(_REGISTRY)


def get(key: str) -> TaskForm:
    try:
        return _REGISTRY[key]
    except KeyError:
        raise KeyError(f"No task form {key!r} is registered.") from None


def form_labels() -> dict[str, str]:
    return {form.key: form.label for form in _REGISTRY.values()}


def keys_for_mode(mode: str) -> tuple[str, ...]:
    return tuple(form.key for form in _REGISTRY.values() if form.mode == mode)


def enabled(forms: Iterable[str]) -> list[TaskForm]:
    """The registered forms among FORMS, in registration order (unknown keys are skipped)."""
    chosen = set(forms)
    return [form for form in _REGISTRY.values() if form.key in chosen]


def in_panel_order(forms: Iterable[str]) -> list[TaskForm]:
    """The enabled forms as an item page shows them."""
    return sorted(enabled(forms), key=lambda form: form.panel_order)


def in_given_order(forms: Iterable[str]) -> list[TaskForm]:
    """The registered forms among FORMS, in FORMS' order (a study's own order)."""
    return [_REGISTRY[key] for key in forms if key in _REGISTRY]


# --- every registered form: parsing, completeness, flattening, ties, instructions, report ----

def parse_post(data: Mapping, layout: Layout, *, partial: bool) -> Parsed:
    """Read the item form into a values dict; with partial=False everything must be answered.

    Invalid entries are dropped (and reported); a draft (partial=True) keeps whatever is valid.
    """
    parsed = Parsed(values={})
    for form in in_given_order(layout.forms):
        form.parse(data, layout, parsed)
    comment = (one(data, "comment") or "")[:MAX_TEXT]
    if comment:
        parsed.values["comment"] = comment
    if one(data, "flag"):
        parsed.values["flag"] = True
        reason = (one(data, "flag_reason") or "")[:MAX_TEXT]
        if reason:
            parsed.values["flag_reason"] = reason
    if not partial:
        parsed.errors.extend(missing_answers(parsed.values, layout))
    return parsed


def missing_answers(values: dict, layout: Layout) -> list[str]:
    """What a complete submission still lacks (a flagged item may be submitted as it is)."""
    if values.get("flag"):
        return []
    return [message for form in enabled(layout.forms) for message in form.missing(values, layout)]


def flatten(values: dict, layout: Layout | None = None) -> list[tuple[str, object]]:
    """(field, value) pairs in a stable order: the rows of the long-format export."""
    rows: list[tuple[str, object]] = []
    for form in registered():
        rows += form.flatten(values)
    if values.get("comment"):
        rows.append(("comment", values["comment"]))
    if values.get("flag"):
        rows.append(("flag", 1))
        if values.get("flag_reason"):
            rows.append(("flag_reason", values["flag_reason"]))
    return rows


def categorical_tie(annotations: Sequence[dict]) -> bool:
    """True when some categorical field has no strict majority among the given annotations."""
    prefixes = tuple(prefix for form in registered() for prefix in form.categorical)
    by_field: dict[str, list] = {}
    for values in annotations:
        for name, value in flatten(values):
            if prefixes and name.startswith(prefixes):
                by_field.setdefault(name, []).append(value)
    for labels in by_field.values():
        if len(labels) < 2:
            continue
        top = Counter(labels).most_common(1)[0][1]
        if 2 * top <= len(labels):
            return True
    return False


def export_detail(name: str, values: dict, quotes) -> str:
    """The long-format export's `detail` cell of flattened field NAME ("" when none)."""
    for form in registered():
        detail = form.export_detail(name, values, quotes)
        if detail is not None:
            return detail
    return ""


def field_label(name: str) -> str:
    """A flattened field NAME in the form's words (practice feedback)."""
    for form in registered():
        label = form.field_label(name)
        if label is not None:
            return label
    kind, _, rest = name.partition(".")
    return f"{kind.capitalize()}: {rest.replace('_', ' ').replace('.', ' ')}" if rest else kind


# The default instructions' heading of the items that carry several forms.
MODE_HEADINGS = {"response": "## Judging a response\n",
                 "conversation": "## Judging a conversation\n"}


def instructions(forms) -> list[str]:
    """The enabled forms' paragraphs of the default instructions, by kind of item."""
    parts: list[str] = []
    for mode in MODES:
        shown = [form for form in in_panel_order(forms) if form.mode == mode]
        if shown and mode in MODE_HEADINGS:
            parts.append(MODE_HEADINGS[mode])
        parts += [form.instructions for form in shown if form.instructions]
    return parts


def report_fields(forms) -> list[str]:
    """How the report's agreement section names the enabled forms' fields."""
    return [form.report_fields for form in enabled(forms) if form.report_fields]


def report_parts(forms) -> list[ReportPart]:
    return [part for form in enabled(forms) for part in form.report_parts()]
