"""The built-in annotation task forms, registered in `form_registry` (annotation.md §The item
page), and their own rules (the exclusive "No errors", gold answers, pairwise sides); the
functions that walk every registered form are in `form_registry`, importable from here.

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
from collections.abc import Sequence
from dataclasses import dataclass

from annotation.lib.form_registry import (
    MAX_TEXT,
    MODE_HEADINGS,
    REFERENCE,
    Choice,
    FieldSpec,
    KnownAnswers,
    Layout,
    Parsed,
    Point,
    ReportPart,
    ScaleRow,
    TaskForm,
    categorical_tie,
    enabled,
    export_detail,
    field_label,
    flatten,
    form_labels,
    get,
    in_panel_order,
    instructions,
    int_in,
    keys,
    keys_for_mode,
    many,
    missing_answers,
    one,
    parse_post,
    register,
    registered,
    report_fields,
    report_parts,
    scale_row,
)
from evaluation.lib.llm.core_rubrics import FACTOR_GUIDELINES, FactorGuideline
from evaluation.lib.metrics.quotes import extract_quotes

# What callers use of the registry, through this module (importing it registers the built-ins).
__all__ = ["Choice", "Layout", "MAX_TEXT", "MODE_HEADINGS", "Parsed", "Point", "ScaleRow",
           "categorical_tie", "enabled", "export_detail", "field_label", "flatten", "form_labels",
           "get", "in_panel_order", "instructions", "keys", "keys_for_mode", "missing_answers",
           "parse_post", "registered", "report_fields", "report_parts"]

CITATION = "citation"
CHECKLIST = "checklist"
LIKERT = "likert"
CORE = "core"
FACE = "face"
RECOMMEND = "recommend"
PAIRWISE = "pairwise"

# The label-table fields whose names the reports look for (annotation/lib/reports.py).
CITATION_FIELD = "citation"
CHECKLIST_SET_FIELD = "errors"
RECOMMEND_FIELD = "recommend.items"
PAIRWISE_FIELD = "pairwise.choice"

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

# What a corrupted practice or gold response says instead of its first quote (citation check).
FABRICATED_CLAIMS = (
    "they even have a Michelin star and a rooftop pool",
    "every guest gets free champagne at the door",
    "the staff speak twelve languages fluently",
    "open all night with live jazz every hour",
    "the best view in the whole state, hands down",
)

PAIRWISE_CHOICES = ("a", "b", "tie")  # a = the item's first response, b = its second
RECOMMEND_MIN_ITEMS, RECOMMEND_MAX_ITEMS = 1, 3

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



# --- the built-in forms -----------------------------------------------------------------------


class CitationForm(TaskForm):
    key, label, mode = CITATION, "Citation check (per quote)", "response"
    template = "annotation/_form_citation.html"  # its rows come with the response's quotes
    report_fields = "citation verdicts (Supported / Partial / Not supported) per quote"
    categorical = ("citation.",)
    offers_known_answers = True
    instructions = (
        "- **Citation check.** Every quoted phrase is listed. Open the referenced "
        "reviews and look for it. *Supported*: the text (or a very close match) is there "
        "and backs the claim. *Partial*: it is there but out of context or backs only part "
        "of the claim. *Not supported*: you cannot find it. When unsure, choose "
        "*Partial*.\n")

    def parse(self, data, layout, parsed):
        verdicts = {}
        for i in range(layout.quote_count):
            raw = one(data, f"citation-{i}")
            if raw in VERDICT_VALUES:
                verdicts[str(i)] = raw
            elif raw is not None:
                parsed.errors.append(f"Quote {i + 1}: unknown verdict {raw!r}.")
        if verdicts:
            parsed.values["citations"] = verdicts

    def missing(self, values, layout):
        judged = values.get("citations", {})
        unjudged = [i + 1 for i in range(layout.quote_count) if str(i) not in judged]
        if not unjudged:
            return []
        quotes = ", ".join(map(str, unjudged))
        return [f"Citation check: choose a verdict for quote"
                f"{'s' if len(unjudged) > 1 else ''} {quotes}."]

    def _verdicts(self, values):
        return sorted(values.get("citations", {}).items(), key=lambda kv: int(kv[0]))

    def flatten(self, values):
        return [(f"citation.{index}", verdict) for index, verdict in self._verdicts(values)]

    def export_detail(self, name, values, quotes):
        if not name.startswith("citation."):
            return None
        index, found = int(name.split(".")[1]), quotes()
        return found[index].text if index < len(found) else ""

    def field_label(self, name):
        kind, _, rest = name.partition(".")
        return f"Quote {int(rest) + 1}" if kind == "citation" and rest.isdigit() else None

    def fields(self, layout):
        return [FieldSpec(CITATION_FIELD, "quote", "nominal", label="Citation verdict",
                          description="Supported / Partial / Not supported, per quote",
                          group=CITATION)]

    def label_rows(self, values, item, annotator):
        return [item.row(annotator, "quote", f"{item.turn_unit}#q{index}", CITATION_FIELD,
                         verdict) for index, verdict in self._verdicts(values)]

    def known_answers(self, facts, *, corrupt, rng):
        """The reference response as it is (every quote Supported) or with its first quote
        replaced by a fabricated claim (that quote Not supported)."""
        text, quotes = facts.text, extract_quotes(facts.text)
        expected = {f"citation.{i}": "supported" for i in range(len(quotes))}
        how = "reference response, unchanged"
        if corrupt and quotes:
            claim = rng.choice(FABRICATED_CLAIMS)
            first = quotes[0]
            text = text[:first.start] + claim + text[first.end:]
            expected["citation.0"] = "not_supported"
            how = f"reference response with quote 1 replaced by a fabricated claim: {claim!r}"
        return KnownAnswers(expected, text, how)

    def report_parts(self):
        return (ReportPart("Citation precision",
                           "the share of quotes judged Supported (and Partial)",
                           "one citation verdict on a response that quotes a review"),)


class ChecklistForm(TaskForm):
    key, label, mode = CHECKLIST, "Error checklist", "response"
    template = "annotation/_form_checklist.html"
    report_fields = "the error checklist (which errors each response makes)"
    shortcuts = (("letters", "toggle checklist entries (shown beside each)"),)
    instructions = (
        "- **Error checklist.** Tick every problem you see. *No errors* means the "
        "response is fine and cannot be combined with anything else.\n")

    def parse(self, data, layout, parsed):
        chosen = many(data, "error")
        unknown = [v for v in chosen if v not in ERROR_VALUES]
        if unknown:
            parsed.errors.append(f"Unknown error categories: {', '.join(unknown)}.")
        chosen = [v for v in ERROR_VALUES if v in chosen]  # canonical order, no duplicates
        if NO_ERRORS in chosen and len(chosen) > 1:
            parsed.errors.append("\u201cNo errors\u201d cannot be combined with an error "
                                 "category.")
            return
        if chosen:
            parsed.values["errors"] = chosen

    def missing(self, values, layout):
        if values.get("errors"):
            return []
        return ["Tick at least one entry of the error checklist (or \u201cNo errors\u201d)."]

    def flatten(self, values):
        if "errors" not in values:
            return []
        chosen = set(values["errors"])
        return [(f"error.{c}", int(c in chosen)) for c in ERROR_VALUES]

    def field_label(self, name):
        kind, _, rest = name.partition(".")
        return f"Error: {rest.replace('_', ' ')}" if kind == "error" else None

    def fields(self, layout):
        specs = [FieldSpec(f"error.{choice.value}", "turn", "nominal", 0, 1,
                           label=f"Error: {choice.label.lower()}",
                           description="ticked (1) or not (0)", group=CHECKLIST)
                 for choice in ERROR_CATEGORIES if choice.value != NO_ERRORS]
        specs.append(FieldSpec(CHECKLIST_SET_FIELD, "turn", "set", label="Error checklist (set)",
                               description="the ticked categories as one set (No errors = "
                               "the empty set)", group=CHECKLIST))
        return specs

    def label_rows(self, values, item, annotator):
        if "errors" not in values:
            return []
        chosen = set(values["errors"]) - {NO_ERRORS}
        rows = [item.row(annotator, "turn", item.turn_unit, f"error.{choice}",
                         int(choice in chosen))
                for choice in ERROR_VALUES if choice != NO_ERRORS]
        rows.append(item.row(annotator, "turn", item.turn_unit, CHECKLIST_SET_FIELD,
                             frozenset(chosen)))
        return rows

    def panel_context(self, values, layout):
        chosen = set(values.get("errors", []))
        return {"checklist": [(c, c.value in chosen) for c in ERROR_CATEGORIES]}


class LikertForm(TaskForm):
    """The author's Likert scales (Study.likert_scales, checked by validate_likert_scales)."""

    key, label, mode = LIKERT, "Likert scales", "response"
    template = "annotation/_form_likert.html"
    report_fields = "the Likert scales"
    instructions = ("- **Ratings.** Use the whole scale; rate each aspect on its own "
                    "(a fluent answer can still cite badly).\n")

    def parse(self, data, layout, parsed):
        ratings = {}
        for scale in layout.likert_scales:
            raw = one(data, f"likert-{scale['key']}")
            value = int_in(raw, scale["min"], scale["max"])
            if value is not None:
                ratings[scale["key"]] = value
            elif raw is not None:
                parsed.errors.append(f"{scale.get('label', scale['key'])}: {raw!r} is outside "
                                     f"{scale['min']}\u2013{scale['max']}.")
        if ratings:
            parsed.values["likert"] = ratings

    def missing(self, values, layout):
        rated = values.get("likert", {})
        return [f"Rate {scale.get('label', scale['key'])}." for scale in layout.likert_scales
                if scale["key"] not in rated]

    def flatten(self, values):
        return [(f"likert.{key}", value) for key, value in values.get("likert", {}).items()]

    def fields(self, layout):
        return [FieldSpec(f"likert.{scale['key']}", "turn", "ordinal", scale["min"],
                          scale["max"], label=scale.get("label", scale["key"]),
                          description=scale.get("question", ""), group=LIKERT)
                for scale in layout.likert_scales]

    def label_rows(self, values, item, annotator):
        return [item.row(annotator, "turn", item.turn_unit, f"likert.{key}", value)
                for key, value in values.get("likert", {}).items()]

    def panel_context(self, values, layout):
        likert = values.get("likert", {})
        return {"rows": [scale_row(f"likert-{s['key']}", s.get("label", s["key"]), s["min"],
                                   s["max"], likert.get(s["key"]),
                                   question=s.get("question", ""),
                                   anchors={str(k): v for k, v in s.get("anchors", {}).items()})
                         for s in layout.likert_scales]}


