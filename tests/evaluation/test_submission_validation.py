"""Validation of `turn` submissions (formats.md §2): every bad input gets a line-numbered
`file:line: json.path: message` error; good files pass. Pure: no database."""

import io
import json
import tracemalloc

import pytest

from evaluation.lib.formats.errors import FormatError
from evaluation.lib.formats.submission import (
    SubmissionReference,
    bounded_lines,
    read_turn_submission,
    validate_log_submission,
    validate_turn_submission,
)
from tests.support.bundles import tiny_data
from tests.support.submissions import tiny_lines, write_lines

MB = 1024 * 1024


@pytest.fixture(scope="module")
def reference():
    data = tiny_data()
    return SubmissionReference.from_records(items=data["items"], reviews=data["reviews"],
                                            dialogues=data["dialogues"])


def errors(reference, path, **kwargs) -> list[str]:
    with pytest.raises(FormatError) as caught:
        validate_turn_submission(path, reference=reference, **kwargs)
    return [str(issue) for issue in caught.value.issues]


def corrupt(tmp_path, change) -> object:
    lines = tiny_lines()
    change(lines)
    return write_lines(tmp_path / "submission.jsonl", lines)


def test_the_hand_written_submission_is_valid(reference, tmp_path):
    summary = validate_turn_submission(write_lines(tmp_path / "s.jsonl"), reference=reference)
    assert summary.line_count == 4
    assert summary.splits == ("hidden", "test", "train")


def test_unknown_dialogue_is_reported_with_its_line(reference, tmp_path):
    path = corrupt(tmp_path, lambda lines: lines[2].update(dialogue_id="d9"))
    assert "submission.jsonl:3: $.dialogue_id: unknown dialogue id 'd9'" in errors(reference, path)


def test_turn_that_does_not_exist_is_reported(reference, tmp_path):
    path = corrupt(tmp_path, lambda lines: lines[2].update(turn_index=7))
    assert "submission.jsonl:3: $.turn_index: dialogue 'd2' has no turn 7" in errors(reference,
                                                                                    path)


def test_turn_that_systems_do_not_answer_is_reported(reference, tmp_path):
    path = corrupt(tmp_path, lambda lines: lines[2].update(turn_index=0))
    found = errors(reference, path)
    assert any(e.startswith("submission.jsonl:3: $.turn_index: turn 0 of dialogue 'd2' is a "
                            "user greet_and_seek turn") for e in found)


def test_a_turn_evaluated_twice_names_the_first_line(reference, tmp_path):
    path = corrupt(tmp_path, lambda lines: lines.append(dict(lines[0])))
    assert ("submission.jsonl:5: $.turn_index: turn 1 of dialogue 'd1' is answered twice "
            "(first on line 1)") in errors(reference, path)


def test_ranked_item_outside_the_pool_is_reported(reference, tmp_path):
    path = corrupt(tmp_path, lambda lines: lines[2].update(ranked_item_ids=["h1", "r1"]))
    assert ("submission.jsonl:3: $.ranked_item_ids[1]: item 'r1' is not in the dialogue's "
            "candidate pool") in errors(reference, path)


def test_unknown_ranked_item_is_reported(reference, tmp_path):
    path = corrupt(tmp_path, lambda lines: lines[2].update(ranked_item_ids=["zz"]))
    assert "submission.jsonl:3: $.ranked_item_ids[0]: unknown item id 'zz'" in errors(reference,
                                                                                      path)


def test_open_pool_accepts_same_city_and_type_items(tmp_path):
    data = tiny_data()
    reference = SubmissionReference.from_records(items=data["items"], reviews=data["reviews"],
                                                 dialogues=data["dialogues"], pool_mode="open")
    path = corrupt(tmp_path, lambda lines: lines[3].update(ranked_item_ids=["r2", "r1", "h1"]))
    assert validate_turn_submission(path, reference=reference).line_count == 4


@pytest.mark.parametrize("response", ["", "   \n "])
def test_empty_response_is_reported(reference, tmp_path, response):
    path = corrupt(tmp_path, lambda lines: lines[2].update(response=response))
    assert "submission.jsonl:3: $.response: the response is empty" in errors(reference, path)


def test_citation_label_mapping_to_no_review_is_reported(reference, tmp_path):
    path = corrupt(tmp_path, lambda lines: lines[0]["citations"][0].update(review_id="v99"))
    assert ("submission.jsonl:1: $.citations[0].review_id: label [R1] maps to unknown review id "
            "'v99'") in errors(reference, path)


def test_label_without_mapping_is_reported(reference, tmp_path):
    path = corrupt(tmp_path, lambda lines: lines[1]["citations"].pop())
    assert "submission.jsonl:2: $.response: label [R2] has no entry in citations" in errors(
        reference, path)


