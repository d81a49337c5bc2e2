"""Tests for the synthetic demo benchmark generator (evaluation/lib/demo.py).

The checks re-derive everything from the bundle itself (no access to generator internals), the way
an importer or an evaluator would see it.
"""

import hashlib
import json
import math
import re
from collections import Counter, defaultdict

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.feature_extraction.text import TfidfVectorizer
from sklearn.metrics.pairwise import linear_kernel

from evaluation.lib.demo import generate_demo_bundle

ACTIONS = {
    "greet_and_seek", "ask_preference", "provide_preference", "recommend", "compare", "accept",
    "reject_and_refine", "ask_detail", "answer_detail", "farewell", "other",
}
GOLD_ACTIONS = {"recommend", "compare"}
CITY_CENTRES = {
    "Philadelphia": (39.9526, -75.1652),
    "New Orleans": (29.9511, -90.0715),
    "Tucson": (32.2217, -110.9747),
}
# Price alignment of metrics.md §A: the highest price level each budget word allows.
BUDGET_MAX_PRICE = {"cheap": 2, "affordable": 2, "budget": 2, "moderate": 3, "upscale": 4,
                    "luxury": 4}
LABEL = re.compile(r"\[(R\d+)\]")
# Review words that would contradict an attribute the item does not have.
ASPECT_WORDS = {
    "parking": ("parking",),
    "wifi": ("wifi",),
    "outdoor_seating": ("outdoor seating", "patio"),
    "romantic": ("romantic",),
    "family_friendly": ("family-friendly", "kids"),
    "pool": ("pool",),
    "pet_friendly": ("pet-friendly", "dog"),
    "fitness_center": ("gym", "fitness"),
    "views": ("views",),
    "guided_tours": ("guided tour", "guide"),
    "wheelchair_accessible": ("wheelchair",),
}


@pytest.fixture(scope="module")
def bundle():
    return generate_demo_bundle(42)


@pytest.fixture(scope="module")
def items(bundle):
    return {item["id"]: item for item in bundle["items"]}


@pytest.fixture(scope="module")
def reviews(bundle):
    return {review["id"]: review for review in bundle["reviews"]}


@pytest.fixture(scope="module")
def reviews_by_item(bundle):
    grouped = defaultdict(list)
    for review in bundle["reviews"]:
        grouped[review["item_id"]].append(review)
    return grouped


def gold_turns(dialogue):
    return [t for t in dialogue["turns"] if t["action"] in GOLD_ACTIONS]


def satisfies(item, kind, value):
    """The scenario's constraint vocabulary, re-implemented independently of the generator."""
    attrs = item["attributes"]
    if kind == "category":
        return item["categories"][0] == value
    if kind == "budget":
        if value in ("upscale", "luxury"):
            return item["price_level"] >= (3 if value == "upscale" else 4)
        return item["price_level"] <= BUDGET_MAX_PRICE[value]
    if kind == "aspect":
        return attrs[value] is True
    if kind == "noise":
        return attrs["noise"] == ("quiet" if value == "quiet" else "loud")
    return attrs["neighborhood"] == value


def constraints_before(dialogue, turn_index):
    return [(c["kind"], c["value"]) for c in dialogue["scenario"]["constraints"]
            if c["stated_at_turn"] < turn_index]


def mentions(text, words):
    return any(re.search(rf"\b{re.escape(word)}\b", text) for word in words)


def haversine_km(lat1, lon1, lat2, lon2):
    p1, p2 = math.radians(lat1), math.radians(lat2)
    dp, dl = p2 - p1, math.radians(lon2 - lon1)
    a = math.sin(dp / 2) ** 2 + math.cos(p1) * math.cos(p2) * math.sin(dl / 2) ** 2
    return 2 * 6371 * math.asin(math.sqrt(a))


# --- determinism and speed -----------------------------------------------------------------


def test_same_seed_gives_identical_bundle(bundle):
    again = generate_demo_bundle(42)
    assert json.dumps(again, sort_keys=True) == json.dumps(bundle, sort_keys=True)


