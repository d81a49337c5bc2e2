"""AB-ReDial importer: real data (when present) and hand-written malformed inputs."""

import csv
import re
from collections import Counter, defaultdict

import pytest

from evaluation.lib.formats.errors import FormatError
from evaluation.lib.formats.public.ab_redial import import_ab_redial

from .public_data import dataset, messages, roundtrip

REUSED = {"J7", "G0", "F1", "AT", "BO"}


@pytest.fixture(scope="module")
def result():
    return import_ab_redial(dataset("ab_redial"))


def test_two_hundred_dialogues_and_the_reused_conv_ids(result):
    ids = [d["id"] for d in result.bundle.dialogues]
    assert len(ids) == len(set(ids)) == 200
    disambiguated = [i for i in ids if "~" in i]
    assert len(disambiguated) == 10
    assert Counter(i.split("~")[0] for i in disambiguated) == {conv: 2 for conv in REUSED}
    assert all(re.fullmatch(r"[A-Z0-9]{2}~[0-9a-f]{6}", i) for i in disambiguated)
    assert not REUSED & set(ids)
    assert sum("is used for 2 different dialogues" in note for note in result.notes) == 5
    # Two dialogues sharing a ConvId really differ in text.
    by_id = {d["id"]: d for d in result.bundle.dialogues}
    for conv in REUSED:
        first, second = sorted(i for i in ids if i.startswith(f"{conv}~"))
        assert by_id[first]["turns"] != by_id[second]["turns"]
        assert by_id[first]["scenario"]["conv_id"] == conv


def test_three_or_four_annotators_per_unit(result):
    rows = Counter(c["unit_id"] for c in result.comments)  # one justification per CSV row
    assert len(rows) == 200 and set(rows.values()) == {3, 4}
    raters = defaultdict(set)
    for label in result.labels:
        raters[(label["unit_type"], label["unit_id"])].add(label["annotator_id"])
    turn_raters = Counter(len(v) for (kind, _), v in raters.items() if kind == "turn")
    assert turn_raters == {3: 480, 4: 120}
    # Four annotators left every dialogue-level cell empty: those units have 2 or 3 raters.
    dialogue_raters = Counter(len(v) for (kind, _), v in raters.items() if kind == "dialogue")
    assert sum(dialogue_raters.values()) == 200 and set(dialogue_raters) <= {2, 3, 4}
    assert result.annotators() == ["slot-1", "slot-2", "slot-3", "slot-4"]
    assert result.logs == {}


def test_turn_units(result):
    dialogues = {d["id"]: d for d in result.bundle.dialogues}
    turns = [u for u in result.units if u["unit_type"] == "turn"]
    assert len(turns) == 600
    for unit in turns:
        dialogue_id, k = unit["unit_id"].rsplit("#turn", 1)
        assert dialogue_id == unit["dialogue_id"] in dialogues and k in {"1", "2", "3"}
        assert len(unit["context"]) == 4
        if unit["turn_index"] is not None:
            turn = dialogues[dialogue_id]["turns"][unit["turn_index"]]
            assert turn["text"] == unit["context"][2]["text"]
    assert sum(u["turn_index"] is not None for u in turns) >= 590


def test_fields_scales_and_label_ranges(result):
    scales = {name: (spec["unit_type"], spec["scale_min"], spec["scale_max"])
              for name, spec in result.fields.items()}
    assert scales == {
        "understanding": ("dialogue", 1, 3), "task_completion": ("dialogue", 1, 3),
        "interest_arousal": ("dialogue", 0, 3), "efficiency": ("dialogue", 0, 1),
        "dialogue_overall": ("dialogue", 1, 5), "relevance": ("turn", 0, 4),
        "interestingness": ("turn", 1, 3), "turn_overall": ("turn", 1, 5)}
    counts = Counter(label["field"] for label in result.labels)
    assert counts == {"understanding": 636, "task_completion": 636, "interest_arousal": 636,
                      "efficiency": 636, "dialogue_overall": 636, "relevance": 1920,
                      "interestingness": 1920, "turn_overall": 1919}
    for label in result.labels:
        assert isinstance(label["value"], int)
        assert label["scale"][0] <= label["value"] <= label["scale"][1]
    keys = [(x["unit_type"], x["unit_id"], x["annotator_id"], x["field"]) for x in result.labels]
    assert len(keys) == len(set(keys))


def test_bundle_round_trips(result, tmp_path):
    assert roundtrip(result.bundle, tmp_path) == result.bundle


def test_either_csv_file_names_the_data_set(result):
    again = import_ab_redial(dataset("ab_redial") / "annotated_turns.csv")
    assert again.labels == result.labels


