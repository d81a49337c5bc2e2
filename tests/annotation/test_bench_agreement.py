"""`manage.py bench_agreement` (docs/performance.md): it prints Concord's alpha next to the
`krippendorff` package's for every level, and the two agree."""

import re

from django.core.management import call_command

LINE = re.compile(r"^\s+(concord|package)\s+(\w+)\s+alpha=(-?[0-9.]+)\s+([0-9.]+) s$")


def test_the_benchmark_prints_both_alphas_per_level_and_they_agree(capsys):
    call_command("bench_agreement", units=40, annotators=3, repeats=1)
    rows = [LINE.match(line) for line in capsys.readouterr().out.splitlines()]
    rows = [(m[1], m[2], float(m[3])) for m in rows if m]
    concord = [(level, value) for who, level, value in rows if who == "concord"]
    package = [(level, value) for who, level, value in rows if who == "package"]
    # Likert: interval, ordinal, nominal; 0-100 scores: interval, ordinal
    assert [level for level, _ in concord] == ["interval", "ordinal", "nominal",
                                               "interval", "ordinal"]
    assert [level for level, _ in package] == [level for level, _ in concord]
    for (level, ours), (_, theirs) in zip(concord, package, strict=True):
        assert abs(ours - theirs) < 2e-6, level
