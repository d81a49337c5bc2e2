"""CRSArena-Eval importer: real data (when present) and hand-written malformed inputs."""

import json
import re
from collections import Counter

import pytest

from evaluation.lib.formats.errors import FormatError
from evaluation.lib.formats.public import PUBLIC_IMPORTERS, import_public
from evaluation.lib.formats.public.crs_arena_eval import import_crs_arena_eval

from .public_data import PUBLIC, dataset, messages, roundtrip

SYSTEMS = {"chatgpt_redial", "barcor_redial", "unicrs_redial", "crbcrs_redial", "kbrd_redial",
           "chatgpt_opendialkg", "barcor_opendialkg", "unicrs_opendialkg", "kbrd_opendialkg"}


@pytest.fixture(scope="module")
def result():
    return import_crs_arena_eval(dataset("crs_arena_eval"))


@pytest.fixture(scope="module")
def source():
    return json.loads((dataset("crs_arena_eval") / "crs_arena_eval.json").read_text())


def test_registry_names_every_importer():
    assert set(PUBLIC_IMPORTERS) == {"crs_arena_eval", "ab_redial", "crs_arena_dial", "usr"}
    with pytest.raises(ValueError, match="unknown public data set"):
        import_public("nope", PUBLIC)


def test_conversations_systems_and_source_datasets(result):
    dialogues = result.bundle.dialogues
    assert len(dialogues) == 467
    assert set(result.systems()) == SYSTEMS
    assert sum(len(logs) for logs in result.logs.values()) == 467
    assert Counter(d["scenario"]["source_dataset"] for d in dialogues) == {
        "redial": 267, "opendialkg": 200}
    for dialogue in dialogues:
        scenario = dialogue["scenario"]
        assert dialogue["id"] == scenario["conv_id"]
        assert dialogue["id"].startswith(f"{scenario['system']}_")
        assert scenario["system"] == f"{scenario['crs']}_{scenario['source_dataset']}"
        assert dialogue["split"] == "test"
    assert result.bundle.benchmark["protocols"] == ["log"]
    assert result.bundle.benchmark["splits"] == ["test"]


def test_logs_are_the_conversations_of_their_system(result):
    by_id = {d["id"]: d for d in result.bundle.dialogues}
    for system, logs in result.logs.items():
        for log in logs:
            dialogue = by_id[log["dialogue_id"]]
            assert log["log_id"] == dialogue["id"]
            assert dialogue["scenario"]["system"] == system
            assert [(t["role"], t["text"]) for t in log["turns"]] == [
                (t["role"], t["text"]) for t in dialogue["turns"]]


def test_unit_ids_follow_the_source(result, source):
    dialogue_units = {u["unit_id"] for u in result.units if u["unit_type"] == "dialogue"}
    turn_units = {u["unit_id"]: u for u in result.units if u["unit_type"] == "turn"}
    assert dialogue_units == {c["conv_id"] for c in source}
    expected = {f"{c['conv_id']}#{t['turn_ind']}" for c in source for t in c["dialogue"]
                if t["role"] == "ASST"}
    assert set(turn_units) == expected and len(expected) == 2235
    by_id = {d["id"]: d for d in result.bundle.dialogues}
    for unit_id, unit in turn_units.items():
        conv_id, index = unit_id.rsplit("#", 1)
        assert re.fullmatch(r"\d+", index)
        assert unit["dialogue_id"] == conv_id and unit["turn_index"] == int(index)
        assert by_id[conv_id]["turns"][int(index)]["role"] == "system"


def test_labels_are_aggregates_within_their_scales(result):
    assert all(label["annotator_id"] is None for label in result.labels)
    assert result.annotators() == []
    counts = Counter(label["field"] for label in result.labels)
    assert counts == {"relevance": 2230, "interestingness": 2235, "understanding": 467,
                      "task_completion": 467, "interest_arousal": 467, "efficiency": 467,
                      "dialogue_overall": 467, "preference_elicitation": 467,
                      "explanation": 467}
    scales = {name: (spec["scale_min"], spec["scale_max"]) for name, spec in result.fields.items()}
    assert scales == {"relevance": (0, 2), "interestingness": (0, 2), "understanding": (0, 2),
                      "task_completion": (0, 2), "interest_arousal": (0, 2),
                      "efficiency": (0, 1), "dialogue_overall": (0, 4),
                      "preference_elicitation": (0, 2), "explanation": (0, 2)}
    for label in result.labels:
        low, high = label["scale"]
        assert isinstance(label["value"], int) and low <= label["value"] <= high
        assert result.fields[label["field"]]["unit_type"] == label["unit_type"]
    # The released data use every point of every declared scale.
    for name, (low, high) in scales.items():
        values = {label["value"] for label in result.labels if label["field"] == name}
        assert values == set(range(low, high + 1)), name
    assert any("relevance" in note and "missing" in note for note in result.notes)


def test_bundle_round_trips_through_the_validating_reader(result, tmp_path):
    assert roundtrip(result.bundle, tmp_path) == result.bundle


def test_file_path_works_like_the_folder(result):
    again = import_public("crs_arena_eval", dataset("crs_arena_eval") / "crs_arena_eval.json")
    assert again.labels == result.labels


