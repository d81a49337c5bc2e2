"""The annotation task forms and their server-side validation (annotation.md §The item page).

Forms follow the human protocols of the seeds:
- Trace (Appendix K.1, Task 1): citation check per extracted quote (Supported / Partial /
  Not supported, Partial when unsure), the error checklist with the exclusive "No errors", and
  Likert scales (informativeness and naturalness 1-5 with anchors at 1, 3 and 5).
- Trace Task 2: blind recommendation (pick 1-3 candidate items, verbatim review quotes, a sentence).
- CoRE (§4.1 and the human study): the twelve factors 0-4 and an overall 0-100 score.
- FACE (§3.1; scales as released in CRSArena-Eval, metrics.md §C): turn-level relevance
  and interestingness per system turn, five dialogue-level aspects.
- Arena-style pairwise preference between two blinded responses.

Pure Python: values arrive as a mapping of form field names to lists of strings (a QueryDict or
a plain dict) and leave as a JSON-ready dict. `flatten` turns that dict into (field, value) pairs,
the unit of the long-format export, gold scoring and tie detection.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from evaluation.lib.llm.core_rubrics import FACTOR_GUIDELINES, FactorGuideline

CITATION = "citation"
CHECKLIST = "checklist"
LIKERT = "likert"
CORE = "core"
FACE = "face"
RECOMMEND = "recommend"
PAIRWISE = "pairwise"
ALL_FORMS = (CITATION, CHECKLIST, LIKERT, CORE, FACE, RECOMMEND, PAIRWISE)
FORM_LABELS = {
    CITATION: "Citation check (per quote)",
    CHECKLIST: "Error checklist",
    LIKERT: "Likert scales",
    CORE: "CoRE: 12 factors + overall",
    FACE: "FACE: turn and dialogue aspects",
    RECOMMEND: "Blind recommendation",
    PAIRWISE: "Pairwise preference",
}

# Which forms apply to which kind of item (StudyItem.Mode).
MODE_FORMS = {
    "response": (CITATION, CHECKLIST, LIKERT),
    "conversation": (CORE, FACE),
    "recommend": (RECOMMEND,),
    "pairwise": (PAIRWISE,),
}


@dataclass(frozen=True)
class Choice:
    value: str
    label: str
    key: str  # keyboard shortcut
    help: str = ""


CITATION_VERDICTS = (
    Choice("supported", "Supported", "1",
           "The quote appears (exactly or nearly) in the referenced reviews and supports the "
           "claim it is used for."),
    Choice("partial", "Partial", "2",
           "The text is in a review but taken out of context, or supports only part of the "
           "claim."),
    Choice("not_supported", "Not supported", "3",
           "The quote cannot be found in any referenced review, or is made up."),
)
# Trace Task 1's tip "If unsure ... default to Partial" is advice to the annotator, shown as
# such; no verdict is preselected, since a preselected Partial made a skipped quote
# indistinguishable from a judged one.
CITATION_UNSURE_HINT = "Unsure? Choose Partial."
VERDICT_VALUES = tuple(c.value for c in CITATION_VERDICTS)

NO_ERRORS = "no_errors"
ERROR_CATEGORIES = (
    Choice(NO_ERRORS, "No errors", "n", "The response is fine. Select only if nothing below "
           "applies."),
    Choice("fabricated_claim", "Fabricated claim", "f",
           "A claim found in no review (e.g. a Michelin star no review mentions)."),
    Choice("wrong_item", "Wrong item", "w",
           "Recommends or attributes information to the wrong place (quotes reviews of "
           "another item)."),
    Choice("irrelevant_citation", "Irrelevant citation", "i",
           "The quote exists but does not support the claim it is attached to."),
    Choice("too_vague", "Too vague", "v", "No specifics (\u201ca great restaurant\u201d and "
           "nothing else)."),
    Choice("missing_citation", "Missing citation", "m",
           "Specific claims made without any review quoted for them."),
    Choice("exaggeration", "Exaggeration", "x",
           "Sentiment amplified beyond the source (\u201cdecent\u201d becomes "
           "\u201cextraordinary\u201d)."),
    Choice("factual_error", "Factual error", "e", "Wrong facts: price, location, hours, ..."),
)
ERROR_VALUES = tuple(c.value for c in ERROR_CATEGORIES)

DEFAULT_LIKERT_SCALES = (
    {"key": "informativeness", "label": "Informativeness", "min": 1, "max": 5,
     "question": "Is the response useful, specific and actionable?",
     "anchors": {"1": "generic, no useful details", "3": "some useful information but "
                 "incomplete", "5": "specific, actionable, helps the user decide"}},
    {"key": "naturalness", "label": "Naturalness", "min": 1, "max": 5,
     "question": "Does it read like a good conversation?",
     "anchors": {"1": "robotic, awkward or template-like", "3": "readable but clearly "
                 "machine-written", "5": "fluent, sounds like a knowledgeable travel agent"}},
)

CORE_MIN, CORE_MAX = 0, 4
CORE_OVERALL_MIN, CORE_OVERALL_MAX = 0, 100
CORE_FACTORS: tuple[FactorGuideline, ...] = FACTOR_GUIDELINES
CORE_OVERALL_QUESTION = "How likely would you be to use this system? (0 = never, 100 = always)"


@dataclass(frozen=True)
class Aspect:
    key: str
    label: str
    low: int
    high: int
    question: str


# FACE aspects, scales as in the released CRSArena-Eval labels (metrics.md §C).
FACE_TURN_ASPECTS = (
    Aspect("relevance", "Relevance", 0, 2,
           "Does the response make sense and meet the user's interests?"),
    Aspect("interestingness", "Interestingness", 0, 2,
           "Does the response make the user want to continue the conversation?"),
)
FACE_DIALOGUE_ASPECTS = (
    Aspect("understanding", "Understanding", 0, 2,
           "Does the assistant understand the user's request and try to fulfil it?"),
    Aspect("task_completion", "Task completion", 0, 2,
           "Does the assistant make recommendations that the user finally accepts?"),
    Aspect("efficiency", "Efficiency", 0, 1,
           "Does the assistant suggest items matching the user's interests within the first "
           "three interactions?"),
    Aspect("interest_arousal", "Interest arousal", 0, 2,
           "Does the assistant try to spark the user's interest in something new?"),
    Aspect("overall", "Overall impression", 0, 4,
           "What is your overall impression of the assistant's performance?"),
)

PAIRWISE_CHOICES = ("a", "b", "tie")  # a = the item's first response, b = its second
RECOMMEND_MIN_ITEMS, RECOMMEND_MAX_ITEMS = 1, 3
MAX_TEXT = 5000

# Fields whose disagreement can trigger an extra assignment (annotation.md §Assignment).
CATEGORICAL_PREFIXES = ("citation.", "pairwise.choice")


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


# --- validation of the configurable Likert scales ------------------------------------------

def validate_likert_scales(scales) -> list[str]:
    """Errors in an author's Likert configuration (an empty list means it is usable)."""
    if not isinstance(scales, list) or not scales:
        return ["Give at least one Likert scale (a JSON list)."]
    errors, seen = [], set()
    for n, scale in enumerate(scales, 1):
        if not isinstance(scale, dict):
            errors.append(f"Scale {n} is not an object.")
            continue
        key = scale.get("key")
        low, high = scale.get("min"), scale.get("max")
        if not isinstance(key, str) or not key.replace("_", "").isalnum() or len(key) > 40:
            errors.append(f"Scale {n}: key must be letters, digits or _ (at most 40).")
        elif key in seen:
            errors.append(f"Scale {n}: key {key!r} appears twice.")
        seen.add(key)
        if not (isinstance(low, int) and isinstance(high, int) and 0 <= low < high <= 10):
            errors.append(f"Scale {n}: min and max must be integers with 0 <= min < max <= 10.")
        if not isinstance(scale.get("label", ""), str):
            errors.append(f"Scale {n}: label must be text.")
        anchors = scale.get("anchors", {})
        if not isinstance(anchors, dict) or not all(
            isinstance(v, str) and str(k).lstrip("-").isdigit() for k, v in anchors.items()
        ):
            errors.append(f"Scale {n}: anchors must map scale values to text.")
    return errors