class CoreForm(TaskForm):
    key, label, mode = CORE, "CoRE: 12 factors + overall", "conversation"
    template = "annotation/_form_core.html"
    report_fields = "CoRE's twelve factors and the overall score"
    panel_order = 1  # below FACE's dialogue aspects
    instructions = ("- Score the twelve factors from 0 to 4 (open a factor to read its "
                    "definition) and say how likely you would be to use the system "
                    "(0–100).\n")

    def parse(self, data, layout, parsed):
        ratings = {}
        for factor in CORE_FACTORS:
            raw = one(data, f"core-{factor.key}")
            value = int_in(raw, CORE_MIN, CORE_MAX)
            if value is not None:
                ratings[factor.key] = value
            elif raw is not None:
                parsed.errors.append(f"{factor.name}: {raw!r} is outside 0\u20134.")
        raw = one(data, "core-overall")
        overall = int_in(raw, CORE_OVERALL_MIN, CORE_OVERALL_MAX)
        if overall is not None:
            ratings["overall"] = overall
        elif raw is not None:
            parsed.errors.append(f"Overall: {raw!r} is outside 0\u2013100.")
        if ratings:
            parsed.values["core"] = ratings

    def missing(self, values, layout):
        rated = values.get("core", {})
        missing = [f"Rate {f.name}." for f in CORE_FACTORS if f.key not in rated]
        if "overall" not in rated:
            missing.append("Give the overall score (0\u2013100).")
        return missing

    def flatten(self, values):
        core = values.get("core", {})
        rows = [(f"core.{f.key}", core[f.key]) for f in CORE_FACTORS if f.key in core]
        if "overall" in core:
            rows.append(("core.overall", core["overall"]))
        return rows

    def fields(self, layout):
        specs = [FieldSpec(f"core.{factor.key}", "dialogue", "ordinal", CORE_MIN, CORE_MAX,
                           label=f"CoRE: {factor.name}", description=factor.definition,
                           group=CORE) for factor in CORE_FACTORS]
        specs.append(FieldSpec("core.overall", "dialogue", "interval", CORE_OVERALL_MIN,
                               CORE_OVERALL_MAX, label="CoRE overall (0–100)",
                               description=CORE_OVERALL_QUESTION, group=CORE))
        return specs

    def label_rows(self, values, item, annotator):
        return [item.row(annotator, "dialogue", item.dialogue_id, f"core.{key}", value)
                for key, value in values.get("core", {}).items()]

    def panel_context(self, values, layout):
        core = values.get("core", {})
        return {"rows": [scale_row(f"core-{f.key}", f.name, CORE_MIN, CORE_MAX,
                                   core.get(f.key), help=f.definition, group=f.dimension)
                         for f in CORE_FACTORS],
                "overall": core.get("overall"), "overall_question": CORE_OVERALL_QUESTION}


