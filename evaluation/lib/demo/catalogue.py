"""The demo catalogue: items, their attributes and descriptions, and their reviews."""

from __future__ import annotations

import random
from dataclasses import dataclass, field

from evaluation.lib.demo.vocabulary import (
    ABSENT_HINTS,
    ASPECT_PHRASES,
    ASPECT_RATE,
    ASPECTS,
    ATTRACTION_KINDS,
    CHARM,
    CITIES,
    CLOSERS,
    COMPLAINTS,
    CUISINES,
    HOTEL_KINDS,
    ITEMS_PER_CITY_TYPE,
    KIND_ASPECTS,
    KIND_NOISE,
    NAME_WORDS,
    NOISE_PHRASES,
    NOISE_WEIGHTS,
    OPENERS,
    PRAISE,
    PRICE_PHRASES,
    SENTENCES,
    STAFF_ADJ,
    WHEN,
    WHO,
)

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
