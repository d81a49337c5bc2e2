"""CRS Arena's vote files (votes_open.csv, votes_closed.csv): order, outcomes, every bad row."""

import csv
import io
import json

import pytest

from evaluation.lib.formats.errors import FormatError, IssueCollector
from evaluation.lib.formats.public.crs_arena_dial import import_crs_arena_dial
from evaluation.lib.formats.public.crs_arena_votes import parse_votes_csv

from .public_data import messages
from .test_public_crs_arena_dial import _conversation

HEADER = ["session_id", "user_id", "crs1", "crs2", "vote", "feedback"]


def _csv(rows, header=HEADER) -> str:
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(header)
    writer.writerows(rows)
    return out.getvalue()


def _folder(tmp_path, open_rows, closed_rows=None):
    (tmp_path / "crs_arena_dial_open.json").write_text(json.dumps([_conversation()]))
    (tmp_path / "votes_open.csv").write_text(_csv(open_rows))
    if closed_rows is not None:
        (tmp_path / "votes_closed.csv").write_text(_csv(closed_rows))
    return tmp_path


def test_votes_in_crs_arenas_order_open_then_closed_each_in_file_order(tmp_path):
    folder = _folder(tmp_path, [
        ["1718000000.1", "u1", "kbrd_redial", "barcor_redial", "barcor_redial", "B was better"],
        ["1718000000.2", "u2", "unicrs_redial", "kbrd_redial", "unicrs_redial", ""],
    ], [
        ["1719000000.1", "p1", "chatgpt_redial", "kbrd_redial", "tie", "both fine,\nreally"],
        ["1719000000.2", "p2", "kbrd_redial", "chatgpt_redial", "Tie", ""],
        ["1717000000.0", "p3", "kbrd_redial", "chatgpt_redial", "kbrd_redial", ""],
    ])
    votes = import_crs_arena_dial(folder).votes
    assert [(v["system_a"], v["system_b"], v["outcome"]) for v in votes] == [
        ("kbrd_redial", "barcor_redial", "b"),
        ("unicrs_redial", "kbrd_redial", "a"),
        ("chatgpt_redial", "kbrd_redial", "tie"),
        ("kbrd_redial", "chatgpt_redial", "tie"),
        ("kbrd_redial", "chatgpt_redial", "a"),  # file order, not session_id order
    ]
    assert [(v["file"], v["line"]) for v in votes] == [
        ("votes_open.csv", 2), ("votes_open.csv", 3), ("votes_closed.csv", 2),
        ("votes_closed.csv", 4), ("votes_closed.csv", 5)]  # the quoted newline spans line 3
    assert votes[0]["reason"] == "B was better" and votes[0]["voter_ref"] == "u1"
    assert votes[2]["reason"] == "both fine,\nreally" and votes[2]["setting"] == "closed"


def test_every_kind_of_bad_row_is_reported_with_file_and_line(tmp_path):
    good = ["s", "u", "kbrd_redial", "barcor_redial", "kbrd_redial", ""]
    folder = _folder(tmp_path, [
        good,
        ["s", "u", "kbrd_redial", "barcor_redial", "unicrs_redial", ""],  # names another system
        ["s", "u", "kbrd_redial", "barcor_redial", "", ""],  # no vote
        ["s", "u", "", "barcor_redial", "barcor_redial", ""],  # empty crs1
        ["s", "u", "kbrd_redial", "", "kbrd_redial", ""],  # empty crs2
        ["s", "u", "kbrd_redial", "kbrd_redial", "kbrd_redial", ""],  # one system twice
        ["s", "u", "kbrd_redial", "barcor_redial", "kbrd_redial"],  # a cell short
        ["s", "u", "kbrd_redial", "barcor_redial", "kbrd_redial", "", "extra"],  # one too many
    ], [good])
    with pytest.raises(FormatError) as caught:
        import_crs_arena_dial(folder)
    by_line = sorted(messages(caught.value), key=lambda text: int(text.split(":")[1]))
    assert by_line == [
        "votes_open.csv:3: $.vote: expected 'kbrd_redial', 'barcor_redial' or 'tie' (the "
        "systems of this row), got 'unicrs_redial'",
        "votes_open.csv:4: $.vote: expected 'kbrd_redial', 'barcor_redial' or 'tie' (the "
        "systems of this row), got ''",
        "votes_open.csv:5: $.crs1: expected a system name, got an empty cell",
        "votes_open.csv:6: $.crs2: expected a system name, got an empty cell",
        "votes_open.csv:7: $.crs2: a vote compares 'kbrd_redial' with itself",
        "votes_open.csv:8: $: expected 6 cells as in the header, got 5",
        "votes_open.csv:9: $: expected 6 cells as in the header, got 7",
    ]


def test_bad_headers_and_encodings(tmp_path):
    cases = {
        "missing column": (_csv([["s", "u", "a", "b", "a"]], HEADER[:5]).encode(),
                           "votes_open.csv:1: $: missing column(s) feedback (expected the header "
                           "session_id, user_id, crs1, crs2, vote, feedback)"),
        "no header": (b"", "votes_open.csv:1: $: expected a header row naming the columns"),
        "not UTF-8": (_csv([["s", "u", "a", "b", "a", "caf\xe9"]]).encode("latin-1"), "UTF-8"),
    }
    for name, (raw, expected) in cases.items():
        issues = IssueCollector()
        assert parse_votes_csv(raw, "votes_open.csv", issues) == [], name
        assert issues, name
        assert expected in str(issues.issues[0]), (name, str(issues.issues[0]))


def test_a_single_dialogue_file_imports_without_votes(tmp_path):
    path = tmp_path / "crs_arena_dial_open.json"
    path.write_text(json.dumps([_conversation()]))
    result = import_crs_arena_dial(path)
    assert result.votes == []
    assert any("No vote files" in note for note in result.notes)