# --- malformed inputs --------------------------------------------------------------------------

DIALOGUE_HEADER = ["ConvId", "utterance0", "utterance1", "utterance2", "understanding",
                   "task-completion", "interest-arousal", "efficiency", "dialogue-overall",
                   "justification-text"]
TURN_HEADER = ["ConvId", *[f"utterance{i}" for i in range(4)], "relevance1",
               "interestingness1", "overall1", *[f"utterance{i}" for i in range(4, 8)],
               "relevance2", "interestingness2", "overall2",
               *[f"utterance{i}" for i in range(8, 12)], "relevance3", "interestingness3",
               "overall3"]


def _dialogue_row(conv="AA", first="SYSTEM\tHi", labels=("3.0", "2.0", "1.0", "1.0", "4.0")):
    return [conv, first, "USER\tA comedy?", "SYSTEM\tTry \"Airplane! (1980)\"", *labels, "ok"]


def _turn_row(conv="AA", labels=("4", "2", "5")):
    window = ["SYSTEM\tHi", "USER\tA comedy?", "SYSTEM\tTry \"Airplane! (1980)\"",
              "USER\tThanks"]
    return [conv, *window, *labels, *window, *labels, *window, *labels]


def _write(folder, dialogue_rows, turn_rows):
    folder.mkdir(exist_ok=True)
    for name, header, rows in (("annotated_dialogues.csv", DIALOGUE_HEADER, dialogue_rows),
                               ("annotated_turns.csv", TURN_HEADER, turn_rows)):
        with (folder / name).open("w", newline="", encoding="utf-8") as out:
            csv.writer(out).writerows([header, *rows])
    return folder


def test_small_valid_study_with_a_reused_conv_id(tmp_path):
    folder = _write(tmp_path / "ab",
                    [_dialogue_row(), _dialogue_row(), _dialogue_row(),
                     _dialogue_row(first="SYSTEM\tHello there"), _dialogue_row(first="USER\tHey"),
                     _dialogue_row(first="USER\tHey")],
                    [_turn_row(), _turn_row(), _turn_row()])
    result = import_ab_redial(folder)
    assert len(result.bundle.dialogues) == 3
    assert all(d["id"].startswith("AA~") for d in result.bundle.dialogues)
    turn_units = [u for u in result.units if u["unit_type"] == "turn"]
    owner = next(d for d in result.bundle.dialogues if d["turns"][0]["text"] == "Hi")["id"]
    assert {u["dialogue_id"] for u in turn_units} == {owner}
    assert [u["turn_index"] for u in turn_units] == [2, 2, 2]
    assert result.bundle.dialogues[0]["turns"][0]["action"] == "other"


def test_bad_cells_are_reported_with_their_line(tmp_path):
    folder = _write(tmp_path / "ab",
                    [_dialogue_row(), _dialogue_row(labels=("3", "x", "1", "1", "4")),
                     _dialogue_row(labels=("4", "2", "1", "1", "4")),
                     _dialogue_row(first="Hello")],
                    [_turn_row(), _turn_row(conv="ZZ")])
    with pytest.raises(FormatError) as caught:
        import_ab_redial(folder)
    assert messages(caught.value) == [
        "annotated_dialogues.csv:5: $.utterance0: expected SYSTEM or USER, then the text, "
        "got 'Hello'",
        "annotated_dialogues.csv:3: $.task-completion: expected a number, got 'x'",
        "annotated_dialogues.csv:4: $.understanding: expected a value in 1..3 "
        "(understanding), got 4",
        "annotated_turns.csv:3: $.ConvId: ConvId 'ZZ' has no dialogue in "
        "annotated_dialogues.csv",
    ]


def test_missing_file_and_missing_column(tmp_path):
    folder = _write(tmp_path / "ab", [_dialogue_row()], [_turn_row()])
    (folder / "annotated_turns.csv").unlink()
    with pytest.raises(FormatError, match="annotated_turns.csv: \\$: required file is missing"):
        import_ab_redial(folder / "annotated_dialogues.csv")
    _write(folder, [_dialogue_row()], [_turn_row()])
    lines = (folder / "annotated_dialogues.csv").read_text().splitlines()
    (folder / "annotated_dialogues.csv").write_text(
        "\n".join(line.rsplit(",", 2)[0] for line in lines) + "\n")
    with pytest.raises(FormatError) as caught:
        import_ab_redial(folder)
    assert messages(caught.value) == [
        "annotated_dialogues.csv:1: $.dialogue-overall: required column is missing"]