def test_missing_answers_are_reported_per_dialogue(reference, tmp_path):
    path = corrupt(tmp_path, lambda lines: lines.pop(1))
    assert "submission.jsonl: $: dialogue 'd1' (train): no answer for turn 3" in errors(reference,
                                                                                       path)


def test_only_the_requested_splits_must_be_complete(reference, tmp_path):
    path = write_lines(tmp_path / "s.jsonl", [tiny_lines()[2]])
    assert validate_turn_submission(path, reference=reference, splits=["test"]).line_count == 1
    found = errors(reference, path, splits=["test", "train"])
    assert "s.jsonl: $: dialogue 'd1' (train): no answer for turns 1, 3" in found


def test_malformed_json_is_reported_with_its_column(reference, tmp_path):
    path = tmp_path / "s.jsonl"
    write_lines(path)
    with path.open("a") as handle:
        handle.write('{"dialogue_id": "d1",\n')
    assert "s.jsonl:5: $: malformed JSON: Expecting property name enclosed in double quotes " \
           "(column 22)" in errors(reference, path)


def test_non_utf8_bytes_are_reported(reference, tmp_path):
    path = tmp_path / "s.jsonl"
    write_lines(path)
    with path.open("ab") as handle:
        handle.write(b'{"response": "caf\xe9"}\n')
    assert "s.jsonl:5: $: not UTF-8 text (byte 0xe9 at column 18)" in errors(reference, path)


def test_schema_errors_name_the_field(reference, tmp_path):
    path = corrupt(tmp_path, lambda lines: (lines[0].pop("ranked_item_ids"),
                                            lines[1].update(turn_index="3")))
    found = errors(reference, path)
    assert "submission.jsonl:1: $.ranked_item_ids: required field is missing" in found
    assert 'submission.jsonl:2: $.turn_index: expected integer, got "3"' in found


def test_empty_file_is_rejected(reference, tmp_path):
    path = tmp_path / "empty.jsonl"
    path.write_text("")
    assert errors(reference, path) == ["empty.jsonl: $: the file has no submission lines"]


def test_blank_lines_and_null_lines_are_refused_with_their_line(reference, tmp_path):
    path = tmp_path / "blank.jsonl"
    path.write_text("\n \t\nnull\n")
    assert errors(reference, path) == ["blank.jsonl:1: $: blank line",
                                       "blank.jsonl:2: $: blank line",
                                       "blank.jsonl:3: $: expected an object, got null"]


def test_a_file_of_blank_lines_is_refused_after_a_few_lines_not_read_whole(reference, tmp_path):
    """Issue 18: 100 MB of newlines held a web worker ~47 s; reading now stops at the cap."""
    import time

    path = tmp_path / "junk.jsonl"
    path.write_bytes(b"\n" * (100 * 1024 * 1024))
    started = time.monotonic()
    found = errors(reference, path)
    assert time.monotonic() - started < 2
    assert found[0] == "junk.jsonl:1: $: blank line"
    assert found[-1] == "junk.jsonl: $: reading stopped at line 49 after 49 problems"


def test_nul_and_lone_surrogates_are_refused_with_line_and_path(reference, tmp_path):
    """Issue 18: PostgreSQL stores neither in text; they broke study creation with a 500."""
    lines = tiny_lines()
    lines[0]["response"] = "nul \u0000 here"
    lines[2]["citations"] = [{"label": "R1", "review_id": "v4", "quote": "\ud800"}]
    text = "".join(json.dumps(line) + "\n" for line in lines)
    path = tmp_path / "bad.jsonl"
    path.write_text(text)
    found = errors(reference, path)
    assert ("bad.jsonl:1: $.response: contains a NUL character at position 5, which cannot be "
            "stored as text") in found
    assert ("bad.jsonl:3: $.citations[0].quote: contains a lone surrogate (U+D800) at position "
            "1, which cannot be stored as text") in found


def test_crlf_line_ends_and_a_byte_order_mark_are_accepted(reference, tmp_path):
    text = "".join(json.dumps(line) + "\r\n" for line in tiny_lines())
    path = tmp_path / "windows.jsonl"
    path.write_bytes(b"\xef\xbb\xbf" + text.encode("utf-8"))
    assert validate_turn_submission(path, reference=reference).line_count == 4
    assert [t.turn_index for t in read_turn_submission(path)] == [1, 3, 1, 1]


def test_an_oversize_file_is_refused_by_size_before_reading(reference, tmp_path):
    path = tmp_path / "huge.jsonl"
    with path.open("wb") as handle:
        handle.truncate(500 * MB)  # sparse: costs no disk and no time
    assert errors(reference, path, max_bytes=200 * MB) == [
        "huge.jsonl: $: file is 500.0 MB, over the 200.0 MB limit"]


