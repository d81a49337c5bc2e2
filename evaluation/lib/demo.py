"""Generate the synthetic "Concord Demo Tourism" benchmark bundle.

Concord needs a benchmark it can load on a fresh machine without any licensed data, so that the
demo site, the reference baselines and the evaluators all have something realistic to chew on.
This module builds one from a seed, following the dialogue construction of the Trace paper
(§2.1-2.2 and Appendices G-I): a tourism catalogue of restaurants, hotels and attractions in
several U.S. cities, reviews that talk about concrete aspects, and multi-turn dialogues in which a
persona states constraints, rejects a plausible first suggestion with a reason (reject_and_refine)
and receives a recommendation that is justified by verbatim review quotes with ``[Rn]`` labels.

The output of :func:`generate_demo_bundle` is a plain dict in the benchmark bundle format
(formats.md §1): ``benchmark``, ``items``, ``reviews`` and ``dialogues``.

Design decisions that the metrics (metrics.md §A) depend on:

* Every item is the target of exactly one dialogue, chosen without looking at its rating, so a
  popularity ranking (stars x review count) is not correlated with the gold item.
* The user states constraints in words that also occur in the target's description and reviews
  ("cheap", "quiet", "outdoor seating", "Fishtown", "sushi"), so a lexical retriever over the
  dialogue so far can recover the gold; users never name the item they reject, because a
  bag-of-words retriever cannot read negation.
* On every recommend/compare turn the gold is the dialogue's target, which satisfies all the
  constraints stated so far; alternatives are pool items that satisfy the hard constraints
  (category, budget, rejection reasons) and all but one of the stated constraints. The first
  suggestion (later rejected) satisfies everything stated before the rejection, so it appears
  among that turn's alternatives: it was a reasonable guess, not a mistake.
* Difficulty tiers control how many constraints a dialogue has, how many rejections, how long it
  is, and how many constraints the distractors in the 8-item candidate pool share with the target.

Everything is drawn from one ``random.Random(seed)``; no global random state, set iteration
order or clock is involved, so the same seed always yields the same bundle.
"""

from __future__ import annotations

import json
import random
import re
from dataclasses import dataclass, field
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
# Vocabulary: the word lists live in demo_vocabulary.json beside this module (data, not code).
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
    (Path(__file__).with_name("demo_vocabulary.json")).read_text(encoding="utf-8")))
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

# --------------------------------------------------------------------------------------------
# Public entry point
# --------------------------------------------------------------------------------------------


def generate_demo_bundle(seed: int = 42, dialogues: int | None = None) -> dict:
    """Return the demo benchmark bundle (formats.md §1) generated deterministically from seed.

    With DIALOGUES, exactly that many dialogues (a scale benchmark, docs/performance.md "Runs at
    scale"): the catalogue stays the demo's, and every item is the target of one dialogue per
    round, each round drawing new personas, constraints, rejections, decoys and pools, until
    there are enough. The first round is the demo's own dialogues.
    """
    if dialogues is not None and dialogues < 1:
        raise ValueError("dialogues must be at least 1")
    rng = random.Random(seed)
    catalogue = _Catalogue()
    for city in CITIES:
        for item_type in ITEM_TYPES:
            for item in _make_items(rng, city, item_type):
                catalogue.add_item(item)
    for item in catalogue.items:
        _add_reviews(rng, catalogue, item)
    records = _make_dialogues(rng, catalogue, dialogues)
    return {
        "benchmark": _benchmark(seed, dialogues),
        "items": catalogue.items,
        "reviews": catalogue.reviews,
        "dialogues": records,
    }


def _benchmark(seed: int, dialogues: int | None = None) -> dict:
    # A scale benchmark gets its own slug, so it never replaces the demo when imported.
    return {
        "name": "Concord Demo Tourism" + (f" ({dialogues:,} dialogues)" if dialogues else ""),
        "slug": "demo-tourism" + (f"-{dialogues}" if dialogues else ""),
        "version": "1.0",
        "domain": "tourism",
        "description": (
            "Synthetic tourism conversational recommendation benchmark generated by Concord "
            f"(evaluation.lib.demo, seed {seed}). Fictional restaurants, hotels and attractions in "
            "Philadelphia, New Orleans and Tucson with aspect-rich reviews, and multi-turn "
            "dialogues with explicit rejection turns and verbatim review-span citations, built "
            "after the dialogue construction of Trace. For demos and tests, not for claims "
            "about real places."
        ),
        "license": "CC-BY-4.0",
        "citation": (
            "Concord Demo Tourism (synthetic benchmark, version 1.0), generated with "
            f"evaluation.lib.demo.generate_demo_bundle(seed={seed}). Dialogue design after "
            "'Trace: Tourism Recommendation with Accountable Citation Evidence'."
        ),
        "protocols": ["turn", "log"],
        "splits": list(SPLITS),
    }


# --------------------------------------------------------------------------------------------
# Catalogue
# --------------------------------------------------------------------------------------------


@dataclass
class _Catalogue:
    items: list = field(default_factory=list)
    reviews: list = field(default_factory=list)
    by_id: dict = field(default_factory=dict)
    # item id -> tag -> [(review_id, start, end, stars)]: citable sentences per feature.
    spans: dict = field(default_factory=dict)
    review_text: dict = field(default_factory=dict)
    seen_texts: set = field(default_factory=set)  # membership tests only; never iterated
    # (city, type) -> items, in creation order.
    groups: dict = field(default_factory=dict)

    def add_item(self, item: dict) -> None:
        self.items.append(item)
        self.by_id[item["id"]] = item
        self.spans[item["id"]] = {}
        self.groups.setdefault((item["city"], item["type"]), []).append(item)


