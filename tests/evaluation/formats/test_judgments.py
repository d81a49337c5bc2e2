"""External human judgments and metric scores (formats.md §5): formats, errors, atomicity."""

import json

import pytest

from evaluation.lib.formats.errors import FormatError
from evaluation.lib.formats.judgments import (
    parse_judgments,
    parse_scores,
    read_judgments,
    read_scores,
)
from evaluation.lib.formats.public.crs_arena_eval import import_crs_arena_eval

from .public_data import dataset, messages

KNOWN = {"dialogue": {"c1", "c2"}, "turn": {"c1#1", "c1#3", "c2#1"}}


def _jsonl(*records) -> bytes:
    return "".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in records).encode()


def _errors(raw: bytes, file: str, **kwargs) -> list[str]:
    with pytest.raises(FormatError) as caught:
        parse_judgments(raw, file, **kwargs)
    return messages(caught.value)


# --- judgments ----------------------------------------------------------------------------------

def test_csv_per_annotator_and_aggregated(tmp_path):
    path = tmp_path / "labels.csv"
    path.write_text("unit_type,unit_id,annotator_id,field,value\n"
                    "turn,c1#1,a1,relevance,2\n"
                    "turn,c1#1,a2,relevance, 1.0 \n"
                    "dialogue,c1,,overall,3.5\n"
                    "dialogue,c2,a1,verdict,satisfied\n", encoding="utf-8-sig")
    result = read_judgments(path, known_units=KNOWN)
    assert result.labels == [
        {"unit_type": "turn", "unit_id": "c1#1", "annotator_id": "a1", "field": "relevance",
         "value": 2, "scale": None},
        {"unit_type": "turn", "unit_id": "c1#1", "annotator_id": "a2", "field": "relevance",
         "value": 1, "scale": None},
        {"unit_type": "dialogue", "unit_id": "c1", "annotator_id": None, "field": "overall",
         "value": 3.5, "scale": None},
        {"unit_type": "dialogue", "unit_id": "c2", "annotator_id": "a1", "field": "verdict",
         "value": "satisfied", "scale": None},
    ]
    assert result.annotators() == ["a1", "a2"]
    assert result.fields["relevance"]["level"] == "interval"
    assert (result.fields["relevance"]["scale_min"], result.fields["relevance"]["scale_max"]) \
        == (1, 2)
    assert result.fields["verdict"] == {
        "unit_type": "dialogue", "scale_min": None, "scale_max": None, "level": "nominal",
        "description": "inferred from the file: text categories", "values": ["satisfied"]}


def test_jsonl_without_annotator_column():
    result = parse_judgments(_jsonl(
        {"unit_type": "turn", "unit_id": "c1#1", "field": "relevance", "value": 2},
        "",
        {"unit_type": "turn", "unit_id": "c1#3", "annotator_id": None, "field": "relevance",
         "value": 0}), "labels.jsonl")
    assert [label["annotator_id"] for label in result.labels] == [None, None]


def test_malformed_line_and_missing_field():
    raw = _jsonl({"unit_type": "turn", "unit_id": "c1#1", "field": "relevance", "value": 2},
                 '{"unit_type": "turn", "unit_id": ',
                 {"unit_type": "turn", "field": "relevance", "value": 1},
                 {"unit_type": "system", "unit_id": "x", "field": "f", "value": 1, "extra": 1})
    assert _errors(raw, "j.jsonl") == [
        "j.jsonl:2: $: malformed JSON: Expecting value (column 34)",
        "j.jsonl:3: $.unit_id: required field is missing",
        "j.jsonl:4: $: unexpected field: 'extra' was unexpected",
        'j.jsonl:4: $.unit_type: expected one of turn, dialogue, item, got "system"',
    ]


