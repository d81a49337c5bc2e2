"""Progress of the command line: bars on a terminal, readable lines in a log (no escape codes,
no carriage returns, no silent stretches)."""

import io

from evaluation.cli import ProgressBars


def test_plain_lines_when_not_on_a_terminal():
    out = io.StringIO()
    bars = ProgressBars(out)
    for done in range(0, 1001):
        bars("dialogues", done, 1000)
    bars("baseline answers", 5, 5)
    bars.close()
    text = out.getvalue()
    assert "\x1b" not in text and "\r" not in text
    lines = text.splitlines()
    assert lines[0] == "  dialogues: 0/1000 (0%)"
    assert "  dialogues: 500/1000 (50%)" in lines
    assert lines[-2] == "  dialogues: 1000/1000 (100%) done"
    assert lines[-1] == "  baseline answers: 5/5 (100%) done"
    assert len(lines) <= 13  # every tenth, not every step


def test_a_slow_stage_still_reports_every_ten_seconds(monkeypatch):
    clock = iter([0.0, 11.0, 12.0, 25.0])
    monkeypatch.setattr("evaluation.cli.time.monotonic", lambda: next(clock))
    out = io.StringIO()
    bars = ProgressBars(out)
    for done in (1, 2, 3, 4):
        bars("chunks", done, 1000)
    assert out.getvalue().splitlines() == ["  chunks: 1/1000 (0%)", "  chunks: 2/1000 (0%)",
                                           "  chunks: 4/1000 (0%)"]