def _make_items(rng: random.Random, city: dict, item_type: str) -> list[dict]:
    kinds = _kind_table(item_type, city)
    names_taken: set[str] = set()  # membership tests only; never iterated
    per_kind = ITEMS_PER_CITY_TYPE // len(kinds)
    kind_list = [k for k in kinds for _ in range(per_kind)]
    rng.shuffle(kind_list)
    items = []
    for number, kind in enumerate(kind_list, start=1):
        item_id = f"{city['code']}-{item_type[0]}-{number:03d}"
        name = _unique_name(rng, city, kinds[kind]["names"], names_taken)
        items.append(_make_item(rng, city, item_type, kind, kinds[kind], item_id, name))
    return items


def _kind_table(item_type: str, city: dict) -> dict:
    if item_type == "restaurant":
        return {name: CUISINES[name] for name in city["cuisines"]}
    return HOTEL_KINDS if item_type == "hotel" else ATTRACTION_KINDS


def _unique_name(rng: random.Random, city: dict, patterns: tuple, taken: set[str]) -> str:
    words = NAME_WORDS + city["name_words"]
    for _ in range(200):
        name = rng.choice(patterns).format(w=rng.choice(words))
        if name not in taken:
            taken.add(name)
            return name
    raise RuntimeError("ran out of item names")  # pragma: no cover - vocabulary is large


def _make_item(rng, city, item_type, kind, spec, item_id, name) -> dict:
    nb_name, nb_lat, nb_lon = rng.choice(city["neighborhoods"])
    # Jitter of about +-400 m around the neighbourhood centre keeps walking distances realistic.
    lat = round(nb_lat + rng.uniform(-0.0036, 0.0036), 6)
    lon = round(nb_lon + rng.uniform(-0.0042, 0.0042), 6)
    price = rng.randint(*spec["price"])
    attributes = _make_attributes(rng, item_type, kind, nb_name, price)
    if item_type == "restaurant":
        categories = list(spec["cats"])
        attributes["signature_dishes"] = rng.sample(spec["dishes"], 2)
    elif item_type == "hotel":
        categories = [kind, "Hotels & Travel"]
    else:
        categories = [kind, *spec["cats"]]
    item = {
        "id": item_id, "name": name, "type": item_type, "city": city["name"],
        "lat": lat, "lon": lon, "price_level": price, "stars": 3.0,  # set from reviews
        "categories": categories, "attributes": attributes, "description": "",
    }
    item["description"] = _describe(item, spec)
    return item


def _make_attributes(rng, item_type, kind, neighborhood, price) -> dict:
    noise = KIND_NOISE.get(kind) or _weighted(rng, ("quiet", "moderate", "loud"),
                                              NOISE_WEIGHTS[item_type])
    attributes: dict = {"neighborhood": neighborhood, "noise": noise}
    fixed = KIND_ASPECTS.get(kind, {})
    for aspect in ASPECTS[item_type]:
        attributes[aspect] = fixed.get(aspect, rng.random() < ASPECT_RATE[aspect])
    if attributes.get("romantic") and noise == "loud":
        attributes["romantic"] = False  # a loud room is not reviewed as romantic
    if item_type == "attraction":
        attributes["free_entry"] = price == 1 and rng.random() < 0.6
    return attributes


def _weighted(rng: random.Random, values: tuple, weights: tuple):
    return rng.choices(values, weights=weights, k=1)[0]


def _describe(item: dict, spec: dict) -> str:
    attrs = item["attributes"]
    where = f"in {attrs['neighborhood']}, {item['city']}"
    what = _article(PRICE_PHRASES[item["price_level"]])
    if item["type"] == "restaurant":
        dishes = attrs["signature_dishes"]
        known = f"its {dishes[0]} and {dishes[1]}"
        what += f" {spec['word']} spot"
    else:
        known = spec["highlights"][0]
        what += f" {spec['word']}"
    head = f"{item['name']} is {what} {where}, known for {known}."
    features = [ASPECT_PHRASES[a] for a in ASPECTS[item["type"]] if attrs[a]]
    if item["type"] == "attraction" and attrs["free_entry"]:
        features.append("free entry")
    body = f" It offers {_join(features)}." if features else ""
    return f"{head}{body} The atmosphere is {NOISE_PHRASES[attrs['noise']]}."


def _join(parts: list[str], word: str = "and") -> str:
    if len(parts) <= 1:
        return "".join(parts)
    return f"{', '.join(parts[:-1])} {word} {parts[-1]}"


# --------------------------------------------------------------------------------------------
# Reviews
# --------------------------------------------------------------------------------------------


def _feature_tags(item: dict) -> list[str]:
    attrs = item["attributes"]
    noise_tag = {"quiet": "quiet", "loud": "lively", "moderate": "hum"}[attrs["noise"]]
    tags = ["category", "category", "price", "location", "staff", noise_tag]
    return tags + [a for a in ASPECTS[item["type"]] if attrs[a]]


