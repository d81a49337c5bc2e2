"""Time the leaderboard page on a synthetic leaderboard and count its SQL queries.

Everything happens inside one transaction that is rolled back at the end: the command leaves
the database as it found it. See docs/performance.md ("Leaderboard").
"""

import statistics
import time

from django.conf import settings
from django.core.management.base import BaseCommand
from django.db import connection, transaction
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from leaderboard.models import RankSnapshot, RunClusterStats
from leaderboard.services import rank_snapshots_refresh
from leaderboard.synthetic import synthetic_leaderboard


class Rollback(Exception):
    pass


def _ms(seconds: float) -> str:
    return f"{seconds * 1000:.1f} ms"


class Command(BaseCommand):
    help = "Median server time and SQL queries of a leaderboard with N systems × M metrics."

    def add_arguments(self, parser):
        parser.add_argument("--systems", type=int, default=100)
        parser.add_argument("--metrics", type=int, default=30)
        parser.add_argument("--dialogues", type=int, default=200)
        parser.add_argument("--repeat", type=int, default=30)
        parser.add_argument("--small", type=int, default=10,
                            help="systems of the second leaderboard (query-count constancy)")

    def handle(self, systems, metrics, dialogues, repeat, small, **options):
        debug, settings.DEBUG = settings.DEBUG, False  # no query log overhead while timing
        try:
            with transaction.atomic():
                self._run(systems, metrics, dialogues, repeat, small)
                raise Rollback
        except Rollback:
            self.stdout.write("(all benchmark rows rolled back)")
        finally:
            settings.DEBUG = debug

    def _run(self, systems, metrics, dialogues, repeat, small):
        started = time.perf_counter()
        big = synthetic_leaderboard(slug="bench-lb-big", systems=systems, metrics=metrics,
                                    dialogues=dialogues)
        little = synthetic_leaderboard(slug="bench-lb-small", systems=small, metrics=metrics,
                                       dialogues=dialogues, seed=1)
        self.stdout.write(f"data: {systems} + {small} systems × {metrics} metrics × "
                          f"{dialogues} dialogues, inserted in "
                          f"{time.perf_counter() - started:.1f} s")
        client = Client(HTTP_HOST="127.0.0.1")
        url = reverse("leaderboard:board", args=[big.slug, "turn"])
        cold, cold_queries = self._timed(client, url + "?columns=all")
        self.stdout.write(f"first render (no snapshot yet: per-run sums and ranks computed in "
                          f"memory, nothing stored): {_ms(cold)}, {cold_queries} queries")
        RankSnapshot.objects.filter(benchmark=big).delete()
        t = time.perf_counter()
        rank_snapshots_refresh(benchmark=big, protocol="turn")
        self.stdout.write(f"rank snapshot refresh alone (per-run sums cached): "
                          f"{_ms(time.perf_counter() - t)}")
        RunClusterStats.objects.filter(run__submission__benchmark=big).delete()
        RankSnapshot.objects.filter(benchmark=big).delete()
        t = time.perf_counter()
        rank_snapshots_refresh(benchmark=big, protocol="turn")
        self.stdout.write(f"rank snapshot refresh from unit values: "
                          f"{_ms(time.perf_counter() - t)}")
        for label, query in (("full page, all columns", "?columns=all"),
                             ("HTMX table, sorted by m07", "?columns=all&sort=synthetic:m07"),
                             ("JSON export", None)):
            target = (reverse("leaderboard:board_export", args=[big.slug, "turn", "json"])
                      if query is None else url + query)
            headers = {"HTTP_HX_REQUEST": "true"} if "HTMX" in label else {}
            times = [self._timed(client, target, **headers)[0] for _ in range(repeat)]
            times.sort()
            self.stdout.write(
                f"{label}: median {_ms(statistics.median(times))}, "
                f"p95 {_ms(times[int(0.95 * (len(times) - 1))])}, min {_ms(times[0])} "
                f"({repeat} requests)")
        counts = {}
        for benchmark in (little, big):
            page = reverse("leaderboard:board", args=[benchmark.slug, "turn"]) + "?columns=all"
            rank_snapshots_refresh(benchmark=benchmark, protocol="turn")  # what the task does
            counts[benchmark.slug] = self._timed(client, page)[1]
        self.stdout.write(f"SQL queries per render: {small} systems → "
                          f"{counts[little.slug]}, {systems} systems → {counts[big.slug]}"
                          f" ({'constant' if len(set(counts.values())) == 1 else 'NOT constant'})")

    def _timed(self, client, url, **headers):
        with CaptureQueriesContext(connection) as queries:
            started = time.perf_counter()
            response = client.get(url, **headers)
            elapsed = time.perf_counter() - started
        if response.status_code != 200:
            raise RuntimeError(f"{url}: HTTP {response.status_code}")
        return elapsed, len(queries)