def test_different_seed_gives_different_bundle(bundle):
    other = generate_demo_bundle(7)
    assert other["items"] != bundle["items"]
    assert other["dialogues"] != bundle["dialogues"]


def test_default_seed_is_42(bundle):
    assert json.dumps(generate_demo_bundle(), sort_keys=True) == json.dumps(bundle, sort_keys=True)


# --- bundle structure ------------------------------------------------------------------------


def test_bundle_is_json_serialisable_with_the_four_parts(bundle):
    assert set(bundle) == {"benchmark", "items", "reviews", "dialogues"}
    assert json.loads(json.dumps(bundle)) == bundle


def test_benchmark_metadata(bundle):
    meta = bundle["benchmark"]
    assert meta["name"] == "Concord Demo Tourism"
    assert meta["slug"] == "demo-tourism"
    assert meta["version"] == "1.0"
    assert meta["domain"] == "tourism"
    assert meta["license"] == "CC-BY-4.0"
    assert meta["protocols"] == ["turn", "log"]
    assert meta["splits"] == ["train", "dev", "test", "hidden"]
    assert meta["description"] and meta["citation"]


def test_records_use_exactly_the_bundle_format_keys(bundle):
    item_keys = {"id", "name", "type", "city", "lat", "lon", "price_level", "stars",
                 "categories", "attributes", "description"}
    dialogue_keys = {"id", "split", "scenario", "candidate_item_ids", "target_item_ids",
                     "seen_item_ids", "turns"}
    turn_keys = {"index", "role", "text", "action", "referenced_item_ids", "citations",
                 "gold_item_ids", "alternative_item_ids"}
    assert all(set(item) == item_keys for item in bundle["items"])
    assert all(set(r) == {"id", "item_id", "text", "stars"} for r in bundle["reviews"])
    assert all(set(d) == dialogue_keys for d in bundle["dialogues"])
    for dialogue in bundle["dialogues"]:
        assert all(set(turn) == turn_keys for turn in dialogue["turns"])
        for turn in dialogue["turns"]:
            for citation in turn["citations"]:
                assert set(citation) == {"label", "review_id", "quote", "start", "end"}


def test_ids_are_unique_stable_strings(bundle):
    for part, pattern in (("items", r"(phl|nol|tus)-[rha]-\d{3}"), ("reviews", r"rev-\d{6}"),
                          ("dialogues", r"dlg-\d{4}")):
        ids = [record["id"] for record in bundle[part]]
        assert len(ids) == len(set(ids))
        assert all(re.fullmatch(pattern, i) for i in ids)


# --- catalogue -------------------------------------------------------------------------------


def test_catalogue_has_forty_items_per_city_and_type(bundle):
    counts = Counter((item["city"], item["type"]) for item in bundle["items"])
    cities = {city for city, _ in counts}
    assert len(cities) >= 3
    assert {t for _, t in counts} == {"restaurant", "hotel", "attraction"}
    assert all(counts[(city, t)] >= 40 for city in cities
               for t in ("restaurant", "hotel", "attraction"))
    assert len(bundle["items"]) >= 360


def test_items_have_valid_prices_stars_and_categories(bundle):
    for item in bundle["items"]:
        assert isinstance(item["price_level"], int) and 1 <= item["price_level"] <= 4
        assert isinstance(item["stars"], float) and 1.0 <= item["stars"] <= 5.0
        assert (item["stars"] * 2).is_integer()
        assert item["categories"] and all(isinstance(c, str) for c in item["categories"])
        assert isinstance(item["attributes"], dict) and item["attributes"]["neighborhood"]
        assert item["attributes"]["noise"] in {"quiet", "moderate", "loud"}
        assert item["name"] and item["description"]
    assert len({item["price_level"] for item in bundle["items"]}) == 4


def test_item_coordinates_lie_within_a_few_km_of_the_city_centre(bundle):
    for item in bundle["items"]:
        assert isinstance(item["lat"], float) and isinstance(item["lon"], float)
        assert round(item["lat"], 6) == item["lat"] and round(item["lon"], 6) == item["lon"]
        centre = CITY_CENTRES[item["city"]]
        assert haversine_km(*centre, item["lat"], item["lon"]) < 6