# --- parsing a POSTed form ------------------------------------------------------------------

def _one(data: Mapping, name: str) -> str | None:
    raw = data.get(name)
    if isinstance(raw, list | tuple):
        raw = raw[-1] if raw else None
    if raw is None:
        return None
    raw = str(raw).strip()
    return raw or None


def _many(data: Mapping, name: str) -> list[str]:
    getlist = getattr(data, "getlist", None)
    raw = getlist(name) if getlist else data.get(name, [])
    if isinstance(raw, str):
        raw = [raw]
    return [str(v).strip() for v in raw if str(v).strip()]


def _int_in(raw: str | None, low: int, high: int) -> int | None:
    if raw is None:
        return None
    try:
        value = int(raw)
    except ValueError:
        return None
    return value if low <= value <= high else None


def parse_post(data: Mapping, layout: Layout, *, partial: bool) -> Parsed:
    """Read the item form into a values dict; with partial=False everything must be answered.

    Invalid entries are dropped (and reported); a draft (partial=True) keeps whatever is valid.
    """
    parsed = Parsed(values={})
    for form in layout.forms:
        _PARSERS[form](data, layout, parsed)
    comment = (_one(data, "comment") or "")[:MAX_TEXT]
    if comment:
        parsed.values["comment"] = comment
    if _one(data, "flag"):
        parsed.values["flag"] = True
        reason = (_one(data, "flag_reason") or "")[:MAX_TEXT]
        if reason:
            parsed.values["flag_reason"] = reason
    if not partial:
        parsed.errors.extend(missing_answers(parsed.values, layout))
    return parsed


