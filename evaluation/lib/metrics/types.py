"""Plain input and description types for the Trace metric suite (§3 and Appendix J).

The Django side builds these from the database; the metrics never see a model instance.
Identifiers are strings throughout (formats.md: "Identifiers are strings").
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

Unit = Literal["turn", "dialogue"]
Direction = Literal["higher", "lower"]

# Axis names as shown on leaderboards; Trace groups its metrics under these families.
ACCURACY = "Accuracy"
GROUNDING = "Grounding"
RECOVERY = "Recovery"
PRACTICAL_VALUE = "Practical value"
TEXT = "Text"
AXES = (ACCURACY, GROUNDING, RECOVERY, PRACTICAL_VALUE, TEXT)

# The pages that show a few chosen metrics rather than all of them (MetricSpec.shown; a
# metric's place in their lists is MetricSpec.headline, the order of the boards' columns):
TIERS = "tiers"            # the system page, by difficulty tier
DIALOGUES = "dialogues"    # the system page's list of dialogues to drill into
SUMMARY = "summary"        # a submission's result once its run finished (and `load_demo`)
TURNS = "turns"            # the per-turn drill-down of one dialogue
SIMULATION = "simulation"  # a simulation's section: the Trace suite on its dialogues
SURFACES = (TIERS, DIALOGUES, SUMMARY, TURNS, SIMULATION)

# System actions that carry gold items and are scored turn by turn (formats.md §2).
RECOMMENDATION_ACTIONS = frozenset({"recommend", "compare"})
REJECT_ACTION = "reject_and_refine"


@dataclass(frozen=True, slots=True)
class ItemInfo:
    """A catalogue item (POI, movie, …); coordinates and price are optional."""

    id: str
    type: str
    city: str | None = None
    lat: float | None = None
    lon: float | None = None
    price_level: int | None = None
    name: str = ""


@dataclass(frozen=True, slots=True)
class ReviewInfo:
    """A review that citations can point at."""

    id: str
    item_id: str
    text: str


@dataclass(frozen=True, slots=True)
class ReferenceTurn:
    """One turn of a reference dialogue."""

    index: int
    role: str  # "user" | "system"
    text: str
    action: str = "other"
    gold_item_ids: tuple[str, ...] = ()
    alternative_item_ids: tuple[str, ...] = ()
    referenced_item_ids: tuple[str, ...] = ()

    @property
    def is_recommendation(self) -> bool:
        """A system turn that recommends or compares, i.e. a turn scored by the suite."""
        return self.role == "system" and self.action in RECOMMENDATION_ACTIONS


@dataclass(frozen=True, slots=True)
class ReferenceDialogue:
    """A benchmark dialogue: the context systems answer and the gold they are scored against."""

    id: str
    split: str
    scenario: Mapping[str, Any] = field(default_factory=dict)
    candidate_item_ids: tuple[str, ...] = ()
    turns: tuple[ReferenceTurn, ...] = ()


@dataclass(frozen=True, slots=True)
class Citation:
    """Maps a label used in a response (e.g. ``R2``) to the review it quotes."""

    label: str
    review_id: str
    quote: str = ""


@dataclass(frozen=True, slots=True)
class SubmittedTurn:
    """A system's answer to one evaluated reference turn (protocol ``turn``)."""

    dialogue_id: str
    turn_index: int
    response: str
    ranked_item_ids: tuple[str, ...] = ()
    citations: tuple[Citation, ...] = ()
    # False when the system produced no answer (a failed LLM call's placeholder line carries
    # ``metadata.no_answer``): the turn is then missing in the metrics, never a good score.
    answered: bool = True


@dataclass(frozen=True, slots=True)
class MetricSpec:
    """What a metric means: how it is shown, aggregated and compared.

    ``range`` is (low, high); ``high`` is None for unbounded metrics such as route length.
    ``headline`` is the metric's place among its evaluator's headline metrics: the boards'
    default columns (the API's ``columns=headline``, the boards' exports), the compare page's
    default rows, the system page's radar, first in agreement reports; within an axis they are
    ordered by it, and every page that lists a few metrics lists them in this order. 0: a
    sensitivity variant, shown under "all metrics". An evaluator none of whose metrics has a
    place shows them all by default. ``shown``: the SURFACES that list it besides.
    ``evaluation/lib/columns.py`` reads these two fields for every page; nothing else lists
    metrics.
    """

    name: str
    axis: str
    unit: Unit
    direction: Direction
    range: tuple[float, float | None]
    description: str
    headline: int = 0
    shown: frozenset[str] = frozenset()


@dataclass(frozen=True, slots=True)
class Unavailable:
    """Why an optional component (an NLI model, …) cannot run; the rest of the suite still does."""

    reason: str


def turn_unit_id(dialogue_id: str, turn_index: int) -> str:
    """Unit id of a system turn, as used in exports (formats.md §5: ``conv_id#turn_ind``)."""
    return f"{dialogue_id}#{turn_index}"
