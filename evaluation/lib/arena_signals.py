"""What a CRS arena records beside the verdict, summarised (docs/arena.md, "What a vote records"
and "Style control").

Per system, over the votes that carry the signal (a side the person left blank is not counted):

- **satisfaction rate**: the share of its sides the person marked *Satisfied* (rather than
  *Frustrated*) — CRS Arena's own end-of-conversation signal (Bernard et al., WSDM 2025); for
  CRSArena-Dial's imported votes it is the share "satisfied" of its conversations' sentiment.
- **acceptance rate**: the share of its sides in which the person accepted one of its item
  cards, over the sides of battles whose vote was cast on Concord's battle page (imported votes
  carry no acceptance and are not counted).

Both with the **Wilson score interval** (Wilson 1927, JASA 22; the interval Agresti and Coull
1998 recommend over the Wald interval for a binomial proportion), 95%: for k of n,
(p̂ + z²/2n ± z √(p̂(1−p̂)/n + z²/4n²)) / (1 + z²/n). Sides of one person's battles are treated
as independent.

Style features of one side's answers in one battle (Chatbot Arena's style control uses answer
length, list items and other markdown counts; Concord's features for recommenders):

- ``length``: mean words per answer, words as Concord's reference-free metrics count them
  (``\\w+`` runs, `evaluation.lib.metrics.reference_free.words`), over the side's answers that
  arrived (a failed answer shows no words);
- ``items``: distinct item ids among the first ITEMS_SHOWN (5, the item cards the battle page
  shows under an answer, iEvaLM's "first 5 items shown") of each answer's `ranked_item_ids`;
- ``citations``: distinct citation labels ([R1], …) per answer, found by Concord's citation
  parser (`evaluation.lib.metrics.quotes.extract_labels`), summed over the answers.

Pure code: no Django.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Hashable, Iterable, Sequence
from dataclasses import dataclass
from math import sqrt
from statistics import NormalDist

from evaluation.lib.metrics.quotes import extract_labels
from evaluation.lib.metrics.reference_free import words

ITEMS_SHOWN = 5
SATISFIED, FRUSTRATED = "satisfied", "frustrated"
RATE_METHOD = "Wilson score interval, 95%"


def wilson_interval(successes: int, n: int, confidence: float = 0.95
                    ) -> tuple[float | None, float | None]:
    """The Wilson score interval of SUCCESSES of N; (None, None) when N is 0."""
    if n <= 0:
        return None, None
    if not 0 <= successes <= n:
        raise ValueError(f"{successes} successes of {n}")
    z = NormalDist().inv_cdf(0.5 + confidence / 2)
    p = successes / n
    centre = p + z * z / (2 * n)
    half = z * sqrt(p * (1 - p) / n + z * z / (4 * n * n))
    scale = 1 + z * z / n
    return max(0.0, (centre - half) / scale), min(1.0, (centre + half) / scale)


@dataclass(frozen=True)
class Rate:
    successes: int
    n: int
    rate: float | None
    ci_low: float | None
    ci_high: float | None

    @classmethod
    def of(cls, successes: int, n: int) -> Rate:
        low, high = wilson_interval(successes, n)
        return cls(successes, n, successes / n if n else None, low, high)

    def as_dict(self) -> dict:
        return {"successes": self.successes, "n": self.n, "rate": self.rate,
                "ci_low": self.ci_low, "ci_high": self.ci_high}


@dataclass(frozen=True)
class SideSignal:
    """One side of one vote: its system, the person's verdict ("" when not given), and whether
    an item was accepted (None when acceptance was not asked: imported votes)."""

    system: Hashable
    satisfaction: str
    accepted: bool | None


def system_rates(sides: Iterable[SideSignal]) -> dict[Hashable, dict[str, Rate]]:
    """system -> {"satisfaction": Rate, "acceptance": Rate}."""
    counts: dict[Hashable, list[int]] = defaultdict(lambda: [0, 0, 0, 0])
    for side in sides:
        tally = counts[side.system]
        if side.satisfaction in (SATISFIED, FRUSTRATED):
            tally[0] += side.satisfaction == SATISFIED
            tally[1] += 1
        if side.accepted is not None:
            tally[2] += bool(side.accepted)
            tally[3] += 1
    return {system: {"satisfaction": Rate.of(t[0], t[1]), "acceptance": Rate.of(t[2], t[3])}
            for system, t in counts.items()}


@dataclass(frozen=True)
class Answer:
    """One answer a side gave (only answers that arrived)."""

    text: str
    ranked_item_ids: Sequence[str] = ()


def shown_items(ranked_item_ids: Sequence[str]) -> list[str]:
    """The item cards shown under an answer: its first ITEMS_SHOWN distinct ranked ids."""
    return list(dict.fromkeys(ranked_item_ids))[:ITEMS_SHOWN]


def side_style(answers: Sequence[Answer]) -> dict[str, float]:
    """{"length", "items", "citations"} of one side's answers in one battle (module doc); all
    0 when the side never answered."""
    if not answers:
        return {"length": 0.0, "items": 0.0, "citations": 0.0}
    items = {item for answer in answers for item in shown_items(answer.ranked_item_ids)}
    citations = sum(len({m.label for m in extract_labels(answer.text)}) for answer in answers)
    return {"length": sum(len(words(a.text)) for a in answers) / len(answers),
            "items": float(len(items)), "citations": float(citations)}


def words_in(text: str) -> int:
    return len(words(text))