def _parse_citation(data, layout, parsed):
    verdicts = {}
    for i in range(layout.quote_count):
        raw = _one(data, f"citation-{i}")
        if raw in VERDICT_VALUES:
            verdicts[str(i)] = raw
        elif raw is not None:
            parsed.errors.append(f"Quote {i + 1}: unknown verdict {raw!r}.")
    if verdicts:
        parsed.values["citations"] = verdicts


def _parse_checklist(data, layout, parsed):
    chosen = _many(data, "error")
    unknown = [v for v in chosen if v not in ERROR_VALUES]
    if unknown:
        parsed.errors.append(f"Unknown error categories: {', '.join(unknown)}.")
    chosen = [v for v in ERROR_VALUES if v in chosen]  # canonical order, no duplicates
    if NO_ERRORS in chosen and len(chosen) > 1:
        parsed.errors.append("\u201cNo errors\u201d cannot be combined with an error category.")
        return
    if chosen:
        parsed.values["errors"] = chosen


def _parse_likert(data, layout, parsed):
    ratings = {}
    for scale in layout.likert_scales:
        raw = _one(data, f"likert-{scale['key']}")
        value = _int_in(raw, scale["min"], scale["max"])
        if value is not None:
            ratings[scale["key"]] = value
        elif raw is not None:
            parsed.errors.append(f"{scale.get('label', scale['key'])}: {raw!r} is outside "
                                 f"{scale['min']}\u2013{scale['max']}.")
    if ratings:
        parsed.values["likert"] = ratings


def _parse_core(data, layout, parsed):
    ratings = {}
    for factor in CORE_FACTORS:
        raw = _one(data, f"core-{factor.key}")
        value = _int_in(raw, CORE_MIN, CORE_MAX)
        if value is not None:
            ratings[factor.key] = value
        elif raw is not None:
            parsed.errors.append(f"{factor.name}: {raw!r} is outside 0\u20134.")
    raw = _one(data, "core-overall")
    overall = _int_in(raw, CORE_OVERALL_MIN, CORE_OVERALL_MAX)
    if overall is not None:
        ratings["overall"] = overall
    elif raw is not None:
        parsed.errors.append(f"Overall: {raw!r} is outside 0\u2013100.")
    if ratings:
        parsed.values["core"] = ratings


def _parse_face(data, layout, parsed):
    face: dict = {}
    turns = {}
    for index in layout.rated_turns:
        per_turn = {}
        for aspect in FACE_TURN_ASPECTS:
            raw = _one(data, f"face-turn-{index}-{aspect.key}")
            value = _int_in(raw, aspect.low, aspect.high)
            if value is not None:
                per_turn[aspect.key] = value
            elif raw is not None:
                parsed.errors.append(f"Turn {index} {aspect.label}: {raw!r} is out of range.")
        if per_turn:
            turns[str(index)] = per_turn
    if turns:
        face["turns"] = turns
    for aspect in FACE_DIALOGUE_ASPECTS:
        raw = _one(data, f"face-{aspect.key}")
        value = _int_in(raw, aspect.low, aspect.high)
        if value is not None:
            face[aspect.key] = value
        elif raw is not None:
            parsed.errors.append(f"{aspect.label}: {raw!r} is out of range.")
    if face:
        parsed.values["face"] = face