def _add_reviews(rng: random.Random, cat: _Catalogue, item: dict) -> None:
    count = rng.randint(10, 16)
    quality = rng.uniform(2.6, 4.9)  # latent quality, unrelated to which dialogue targets it
    tags = _feature_tags(item)
    # Every feature is mentioned at least twice, so each one can be cited.
    queue = tags + tags
    rng.shuffle(queue)
    star_values = []
    for _ in range(count):
        stars = min(5, max(1, round(rng.gauss(quality, 1.0))))
        chosen = _review_tags(rng, queue, tags)
        _add_review(rng, cat, item, stars, chosen)
        star_values.append(stars)
    mean = sum(star_values) / len(star_values)
    item["stars"] = min(5.0, max(1.0, round(mean * 2) / 2))


def _review_tags(rng: random.Random, queue: list[str], tags: list[str]) -> list[str]:
    wanted = rng.choice((2, 2, 3, 3, 4))
    chosen: list[str] = []
    skipped: list[str] = []
    while queue and len(chosen) < wanted:
        tag = queue.pop()
        (skipped if tag in chosen else chosen).append(tag)
    queue.extend(skipped)  # a repeat within one review goes back for the next review
    while len(chosen) < wanted:
        tag = rng.choice(tags)
        if tag not in chosen:
            chosen.append(tag)
    return chosen


def _add_review(rng, cat: _Catalogue, item: dict, stars: int, tags: list[str]) -> None:
    review_id = f"rev-{len(cat.reviews) + 1:06d}"
    for _ in range(20):  # two identical reviews would look like a scraping bug
        sentences = _review_sentences(rng, item, stars, tags)
        text, spans = _assemble(review_id, stars, sentences)
        if text not in cat.seen_texts:
            break
    cat.seen_texts.add(text)
    for tag, span in spans:
        cat.spans[item["id"]].setdefault(tag, []).append(span)
    cat.reviews.append({"id": review_id, "item_id": item["id"], "text": text, "stars": stars})
    cat.review_text[review_id] = text


def _review_sentences(rng, item: dict, stars: int, tags: list[str]) -> list:
    sentences: list[tuple[str, str | None]] = []
    if rng.random() < 0.5:
        sentences.append((_fill(rng, rng.choice(OPENERS[item["type"]]), item), None))
    for tag in tags:
        sentences.append((_sentence(rng, item, tag), tag))
    if stars <= 2:
        for complaint in rng.sample(COMPLAINTS[item["type"]], rng.choice((1, 2))):
            sentences.insert(rng.randint(1, len(sentences)), (complaint, None))
    hint = _absent_hint(rng, item)
    if hint:
        sentences.append((hint, None))
    mood = "negative" if stars <= 2 else "neutral" if stars == 3 else "positive"
    if rng.random() < 0.7:
        sentences.append((_fill(rng, rng.choice(CLOSERS[mood]), item), None))
    return sentences


def _absent_hint(rng: random.Random, item: dict) -> str | None:
    missing = [a for a in ABSENT_HINTS if a in item["attributes"] and not item["attributes"][a]]
    if missing and rng.random() < 0.1:
        return ABSENT_HINTS[rng.choice(missing)]
    return None


def _assemble(review_id: str, stars: int, sentences) -> tuple[str, list]:
    """Join sentences; return the text and the character span of every tagged sentence."""
    text = ""
    spans = []
    for sentence, tag in sentences:
        if text:
            text += " "
        if tag is not None:
            start, end = len(text), len(text) + len(sentence) - 1  # quote drops the final "."
            spans.append((tag, (review_id, start, end, stars)))
        text += sentence
    return text, spans


def _sentence(rng: random.Random, item: dict, tag: str) -> str:
    if tag == "price":
        templates = SENTENCES[("price", item["price_level"])]
    else:
        templates = (SENTENCES.get((tag, item["type"])) or SENTENCES[(tag, None)])
    return _fill(rng, rng.choice(templates), item)


def _fill(rng: random.Random, template: str, item: dict) -> str:
    spec = _kind_spec(item)
    dishes = spec.get("dishes") or spec["highlights"]
    first, second = rng.sample(dishes, 2)
    highlights = spec.get("highlights", dishes)
    hl, hl2 = rng.sample(highlights, 2)
    staff, staff2 = rng.sample(STAFF_ADJ, 2)
    kind_word = spec["word"]
    text = template.format(
        dish=first, dish2=second, word=kind_word, hl=hl, hl2=hl2, city=item["city"],
        nb=item["attributes"]["neighborhood"], praise=rng.choice(PRAISE),
        charm=rng.choice(CHARM), staff=staff, staff2=staff2, kind=kind_word,
        kind_a=_article(kind_word), kinds=_plural(kind_word), view=_city(item)["view"],
        when=rng.choice(WHEN), who=rng.choice(WHO),
    )
    return text[0].upper() + text[1:]


def _kind_spec(item: dict) -> dict:
    kind = item["categories"][0]
    if item["type"] == "restaurant":
        return CUISINES[kind]
    return HOTEL_KINDS[kind] if item["type"] == "hotel" else ATTRACTION_KINDS[kind]


def _city(item: dict) -> dict:
    return next(c for c in CITIES if c["name"] == item["city"])


def _article(word: str) -> str:
    return f"an {word}" if word[0] in "aeiou" else f"a {word}"


def _plural(word: str) -> str:
    return word[:-1] + "ies" if word.endswith("y") else word + "s"


# --------------------------------------------------------------------------------------------
# Constraints
# --------------------------------------------------------------------------------------------

# A constraint is a (kind, value) tuple: ("category", "Italian"), ("budget", "cheap"),
# ("aspect", "parking"), ("noise", "quiet"|"lively"), ("neighborhood", "Fishtown").
HARD_KINDS = ("category", "budget")


