"""Time a leaderboard's pages at scale and count their SQL statements (issue 16, item 4).

Two leaderboards are built (`leaderboard.synthetic.synthetic_scale_board`): a big one
(`--systems` × `--dialogues`) and a small one (`--small` × `--small-dialogues`). On each, the
leaderboard page (anonymous, and `?columns=all`), a system page (its paginated dialogue list),
the per-turn drill-down of one dialogue and the compare page of two systems are requested
in-process with Django's test client (the whole request: middleware, sessions, view, template):
median, p95 and minimum server time, the first request's time, and the SQL statements of one
request, which must be the same at both sizes.

Everything happens inside one transaction that is rolled back at the end, and the submission
files it stored are deleted: the command leaves the database and the media storage as it found
them. See docs/performance.md ("Leaderboard", "Pages at that size").
"""

import json
import math
import os
import statistics
import time
from pathlib import Path

from django.conf import settings
from django.core.management.base import BaseCommand
from django.db import connection, transaction
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from leaderboard.services import rank_snapshots_refresh
from leaderboard.synthetic import synthetic_scale_board


class Rollback(Exception):
    pass


def _ms(seconds: float) -> str:
    return f"{seconds * 1000:.1f} ms"


def pages(board) -> dict[str, tuple[str, dict]]:
    """Label → (URL, extra request headers) of every page measured on BOARD."""
    slug = board.benchmark.slug
    url = reverse("leaderboard:board", args=[slug, "turn"])
    a, b = board.systems[:2]
    return {
        "leaderboard": (url, {}),
        "leaderboard ?columns=all": (url + "?columns=all", {}),
        "leaderboard HTMX sort": (url + "?columns=all&sort=trace:gs",
                                  {"HTTP_HX_REQUEST": "true"}),
        "leaderboard JSON export": (reverse("leaderboard:board_export",
                                            args=[slug, "turn", "json"]), {}),
        "system page (dialogues page 2)": (
            reverse("leaderboard:system_detail", args=[a]) + "?page=2", {}),
        "per-turn drill-down": (reverse("leaderboard:submission_dialogue",
                                        args=[board.submission.uuid, board.dialogue]), {}),
        "compare": (reverse("leaderboard:compare") + f"?benchmark={slug}&a={a}&b={b}", {}),
    }


class Command(BaseCommand):
    help = ("Median server time and SQL statements of the leaderboard, system, drill-down and "
            "compare pages with N systems on a benchmark of D dialogues.")

    def add_arguments(self, parser):
        parser.add_argument("--systems", type=int, default=100)
        parser.add_argument("--dialogues", type=int, default=200,
                            help="dialogues of the generated benchmark (make_demo_benchmark)")
        parser.add_argument("--repeat", type=int, default=30)
        parser.add_argument("--small", type=int, default=10,
                            help="systems of the second leaderboard (statement-count constancy)")
        parser.add_argument("--small-dialogues", type=int, default=100,
                            help="dialogues of the second leaderboard")
        parser.add_argument("--seed", type=int, default=0)
        parser.add_argument("--json", metavar="FILE", dest="json_path",
                            help="also write the figures as JSON")

    def handle(self, systems, dialogues, repeat, small, small_dialogues, seed, json_path,
               **options):
        if systems < 2 or small < 2:
            raise ValueError("the compare page needs at least 2 systems per leaderboard")
        debug, settings.DEBUG = settings.DEBUG, False  # no query log overhead while timing
        boards = []
        figures: dict = {}
        try:
            with transaction.atomic():
                figures = self._run(boards, systems, dialogues, repeat, small, small_dialogues,
                                    seed)
                raise Rollback
        except Rollback:
            self.stdout.write("(all benchmark rows rolled back, submission files deleted)")
        finally:
            settings.DEBUG = debug
            for board in boards:
                board.delete_files()
        if json_path:
            Path(json_path).write_text(json.dumps(figures, indent=2))

    def _run(self, boards, systems, dialogues, repeat, small, small_dialogues, seed) -> dict:
        sizes = {"big": (systems, dialogues), "small": (small, small_dialogues)}
        made = {}
        for name, (count, size) in sizes.items():
            started = time.perf_counter()
            board = synthetic_scale_board(slug=f"bench-lb-{name}", systems=count,
                                          dialogues=size, seed=seed)
            boards.append(board)
            made[name] = board
            self.stdout.write(f"data ({name}): {count} systems × {size:,} dialogues, "
                              f"{board.values:,} unit values for 2 runs, built in "
                              f"{time.perf_counter() - started:.1f} s")
        big = made["big"]
        client = Client(HTTP_HOST="127.0.0.1")
        figures = {"systems": systems, "dialogues": dialogues, "small": small,
                   "small_dialogues": small_dialogues, "repeat": repeat,
                   "load_average": os.getloadavg(), "pages": {}}
        self.stdout.write(f"load average: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
        # The slow path, for reference: a page that finds no fresh snapshot ranks in memory.
        cold, cold_queries = self._timed(client, pages(big)["leaderboard ?columns=all"][0])
        self.stdout.write(f"leaderboard without a rank snapshot (ranked in memory, nothing "
                          f"stored): {_ms(cold)}, {cold_queries} statements")
        t = time.perf_counter()
        rank_snapshots_refresh(benchmark=big.benchmark, protocol="turn")
        self.stdout.write(f"rank snapshot refresh ({systems} runs, stored per-dialogue sums): "
                          f"{_ms(time.perf_counter() - t)}")
        rank_snapshots_refresh(benchmark=made["small"].benchmark, protocol="turn")
        small_pages = pages(made["small"])
        for label, (url, headers) in pages(big).items():
            first, _ = self._timed(client, url, **headers)
            times = sorted(self._timed(client, url, **headers)[0] for _ in range(repeat))
            counts = {"big": self._timed(client, url, **headers)[1],
                      "small": self._timed(client, small_pages[label][0], **headers)[1]}
            row = {"median_ms": statistics.median(times) * 1000,
                   "p95_ms": times[math.ceil(0.95 * len(times)) - 1] * 1000,  # nearest rank
                   "min_ms": times[0] * 1000, "first_ms": first * 1000,
                   "statements": counts, "constant": counts["big"] == counts["small"]}
            figures["pages"][label] = row
            self.stdout.write(
                f"{label}: median {row['median_ms']:.1f} ms, p95 {row['p95_ms']:.1f} ms, "
                f"min {row['min_ms']:.1f} ms, first request {row['first_ms']:.1f} ms "
                f"({repeat} requests); SQL statements {small} systems × {small_dialogues:,} "
                f"dialogues → {counts['small']}, {systems} × {dialogues:,} → {counts['big']} "
                f"({'constant' if row['constant'] else 'NOT constant'})")
        figures["load_average_after"] = os.getloadavg()
        return figures

    def _timed(self, client, url, **headers):
        with CaptureQueriesContext(connection) as queries:
            started = time.perf_counter()
            response = client.get(url, **headers)
            elapsed = time.perf_counter() - started
        if response.status_code != 200:
            raise RuntimeError(f"{url}: HTTP {response.status_code}")
        return elapsed, len(queries)
