"""Fuzzy review-span grounding for Trace (§3, §6.2, Appendix J and Appendix L).

Per evaluated system turn:
- GS (Grounding Score): share of quotes whose best ``rapidfuzz.fuzz.partial_ratio`` against the
  review(s) they cite reaches the threshold (80 by default; 70/90/exact for sensitivity).
  A turn without quotes scores 1, vacuously.
- CD (Citation Density): word tokens inside *verbatim* quotes / word tokens of the response
  (Table 7: "verbatim citation tokens / total response tokens"; §3: "CD counts verbatim spans
  from cited reviews"). A paraphrase that passes GS's fuzzy match (partial ratio 90) adds
  nothing to CD, so it cannot open CGS's CD ≥ 0.05 gate. Fuzzy-matched CD is the sensitivity
  variant :func:`fuzzy_citation_density`.
- PC (Provenance Coverage): share of aspect terms mentioned in the response that have a citation
  label within ±80 characters of the mention's offset (Appendix J, Algorithm 1: a mention at
  offset i is covered when a label appears within [i − 80, i + 80]); 1 when no aspect is
  mentioned. The earlier reading (gap from the *end* of the term) is the variant ``pc_gap``.
- CGS (Composite Grounding Score): ``GS × [CD ≥ 0.05] × (0.5 + 0.5 × PC)``, which takes away the
  vacuous credit GS gives to citation-free responses.
Appendix L's alternative CGS formulas are in :func:`cgs_formula_variants`.

Matching is done on lightly normalised text (case-folded, typographic apostrophes and runs of
whitespace unified, surrounding punctuation of the quote dropped) so that a sentence-initial
capital or an American-style period inside the closing quote does not count as a misquote.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from rapidfuzz import fuzz

from evaluation.lib.metrics.quotes import LabelMention, Quote

EXACT = "exact"
Threshold = float | str  # a partial_ratio cut-off in [0, 100], or EXACT for substring match

DEFAULT_GS_THRESHOLD = 80.0
DEFAULT_CD_GATE = 0.05
DEFAULT_PC_FLOOR = 0.5
DEFAULT_PC_WINDOW = 80

# Unlabelled quotes: match against every review the turn cites ("any_cited") or fail them.
ANY_CITED = "any_cited"
FAIL = "fail"

# Aspect inventory: 41 terms in the four families of Trace Appendix J ("a hand-curated 41-term
# seed list": food/menu, ambience/style, logistics, value/price). The paper's own list is only in
# its released code (src/tqa/crs/metrics.py), which Concord does not have; these terms were
# curated for Concord from the paper's examples (seafood, vegan, breakfast; quiet, cozy, romantic;
# parking, wifi, outdoor seating; cheap, upscale, family-friendly) plus common Yelp attributes.
# A benchmark supplies its own list through the suite configuration (``aspect_inventory``).
# A term written with a hyphen or space also matches the other spelling and the closed-up form
# (wi-fi, wifi).
ASPECT_INVENTORY: dict[str, tuple[str, ...]] = {
    "food_menu": (
        "seafood",
        "vegan",
        "vegetarian",
        "gluten-free",
        "breakfast",
        "brunch",
        "dessert",
        "coffee",
        "cocktails",
        "wine",
        "steak",
    ),
    "ambience_style": (
        "quiet",
        "cozy",
        "romantic",
        "lively",
        "trendy",
        "casual",
        "elegant",
        "historic",
        "scenic",
        "rooftop",
    ),
    "logistics": (
        "parking",
        "wi-fi",
        "outdoor seating",
        "reservations",
        "takeout",
        "delivery",
        "wheelchair accessible",
        "pet-friendly",
        "late-night",
        "shuttle",
    ),
    "value_price": (
        "cheap",
        "affordable",
        "budget",
        "inexpensive",
        "pricey",
        "expensive",
        "upscale",
        "luxury",
        "family-friendly",
        "happy hour",
    ),
}

_TOKEN_RE = re.compile(r"\w+(?:['’]\w+)*")
_WORD_RE = re.compile(r"\w+")
_WORD_CHAR_RE = re.compile(r"\w")
_SPACES_RE = re.compile(r"\s+")
_APOSTROPHES = str.maketrans({"’": "'", "‘": "'", "`": "'"})
_EDGE_PUNCTUATION = " \t\n.,;:!?…-–—'\"“”‘’()"


# --- text helpers -----------------------------------------------------------------------------


def normalize_for_match(text: str) -> str:
    """Case-folded text with unified apostrophes and single spaces (used on both sides)."""
    return _SPACES_RE.sub(" ", text.translate(_APOSTROPHES).casefold()).strip()


def quote_core(text: str) -> str:
    """The normalised quote without surrounding punctuation (``"Great." `` → ``great``)."""
    return normalize_for_match(text).strip(_EDGE_PUNCTUATION)


def count_tokens(text: str) -> int:
    """Word tokens (letters/digits, with inner apostrophes) — the unit of CD."""
    return len(_TOKEN_RE.findall(text))


# --- quote matching ---------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class QuoteMatch:
    """How well one quote is supported by the reviews it cites.

    ``score`` is the best partial_ratio (0–100; scores below the run's lowest threshold may be
    reported as 0); ``verbatim`` is True when the quote occurs exactly (after normalisation).
    """

    quote: Quote
    score: float
    verbatim: bool
    tokens: int

    def passes(self, threshold: Threshold) -> bool:
        """Whether the quote counts as grounded at ``threshold`` (a number or EXACT)."""
        if threshold == EXACT:
            return self.verbatim
        return self.score >= float(threshold)


def best_match(core: str, sources: Iterable[str], score_cutoff: float = 0.0) -> tuple[float, bool]:
    """(best partial_ratio, verbatim?) of a normalised quote against normalised review texts."""
    best = 0.0
    for source in sources:
        if core in source:
            return 100.0, True
        score = fuzz.partial_ratio(core, source, score_cutoff=score_cutoff)
        best = max(best, score)
    return best, False


def match_quote(
    quote: Quote,
    sources_by_label: Mapping[str, Sequence[str]],
    unlabeled_policy: str = ANY_CITED,
    score_cutoff: float = 0.0,
) -> QuoteMatch:
    """Score one quote against the reviews it cites.

    ``sources_by_label`` maps each citation label of the turn to normalised review texts. A
    label without a mapping cites nothing, so it supports nothing; an unlabelled quote is matched
    against every cited review (or fails, with ``unlabeled_policy=FAIL``).
    """
    if quote.labels:
        sources = [text for label in quote.labels for text in sources_by_label.get(label, ())]
    elif unlabeled_policy == ANY_CITED:
        sources = [text for texts in sources_by_label.values() for text in texts]
    else:
        sources = []
    core = quote_core(quote.text)
    score, verbatim = best_match(core, sources, score_cutoff) if core else (0.0, False)
    return QuoteMatch(quote, score, verbatim, count_tokens(quote.text))


# --- GS, CD -----------------------------------------------------------------------------------


def grounding_score(
    matches: Sequence[QuoteMatch], threshold: Threshold = DEFAULT_GS_THRESHOLD
) -> float:
    """GS = grounded quotes / quotes; 1.0 for a turn without quotes (vacuous, see CGS)."""
    if not matches:
        return 1.0
    return sum(match.passes(threshold) for match in matches) / len(matches)


def grounding_score_zero_if_unquoted(
    matches: Sequence[QuoteMatch], threshold: Threshold = DEFAULT_GS_THRESHOLD
) -> float:
    """GS0 (Appendix L): GS, but 0 for a turn without quotes — the alternative CGS replaced."""
    return grounding_score(matches, threshold) if matches else 0.0


def citation_density(matches: Sequence[QuoteMatch], response_tokens: int) -> float:
    """CD = tokens inside quotes found verbatim in their cited review / all response tokens.

    Verbatim after the light normalisation of :func:`normalize_for_match` (case, apostrophes,
    whitespace, the quote's own edge punctuation); 0 for an empty response.
    """
    return fuzzy_citation_density(matches, response_tokens, EXACT)


def fuzzy_citation_density(
    matches: Sequence[QuoteMatch], response_tokens: int, threshold: Threshold = DEFAULT_GS_THRESHOLD
) -> float:
    """Sensitivity variant of CD: tokens inside quotes that pass GS's criterion at ``threshold``
    (a fuzzy partial ratio, or EXACT) / all response tokens (0 if empty)."""
    if response_tokens <= 0:
        return 0.0
    quoted = sum(match.tokens for match in matches if match.passes(threshold))
    return min(1.0, quoted / response_tokens)


# --- PC ---------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class AspectMention:
    """One occurrence of an inventory term in a response."""

    term: str
    family: str
    start: int
    end: int


class AspectMatcher:
    """Finds inventory terms: case-insensitive, whole-word, no stemming or synonyms.

    Trying one 41-way alternation at every character is slow, so the response's words are
    collected first and only terms whose first word occurs are searched for, as plain
    patterns over the lower-cased text (offsets are preserved).
    """

    def __init__(self, inventory: Mapping[str, Sequence[str]] = ASPECT_INVENTORY) -> None:
        self._by_first_word: dict[str, list[tuple[re.Pattern[str], str, str]]] = {}
        for family, terms in inventory.items():
            for term in terms:
                parts = re.split(r"[\s\-]+", term.strip().lower())
                joined = r"[\s\-]*".join(re.escape(part) for part in parts)
                # No leading \b: a literal first character lets the regex engine skip ahead
                # fast; the left word boundary is checked by hand in mentions().
                entry = (re.compile(rf"{joined}\b"), term, family)
                # "wi-fi" may be written "wifi": index the closed-up form as well.
                for key in dict.fromkeys((parts[0], "".join(parts))):
                    self._by_first_word.setdefault(key, []).append(entry)

    def mentions(self, text: str) -> list[AspectMention]:
        """Every inventory term occurrence in ``text``, in order; at one position the longest
        term wins and occurrences never overlap."""
        lowered = text.lower()
        if len(lowered) != len(text):  # rare characters whose lower case is longer: keep offsets
            lowered = "".join(char.lower()[0] for char in text)
        words = set(_WORD_RE.findall(lowered))
        entries = {
            entry[1]: entry
            for word in words.intersection(self._by_first_word)
            for entry in self._by_first_word[word]
        }
        candidates = sorted(
            (match.start(), -len(match.group()), match.end(), term, family)
            for pattern, term, family in entries.values()
            for match in pattern.finditer(lowered)
            if match.start() == 0 or not _WORD_CHAR_RE.match(lowered, match.start() - 1)
        )
        found: list[AspectMention] = []
        resume = 0
        for start, _, end, term, family in candidates:
            if start >= resume:
                found.append(AspectMention(term, family, start, end))
                resume = end
        return found


DEFAULT_ASPECT_MATCHER = AspectMatcher()


def _gap(start_a: int, end_a: int, start_b: int, end_b: int) -> int:
    """Characters between two spans (0 when they touch or overlap)."""
    return max(0, start_b - end_a, start_a - end_b)


def label_in_window(mention: AspectMention, label: LabelMention, window: int) -> bool:
    """Appendix J: the ``[Rn]`` label appears within [i − window, i + window], i = the mention's
    character offset (its start). The whole bracket must lie inside: its first character at or
    after i − window, its last character (offset end − 1) at or before i + window."""
    return label.start >= mention.start - window and label.end - 1 <= mention.start + window


def provenance_coverage(
    mentions: Sequence[AspectMention],
    labels: Sequence[LabelMention],
    window: int = DEFAULT_PC_WINDOW,
    *,
    measure: str = "offset",
) -> float:
    """PC = covered aspect terms / mentioned aspect terms; 1.0 when no aspect is mentioned.

    Repeated mentions of one term count once, covered if any of them has a citation label in its
    window. ``measure="offset"`` is the paper's ±``window`` characters around the mention's
    offset (:func:`label_in_window`); ``measure="gap"`` is the sensitivity variant that measures
    the gap between the whole term and the bracket (from the term's end when the label follows).
    Pass only labels that map to a review, so an invented ``[R9]`` gives no provenance.
    """
    if measure not in ("offset", "gap"):
        raise ValueError(f"unknown PC window measure {measure!r}")
    covered: dict[str, bool] = {}
    for mention in mentions:
        if covered.get(mention.term):
            continue
        covered[mention.term] = any(
            label_in_window(mention, label, window)
            if measure == "offset"
            else _gap(mention.start, mention.end, label.start, label.end) <= window
            for label in labels
        )
    if not covered:
        return 1.0
    return sum(covered.values()) / len(covered)


# --- CGS --------------------------------------------------------------------------------------


def composite_grounding_score(
    gs: float,
    cd: float,
    pc: float,
    cd_gate: float = DEFAULT_CD_GATE,
    pc_floor: float = DEFAULT_PC_FLOOR,
) -> float:
    """CGS = GS × [CD ≥ cd_gate] × (pc_floor + (1 − pc_floor) × PC); defaults 0.05 and 0.5."""
    if cd < cd_gate:
        return 0.0
    return gs * (pc_floor + (1.0 - pc_floor) * pc)


def cgs_formula_variants(gs: float, cd: float, pc: float) -> dict[str, float]:
    """Appendix L's alternative CGS formulas, to check that rankings do not hinge on the form.

    Gate variants move the CD threshold; ``no_pc_floor`` and ``sqrt_pc`` change the PC weight;
    ``geometric``, ``harmonic`` and ``additive`` aggregate raw (GS, CD, PC) by cube-root product,
    harmonic mean (0 if any component is 0) and arithmetic mean.
    """
    gate = 1.0 if cd >= DEFAULT_CD_GATE else 0.0
    components = (gs, cd, pc)
    harmonic = 0.0 if min(components) <= 0 else 3.0 / sum(1.0 / value for value in components)
    return {
        "cgs_cd_gate_0.03": composite_grounding_score(gs, cd, pc, cd_gate=0.03),
        "cgs_cd_gate_0.10": composite_grounding_score(gs, cd, pc, cd_gate=0.10),
        "cgs_no_pc_floor": gs * gate * pc,
        "cgs_sqrt_pc": gs * gate * math.sqrt(pc),
        "cgs_geometric": (gs * cd * pc) ** (1.0 / 3.0),
        "cgs_harmonic": harmonic,
        "cgs_additive": (gs + cd + pc) / 3.0,
    }