def test_every_item_has_at_least_ten_reviews(bundle, items, reviews_by_item):
    assert set(reviews_by_item) == set(items)
    assert min(len(r) for r in reviews_by_item.values()) >= 10


def test_reviews_vary_and_include_negative_ones(bundle):
    texts = [r["text"] for r in bundle["reviews"]]
    assert len(set(texts)) == len(texts)
    stars = Counter(r["stars"] for r in bundle["reviews"])
    assert set(stars) <= {1, 2, 3, 4, 5}
    assert all(isinstance(r["stars"], int) for r in bundle["reviews"])
    assert 0.05 < (stars[1] + stars[2]) / len(texts) < 0.3


def test_reviews_mention_only_aspects_the_item_has(items, reviews_by_item):
    for item_id, item_reviews in reviews_by_item.items():
        attrs = items[item_id]["attributes"]
        text = " ".join(r["text"].lower() for r in item_reviews)
        for aspect, words in ASPECT_WORDS.items():
            if attrs.get(aspect) is False:
                assert not mentions(text, words), (item_id, aspect)
        if attrs["noise"] == "quiet":
            assert not re.search(r"\b(loud|lively|noisy)\b", text), item_id
        else:
            assert "quiet" not in text, item_id


def test_item_reviews_mention_the_items_aspects(items, reviews_by_item):
    for item_id, item in items.items():
        text = " ".join(r["text"].lower() for r in reviews_by_item[item_id])
        for aspect, words in ASPECT_WORDS.items():
            if item["attributes"].get(aspect) is True:
                assert mentions(text, words), (item_id, aspect)


# --- dialogues -------------------------------------------------------------------------------


