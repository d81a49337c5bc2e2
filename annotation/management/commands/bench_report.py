"""Time the study report and the metric leaderboard, cold and warm, on a generated study.

Builds a study of N labels (`annotation.report_bench`), then requests the pages through
Django's test client (the whole request: middleware, session, view, template): "cold" clears
Django's cache before every request (every statistic computed again, as after a new label or
a finished run), "warm" repeats the request with the cache filled. Prints median, p95 and max
per page in wall time, the p95 of this process's CPU time per request (what a busy machine does
not distort; PostgreSQL's own CPU is not in it), and the SQL statements per request.
Everything happens in one transaction that is rolled back: the database is left as it was.
See docs/performance.md ("Study reports").
"""

import os
import statistics
import time

from django.conf import settings
from django.contrib.auth.models import User
from django.core.cache import cache
from django.core.management.base import BaseCommand
from django.db import connection, transaction
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from annotation.models import ImportedLabel
from annotation.report_bench import JUDGE, synthetic_report_study
from evaluation.lib.metrics.suite import SUITE_NAME


class Rollback(Exception):
    pass


def _ms(seconds: float) -> str:
    return f"{seconds * 1000:.0f} ms"


def p95(times: list[float]) -> float:
    ordered = sorted(times)
    return ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]


class Command(BaseCommand):
    help = "Cold and warm p95 of the study report and the metric leaderboard (N labels)."

    def add_arguments(self, parser):
        parser.add_argument("--labels", type=int, default=5000)
        parser.add_argument("--systems", type=int, default=8)
        parser.add_argument("--annotators", type=int, default=4)
        parser.add_argument("--cold", type=int, default=10, help="cold requests per page")
        parser.add_argument("--warm", type=int, default=30, help="warm requests per page")
        parser.add_argument("--seed", type=int, default=0)

    def handle(self, labels, systems, annotators, cold, warm, seed, **options):
        debug, settings.DEBUG = settings.DEBUG, False  # no query log overhead while timing
        try:
            with transaction.atomic():
                self._run(labels, systems, annotators, cold, warm, seed)
                raise Rollback
        except Rollback:
            self.stdout.write("(all benchmark rows rolled back)")
        finally:
            settings.DEBUG = debug
            cache.clear()

    def _run(self, labels, systems, annotators, cold, warm, seed):
        started = time.perf_counter()
        staff = User.objects.create_user("bench-report-staff", is_staff=True)
        study = synthetic_report_study(slug="bench-report", author=staff, labels=labels,
                                       systems=systems, annotators=annotators, seed=seed)
        stored = ImportedLabel.objects.filter(study=study).count()
        self.stdout.write(f"data: {stored} labels ({annotators} annotators, {systems} systems), "
                          f"generated and inserted in {time.perf_counter() - started:.1f} s")
        client = Client(HTTP_HOST="127.0.0.1")
        client.force_login(staff)
        report = reverse("annotation:study_report", args=[study.slug])
        board = reverse("annotation:metric_board", args=[study.slug])
        pages = [
            ("report, Trace suite", f"{report}?evaluator={SUITE_NAME}", {}),
            ("report, judge, split by system", f"{report}?evaluator={JUDGE}&by=system", {}),
            ("report filter (htmx fragment)",
             f"{report}?evaluator={SUITE_NAME}&aspect=relevance&metric=cgs",
             {"HTTP_HX_REQUEST": "true"}),
            ("every correlation row (on request)", f"{report}?evaluator={SUITE_NAME}&rows=all",
             {"HTTP_HX_REQUEST": "true"}),
            ("metric leaderboard", board, {}),
            ("metric leaderboard, relevance", f"{board}?aspect=relevance", {}),
        ]
        client.get(report)  # import and compile everything once, as a running server has
        self.stdout.write(f"load average before: {os.getloadavg()[0]:.1f}")
        self.stdout.write(f"{'page':34} {'cold wall p50 / p95 / max':>26} {'CPU p95':>8} "
                          f"{'warm wall p50 / p95 / max':>26} {'CPU p95':>8} {'SQL':>6}")
        for label, url, headers in pages:
            cold_runs, warm_runs = [], []
            for _ in range(cold):
                cache.clear()
                cold_runs.append(self._timed(client, url, headers))
            cold_queries = self._timed(client, url, headers, clear=True)[2]
            for _ in range(warm):
                warm_runs.append(self._timed(client, url, headers))
            warm_queries = self._timed(client, url, headers)[2]
            self.stdout.write(
                f"{label:34} {self._figures([r[0] for r in cold_runs]):>26} "
                f"{_ms(p95([r[1] for r in cold_runs])):>8} "
                f"{self._figures([r[0] for r in warm_runs]):>26} "
                f"{_ms(p95([r[1] for r in warm_runs])):>8} {f'{cold_queries}/{warm_queries}':>6}")
        self.stdout.write(f"load average after: {os.getloadavg()[0]:.1f}")
        # A new label makes a new fingerprint: the next request computes again.
        client.get(pages[0][1])
        first = ImportedLabel.objects.filter(study=study).first()
        ImportedLabel.objects.create(study=study, unit_type=first.unit_type,
                                     unit_id=first.unit_id, dialogue_id=first.dialogue_id,
                                     system=first.system, annotator="bench-late-annotator",
                                     field=first.field, value_num=3.0)
        after = self._timed(client, pages[0][1], {})[0]
        again = self._timed(client, pages[0][1], {})[0]
        self.stdout.write(f"after one new label: {_ms(after)} (computed again), then "
                          f"{_ms(again)} (cached)")

    def _figures(self, times: list[float]) -> str:
        return (f"{_ms(statistics.median(times))} / {_ms(p95(times))} / {_ms(max(times))}")

    def _timed(self, client, url, headers, *, clear=False):
        if clear:
            cache.clear()
        with CaptureQueriesContext(connection) as queries:
            started, cpu = time.perf_counter(), time.process_time()
            response = client.get(url, **headers)
            elapsed, cpu = time.perf_counter() - started, time.process_time() - cpu
        if response.status_code != 200:
            raise RuntimeError(f"{url}: HTTP {response.status_code}")
        return elapsed, cpu, len(queries)
