"""The reference-free baselines against hand computations (lib/metrics/reference_free.py)."""

import numpy as np
import pytest

from evaluation.lib.metrics import reference_free as rf

DIALOGUE = {"id": "d1", "turns": [
    {"index": 0, "role": "user", "text": "A quiet cafe in Fishtown, please."},
    {"index": 1, "role": "system", "text": "Try the quiet quiet cafe: Hush Hush."},
    {"index": 2, "role": "user", "text": "Too far."},
    {"index": 3, "role": "system", "text": "Then Bean There."},
]}


class Letters:
    """A deterministic 'embedding': letter counts a–z, L2-normalised."""

    def encode(self, texts):
        rows = []
        for text in texts:
            row = np.array([text.lower().count(chr(97 + k)) for k in range(26)], float)
            rows.append(row / np.linalg.norm(row))
        return np.array(rows)


def test_lexical_scores_by_hand():
    # answer words: try the quiet quiet cafe hush hush (7); distinct 5/7; bigrams 6, all
    # distinct; context words: a quiet cafe in fishtown please -> quiet, quiet, cafe occur (3/7)
    scores = rf.lexical_scores("Try the quiet quiet cafe: Hush Hush.",
                               ["A quiet cafe in Fishtown, please."])
    assert scores == pytest.approx({"length": 7, "distinct_1": 5 / 7, "distinct_2": 6 / 6,
                                    "context_overlap": 3 / 7})


def test_an_empty_answer_has_only_a_length():
    assert rf.lexical_scores("", ["hello"]) == {"length": 0.0}
    assert rf.distinct(["one"], 2) is None


def test_turn_and_dialogue_units():
    units = ({"d1": DIALOGUE}, [rf.TurnUnit("d1#3", "d1", 3, "sys")],
             [rf.DialogueUnit("d1", "d1", "sys")])
    progress = []
    records = rf.lexical_records(*units) + rf.embedding_records(
        *units, Letters(), progress=lambda done, total: progress.append((done, total)), batch=2)
    # in answers (the turn, then the dialogue's two: 3), as its 4 distinct texts are encoded two
    # at a time: 3 × 2 // 4 = 1 after the first two texts, all 3 after the last two
    assert progress == [(1, 3), (3, 3)]
    by = {(r["unit_type"], r["metric"]): r["value"] for r in records}
    assert by[("turn", "length")] == 3  # then bean there
    assert by[("turn", "context_overlap")] == 0  # none of its words came before
    enc = Letters()
    first = float(enc.encode(["A quiet cafe in Fishtown, please."])[0]
                  @ enc.encode(["Try the quiet quiet cafe: Hush Hush."])[0])
    second = float(enc.encode(["Too far."])[0] @ enc.encode(["Then Bean There."])[0])
    assert by[("turn", "embedding_similarity")] == pytest.approx(second)
    assert by[("dialogue", "embedding_similarity")] == pytest.approx((first + second) / 2)
    assert by[("dialogue", "length")] == pytest.approx((7 + 3) / 2)
    assert all(r["system"] == "sys" for r in records)


def test_units_that_cannot_be_scored_are_left_out():
    turns = [rf.TurnUnit("u", "d1", 2), rf.TurnUnit("v", "x", 1), rf.TurnUnit("w", "d1", 9)]
    records = rf.lexical_records({"d1": DIALOGUE}, turns, [])
    assert records == []  # a user turn, an unknown dialogue, an unknown index


def test_the_packaged_sentence_model_scores_a_related_answer_higher():
    from evaluation.lib.rankers.embeddings import SentenceEncoder

    dialogue = {"id": "d", "turns": [
        {"index": 0, "role": "user", "text": "I want a sushi restaurant near the river."},
        {"index": 1, "role": "system", "text": "Kaze serves fresh sushi by the river."},
        {"index": 2, "role": "user", "text": "I want a sushi restaurant near the river."},
        {"index": 3, "role": "system", "text": "The museum closes at five on Mondays."}]}
    turns = [rf.TurnUnit("a", "d", 1), rf.TurnUnit("b", "d", 3)]
    records = rf.embedding_records({"d": dialogue}, turns, [], SentenceEncoder())
    sims = {r["unit_id"]: r["value"] for r in records if r["metric"] == rf.EMBEDDING_METRIC}
    assert sims["a"] > sims["b"] + 0.2