def _parse_recommend(data, layout, parsed):
    rec: dict = {}
    items = [v for v in _many(data, "rec-item") if v in layout.candidate_ids]
    items = list(dict.fromkeys(items))
    if len(items) > RECOMMEND_MAX_ITEMS:
        parsed.errors.append(f"Pick at most {RECOMMEND_MAX_ITEMS} items.")
        items = items[:RECOMMEND_MAX_ITEMS]
    if items:
        rec["items"] = items
    quotes = []
    raw_quotes = _one(data, "rec-quotes")
    try:
        candidates = json.loads(raw_quotes) if raw_quotes else []
    except ValueError:
        candidates = None
    if not isinstance(candidates, list):
        parsed.errors.append("The captured quotes could not be read.")
        candidates = []
    for quote in candidates[:20]:
        clean = _clean_quote(quote, layout)
        if clean is None:
            parsed.errors.append("A captured quote does not match its review; add it again.")
        else:
            quotes.append(clean)
    if quotes:
        rec["quotes"] = quotes
    text = (_one(data, "rec-text") or "")[:MAX_TEXT]
    if text:
        rec["text"] = text
    if rec:
        parsed.values["recommend"] = rec


def _clean_quote(quote, layout) -> dict | None:
    if not isinstance(quote, dict):
        return None
    try:
        item_id, review_id = str(quote["item_id"]), str(quote["review_id"])
        start, end, text = int(quote["start"]), int(quote["end"]), str(quote["text"])
    except (KeyError, TypeError, ValueError):
        return None
    if item_id not in layout.candidate_ids or not 0 <= start < end or end - start > 2000:
        return None
    checker = layout.quote_checker
    if checker is not None and not checker(review_id, start, end, text, item_id):
        return None
    return {"item_id": item_id, "review_id": review_id, "start": start, "end": end,
            "text": text}


def _parse_pairwise(data, layout, parsed):
    pair = {}
    raw = _one(data, "pair-choice")  # the page posts left / right / tie
    choice = pairwise_from_display(raw, layout.swapped)
    if choice in PAIRWISE_CHOICES:
        pair["choice"] = choice
    elif raw is not None:
        parsed.errors.append(f"Unknown preference {raw!r}.")
    reason = (_one(data, "pair-reason") or "")[:MAX_TEXT]
    if reason:
        pair["reason"] = reason
    if pair:
        parsed.values["pairwise"] = pair


_PARSERS = {
    CITATION: _parse_citation,
    CHECKLIST: _parse_checklist,
    LIKERT: _parse_likert,
    CORE: _parse_core,
    FACE: _parse_face,
    RECOMMEND: _parse_recommend,
    PAIRWISE: _parse_pairwise,
}


def missing_answers(values: dict, layout: Layout) -> list[str]:
    """What a complete submission still lacks (a flagged item may be submitted as it is)."""
    if values.get("flag"):
        return []
    missing = []
    forms = set(layout.forms)
    if CITATION in forms:
        judged = values.get("citations", {})
        unjudged = [i + 1 for i in range(layout.quote_count) if str(i) not in judged]
        if unjudged:
            quotes = ", ".join(map(str, unjudged))
            missing.append(f"Citation check: choose a verdict for quote"
                           f"{'s' if len(unjudged) > 1 else ''} {quotes}.")
    if CHECKLIST in forms and not values.get("errors"):
        missing.append("Tick at least one entry of the error checklist (or \u201cNo errors\u201d).")
    if LIKERT in forms:
        rated = values.get("likert", {})
        for scale in layout.likert_scales:
            if scale["key"] not in rated:
                missing.append(f"Rate {scale.get('label', scale['key'])}.")
    if CORE in forms:
        rated = values.get("core", {})
        missing += [f"Rate {f.name}." for f in CORE_FACTORS if f.key not in rated]
        if "overall" not in rated:
            missing.append("Give the overall score (0\u2013100).")
    if FACE in forms:
        face = values.get("face", {})
        for index in layout.rated_turns:
            turn = face.get("turns", {}).get(str(index), {})
            missing += [f"Rate {a.label.lower()} of system turn {index}."
                        for a in FACE_TURN_ASPECTS if a.key not in turn]
        missing += [f"Rate {a.label.lower()}." for a in FACE_DIALOGUE_ASPECTS if a.key not in face]
    if RECOMMEND in forms:
        rec = values.get("recommend", {})
        if not RECOMMEND_MIN_ITEMS <= len(rec.get("items", [])) <= RECOMMEND_MAX_ITEMS:
            missing.append(f"Pick {RECOMMEND_MIN_ITEMS}\u2013{RECOMMEND_MAX_ITEMS} items.")
        if not rec.get("text"):
            missing.append("Write your recommendation.")
    if PAIRWISE in forms and not values.get("pairwise", {}).get("choice"):
        missing.append("Say which response is better (or tie).")
    return missing


