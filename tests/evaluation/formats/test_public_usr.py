"""USR importer: real data (when present) and hand-written malformed inputs."""

import json
import re
from collections import Counter, defaultdict

import pytest

from evaluation.lib.formats.errors import FormatError
from evaluation.lib.formats.public.usr import import_usr

from .public_data import dataset, messages, roundtrip


@pytest.fixture(scope="module")
def result():
    return import_usr(dataset("usr"))


def test_responses_models_and_annotators(result):
    units = [u for u in result.units if u["unit_type"] == "turn"]
    assert len(units) == len(result.units) == 660
    assert Counter(u["source_dataset"] for u in units) == {
        "usr_personachat": 300, "usr_topicalchat": 360}
    assert len(result.systems()) == 9
    assert result.annotators() == ["er", "fl", "maxine", "mckenna", "me", "shikib", "sm", "yf",
                                   "yulan"]
    raters = defaultdict(set)
    for label in result.labels:
        raters[(label["unit_id"], label["field"])].add(label["annotator_id"])
    assert {len(v) for v in raters.values()} == {3}
    assert len(result.labels) == 660 * 6 * 3


def test_unit_ids_point_at_the_response(result):
    dialogues = {d["id"]: d for d in result.bundle.dialogues}
    for unit in result.units:
        dialogue_id, index = unit["unit_id"].rsplit("#", 1)
        assert re.fullmatch(r"(personachat|topicalchat)-\d+:[a-z0-9-]+", dialogue_id)
        turns = dialogues[dialogue_id]["turns"]
        assert int(index) == unit["turn_index"] == len(turns) - 1
        assert turns[-1]["role"] == "system" and turns[-2]["role"] == "user"
        assert dialogues[dialogue_id]["scenario"]["system"] == unit["system"]


def test_scales(result):
    scales = {name: (spec["scale_min"], spec["scale_max"]) for name, spec in result.fields.items()}
    assert scales == {"understandable": (0, 1), "natural": (1, 3), "maintains_context": (1, 3),
                      "engaging": (1, 3), "uses_knowledge": (0, 1), "overall": (1, 5)}
    for name, (low, high) in scales.items():
        values = {label["value"] for label in result.labels if label["field"] == name}
        assert values == set(range(low, high + 1)), name


def test_bundle_round_trips(result, tmp_path):
    assert roundtrip(result.bundle, tmp_path) == result.bundle


def _context(**ratings):
    response = {"response": "i love dogs\n", "model": "KV-MemNN", "Understandable": [1, 1, 0],
                "Natural": [3, 2, 3], "Maintains Context": [1, 1, 2], "Engaging": [2, 2, 2],
                "Uses Knowledge": [0, 1, 0], "Overall": [3, 4, 2], **ratings}
    return {"context": "hi\nhello , how are you ?\n", "fact": "your persona: i have a dog.\n",
            "annotators": ["a", "b", "c"], "responses": [response]}


def test_small_file(tmp_path):
    path = tmp_path / "usr_percona_chat.json"
    path.write_text(json.dumps([_context()]))
    result = import_usr(path)
    assert [u["unit_id"] for u in result.units] == ["personachat-0:kv-memnn#2"]
    turns = result.bundle.dialogues[0]["turns"]
    assert [(t["role"], t["text"]) for t in turns] == [
        ("system", "hi"), ("user", "hello , how are you ?"), ("system", "i love dogs")]
    assert len(result.labels) == 18


def test_wrong_rating_count_and_out_of_scale(tmp_path):
    path = tmp_path / "usr_topical_chat.json"
    path.write_text(json.dumps([_context(Natural=[3, 2], Overall=[3, 6, 2])]))
    with pytest.raises(FormatError) as caught:
        import_usr(path)
    assert messages(caught.value) == [
        "usr_topical_chat.json: $[0].responses[0].Natural: expected 3 ratings (one per "
        "annotator), got 2",
        "usr_topical_chat.json: $[0].responses[0].Overall[1]: expected a value in 1..5 "
        "(overall), got 6",
    ]
