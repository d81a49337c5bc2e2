"""A tiny, hand-written benchmark bundle for tests (the demo generator is tested on its own)."""

import copy

from evaluation.lib.formats.bundle import Bundle, write_bundle

TINY = {
    "benchmark": {
        "name": "Tiny Tourism", "slug": "tiny", "version": "1.0", "domain": "tourism",
        "description": "Three dialogues for tests.", "license": "CC0",
        "citation": "@misc{tiny}", "protocols": ["turn"],
        "splits": ["train", "test", "hidden"],
    },
    "items": [
        {"id": "r1", "name": "Harbor Grill", "type": "restaurant", "city": "Philadelphia",
         "lat": 39.95, "lon": -75.16, "price_level": 2, "stars": 4.5,
         "categories": ["seafood"], "attributes": {"noise": "quiet"},
         "description": "Seafood by the water."},
        {"id": "r2", "name": "Noodle Nook", "type": "restaurant", "city": "Philadelphia",
         "lat": 39.951, "lon": -75.165, "price_level": 1, "stars": 4.0,
         "categories": ["noodles"], "attributes": {}, "description": "Cheap noodles."},
        {"id": "h1", "name": "Old City Inn", "type": "hotel", "city": "Philadelphia",
         "lat": 39.949, "lon": -75.145, "price_level": 3, "stars": 3.5},
        {"id": "a1", "name": "Liberty Museum", "type": "attraction", "city": "Philadelphia"},
    ],
    "reviews": [
        {"id": "v1", "item_id": "r1",
         "text": "The crab cakes were incredible and the room was quiet.", "stars": 5},
        {"id": "v2", "item_id": "r1", "text": "Pricey but worth it for the view."},
        {"id": "v3", "item_id": "r2", "text": "Cheap, fast noodles; the broth is rich.",
         "stars": 4},
        {"id": "v4", "item_id": "h1", "text": "Friendly staff and free parking.", "stars": 3.5},
    ],
    "dialogues": [
        {"id": "d1", "split": "train",
         "scenario": {"city": "Philadelphia", "item_type": "restaurant", "difficulty": "easy"},
         "candidate_item_ids": ["r1", "r2"], "target_item_ids": ["r1"],
         "turns": [
             {"index": 0, "role": "user", "text": "I want quiet seafood.",
              "action": "provide_preference"},
             {"index": 1, "role": "system",
              "text": 'Try Harbor Grill: "The crab cakes were incredible" [R1].',
              "action": "recommend", "referenced_item_ids": ["r1"],
              "citations": [{"label": "R1", "review_id": "v1",
                             "quote": "The crab cakes were incredible", "start": 0, "end": 30}],
              "gold_item_ids": ["r1"], "alternative_item_ids": ["r2"]},
             {"index": 2, "role": "user", "text": "Too pricey, something cheaper?",
              "action": "reject_and_refine"},
             {"index": 3, "role": "system",
              "text": 'Noodle Nook: "Cheap, fast noodles" [R1].',
              "action": "recommend", "referenced_item_ids": ["r2"],
              "citations": [{"label": "R1", "review_id": "v3", "quote": "Cheap, fast noodles",
                             "start": 0, "end": 19}],
              "gold_item_ids": ["r2"], "alternative_item_ids": []},
         ]},
        {"id": "d2", "split": "test", "scenario": {"difficulty": "hard"},
         "candidate_item_ids": ["h1", "a1"],
         "turns": [
             {"index": 0, "role": "user", "text": "A hotel with parking?",
              "action": "greet_and_seek"},
             {"index": 1, "role": "system", "text": 'Old City Inn has "free parking" [R1].',
              "action": "recommend", "referenced_item_ids": ["h1"],
              "citations": [{"label": "R1", "review_id": "v4", "quote": "free parking",
                             "start": 19, "end": 31}],
              "gold_item_ids": ["h1"], "alternative_item_ids": []},
         ]},
        {"id": "d3", "split": "hidden", "scenario": {"difficulty": "easy"},
         "candidate_item_ids": ["r1", "r2", "h1"],
         "turns": [
             {"index": 0, "role": "user", "text": "Something with a view.",
              "action": "provide_preference"},
             {"index": 1, "role": "system", "text": 'Harbor Grill: "worth it for the view" [R1].',
              "action": "recommend", "referenced_item_ids": ["r1"],
              "citations": [{"label": "R1", "review_id": "v2", "quote": "worth it for the view",
                             "start": 11, "end": 32}],
              "gold_item_ids": ["r1"], "alternative_item_ids": []},
         ]},
    ],
}


def tiny_data() -> dict:
    """A fresh deep copy that a test may corrupt."""
    return copy.deepcopy(TINY)


def write_tiny(directory, data: dict | None = None):
    write_bundle(Bundle(**(data or tiny_data())), directory)
    return directory