class FaceForm(TaskForm):
    key, label, mode = FACE, "FACE: turn and dialogue aspects", "conversation"
    template = "annotation/_form_face.html"
    report_fields = "FACE's turn and dialogue aspects"
    instructions = ("- Rate **each system turn** for relevance and interestingness, then "
                    "the conversation as a whole.\n")

    def parse(self, data, layout, parsed):
        face: dict = {}
        turns = {}
        for index in layout.rated_turns:
            per_turn = {}
            for aspect in FACE_TURN_ASPECTS:
                raw = one(data, f"face-turn-{index}-{aspect.key}")
                value = int_in(raw, aspect.low, aspect.high)
                if value is not None:
                    per_turn[aspect.key] = value
                elif raw is not None:
                    parsed.errors.append(f"Turn {index} {aspect.label}: {raw!r} is out of "
                                         "range.")
            if per_turn:
                turns[str(index)] = per_turn
        if turns:
            face["turns"] = turns
        for aspect in FACE_DIALOGUE_ASPECTS:
            raw = one(data, f"face-{aspect.key}")
            value = int_in(raw, aspect.low, aspect.high)
            if value is not None:
                face[aspect.key] = value
            elif raw is not None:
                parsed.errors.append(f"{aspect.label}: {raw!r} is out of range.")
        if face:
            parsed.values["face"] = face

    def missing(self, values, layout):
        face = values.get("face", {})
        missing = []
        for index in layout.rated_turns:
            turn = face.get("turns", {}).get(str(index), {})
            missing += [f"Rate {a.label.lower()} of system turn {index}."
                        for a in FACE_TURN_ASPECTS if a.key not in turn]
        return missing + [f"Rate {a.label.lower()}." for a in FACE_DIALOGUE_ASPECTS
                          if a.key not in face]

    def _turns(self, values):
        return sorted(values.get("face", {}).get("turns", {}).items(), key=lambda kv: int(kv[0]))

    def flatten(self, values):
        face, rows = values.get("face", {}), []
        for index, turn in self._turns(values):
            rows += [(f"face.turn.{index}.{a.key}", turn[a.key])
                     for a in FACE_TURN_ASPECTS if a.key in turn]
        return rows + [(f"face.{a.key}", face[a.key]) for a in FACE_DIALOGUE_ASPECTS
                       if a.key in face]

    def fields(self, layout):
        return [FieldSpec(f"face.{aspect.key}", unit_type, "ordinal", aspect.low, aspect.high,
                          label=f"FACE {aspect.label.lower()}", description=aspect.question,
                          group=FACE)
                for unit_type, aspects in (("turn", FACE_TURN_ASPECTS),
                                           ("dialogue", FACE_DIALOGUE_ASPECTS))
                for aspect in aspects]

    def label_rows(self, values, item, annotator):
        face, rows = values.get("face", {}), []
        for index, turn in self._turns(values):
            rows += [item.row(annotator, "turn", f"{item.dialogue_id}#{index}", f"face.{key}",
                              value) for key, value in turn.items()]
        return rows + [item.row(annotator, "dialogue", item.dialogue_id, f"face.{a.key}",
                                face[a.key]) for a in FACE_DIALOGUE_ASPECTS if a.key in face]

    def turn_rows(self, values, index):
        current = values.get("face", {}).get("turns", {}).get(str(index), {})
        return [scale_row(f"face-turn-{index}-{a.key}", a.label, a.low, a.high,
                          current.get(a.key), question=a.question) for a in FACE_TURN_ASPECTS]

    def panel_context(self, values, layout):
        face = values.get("face", {})
        return {"rows": [scale_row(f"face-{a.key}", a.label, a.low, a.high, face.get(a.key),
                                   question=a.question) for a in FACE_DIALOGUE_ASPECTS]}


