"""The demo generator's constants and word lists (the lists are data, in vocabulary.json)."""

from __future__ import annotations

import json
from pathlib import Path

ITEMS_PER_CITY_TYPE = 40
POOL_SIZE = 8
ITEM_TYPES = ("restaurant", "hotel", "attraction")
SPLITS = ("train", "dev", "test", "hidden")
SPLIT_SHARES = {"train": 0.60, "dev": 0.15, "test": 0.15, "hidden": 0.10}
DIFFICULTY_SHARES = {"easy": 0.30, "medium": 0.40, "hard": 0.30}

# Price band each budget word allows. cheap/affordable/moderate follow the price-alignment
# metric (metrics.md §A); for upscale/luxury the metric accepts any price, but a user who asks for
# luxury expects the top of the range, so the generator is stricter than the metric.
BUDGET_PRICE_RANGE = {
    "cheap": (1, 2),
    "affordable": (1, 2),
    "moderate": (1, 3),
    "upscale": (3, 4),
    "luxury": (4, 4),
}

# --------------------------------------------------------------------------------------------
# Vocabulary: the word lists live in vocabulary.json beside this module (data, not code).
# What the lists must keep true (each is relied on by the design decisions in the docstring):
# - cities: real neighbourhood centres (approximate), so spatial metrics see realistic distances;
# - cuisines / hotel_kinds / attraction_kinds: ``word`` is how users AND reviewers name the
#   category, i.e. shared vocabulary a lexical retriever can match;
# - aspect_rate: share of items with each aspect when the kind does not decide it; kind_aspects:
#   aspects fixed by the kind of place (a hostel has no pool, a walking tour is outdoors);
# - sentences: review sentences tagged with the feature they attest (keyed by feature, then item
#   type, price level or ``*`` for any), so quotes can be picked for exactly the constraint a
#   system turn justifies;
# - absent_hints: hints that an aspect is missing, phrased WITHOUT the aspect's keyword, because
#   reviewers rarely name what is absent and a keyword would make a lexical retriever reward it;
# - personas: archetypes after Trace Appendix I (an introduction and the constraints it implies);
#   solo_personas speak in the first person singular (see _voice).
# JSON has no tuples or non-string keys: lists come back as tuples, ``price_phrases`` keys as
# ints, and ``sentences`` as the (feature, qualifier) table the generator indexes.
# --------------------------------------------------------------------------------------------


def _tuples(value):
    if isinstance(value, dict):
        return {key: _tuples(item) for key, item in value.items()}
    if isinstance(value, list):
        return tuple(_tuples(item) for item in value)
    return value


def _qualifier(key: str):
    return None if key == "*" else int(key) if key.isdigit() else key


_VOCABULARY = _tuples(json.loads(
    (Path(__file__).with_name("vocabulary.json")).read_text(encoding="utf-8")))
CITIES = _VOCABULARY["cities"]
NAME_WORDS = _VOCABULARY["name_words"]
CUISINES = _VOCABULARY["cuisines"]
HOTEL_KINDS = _VOCABULARY["hotel_kinds"]
ATTRACTION_KINDS = _VOCABULARY["attraction_kinds"]
ASPECTS = _VOCABULARY["aspects"]
ASPECT_RATE = _VOCABULARY["aspect_rate"]
KIND_ASPECTS = _VOCABULARY["kind_aspects"]
NOISE_WEIGHTS = _VOCABULARY["noise_weights"]
KIND_NOISE = _VOCABULARY["kind_noise"]
ASPECT_PHRASES = _VOCABULARY["aspect_phrases"]
PRICE_PHRASES = {int(level): phrase for level, phrase in _VOCABULARY["price_phrases"].items()}
NOISE_PHRASES = _VOCABULARY["noise_phrases"]
PRAISE = _VOCABULARY["praise"]
CHARM = _VOCABULARY["charm"]
STAFF_ADJ = _VOCABULARY["staff_adj"]
SENTENCES = {(feature, _qualifier(key)): templates
             for feature, by_key in _VOCABULARY["sentences"].items()
             for key, templates in by_key.items()}
OPENERS = _VOCABULARY["openers"]
WHEN = _VOCABULARY["when"]
WHO = _VOCABULARY["who"]
CLOSERS = _VOCABULARY["closers"]
COMPLAINTS = _VOCABULARY["complaints"]
ABSENT_HINTS = _VOCABULARY["absent_hints"]
PERSONAS = _VOCABULARY["personas"]
PERSONA_CATEGORIES = _VOCABULARY["persona_categories"]
USER_NAMES = _VOCABULARY["user_names"]
TYPE_NOUNS = _VOCABULARY["type_nouns"]
GUEST_NOUNS = _VOCABULARY["guest_nouns"]
SEEKS = _VOCABULARY["seeks"]
FAREWELL_NOUNS = _VOCABULARY["farewell_nouns"]
PREF_SENTENCES = _VOCABULARY["pref_sentences"]
SOLO_PERSONAS = _VOCABULARY["solo_personas"]
SOLO_VOICE = _VOCABULARY["solo_voice"]
REJECT_LEADS = _VOCABULARY["reject_leads"]
DETAIL_QUESTIONS = _VOCABULARY["detail_questions"]
_ASPECT_TAGS = tuple(ASPECT_RATE) + ("quiet", "lively")