class EndlessLine(io.RawIOBase):
    """SIZE bytes of one JSON-looking line without a newline, produced on demand."""

    def __init__(self, size: int, prefix: bytes = b""):
        self.left, self.prefix = size, prefix

    def readable(self):
        return True

    def read(self, n=-1):
        if self.left <= 0:
            return b""
        n = self.left if n < 0 else min(n, self.left)
        chunk, self.prefix = (self.prefix + b"a" * n)[:n], b""
        self.left -= n
        return chunk


def test_a_500_mb_line_is_rejected_without_holding_it_in_memory(reference, tmp_path):
    good = write_lines(tmp_path / "s.jsonl").read_bytes()
    source = _Concat([io.BytesIO(good), EndlessLine(500 * MB, b'{"response": "')])
    tracemalloc.start()
    try:
        found = errors(reference, source, max_bytes=10**12)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert "submission.jsonl:5: $: line is 500.0 MB, over the 1.0 MB line limit" in found
    assert peak < 16 * MB


def test_an_oversize_stream_of_unknown_size_stops_at_the_limit(reference):
    source = EndlessLine(50 * MB)
    found = errors(reference, source, max_bytes=4 * MB)
    assert found == ["submission.jsonl: $: file is over the 4.0 MB limit (reading stopped there)"]
    assert source.left >= 40 * MB  # it stopped reading early


class _Concat(io.RawIOBase):
    def __init__(self, parts):
        self.parts = list(parts)

    def readable(self):
        return True

    def read(self, n=-1):
        while self.parts:
            chunk = self.parts[0].read(n)
            if chunk:
                return chunk
            self.parts.pop(0)
        return b""


def test_bounded_lines_reports_lengths_and_keeps_short_lines():
    data = b"ab\n" + b"x" * 10 + b"\n\nlast"
    lines = list(bounded_lines(io.BytesIO(data), max_line_bytes=5, max_bytes=100, chunk_bytes=4))
    assert lines == [(1, b"ab", 2), (2, None, 10), (3, b"", 0), (4, b"last", 4)]


def test_log_submissions_check_ids_and_duplicates(reference, tmp_path):
    path = tmp_path / "logs.jsonl"
    logs = [{"log_id": "L1", "dialogue_id": "d1",
             "turns": [{"role": "user", "text": "hi"},
                       {"role": "system", "text": "try r1", "recommended_item_ids": ["r1"]}]},
            {"log_id": "L1", "dialogue_id": "d9",
             "turns": [{"role": "system", "text": "x", "recommended_item_ids": ["zz"]}]}]
    path.write_text("".join(json.dumps(log) + "\n" for log in logs))
    with pytest.raises(FormatError) as caught:
        validate_log_submission(path, reference=reference)
    assert [str(i) for i in caught.value.issues] == [
        "logs.jsonl:2: $.log_id: duplicate log id 'L1' (first on line 1)",
        "logs.jsonl:2: $.dialogue_id: unknown dialogue id 'd9'",
        "logs.jsonl:2: $.turns[0].recommended_item_ids[0]: unknown item id 'zz'",
    ]
    path.write_text(json.dumps(logs[0]) + "\n")
    assert validate_log_submission(path, reference=reference).line_count == 1


def test_a_line_marked_no_answer_reads_as_an_unanswered_turn(tmp_path):
    lines = [
        {"dialogue_id": "d1", "turn_index": 1, "response": "(no answer)", "ranked_item_ids": [],
         "metadata": {"no_answer": True}},
        {"dialogue_id": "d1", "turn_index": 3, "response": "Try A.", "ranked_item_ids": ["A"]},
    ]
    path = tmp_path / "submission.jsonl"
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    first, second = read_turn_submission(path)
    assert first.answered is False and second.answered is True


def test_progress_reports_the_kib_read_up_to_the_whole_file(reference, tmp_path):
    """What a staged upload's progress bar shows (evaluation.services.staged_uploads): the
    validator reads 1 MiB at a time, so a 3 MiB file reports 0, 1, 2, 3 MiB, then the end."""
    lines = tiny_lines()
    for line in lines:
        line["metadata"] = {"pad": "x" * 800_000}
    path = write_lines(tmp_path / "s.jsonl", lines)
    heard = []
    summary = validate_turn_submission(path, reference=reference,
                                       progress=lambda *report: heard.append(report))
    assert summary.line_count == 4
    total = -(-path.stat().st_size // 1024)
    stages, done, totals = zip(*heard, strict=True)
    assert set(stages) == {"checking the file (KiB read)"} and set(totals) == {total}
    assert done[0] == 0 and done[-1] == total and list(done) == sorted(done)
    assert 4 <= len(heard) <= 6