def _satisfies(item: dict, constraint: tuple) -> bool:
    kind, value = constraint
    attrs = item["attributes"]
    if kind == "category":
        return item["categories"][0] == value
    if kind == "budget":
        low, high = BUDGET_PRICE_RANGE[value]
        return low <= item["price_level"] <= high
    if kind == "aspect":
        return attrs.get(value) is True
    if kind == "noise":
        return attrs["noise"] == ("quiet" if value == "quiet" else "loud")
    return attrs["neighborhood"] == value


def _n_satisfied(item: dict, constraints) -> int:
    return sum(1 for c in constraints if _satisfies(item, c))


def _span_tag(constraint: tuple) -> str:
    kind, value = constraint
    return {"category": "category", "budget": "price", "neighborhood": "location"}.get(
        kind, value)


def _budget_word(rng: random.Random, price: int) -> str:
    options = {1: ("cheap", "cheap", "affordable"), 2: ("affordable", "affordable", "cheap"),
               3: ("moderate", "moderate", "upscale"), 4: ("upscale", "luxury")}
    return rng.choice(options[price])


def _target_constraints(rng: random.Random, target: dict) -> list[tuple]:
    """All constraints the target satisfies, in a stable order."""
    attrs = target["attributes"]
    found = [("category", target["categories"][0]),
             ("budget", _budget_word(rng, target["price_level"]))]
    found += [("aspect", a) for a in ASPECTS[target["type"]] if attrs[a]]
    if attrs["noise"] == "quiet":
        found.append(("noise", "quiet"))
    elif attrs["noise"] == "loud":
        found.append(("noise", "lively"))
    found.append(("neighborhood", attrs["neighborhood"]))
    return found


def _persona_constraint(key: str, persona: str, target: dict) -> tuple | None:
    """The constraint a persona key stands for, if the target satisfies it."""
    if key.startswith("budget:"):
        word = key.split(":", 1)[1]
        constraint = ("budget", word)
    elif key == "category":
        kind = target["categories"][0]
        return ("category", kind) if kind in PERSONA_CATEGORIES.get(persona, ()) else None
    elif key in ("quiet", "lively"):
        constraint = ("noise", key)
    else:
        constraint = ("aspect", key)
    return constraint if _satisfies(target, constraint) else None


def _pick_persona(rng: random.Random, target: dict) -> tuple[str, str, tuple | None]:
    fitting, generic = [], []
    for name, intro, keys in PERSONAS[target["type"]]:
        if not keys:
            generic.append((name, intro, None))
        for key in keys:
            constraint = _persona_constraint(key, name, target)
            if constraint:
                fitting.append((name, intro, constraint))
    if fitting and rng.random() < 0.75:
        return rng.choice(fitting)
    return rng.choice(generic)


@dataclass
class _Plan:
    constraints: list          # every constraint, in the order the user states it
    opening: list              # stated in the greeting
    rounds: list               # one list per provide_preference turn
    rejections: list           # one reason per reject_and_refine turn
    decoys: list               # the item rejected for each reason
    twins: int = 0             # other items in the city/type satisfying everything


@dataclass
class _Shape:
    n_constraints: int
    n_rejections: int
    n_rounds: int
    final_compare: bool
    followup: str | None       # None, "compare" or "detail"


def _pick_shape(rng: random.Random, difficulty: str) -> _Shape:
    final_compare = rng.random() < 0.35
    if difficulty == "easy":
        shape = _Shape(3, 1, 1, final_compare, rng.choice((None, None, "compare", "detail")))
    elif difficulty == "medium":
        rounds = rng.choice((1, 2))
        options = ("compare", "detail") if rounds == 1 else (None, "compare", "detail")
        shape = _Shape(4, 1, rounds, final_compare, rng.choice(options))
    else:
        rejections, rounds, followup = rng.choice(
            ((2, 2, None), (2, 1, "compare"), (2, 1, "detail"), (1, 2, "compare")))
        shape = _Shape(5, rejections, rounds, final_compare, followup)
    if shape.final_compare and shape.followup == "compare":
        shape.followup = "detail"  # one comparison of the same pair is enough
    return shape


def _plan(rng, target, group, shape, persona_c, solo=False) -> _Plan | None:
    """Choose constraints, rejection reasons and decoys; prefer plans where the target is unique."""
    best = None
    for n_constraints in range(shape.n_constraints, 1, -1):
        for _ in range(60):
            plan = _try_plan(rng, target, group, shape, persona_c, n_constraints, solo)
            if plan and (best is None or plan.twins < best.twins):
                best = plan
            if best and best.twins == 0:
                return best
        if best:
            return best
    return None


def _relaxed_shapes(shape: _Shape) -> list[_Shape]:
    """The planned shape, then simpler ones for targets whose catalogue neighbours do not allow
    it (for example when no item differs from the target in exactly the right way)."""
    one_rejection = _Shape(shape.n_constraints, 1, shape.n_rounds, shape.final_compare,
                           shape.followup or "compare")
    minimal = _Shape(3, 1, 1, shape.final_compare, shape.followup)
    return [shape, one_rejection, minimal]