def test_duplicate_judgment_is_rejected():
    raw = _jsonl({"unit_type": "turn", "unit_id": "c1#1", "annotator_id": "a", "field": "r",
                  "value": 2},
                 {"unit_type": "turn", "unit_id": "c1#1", "annotator_id": "b", "field": "r",
                  "value": 2},
                 {"unit_type": "turn", "unit_id": "c1#1", "annotator_id": "a", "field": "r",
                  "value": 1},
                 {"unit_type": "turn", "unit_id": "c1#1", "field": "r", "value": 1})
    assert _errors(raw, "j.jsonl") == [
        "j.jsonl:3: $: duplicate judgment of turn 'c1#1' by annotator 'a' on field 'r' "
        "(first on line 1)",
        "j.jsonl:4: $.annotator_id: this unit and field already has per-annotator judgments "
        "(line 1); do not mix aggregated and per-annotator values",
    ]


def test_non_numeric_values_in_a_numeric_field():
    raw = (b"unit_type,unit_id,annotator_id,field,value\n"
           b"turn,c1#1,a,relevance,2\n"
           b"turn,c1#3,a,relevance,high\n"
           b"turn,c2#1,a,relevance,nan\n")
    assert _errors(raw, "j.csv") == [
        "j.csv:3: $.value: expected a number: field 'relevance' holds numbers (e.g. line 2), "
        'got "high"',
        "j.csv:4: $.value: expected a number: field 'relevance' holds numbers (e.g. line 2), "
        'got "nan"',
    ]
    raw = _jsonl({"unit_type": "turn", "unit_id": "c1#1", "field": "r", "value": True},
                 '{"unit_type": "turn", "unit_id": "c1#3", "field": "r", "value": NaN}')
    assert _errors(raw, "j.jsonl") == [
        "j.jsonl:1: $.value: expected ['number', 'string'], got true",
        "j.jsonl:2: $.value: expected a finite number, got nan",
    ]


def test_declared_fields_check_scale_type_and_names():
    fields = {"relevance": {"unit_type": "turn", "scale_min": 0, "scale_max": 2,
                            "level": "ordinal"},
              "verdict": {"unit_type": "dialogue", "scale_min": None, "scale_max": None,
                          "level": "nominal", "values": ["satisfied", "frustrated"]}}
    raw = _jsonl({"unit_type": "turn", "unit_id": "c1#1", "field": "relevance", "value": 2},
                 {"unit_type": "turn", "unit_id": "c1#3", "field": "relevance", "value": 3},
                 {"unit_type": "turn", "unit_id": "c2#1", "field": "relevance", "value": "2"},
                 {"unit_type": "dialogue", "unit_id": "c1", "field": "relevance", "value": 1},
                 {"unit_type": "dialogue", "unit_id": "c1", "field": "verdict", "value": "meh"},
                 {"unit_type": "dialogue", "unit_id": "c2", "field": "fluency", "value": 1})
    assert _errors(raw, "j.jsonl", fields=fields) == [
        "j.jsonl:2: $.value: expected a value in 0..2 for field 'relevance', got 3",
        "j.jsonl:3: $.value: expected a number for ordinal field 'relevance', got \"2\"",
        "j.jsonl:4: $.unit_type: field 'relevance' is a turn field, got dialogue",
        'j.jsonl:5: $.value: expected one of satisfied, frustrated, got "meh"',
        "j.jsonl:6: $.field: unknown field 'fluency' (expected one of relevance, verdict)",
    ]
    ok = parse_judgments(raw.splitlines(keepends=True)[0], "j.jsonl", fields=fields)
    assert ok.labels[0]["scale"] == (0, 2)


def test_unknown_unit_and_field_on_two_unit_types():
    raw = _jsonl({"unit_type": "turn", "unit_id": "c9#1", "field": "r", "value": 1},
                 {"unit_type": "dialogue", "unit_id": "c1#1", "field": "r", "value": 1})
    assert _errors(raw, "j.jsonl", known_units=KNOWN) == [
        "j.jsonl:1: $.unit_id: unknown turn id 'c9#1' (not in the benchmark)",
        "j.jsonl:2: $.unit_id: unknown dialogue id 'c1#1' (not in the benchmark)",
        "j.jsonl:2: $.unit_type: field 'r' is used on turn units (line 1); a field belongs "
        "to one unit type",
    ]