class RecommendForm(TaskForm):
    key, label, mode = RECOMMEND, "Blind recommendation", "recommend"
    template = "annotation/_form_recommend.html"
    offers_known_answers = True
    report_fields = "blind recommendation picks"
    instructions = (
        "## Writing your own recommendation\n"
        "You see the conversation up to where the system would recommend, the user's "
        "request highlighted in blue, and the candidate places. Pick 1–3 places. Select a "
        "phrase inside a review and press **+ Add quote**: the quote, its review and "
        "position are kept exactly, and a sentence is added to your text, which you can "
        "edit. You never see what any system answered.\n")

    def parse(self, data, layout, parsed):
        rec: dict = {}
        items = [v for v in many(data, "rec-item") if v in layout.candidate_ids]
        items = list(dict.fromkeys(items))
        if len(items) > RECOMMEND_MAX_ITEMS:
            parsed.errors.append(f"Pick at most {RECOMMEND_MAX_ITEMS} items.")
            items = items[:RECOMMEND_MAX_ITEMS]
        if items:
            rec["items"] = items
        quotes = self._quotes(one(data, "rec-quotes"), layout, parsed.errors)
        if quotes:
            rec["quotes"] = quotes
        text = (one(data, "rec-text") or "")[:MAX_TEXT]
        if text:
            rec["text"] = text
        if rec:
            parsed.values["recommend"] = rec

    def _quotes(self, raw_quotes, layout, errors) -> list[dict]:
        try:
            candidates = json.loads(raw_quotes) if raw_quotes else []
        except ValueError:
            candidates = None
        if not isinstance(candidates, list):
            errors.append("The captured quotes could not be read.")
            candidates = []
        quotes, seen = [], set()
        for quote in candidates[:20]:
            clean = _clean_quote(quote, layout)
            if clean is None:
                errors.append("A captured quote does not match its review; add it again.")
                continue
            key = (clean["review_id"], clean["start"], clean["end"])
            if key in seen:
                errors.append(f"The passage \u201c{clean['text'][:60]}\u201d is quoted twice; "
                              "remove one.")
                continue
            seen.add(key)
            quotes.append(clean)
        return quotes

    def missing(self, values, layout):
        rec, missing = values.get("recommend", {}), []
        if not RECOMMEND_MIN_ITEMS <= len(rec.get("items", [])) <= RECOMMEND_MAX_ITEMS:
            missing.append(f"Pick {RECOMMEND_MIN_ITEMS}\u2013{RECOMMEND_MAX_ITEMS} items.")
        if not rec.get("text"):
            missing.append("Write your recommendation.")
        return missing

    def flatten(self, values):
        rec, rows = values.get("recommend", {}), []
        if rec.get("items"):
            rows.append((RECOMMEND_FIELD, "|".join(rec["items"])))
        for n, quote in enumerate(rec.get("quotes", [])):
            rows.append((f"recommend.quote.{n}", quote["text"]))
        if rec.get("text"):
            rows.append(("recommend.text", rec["text"]))
        return rows

    def export_detail(self, name, values, quotes):
        if not name.startswith("recommend.quote."):
            return None
        quote = values["recommend"]["quotes"][int(name.rsplit(".", 1)[1])]
        return f"{quote['item_id']}/{quote['review_id']}[{quote['start']}:{quote['end']}]"

    def field_label(self, name):
        return "Recommended items" if name == RECOMMEND_FIELD else None

    def fields(self, layout):
        return [FieldSpec(RECOMMEND_FIELD, "turn", "set", label="Blind recommendation picks",
                          description="the 1–3 items an annotator picked", group=RECOMMEND)]

    def label_rows(self, values, item, annotator):
        picks = values.get("recommend", {}).get("items")
        if not picks:
            return []
        return [item.row(annotator, "turn", item.turn_unit, RECOMMEND_FIELD, frozenset(picks),
                         system=REFERENCE)]

    def panel_context(self, values, layout):
        rec = values.get("recommend", {})
        return {"text": rec.get("text", ""), "quotes": rec.get("quotes", []),
                "quotes_json": json.dumps(rec.get("quotes", [])),
                "max_items": RECOMMEND_MAX_ITEMS}

    def known_answers(self, facts, *, corrupt, rng):
        """The turn's gold and alternative items are the acceptable picks."""
        if not facts.acceptable:
            return None
        return KnownAnswers({RECOMMEND_FIELD: list(facts.acceptable)})

    def report_parts(self):
        return (ReportPart("Blind recommendation",
                           "how often annotators pick the gold item or each other's",
                           "two annotators' picks on the same item"),)


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