# --- malformed inputs --------------------------------------------------------------------------

def _conversation(**changes):
    conversation = {
        "conv_id": "kbrd_redial_0a1b2c3d-0000-0000-0000-000000000001",
        "dialogue": [
            {"turn_ind": 0, "role": "USER", "utterance": "a comedy please"},
            {"turn_ind": 1, "role": "ASST", "utterance": "Have you seen Airplane! (1980)?",
             "turn_level_aggregated": {"relevance": 2, "interestingness": 1}},
        ],
        "dial_level_aggregated": {"understanding": 1, "task_completion": 0,
                                  "interest_arousal": 0, "efficiency": 1,
                                  "dialogue_overall": 2, "preference_elicitation": 0,
                                  "explanation": 0},
    }
    conversation.update(changes)
    return conversation


def _write(tmp_path, data) -> object:
    path = tmp_path / "crs_arena_eval.json"
    path.write_text(data if isinstance(data, str) else json.dumps(data, indent=1))
    return path


def test_small_valid_file(tmp_path):
    result = import_crs_arena_eval(_write(tmp_path, [_conversation()]))
    assert [u["unit_id"] for u in result.units] == [
        "kbrd_redial_0a1b2c3d-0000-0000-0000-000000000001",
        "kbrd_redial_0a1b2c3d-0000-0000-0000-000000000001#1"]
    assert len(result.labels) == 9


def test_malformed_json_names_the_line(tmp_path):
    path = _write(tmp_path, '[\n {"conv_id": "x",\n  "dialogue": [}\n]')
    with pytest.raises(FormatError) as caught:
        import_crs_arena_eval(path)
    assert messages(caught.value)[0].startswith("crs_arena_eval.json:3: $: malformed JSON")


def test_every_problem_is_reported_and_nothing_is_returned(tmp_path):
    bad_turn = _conversation(conv_id="unicrs_opendialkg_0a1b2c3d-0000-0000-0000-000000000002")
    bad_turn["dialogue"][1]["turn_level_aggregated"]["relevance"] = 3
    bad_turn["dialogue"][1]["turn_ind"] = 5
    missing = _conversation(conv_id="chatgpt_redial_0a1b2c3d-0000-0000-0000-000000000003")
    del missing["dial_level_aggregated"]
    path = _write(tmp_path, [_conversation(), bad_turn, missing,
                             _conversation(conv_id="nodataset"), _conversation()])
    with pytest.raises(FormatError) as caught:
        import_crs_arena_eval(path)
    assert messages(caught.value) == [
        "crs_arena_eval.json: $[1].dialogue[1].turn_ind: expected 1 (turns numbered 0, 1, 2, "
        "… in order), got 5",
        "crs_arena_eval.json: $[2].dial_level_aggregated: required field is missing",
        "crs_arena_eval.json: $[3].conv_id: expected <crs>_<dataset>_<user id> with dataset "
        "redial or opendialkg, got 'nodataset'",
        "crs_arena_eval.json: $[4].conv_id: duplicate conversation id "
        "'kbrd_redial_0a1b2c3d-0000-0000-0000-000000000001'",
    ]


def test_out_of_scale_and_unknown_labels(tmp_path):
    conversation = _conversation()
    conversation["dialogue"][1]["turn_level_aggregated"]["relevance"] = 3
    conversation["dial_level_aggregated"]["fluency"] = 1
    conversation["dial_level_aggregated"]["efficiency"] = "yes"
    with pytest.raises(FormatError) as caught:
        import_crs_arena_eval(_write(tmp_path, [conversation]))
    assert messages(caught.value) == [
        "crs_arena_eval.json: $[0].dial_level_aggregated.fluency: unexpected label (expected: "
        "understanding, task_completion, interest_arousal, efficiency, dialogue_overall, "
        "preference_elicitation, explanation)",
        'crs_arena_eval.json: $[0].dial_level_aggregated.efficiency: expected a number, '
        'got "yes"',
        "crs_arena_eval.json: $[0].dialogue[1].turn_level_aggregated.relevance: expected a "
        "value in 0..2 (relevance), got 3",
    ]


def test_labels_only_on_assistant_turns(tmp_path):
    conversation = _conversation()
    conversation["dialogue"][0]["turn_level_aggregated"] = {"relevance": 1}
    conversation["dialogue"][1]["role"] = "BOT"
    with pytest.raises(FormatError) as caught:
        import_crs_arena_eval(_write(tmp_path, [conversation]))
    assert messages(caught.value) == [
        "crs_arena_eval.json: $[0].dialogue[0].turn_level_aggregated: expected only on ASST "
        "turns",
        "crs_arena_eval.json: $[0].dialogue[1].role: expected one of USER, ASST, got 'BOT'",
    ]


def test_not_a_list_and_missing_path(tmp_path):
    with pytest.raises(FormatError, match=r"crs_arena_eval.json: \$: expected array"):
        import_crs_arena_eval(_write(tmp_path, {"conv_id": "x"}))
    with pytest.raises(FormatError, match="no such file or folder"):
        import_crs_arena_eval(tmp_path / "absent")
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(FormatError, match="no CRSArena-Eval file here"):
        import_crs_arena_eval(empty)