def test_csv_header_problems_and_ragged_rows():
    assert _errors(b"unit,unit_id,field,value\n", "j.csv") == [
        "j.csv:1: $.unit_type: required column is missing",
        "j.csv:1: $.unit: unexpected column (expected: unit_type, unit_id, annotator_id, "
        "field, value)",
    ]
    raw = (b"unit_type,unit_id,field,value\n"
           b'dialogue,c1,"multi\nline",1,extra\n'
           b"dialogue,c2,f,\n")
    assert _errors(raw, "j.csv") == [
        "j.csv:2: $: expected 4 cells as in the header, got 5",
        'j.csv:4: $.value: expected at least 1 characters, got ""',
    ]
    assert _errors(b"\xff\xfe", "j.csv") == ["j.csv:1: $: not UTF-8 text (byte 0xff)"]


def test_oversize_file_is_refused_before_reading(tmp_path):
    path = tmp_path / "big.jsonl"
    path.write_bytes(b" " * 100)
    with pytest.raises(FormatError, match="over the 10 byte limit"):
        read_judgments(path, max_bytes=10)


def test_judgments_against_a_public_benchmark():
    result = import_crs_arena_eval(dataset("crs_arena_eval"))
    conv_id = result.bundle.dialogues[0]["id"]
    raw = _jsonl({"unit_type": "turn", "unit_id": f"{conv_id}#1", "annotator_id": "x",
                  "field": "relevance", "value": 1},
                 {"unit_type": "turn", "unit_id": f"{conv_id}#0", "annotator_id": "x",
                  "field": "relevance", "value": 1})
    # Turn 0 is the user's: not a unit.
    assert _errors(raw, "mine.jsonl", known_units=result.known_units(),
                   fields=result.fields) == [
        f"mine.jsonl:2: $.unit_id: unknown turn id '{conv_id}#0' (not in the benchmark)"]


# --- scores ---------------------------------------------------------------------------------------

def test_scores_jsonl_and_csv(tmp_path):
    path = tmp_path / "scores.jsonl"
    path.write_bytes(_jsonl(
        {"metric": "face_overall", "unit_type": "dialogue", "unit_id": "c1", "value": 0.5},
        {"metric": "face_overall", "unit_type": "dialogue", "unit_id": "c2", "value": 1,
         "system": "kbrd_redial", "evaluator": "face"}))
    assert read_scores(path, known_units=KNOWN) == [
        {"metric": "face_overall", "unit_type": "dialogue", "unit_id": "c1", "value": 0.5},
        {"metric": "face_overall", "unit_type": "dialogue", "unit_id": "c2", "value": 1,
         "system": "kbrd_redial", "evaluator": "face"}]
    raw = b"metric,unit_type,unit_id,value,system\nm,turn,c1#1,0.25,\nm,turn,c1#1,0.5,s2\n"
    assert [s["value"] for s in parse_scores(raw, "s.csv")] == [0.25, 0.5]


def test_score_errors_are_line_numbered_and_atomic():
    raw = _jsonl({"metric": "m", "unit_type": "turn", "unit_id": "c1#1", "value": 0.1},
                 {"metric": "m", "unit_type": "turn", "unit_id": "c1#1", "value": 0.2},
                 {"metric": "m", "unit_type": "turn", "unit_id": "c1#3", "value": "high"},
                 {"metric": "m", "unit_type": "turn", "unit_id": "zz", "value": 0.3},
                 {"metric": "m", "unit_type": "turn", "value": 0.3},
                 "not json")
    with pytest.raises(FormatError) as caught:
        parse_scores(raw, "s.jsonl", known_units=KNOWN)
    assert messages(caught.value) == [
        's.jsonl:3: $.value: expected number, got "high"',
        "s.jsonl:5: $.unit_id: required field is missing",
        "s.jsonl:6: $: malformed JSON: Expecting value (column 1)",
        "s.jsonl:2: $: duplicate score of metric 'm' for turn 'c1#1' (first on line 1)",
        "s.jsonl:4: $.unit_id: unknown turn id 'zz' (not in the benchmark)",
    ]