def _try_plan(rng, target, group, shape, persona_c, n_constraints, solo) -> _Plan | None:
    chosen = _sample_constraints(rng, target, n_constraints, persona_c, solo)
    rejectable = [c for c in chosen if c != persona_c]
    if len(rejectable) < shape.n_rejections:
        return None
    # "Not in the mood for that kind of place" is the easiest rejection to stage, so it is
    # down-weighted to keep reasons varied (aspects, noise, neighbourhood, price).
    rejectable.sort(key=lambda c: rng.random() * (2.5 if c[0] == "category" else 1.0))
    rejections = rejectable[: shape.n_rejections]
    pre = [c for c in chosen if c not in rejections]
    # Alternatives need a soft constraint to differ on; otherwise they would tie with the target.
    if not any(c[0] not in HARD_KINDS for c in pre):
        return None
    if any(c[0] == "budget" and c[1] in ("upscale", "luxury") for c in rejections):
        return None  # "too cheap" is not a reason travellers give
    decoys = _find_decoys(rng, target, group, pre, rejections)
    if decoys is None or not _alternatives_exist(target, group, chosen, rejections, decoys):
        return None
    opening, rounds = _schedule(rng, pre, persona_c, shape.n_rounds)
    if rounds is None:
        return None
    twins = sum(1 for it in group if it is not target and _n_satisfied(it, chosen) == len(chosen))
    ordered = opening + [c for r in rounds for c in r] + rejections
    return _Plan(ordered, opening, rounds, rejections, decoys, twins)


def _sample_constraints(rng, target, n_constraints, persona_c, solo) -> list[tuple]:
    options = _target_constraints(rng, target)
    if solo:  # someone travelling alone does not ask for a kids menu
        options = [c for c in options if c != ("aspect", "family_friendly")]
    if persona_c:
        options = [c for c in options if c[0] != persona_c[0] or c[0] in ("aspect", "noise")]
        options = [c for c in options if c != persona_c]
    chosen = [persona_c] if persona_c else []
    for kind, rate in (("category", 0.8), ("budget", 0.85)):
        match = [c for c in options if c[0] == kind]
        if match and rng.random() < rate and len(chosen) < n_constraints:
            chosen.append(match[0])
    rest = [c for c in options if c[0] not in HARD_KINDS]
    rng.shuffle(rest)
    chosen += rest[: max(0, n_constraints - len(chosen))]
    return chosen


def _find_decoys(rng, target, group, pre, rejections) -> list | None:
    """One plausible item per rejection: it fits what was said so far but not the new reason."""
    decoys: list = []
    known = list(pre)
    for reason in rejections:
        fits = [it for it in group
                if it is not target and it not in decoys
                and _n_satisfied(it, known) == len(known) and not _satisfies(it, reason)]
        if not fits:
            return None
        decoys.append(rng.choice(fits))
        known.append(reason)
    return decoys


def _alternatives_exist(target, group, chosen, rejections, decoys) -> bool:
    hard = [c for c in chosen if c[0] in HARD_KINDS or c in rejections]
    return any(_is_alternative(it, target, chosen, hard, decoys)
               and _n_satisfied(it, chosen) < len(chosen) for it in group)


def _is_alternative(item, target, stated, hard, rejected) -> bool:
    """Acceptable instead of the target: meets every hard constraint and all but one overall."""
    if item is target or item in rejected:
        return False
    if not all(_satisfies(item, c) for c in hard):
        return False
    return _n_satisfied(item, stated) >= max(1, len(stated) - 1)