class PairwiseForm(TaskForm):
    """Which of two blinded responses is better; its radio row is built with the page, since
    it names the two sides' letters (annotation.selectors)."""

    key, label, mode = PAIRWISE, "Pairwise preference", "pairwise"
    template = "annotation/_form_pairwise.html"
    report_fields = "pairwise preferences (A, B or tie)"
    categorical = ("pairwise.choice",)
    instructions = ("## Comparing two responses\n"
                    "Two responses to the same moment are shown side by side. Say which is "
                    "better, or that they are tied, and why if you like.\n")

    def parse(self, data, layout, parsed):
        pair = {}
        raw = one(data, "pair-choice")  # the page posts left / right / tie
        choice = pairwise_from_display(raw, layout.swapped)
        if choice in PAIRWISE_CHOICES:
            pair["choice"] = choice
        elif raw is not None:
            parsed.errors.append(f"Unknown preference {raw!r}.")
        reason = (one(data, "pair-reason") or "")[:MAX_TEXT]
        if reason:
            pair["reason"] = reason
        if pair:
            parsed.values["pairwise"] = pair

    def missing(self, values, layout):
        if values.get("pairwise", {}).get("choice"):
            return []
        return ["Say which response is better (or tie)."]

    def flatten(self, values):
        pair, rows = values.get("pairwise", {}), []
        if "choice" in pair:
            rows.append((PAIRWISE_FIELD, pair["choice"]))
        if pair.get("reason"):
            rows.append(("pairwise.reason", pair["reason"]))
        return rows

    def export_detail(self, name, values, quotes):
        return "a = system, b = system_b" if name == PAIRWISE_FIELD else None

    def fields(self, layout):
        return [FieldSpec(PAIRWISE_FIELD, "turn", "nominal", label="Pairwise preference",
                          description="a (first response) / b (second) / tie", group=PAIRWISE)]

    def label_rows(self, values, item, annotator):
        choice = values.get("pairwise", {}).get("choice")
        if not choice:
            return []
        return [item.row(annotator, "turn", item.turn_unit, PAIRWISE_FIELD, choice,
                         system=item.pair_system)]

    def panel_context(self, values, layout):
        return {"reason": values.get("pairwise", {}).get("reason", "")}


for _form in (CitationForm(), ChecklistForm(), LikertForm(), CoreForm(), FaceForm(),
              RecommendForm(), PairwiseForm()):
    register(_form)
ALL_FORMS = (CITATION, CHECKLIST, LIKERT, CORE, FACE, RECOMMEND, PAIRWISE)  # the built-in ones


# --- the built-in forms' own rules: the exclusive "No errors", gold answers, pairwise sides ----

def checklist_is_consistent(chosen: Sequence[str]) -> bool:
    """"No errors" is exclusive: alone, or absent."""
    return NO_ERRORS not in chosen or len(set(chosen)) == 1


def gold_score(expected: dict, values: dict) -> tuple[int, int]:
    """(matched, checked) of an annotation against a gold item's expected answers.

    `expected` maps flattened field names to a value; for `recommend.items` it is the list of
    acceptable items, and picking any one of them counts as a match.
    """
    given = dict(flatten(values))
    matched = 0
    for name, want in expected.items():
        if name == RECOMMEND_FIELD:
            picked = set(str(given.get(name, "")).split("|")) - {""}
            matched += bool(picked & set(want))
        else:
            matched += given.get(name) == want
    return matched, len(expected)


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