def test_there_are_at_least_300_dialogues_of_6_to_12_turns(bundle):
    assert len(bundle["dialogues"]) >= 300
    for dialogue in bundle["dialogues"]:
        turns = dialogue["turns"]
        assert 6 <= len(turns) <= 12
        assert [t["index"] for t in turns] == list(range(len(turns)))
        assert [t["role"] for t in turns] == ["user", "system"] * (len(turns) // 2)
        assert all(t["action"] in ACTIONS for t in turns)
        assert turns[0]["action"] == "greet_and_seek"
        assert turns[-1]["action"] == "farewell"


def test_every_dialogue_elicits_preferences(bundle):
    for dialogue in bundle["dialogues"]:
        actions = [t["action"] for t in dialogue["turns"]]
        assert "ask_preference" in actions and "provide_preference" in actions
        assert "accept" in actions


def test_every_dialogue_rejects_then_recommends_again(bundle):
    for dialogue in bundle["dialogues"]:
        turns = dialogue["turns"]
        rejections = [t for t in turns if t["action"] == "reject_and_refine"]
        assert rejections, dialogue["id"]
        for turn in rejections:
            before, after = turns[turn["index"] - 1], turns[turn["index"] + 1]
            assert before["action"] == "recommend"
            assert after["action"] in GOLD_ACTIONS
            # The rejected suggestion was not the gold of that turn: a plausible but wrong item.
            assert before["referenced_item_ids"][0] not in before["gold_item_ids"]
        # After the last rejection the system gets it right (hard dialogues reject twice).
        after_last = turns[rejections[-1]["index"] + 1]
        assert after_last["gold_item_ids"][0] in after_last["referenced_item_ids"]


def test_rejected_item_violates_the_reason_and_is_not_offered_again(bundle, items):
    for dialogue in bundle["dialogues"]:
        for rejection in dialogue["scenario"]["rejections"]:
            rejected = items[rejection["item_id"]]
            reason = rejection["reason"]
            assert not satisfies(rejected, reason["kind"], reason["value"])
            for turn in dialogue["turns"][rejection["turn_index"]:]:
                assert rejection["item_id"] not in turn["alternative_item_ids"]
                assert rejection["item_id"] not in turn["gold_item_ids"]


def test_recommend_and_compare_turns_carry_quotes(bundle):
    actions = Counter()
    for dialogue in bundle["dialogues"]:
        for turn in gold_turns(dialogue):
            actions[turn["action"]] += 1
            assert turn["role"] == "system"
            assert turn["citations"], (dialogue["id"], turn["index"])
    assert actions["compare"] >= 100


def test_quote_offsets_match_the_cited_review(bundle, reviews):
    for dialogue in bundle["dialogues"]:
        for turn in dialogue["turns"]:
            for citation in turn["citations"]:
                text = reviews[citation["review_id"]]["text"]
                assert text[citation["start"]:citation["end"]] == citation["quote"]
                assert '"' not in citation["quote"]


def test_quotes_appear_in_the_response_followed_by_their_label(bundle, reviews):
    for dialogue in bundle["dialogues"]:
        for turn in dialogue["turns"]:
            labels = [c["label"] for c in turn["citations"]]
            assert labels == [f"R{i}" for i in range(1, len(labels) + 1)]
            assert LABEL.findall(turn["text"]) == labels
            for citation in turn["citations"]:
                assert f'"{citation["quote"]}" [{citation["label"]}]' in turn["text"]
                cited_item = reviews[citation["review_id"]]["item_id"]
                assert cited_item in turn["referenced_item_ids"]


def test_gold_is_set_only_on_recommend_and_compare_turns(bundle):
    for dialogue in bundle["dialogues"]:
        for turn in dialogue["turns"]:
            if turn["action"] in GOLD_ACTIONS:
                assert len(turn["gold_item_ids"]) == 1
                assert 1 <= len(turn["alternative_item_ids"]) <= 3
                assert not set(turn["gold_item_ids"]) & set(turn["alternative_item_ids"])
            else:
                assert turn["gold_item_ids"] == [] and turn["alternative_item_ids"] == []


def test_gold_and_alternatives_are_in_the_candidate_pool(bundle, items):
    for dialogue in bundle["dialogues"]:
        pool = dialogue["candidate_item_ids"]
        assert len(pool) == 8 and len(set(pool)) == 8
        scenario = dialogue["scenario"]
        assert {(items[i]["city"], items[i]["type"]) for i in pool} == {
            (scenario["city"], scenario["item_type"])}
        assert set(dialogue["target_item_ids"]) <= set(pool)
        assert not set(dialogue["seen_item_ids"]) & set(pool)
        for turn in gold_turns(dialogue):
            assert set(turn["gold_item_ids"]) | set(turn["alternative_item_ids"]) <= set(pool)
            assert turn["gold_item_ids"][0] == dialogue["target_item_ids"][0]


def test_gold_satisfies_every_constraint_stated_so_far(bundle, items):
    for dialogue in bundle["dialogues"]:
        for turn in gold_turns(dialogue):
            gold = items[turn["gold_item_ids"][0]]
            stated = constraints_before(dialogue, turn["index"])
            assert stated
            assert all(satisfies(gold, kind, value) for kind, value in stated)
            for alternative in turn["alternative_item_ids"]:
                met = sum(satisfies(items[alternative], k, v) for k, v in stated)
                assert met >= len(stated) - 1


def test_final_gold_is_the_only_pool_item_meeting_all_constraints(bundle, items):
    for dialogue in bundle["dialogues"]:
        constraints = [(c["kind"], c["value"]) for c in dialogue["scenario"]["constraints"]]
        full = [i for i in dialogue["candidate_item_ids"]
                if all(satisfies(items[i], k, v) for k, v in constraints)]
        assert full == [dialogue["target_item_ids"][0]]


def test_gold_respects_the_budget_stated_in_user_turns(bundle, items):
    with_budget = 0
    for dialogue in bundle["dialogues"]:
        for turn in gold_turns(dialogue):
            said = " ".join(t["text"].lower() for t in dialogue["turns"][:turn["index"]]
                            if t["role"] == "user")
            words = re.findall(r"\b(" + "|".join(BUDGET_MAX_PRICE) + r")\b", said)
            if not words:
                continue
            with_budget += 1
            limit = min(BUDGET_MAX_PRICE[w] for w in words)
            assert items[turn["gold_item_ids"][0]]["price_level"] <= limit, dialogue["id"]
        budget = dialogue["scenario"]["budget"]
        if budget:
            target = items[dialogue["target_item_ids"][0]]
            assert target["price_level"] <= dialogue["scenario"]["budget_max_price_level"]
            assert satisfies(target, "budget", budget)
    assert with_budget > 300


def test_users_never_name_the_item_they_reject(bundle, items):
    for dialogue in bundle["dialogues"]:
        for rejection in dialogue["scenario"]["rejections"]:
            turn = dialogue["turns"][rejection["turn_index"]]
            assert turn["action"] == "reject_and_refine"
            assert items[rejection["item_id"]]["name"] not in turn["text"]


def test_all_four_splits_are_present_in_roughly_60_15_15_10(bundle):
    splits = Counter(d["split"] for d in bundle["dialogues"])
    total = len(bundle["dialogues"])
    assert set(splits) == {"train", "dev", "test", "hidden"}
    for name, share in (("train", 0.6), ("dev", 0.15), ("test", 0.15), ("hidden", 0.1)):
        assert abs(splits[name] / total - share) < 0.03


def test_difficulty_tiers_differ_in_length_and_distractor_overlap(bundle, items):
    lengths, overlaps = defaultdict(list), defaultdict(list)
    for dialogue in bundle["dialogues"]:
        tier = dialogue["scenario"]["difficulty"]
        constraints = [(c["kind"], c["value"]) for c in dialogue["scenario"]["constraints"]]
        lengths[tier].append(len(dialogue["turns"]))
        for item_id in dialogue["candidate_item_ids"]:
            if item_id not in dialogue["target_item_ids"]:
                met = sum(satisfies(items[item_id], k, v) for k, v in constraints)
                overlaps[tier].append(met / len(constraints))
    assert set(lengths) == {"easy", "medium", "hard"}

    def mean(values):
        return sum(values) / len(values)

    assert mean(lengths["easy"]) < mean(lengths["medium"]) < mean(lengths["hard"])
    assert mean(overlaps["easy"]) < mean(overlaps["medium"]) < mean(overlaps["hard"])


# --- the gold can be recovered from the dialogue, but not from popularity -------------------


def recall_at_1(bundle, reviews_by_item, score):
    hits = total = 0
    for dialogue in bundle["dialogues"]:
        for turn in gold_turns(dialogue):
            query = " ".join(t["text"] for t in dialogue["turns"][:turn["index"]]
                             if t["role"] == "user")
            pool = dialogue["candidate_item_ids"]
            scores = score(query, pool)
            best = max(range(len(pool)), key=lambda k: (scores[k], -k))
            hits += pool[best] in turn["gold_item_ids"]
            total += 1
    return hits / total


def test_tfidf_retriever_beats_popularity_on_recall_at_1(bundle, items, reviews_by_item):
    ids = list(items)
    documents = [
        " ".join([items[i]["name"], " ".join(items[i]["categories"]), items[i]["description"]]
                 + [r["text"] for r in reviews_by_item[i]])
        for i in ids
    ]
    vectorizer = TfidfVectorizer(sublinear_tf=True, stop_words="english")
    matrix = vectorizer.fit_transform(documents)
    row = {item_id: k for k, item_id in enumerate(ids)}

    def tfidf(query, pool):
        return linear_kernel(vectorizer.transform([query]), matrix[[row[i] for i in pool]])[0]

    def popularity(query, pool):
        return [items[i]["stars"] * len(reviews_by_item[i]) for i in pool]

    tfidf_recall = recall_at_1(bundle, reviews_by_item, tfidf)
    popularity_recall = recall_at_1(bundle, reviews_by_item, popularity)
    assert tfidf_recall >= 0.3
    assert popularity_recall <= 0.2
    assert tfidf_recall - popularity_recall >= 0.2


# --- any seed --------------------------------------------------------------------------------


@settings(max_examples=3, deadline=None)
@given(seed=st.integers(min_value=0, max_value=2**32 - 1))
def test_any_seed_gives_a_consistent_bundle(seed):
    generated = generate_demo_bundle(seed)
    assert len(generated["dialogues"]) >= 300
    reviews = {r["id"]: r for r in generated["reviews"]}
    for dialogue in generated["dialogues"]:
        pool = set(dialogue["candidate_item_ids"])
        assert len(pool) == 8 and 6 <= len(dialogue["turns"]) <= 12
        assert any(t["action"] == "reject_and_refine" for t in dialogue["turns"])
        for turn in dialogue["turns"]:
            assert set(turn["gold_item_ids"]) | set(turn["alternative_item_ids"]) <= pool
            for c in turn["citations"]:
                assert reviews[c["review_id"]]["text"][c["start"]:c["end"]] == c["quote"]
                assert f'"{c["quote"]}" [{c["label"]}]' in turn["text"]


def test_generated_text_uses_the_right_article(bundle):
    """"Happy to help you find a attraction" read as broken English to a first visitor."""
    texts = [turn["text"] for d in bundle["dialogues"] for turn in d["turns"]]
    texts += [review["text"] for review in bundle["reviews"]]
    wrong = [t for t in texts if re.search(r"\b[Aa] (attraction|hotel|restaurant)s?\b", t)
             and re.search(r"\b[Aa] attraction", t)]
    assert not wrong, wrong[:3]
    assert any("find an attraction" in t for t in texts)


# --- a scale benchmark (make_demo_benchmark --dialogues N) -----------------------------------


def test_a_scale_benchmark_has_exactly_n_dialogues_with_the_demos_variety(tmp_path, bundle):
    from evaluation.lib.formats.bundle import Bundle, read_bundle, write_bundle

    generated = generate_demo_bundle(42, dialogues=1000)
    dialogues = generated["dialogues"]
    assert len(dialogues) == 1000 and len({d["id"] for d in dialogues}) == 1000
    assert generated["benchmark"]["slug"] == "demo-tourism-1000"
    # The catalogue is the demo's, and the first round is the demo's dialogues.
    assert generated["items"] == bundle["items"] and generated["reviews"] == bundle["reviews"]
    assert [d["turns"] for d in dialogues[:360]] == [d["turns"] for d in bundle["dialogues"]]
    # Later rounds are new dialogues, not copies: every text of round two is a new draw.
    first = {json.dumps(d["turns"]) for d in dialogues[:360]}
    assert not first & {json.dumps(d["turns"]) for d in dialogues[360:720]}
    items = {item["id"]: item for item in generated["items"]}
    targets = Counter(d["target_item_ids"][0] for d in dialogues)
    assert max(targets.values()) - min(targets.values()) <= 1  # every item, round by round
    assert {items[t]["city"] for t in targets} == {"Philadelphia", "New Orleans", "Tucson"}
    assert {items[t]["type"] for t in targets} == {"restaurant", "hotel", "attraction"}
    assert Counter(d["split"] for d in dialogues)["hidden"] > 50
    assert {d["scenario"]["difficulty"] for d in dialogues} == {"easy", "medium", "hard"}
    assert all(any(t["action"] == "reject_and_refine" for t in d["turns"]) for d in dialogues)
    assert sum(len(t["citations"]) for d in dialogues for t in d["turns"]) > 2000
    # Deterministic for a seed, different for another; and the bundle passes the validator.
    assert generate_demo_bundle(42, dialogues=1000) == generated
    assert generate_demo_bundle(7, dialogues=1000)["dialogues"] != dialogues
    write_bundle(Bundle(**generated), tmp_path / "scale")
    assert len(read_bundle(tmp_path / "scale", max_bytes=10**9).dialogues) == 1000


def test_a_scale_benchmark_of_fewer_dialogues_than_the_demo_is_its_prefix(bundle):
    assert generate_demo_bundle(42, dialogues=10)["dialogues"] == bundle["dialogues"][:10]
    with pytest.raises(ValueError, match="at least 1"):
        generate_demo_bundle(42, dialogues=0)


def test_the_vocabulary_file_keeps_the_demo_bundle_byte_for_byte():
    """The word lists moved from code into demo/vocabulary.json (issue 13); the bundle a seed makes
    must not change with such a move, or every stored demo number would shift."""
    bundle = generate_demo_bundle(42)
    digest = hashlib.sha256(json.dumps(bundle).encode()).hexdigest()
    assert digest.startswith("ebf1b347b312")