def checklist_is_consistent(chosen: Sequence[str]) -> bool:
    """"No errors" is exclusive: alone, or absent."""
    return NO_ERRORS not in chosen or len(set(chosen)) == 1


# --- flattening, gold scoring, ties ---------------------------------------------------------

def flatten(values: dict, layout: Layout | None = None) -> list[tuple[str, object]]:
    """(field, value) pairs in a stable order: the rows of the long-format export."""
    rows: list[tuple[str, object]] = []
    for index, verdict in sorted(values.get("citations", {}).items(), key=lambda kv: int(kv[0])):
        rows.append((f"citation.{index}", verdict))
    if "errors" in values:
        chosen = set(values["errors"])
        rows += [(f"error.{c}", int(c in chosen)) for c in ERROR_VALUES]
    for key, value in values.get("likert", {}).items():
        rows.append((f"likert.{key}", value))
    core = values.get("core", {})
    rows += [(f"core.{f.key}", core[f.key]) for f in CORE_FACTORS if f.key in core]
    if "overall" in core:
        rows.append(("core.overall", core["overall"]))
    face = values.get("face", {})
    for index, turn in sorted(face.get("turns", {}).items(), key=lambda kv: int(kv[0])):
        rows += [(f"face.turn.{index}.{a.key}", turn[a.key])
                 for a in FACE_TURN_ASPECTS if a.key in turn]
    rows += [(f"face.{a.key}", face[a.key]) for a in FACE_DIALOGUE_ASPECTS if a.key in face]
    rec = values.get("recommend", {})
    if rec.get("items"):
        rows.append(("recommend.items", "|".join(rec["items"])))
    for n, quote in enumerate(rec.get("quotes", [])):
        rows.append((f"recommend.quote.{n}", quote["text"]))
    if rec.get("text"):
        rows.append(("recommend.text", rec["text"]))
    pair = values.get("pairwise", {})
    if "choice" in pair:
        rows.append(("pairwise.choice", pair["choice"]))
    if pair.get("reason"):
        rows.append(("pairwise.reason", pair["reason"]))
    if values.get("comment"):
        rows.append(("comment", values["comment"]))
    if values.get("flag"):
        rows.append(("flag", 1))
        if values.get("flag_reason"):
            rows.append(("flag_reason", values["flag_reason"]))
    return rows


def gold_score(expected: dict, values: dict) -> tuple[int, int]:
    """(matched, checked) of an annotation against a gold item's expected answers.

    `expected` maps flattened field names to a value; for `recommend.items` it is the list of
    acceptable items, and picking any one of them counts as a match.
    """
    given = dict(flatten(values))
    matched = 0
    for name, want in expected.items():
        if name == "recommend.items":
            picked = set(str(given.get(name, "")).split("|")) - {""}
            matched += bool(picked & set(want))
        else:
            matched += given.get(name) == want
    return matched, len(expected)


def categorical_tie(annotations: Sequence[dict]) -> bool:
    """True when some categorical field has no strict majority among the given annotations."""
    by_field: dict[str, list] = {}
    for values in annotations:
        for name, value in flatten(values):
            if name.startswith(CATEGORICAL_PREFIXES):
                by_field.setdefault(name, []).append(value)
    for labels in by_field.values():
        if len(labels) < 2:
            continue
        top = Counter(labels).most_common(1)[0][1]
        if 2 * top <= len(labels):
            return True
    return False


def pairwise_to_display(choice: str | None, swapped: bool) -> str | None:
    """Stored a/b (item order) -> shown left/right (the annotator's randomized order)."""
    if choice in (None, "tie"):
        return choice
    left_is_a = not swapped
    return "left" if (choice == "a") == left_is_a else "right"


def pairwise_from_display(side: str | None, swapped: bool) -> str | None:
    if side in (None, "", "tie"):
        return side or None
    if side not in ("left", "right"):
        return "invalid"
    left_is_a = not swapped
    return "a" if (side == "left") == left_is_a else "b"