def _schedule(rng, pre, persona_c, n_rounds) -> tuple[list, list | None]:
    """Spread the pre-rejection constraints over the greeting and the elicitation rounds."""
    rest = list(pre)
    opening = []
    if persona_c and len(rest) > n_rounds:
        opening.append(persona_c)
        rest.remove(persona_c)
    elif persona_c:
        rest.remove(persona_c)
        rest.insert(0, persona_c)
    if len(rest) < n_rounds:
        return opening, None
    # Category and budget come first: it is what the system asks about first.
    rest.sort(key=lambda c: 0 if c[0] in HARD_KINDS else 1)
    rounds = [[] for _ in range(n_rounds)]
    for i, constraint in enumerate(rest):
        rounds[min(i * n_rounds // len(rest), n_rounds - 1)].append(constraint)
    if any(not r for r in rounds):
        return opening, None
    return opening, rounds


# --------------------------------------------------------------------------------------------
# Candidate pool
# --------------------------------------------------------------------------------------------


def _build_pool(rng, target, group, plan: _Plan, difficulty: str) -> list[dict]:
    constraints = plan.constraints
    hard = [c for c in constraints if c[0] in HARD_KINDS or c in plan.rejections]
    alternatives = [it for it in group
                    if _is_alternative(it, target, constraints, hard, plan.decoys)
                    and _n_satisfied(it, constraints) < len(constraints)]
    rng.shuffle(alternatives)
    n_alt = min(len(alternatives), {"easy": 1, "medium": rng.choice((1, 2)),
                                    "hard": rng.choice((2, 3))}[difficulty])
    pool = [target, *plan.decoys, *alternatives[:n_alt]]
    # Items that satisfy every constraint would tie with the gold, so they stay out of the pool.
    others = [it for it in group if it not in pool
              and _n_satisfied(it, constraints) < len(constraints)]
    rng.shuffle(others)
    # Stable sort keeps the shuffled order among equal overlaps, so ties are broken at random.
    others.sort(key=lambda it: _n_satisfied(it, constraints),
                reverse=difficulty == "hard")
    need = POOL_SIZE - len(pool)
    if difficulty == "medium":
        picked = others[:need // 2] + others[len(others) - (need - need // 2):]
    else:
        picked = others[:need]
    pool += picked
    rng.shuffle(pool)
    return pool


def _turn_alternatives(pool, target, stated, rejections, rejected) -> list[str]:
    hard = [c for c in stated if c[0] in HARD_KINDS or c in rejections]
    ranked = [(-_n_satisfied(it, stated), pos, it["id"]) for pos, it in enumerate(pool)
              if _is_alternative(it, target, stated, hard, rejected)]
    ranked.sort()
    return [item_id for _, _, item_id in ranked[:3]]


# --------------------------------------------------------------------------------------------
# Dialogues
# --------------------------------------------------------------------------------------------


def _make_dialogues(rng: random.Random, cat: _Catalogue, count: int | None = None) -> list[dict]:
    # Each item is the target of exactly one dialogue per round; targets are picked without
    # regard to ratings, so popularity carries no information about the gold. Without COUNT
    # there is one round (the demo); with it, rounds follow until COUNT dialogues exist.
    width = 4 if count is None else max(4, len(str(count)) + 1)
    dialogues: list[dict] = []
    number = 0
    while True:
        per_group = []
        for key in sorted(cat.groups):
            targets = list(cat.groups[key])
            rng.shuffle(targets)
            per_group.append(targets)
        ordered = [targets[i] for i in range(ITEMS_PER_CITY_TYPE) for targets in per_group]
        splits = _spread_labels(rng, SPLIT_SHARES, len(ordered))
        tiers = _spread_labels(rng, DIFFICULTY_SHARES, len(ordered))
        for target, split, tier in zip(ordered, splits, tiers, strict=True):
            number += 1
            try:
                builder = _DialogueBuilder(rng, cat, target, tier)
            except NoDialoguePlan:
                # Rare: the catalogue around this target allows no consistent dialogue (no
                # decoy or alternative differs from it in the right way). Skipping it keeps
                # every other dialogue identical; the count stays far above 300.
                continue
            dialogues.append(builder.build(f"dlg-{number:0{width}d}", split))
            if count is not None and len(dialogues) == count:
                return dialogues
        if count is None:
            return dialogues


def _spread_labels(rng: random.Random, shares: dict, total: int) -> list[str]:
    labels: list[str] = []
    for name, share in shares.items():
        labels += [name] * round(share * total)
    first = next(iter(shares))
    while len(labels) < total:
        labels.append(first)
    labels = labels[:total]
    rng.shuffle(labels)
    return labels


def _voice(text: str) -> str:
    """Rewrite a user turn from "we" to "I" for a persona who travels alone."""
    for pattern, replacement in SOLO_VOICE:
        text = re.sub(pattern, replacement, text)
    return text


class NoDialoguePlan(Exception):
    """No consistent dialogue can be written around this target item."""


class _DialogueBuilder:
    """Writes one dialogue: state (constraints stated, items rejected) plus the turns so far."""

    def __init__(self, rng: random.Random, cat: _Catalogue, target: dict, difficulty: str):
        self.rng, self.cat, self.target, self.difficulty = rng, cat, target, difficulty
        self.group = cat.groups[(target["city"], target["type"])]
        self._choose_plan(_pick_persona(rng, target), _pick_shape(rng, difficulty))
        self.pool = _build_pool(rng, target, self.group, self.plan, difficulty)
        self.turns: list[dict] = []
        self.stated: list[tuple] = []
        self.stated_at: list[int] = []
        self.rejected: list[dict] = []
        self.rejections: list[dict] = []

    def _choose_plan(self, persona: tuple, shape: _Shape) -> None:
        generic = next(p for p in PERSONAS[self.target["type"]] if not p[2])
        for name, intro, persona_c in (persona, (generic[0], generic[1], None)):
            for candidate in _relaxed_shapes(shape):
                plan = _plan(self.rng, self.target, self.group, candidate, persona_c,
                             solo=name in SOLO_PERSONAS)
                if plan:
                    self.persona, self.intro, self.shape, self.plan = name, intro, candidate, plan
                    return
        raise NoDialoguePlan(self.target["id"])

    # -- assembly ---------------------------------------------------------------------------

    def build(self, dialogue_id: str, split: str) -> dict:
        self._opening()
        for reason, decoy in zip(self.plan.rejections, self.plan.decoys, strict=True):
            self._recommend(decoy, after_rejection=bool(self.rejected))
            self._reject(decoy, reason)
        final_alternatives = self._alternatives()
        runner_up = self.cat.by_id[final_alternatives[0]]
        if self.shape.final_compare:
            self._compare(runner_up, after_rejection=True)
        else:
            self._recommend(self.target, after_rejection=True)
        if self.shape.followup == "compare":
            self._add("user", "ask_detail", self._text_runner_up_question(), [self.target])
            self._compare(runner_up, after_rejection=False)
        elif self.shape.followup == "detail":
            self._detail()
        self._closing()
        return {
            "id": dialogue_id,
            "split": split,
            "scenario": self._scenario(),
            "candidate_item_ids": [it["id"] for it in self.pool],
            "target_item_ids": [self.target["id"], *final_alternatives],
            "seen_item_ids": self._seen_items(),
            "turns": self.turns,
        }

    def _add(self, role, action, text, referenced, citations=(), gold=(), alternatives=()):
        if role == "user" and self.persona in SOLO_PERSONAS:
            text = _voice(text)
        self.turns.append({
            "index": len(self.turns), "role": role, "text": text, "action": action,
            "referenced_item_ids": [it["id"] for it in referenced],
            "citations": list(citations), "gold_item_ids": list(gold),
            "alternative_item_ids": list(alternatives),
        })

    def _state(self, constraints) -> None:
        for constraint in constraints:
            self.stated.append(constraint)
            self.stated_at.append(len(self.turns))

    def _alternatives(self) -> list[str]:
        return _turn_alternatives(self.pool, self.target, self.stated,
                                  self.plan.rejections, self.rejected)

    # -- turns --------------------------------------------------------------------------------

    def _opening(self) -> None:
        rng, target = self.rng, self.target
        seek = rng.choice(SEEKS[target["type"]])
        hello = rng.choice(("Hi!", "Hello!", "Hey there.", "Good morning!"))
        text = f"{hello} {self.intro} We're looking for {seek} in {target['city']}."
        extra = self._pref_text(self.plan.opening)
        self._state(self.plan.opening)
        self._add("user", "greet_and_seek", f"{text} {extra}".strip(), [])
        for number, constraints in enumerate(self.plan.rounds):
            self._add("system", "ask_preference", self._question(number), [])
            lead = rng.choice(("", "Sure.", "Let me think.", "Okay.", "Good point."))
            self._state(constraints)
            text = f"{lead} {self._pref_text(constraints)}".strip()
            self._add("user", "provide_preference", text, [])

    def _question(self, number: int) -> str:
        item_type, city = self.target["type"], self.target["city"]
        if number == 0:
            what = {"restaurant": "what kind of food you are in the mood for",
                    "hotel": "what kind of place you like (boutique, B&B, hostel and so on)",
                    "attraction": "what kind of outing you have in mind"}[item_type]
            return self.rng.choice((
                f"Happy to help you find {_article(TYPE_NOUNS[item_type])} in {city}! "
                f"Tell me {what}, and whether you have a price range.",
                f"Welcome to {city}! Could you tell me {what} and roughly what you want to spend?",
            ))
        examples = {"restaurant": "noise level, seating outside, parking or the neighborhood",
                    "hotel": "breakfast, a pool, parking, or the neighborhood",
                    "attraction": "accessibility, being outdoors, parking or the neighborhood"}
        return f"Got it. Anything else that matters, for example {examples[item_type]}?"

    def _pref_text(self, constraints) -> str:
        return " ".join(self._pref_sentence(c) for c in constraints)

    def _pref_sentence(self, constraint: tuple) -> str:
        kind, value = constraint
        if kind == "category":
            key = f"category:{self.target['type']}"
            word = _kind_spec(self.target)["word"]
            template = self.rng.choice(PREF_SENTENCES[key])
            a_word = _article(word)
            return template.format(word=word, Word=word[0].upper() + word[1:], a_word=a_word,
                                   A_word=a_word[0].upper() + a_word[1:])
        if kind == "budget":
            return self.rng.choice(PREF_SENTENCES[f"budget:{value}"])
        if kind == "neighborhood":
            return self.rng.choice(PREF_SENTENCES["neighborhood"]).format(nb=value)
        return self.rng.choice(PREF_SENTENCES[value])

    def _recommend(self, item: dict, after_rejection: bool) -> None:
        rng = self.rng
        alternatives = self._alternatives()
        nb = item["attributes"]["neighborhood"]
        if not after_rejection:
            head = rng.choice((f"How about {item['name']} in {nb}?",
                               f"I'd suggest {item['name']} in {nb}.",
                               f"{item['name']} in {nb} could be a good match."))
        else:
            head = rng.choice((f"Understood. {item['name']} in {nb} should suit you better.",
                               f"Fair point. Then I'd go with {item['name']} in {nb}.",
                               f"In that case, try {item['name']} in {nb}."))
        # The newest constraint (the reason for a rejection) is the first thing to justify.
        n_quotes = 3 if item is self.target else 2
        tags = self._evidence_tags(item, newest_first=after_rejection)[:n_quotes]
        citations, evidence = self._evidence([(item, tag) for tag in tags])
        self._add("system", "recommend", f"{head} {evidence}", [item], citations,
                  [self.target["id"]], alternatives)

    def _evidence_tags(self, item: dict, newest_first: bool) -> list[str]:
        """Feature tags to quote for item: the stated constraints it meets, newest first."""
        stated = [c for c in self.stated if _satisfies(item, c)]
        if newest_first:
            stated = stated[::-1]
        else:
            self.rng.shuffle(stated)
        tags = [_span_tag(c) for c in stated]
        tags = [t for i, t in enumerate(tags) if t not in tags[:i]]
        return tags or ["category"]

    def _reject(self, decoy: dict, reason: tuple) -> None:
        lead = self.rng.choice(REJECT_LEADS)
        kind, value = reason
        if kind == "budget":
            why = f"It looks too pricey. {self._pref_sentence(reason)}"
        elif kind == "category":
            thing = "food" if self.target["type"] == "restaurant" else "place"
            why = f"That's not the kind of {thing} we're after. {self._pref_sentence(reason)}"
        elif kind == "neighborhood":
            where = self.rng.choice(("Ideally in {nb}.", "Somewhere in {nb} would be ideal."))
            why = f"It's too far from where we're staying. {where.format(nb=value)}"
        else:
            why = self._pref_sentence(reason)
        self.rejections.append({"turn_index": len(self.turns), "item_id": decoy["id"],
                                "reason": {"kind": kind, "value": value}})
        self._state([reason])
        self.rejected.append(decoy)
        # The user refers to the decoy as "that one", never by name (see module docstring).
        self._add("user", "reject_and_refine", f"{lead} {why}", [decoy])

    def _compare(self, runner_up: dict, after_rejection: bool) -> None:
        alternatives = self._alternatives()
        target = self.target
        missed = [c for c in self.stated if not _satisfies(runner_up, c)]
        target_tag = _span_tag(missed[-1]) if missed else self._evidence_tags(target, True)[0]
        shared = self._evidence_tags(runner_up, newest_first=True)
        runner_tag = next((t for t in shared if t != target_tag), shared[0])
        citations, _ = self._evidence([(target, target_tag), (runner_up, runner_tag)])
        q1, q2 = (f'"{c["quote"]}" [{c["label"]}]' for c in citations)
        guest = GUEST_NOUNS[target["type"]]
        head = ("Understood. Two places fit better now" if after_rejection
                else f"The closest runner-up is {runner_up['name']}")
        text = (f"{head}. For {target['name']}, one {guest} wrote {q1}. For "
                f"{runner_up['name']}, another said {q2}. I would start with {target['name']}, "
                "since it matches everything you asked for.")
        self._add("system", "compare", text, [target, runner_up], citations,
                  [target["id"]], alternatives)

    def _text_runner_up_question(self) -> str:
        # No item names here: the question is about the ranking, not a new preference.
        return self.rng.choice((
            "That sounds good. Is there a close second, and how do they compare?",
            "Nice. What would be your runner-up, and how do the two differ?",
        ))

    def _detail(self) -> None:
        target = self.target
        used = [_span_tag(c) for c in self.stated]
        extra = [t for t in _feature_tags(target) if t not in used and t != "hum"]
        tag = self.rng.choice(extra) if extra else "staff"
        question = f"{self.rng.choice(('Great.', 'Sounds good.', 'Nice.'))} "
        self._add("user", "ask_detail", question + DETAIL_QUESTIONS[tag], [target])
        citations, evidence = self._evidence([(target, tag)])
        lead = "Yes." if tag in _ASPECT_TAGS else "Good question."
        answer = f"{lead} {evidence}"
        self._add("system", "answer_detail", answer, [target], citations)

    def _closing(self) -> None:
        name = self.target["name"]
        accept = self.rng.choice((f"Perfect, {name} it is. Thanks!",
                                  f"That's the one. We'll go with {name}.",
                                  f"Great, I'll book {name}. Thank you!"))
        self._add("user", "accept", accept, [self.target])
        noun = FAREWELL_NOUNS[self.target["type"]]
        self._add("system", "farewell", self.rng.choice((
            f"Enjoy your {noun} in {self.target['city']}!",
            f"Have a wonderful {noun}. Come back any time you need another suggestion.",
        )), [])

    # -- citations ------------------------------------------------------------------------

    def _evidence(self, wanted: list[tuple[dict, str]]) -> tuple[list[dict], str]:
        """Quote one review sentence per (item, tag); return citations and the cited text."""
        citations: list[dict] = []
        used: list[str] = []
        for item, tag in wanted:
            review_id, start, end = self._pick_span(item, tag, used)
            used.append(review_id)
            quote = self.cat.review_text[review_id][start:end]
            citations.append({"label": f"R{len(citations) + 1}", "review_id": review_id,
                              "quote": quote, "start": start, "end": end})
        guest = GUEST_NOUNS[self.target["type"]]
        verbs = (f"One {guest} wrote", "another said", "and a third noted")
        parts = [f'{verbs[i]} "{c["quote"]}" [{c["label"]}]' for i, c in enumerate(citations)]
        if len(parts) == 3:
            text = f"{parts[0]}, {parts[1]}, {parts[2]}."
        else:
            text = ", and ".join(parts) + "."
        return citations, text

    def _pick_span(self, item: dict, tag: str, used: list[str]) -> tuple[str, int, int]:
        spans = self.cat.spans[item["id"]]
        options = [s for s in spans.get(tag, ()) if s[0] not in used]
        if not options:  # the feature is only mentioned in reviews already quoted in this turn
            options = [s for group in spans.values() for s in group if s[0] not in used]
        # Prefer sentences from favourable reviews: a recommender quotes praise, not complaints.
        good = [s for s in options if s[3] >= 3]
        review_id, start, end, _ = self.rng.choice(good or options)
        return review_id, start, end

    # -- metadata -------------------------------------------------------------------------

    def _scenario(self) -> dict:
        budget = next((v for k, v in self.stated if k == "budget"), None)
        prefs = {"category": None, "aspects": [], "noise": None, "neighborhood": None}
        for kind, value in self.stated:
            if kind == "aspect":
                prefs["aspects"].append(value)
            elif kind != "budget":
                prefs[kind] = value
        return {
            "persona": self.persona,
            "persona_description": self.intro,
            "user_profile": {"name": self.rng.choice(USER_NAMES), "persona": self.persona},
            "city": self.target["city"],
            "item_type": self.target["type"],
            "difficulty": self.difficulty,
            "budget": budget,
            "budget_max_price_level": BUDGET_PRICE_RANGE[budget][1] if budget else None,
            "preferences": prefs,
            "constraints": [{"kind": k, "value": v, "stated_at_turn": at}
                            for (k, v), at in zip(self.stated, self.stated_at, strict=True)],
            "rejections": self.rejections,
        }

    def _seen_items(self) -> list[str]:
        """Up to two same-category places outside the pool that the user has visited before."""
        kind = self.target["categories"][0]
        seen = [it["id"] for it in self.group
                if it not in self.pool and it["categories"][0] == kind]
        self.rng.shuffle(seen)
        return seen[: self.rng.choice((0, 1, 2))]
