"""`manage.py bench_report` (docs/performance.md, "Today's figures") at a small size: every page
is timed, and the generated study is rolled back."""

import re

import pytest
from django.contrib.auth.models import User
from django.core.management import call_command

from annotation.models import ImportedLabel, Study

pytestmark = pytest.mark.django_db

PAGES = ["report, Trace suite", "report, judge, split by system", "report filter (htmx fragment)",
         "every correlation row (on request)", "metric leaderboard",
         "metric leaderboard, relevance"]
WALL = r"(\d+) ms / (\d+) ms / (\d+) ms\s+(\d+) ms\s+"  # p50 / p95 / max, then CPU p95
FIGURES = WALL + WALL + r"(\d+)/(\d+)$"  # cold, warm, then SQL statements cold/warm


def test_every_page_gets_cold_and_warm_figures_and_nothing_is_left_behind(capsys):
    call_command("bench_report", labels=120, systems=3, annotators=2, cold=1, warm=1)
    out = capsys.readouterr().out
    for page in PAGES:
        line = next(line for line in out.splitlines() if line.startswith(page + " "))
        figures = re.search(FIGURES, line)
        assert figures, line
        cold_sql, warm_sql = int(figures[9]), int(figures[10])
        assert 0 < warm_sql <= cold_sql  # the cache saves statements, never adds them
    assert re.search(r"^data: \d+ labels \(2 annotators, 3 systems\)", out, re.M)
    assert re.search(r"^after one new label: \d+ ms \(computed again\), then \d+ ms \(cached\)",
                     out, re.M)
    assert out.rstrip().endswith("(all benchmark rows rolled back)")
    assert not Study.objects.exists() and not ImportedLabel.objects.exists()
    assert not User.objects.filter(username="bench-report-staff").exists()
