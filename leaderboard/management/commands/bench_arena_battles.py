"""`manage.py bench_arena_battles`: Concord's own time per arena battle turn (docs/performance.md).

Three kinds of process, as in service mode (docs/operations.md):

- the web: gunicorn (`config.wsgi`, `--preload`, W workers × T threads, `scripts/gunicorn_bench.py`
  records each request's server time and thread CPU, by gunicorn's own hooks);
- the two local live systems, in a process of their own (`evaluation/lib/live/bench_server.py`),
  each answering after exactly L seconds and recording how long it held each request;
- the "browsers": B threads of this process, each with its own HTTP session (cookies, the CSRF
  token from the page, `HX-Request` like htmx), that start a battle through the real pages and
  send T messages; after each they fetch both answer fragments as the page's htmx does (after
  the fragment's `load delay`, again while it is still pending).

Per turn, from the server's own timings and the rows it stored:

    Concord's time = (the "send" request's server time)
                     + max over the two systems of
                       (answer settled − send answered − the time the system held the request)
                     + (the server time of the two answer fragments that showed the answers)

so everything but the systems' own latency and the network to the browser counts: the view,
the transaction writing the message and the pending rows, the call threads, `live_client` and
its HTTP call, validation, settling the row, and rendering. Each system allows B concurrent
calls, so no call waits for a slot. One unmeasured message per battle first warms every worker
(its catalogue, templates, prepared statements), as a web process that has served a while.
"""

import json
import os
import random
import re
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path
from tempfile import TemporaryDirectory

import requests
from django.conf import settings
from django.core.management.base import BaseCommand, CommandError
from django.db import connection

from evaluation.lib.demo import generate_demo_bundle
from evaluation.lib.formats.bundle import Bundle, write_bundle
from evaluation.lib.stats.bootstrap import percentiles
from evaluation.models import BattleTurn, Benchmark, System
from evaluation.services.arena import arena_open
from evaluation.services.benchmarks import benchmark_import
from evaluation.services.live import system_set_live

SLUG = "bench-arena"
TICK = os.sysconf("SC_CLK_TCK")
PENDING = re.compile(r'hx-get="([^"]+)" hx-trigger="load delay:(\d+)ms"')
CSRF = re.compile(r'name="csrfmiddlewaretoken" value="([^"]+)"')


def _benchmark() -> Benchmark:
    bench = Benchmark.objects.filter(slug=SLUG).first()
    if bench is None:
        data = generate_demo_bundle(seed=42)
        data["benchmark"] = {**data["benchmark"], "slug": SLUG, "name": "Arena bench"}
        with TemporaryDirectory() as folder:
            write_bundle(Bundle(**data), Path(folder))
            bench = benchmark_import(path=Path(folder))
    return bench


def _database_url() -> str:
    """This process's database (under pytest, the test database) for the server processes."""
    db = connection.settings_dict
    if not db["ENGINE"].endswith("postgresql"):
        raise CommandError("the battle bench runs gunicorn workers: it needs PostgreSQL")
    password = f":{db['PASSWORD']}" if db.get("PASSWORD") else ""
    return (f"postgres://{db['USER']}{password}@{db['HOST'] or '127.0.0.1'}:"
            f"{db['PORT'] or 5432}/{db['NAME']}")


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _cpu_seconds(pids) -> float:
    """User + system CPU of these processes (all their threads) so far."""
    total = 0
    for pid in pids:
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        except FileNotFoundError:
            continue
        total += int(fields[11]) + int(fields[12])
    return total / TICK


def _children(pid: int) -> list[int]:
    return [int(p) for p in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]


class _Browser:
    """One person's browser: a cookie jar, the page's CSRF token, htmx's headers."""

    def __init__(self, base: str, number: int):
        self.base, self.http = base, requests.Session()
        self.name, self.count, self.token = f"b{number}", 0, ""

    def _send(self, method: str, path: str, **kwargs) -> tuple[requests.Response, str]:
        self.count += 1
        tag = f"{self.name}-{self.count}"
        headers = {"X-Bench-Request": tag, **kwargs.pop("headers", {})}
        if method == "POST":
            headers["X-CSRFToken"] = self.token
        response = self.http.request(method, self.base + path, headers=headers,
                                     allow_redirects=False, timeout=60, **kwargs)
        found = CSRF.search(response.text)
        if found:
            self.token = found.group(1)
        return response, tag

    def start(self, benchmark: str) -> str:
        self._send("GET", f"/arena/{benchmark}/")
        started, _ = self._send("POST", f"/arena/{benchmark}/battles/", data={})
        if started.status_code != 302:
            raise CommandError(f"starting a battle answered {started.status_code}")
        page, _ = self._send("GET", started.headers["Location"])
        if page.status_code != 200:
            raise CommandError(f"the battle page answered {page.status_code}")
        return started.headers["Location"].rstrip("/").split("/")[-1]

    def turn(self, uuid: str, index: int) -> dict:
        """Send message INDEX and wait for both answers as htmx would; the requests' tags."""
        htmx = {"HX-Request": "true", "HX-Target": "arena-body"}
        said, say_tag = self._send("POST", f"/arena/battles/{uuid}/say/", headers=htmx,
                                   data={"message": f"Something quiet, please ({index})"})
        if said.status_code != 200:
            raise CommandError(f"sending a message answered {said.status_code}")
        waiting = dict(PENDING.findall(said.text))  # fragment URL -> its htmx delay (ms)
        if len(waiting) != 2:
            raise CommandError(f"the page polls {len(waiting)} answers, not 2")
        shown, polls = [], 0
        while waiting:
            time.sleep(max(int(delay) for delay in waiting.values()) / 1000)
            for url in list(waiting):
                reply, tag = self._send("GET", url, headers={"HX-Request": "true"})
                if reply.status_code != 200:
                    raise CommandError(f"an answer fragment answered {reply.status_code}")
                if url in dict(PENDING.findall(reply.text)):
                    polls += 1
                else:
                    shown.append(tag)
                    del waiting[url]
        return {"uuid": uuid, "index": index, "say": say_tag, "shown": shown, "polls": polls}


class Command(BaseCommand):
    help = "Measure Concord's own time per arena battle turn: gunicorn, systems and browsers " \
           "in separate processes."

    def add_arguments(self, parser):
        parser.add_argument("--battles", type=int, default=16, help="battles at once")
        parser.add_argument("--turns", type=int, default=5, help="measured messages per battle")
        parser.add_argument("--latency", type=float, default=0.3, help="each system's seconds")
        parser.add_argument("--workers", type=int, default=2, help="gunicorn worker processes")
        parser.add_argument("--threads", type=int, default=8, help="threads per worker")
        parser.add_argument("--think", type=float, default=0.0,
                            help="each browser waits a random 0..THINK seconds before each "
                                 "measured message (0: all battles send at the same moment)")
        parser.add_argument("--profile", metavar="DIR", default="",
                            help="each worker writes a cProfile of its requests to DIR/<pid>.prof")
        parser.add_argument("--json", action="store_true", dest="as_json")

    def handle(self, *, battles, turns, latency, workers, threads, think, profile, as_json,
               **options):
        if (battles < 1 or not 1 <= turns <= 9 or latency < 0 or workers < 1 or threads < 1
                or think < 0):
            raise CommandError("--battles ≥ 1, --turns 1..9, --latency ≥ 0, --workers and "
                               "--threads ≥ 1")
        bench = _benchmark()
        items = list(bench.items.order_by("pk").values_list("external_id", flat=True)[:10])
        stamp = time.time_ns()
        arena, systems = None, []
        with TemporaryDirectory() as timing:
            systems_process = subprocess.Popen(
                [sys.executable, "-m", "evaluation.lib.live.bench_server", "--systems", "2",
                 "--latency", str(latency), "--items", json.dumps(items),
                 "--ports", json.dumps(settings.LIVE_LOOPBACK_PORTS)],
                cwd=settings.BASE_DIR, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
            web = None
            try:
                urls = json.loads(systems_process.stdout.readline())["urls"]
                for n, url in enumerate(urls):
                    system = System.objects.create(slug=f"bench-arena-{n}-{stamp}",
                                                   name=f"Bench system {n}")
                    systems.append(system_set_live(
                        system=system, endpoint=url, timeout_seconds=max(5.0, 10 * latency),
                        max_retries=0, max_concurrency=min(64, max(4, battles))))
                arena = arena_open(benchmark=bench, systems=systems)
                port = _free_port()
                web = self._gunicorn(port, workers, threads, timing, profile)
                result = self._run(f"http://127.0.0.1:{port}", bench.slug, battles, turns, think,
                                   web, systems_process, urls)
            finally:
                if web is not None:
                    web.terminate()
                    web.wait(timeout=60)
                systems_process.stdin.close()
                systems_process.wait(timeout=30)
                if arena is not None:  # later runs draw fresh pairs; the battles stay
                    arena.systems.remove(*systems)
            result.update(self._figures(result.pop("records"), result.pop("held"), timing))
        count = result["turns_measured"]
        result["cpu_ms_per_turn"] = {
            "web": round(1000 * sum(result["cpu_s"]["web"].values()) / count, 1),
            "web_per_worker": [round(1000 * v / count, 1) for v in result["cpu_s"]["web"].values()],
            "web_requests": result.pop("request_cpu_ms_mean"),
            "systems": round(1000 * result["cpu_s"]["systems"] / count, 1),
            "browsers": round(1000 * result["cpu_s"]["browsers"] / count, 1)}
        result["cpu_s"]["web"] = round(sum(result["cpu_s"]["web"].values()), 2)
        result.update({"battles": battles, "turns": turns, "latency_s": latency, "think_s": think,
                       "workers": workers, "threads": threads,
                       "load_average": [round(x, 2) for x in os.getloadavg()]})
        if as_json:
            self.stdout.write(json.dumps(result))
            return
        cpu = result["cpu_ms_per_turn"]
        self.stdout.write(
            f"{battles} battles × {turns} turns at once against gunicorn ({workers} workers × "
            f"{threads} threads), systems answering in {latency * 1000:.0f} ms, think time "
            f"0–{think} s: Concord's own time per turn p50 {result['concord_ms_p50']} ms, "
            f"p95 {result['concord_ms_p95']} ms, max {result['concord_ms_max']} ms "
            f"({result['failed_answers']} failed answers, "
            f"load average {result['load_average'][0]}).\n"
            f"CPU per turn: web workers {cpu['web']} ms (of it the requests' own threads "
            f"{cpu['web_requests']} ms), systems {cpu['systems']} ms, browsers "
            f"{cpu['browsers']} ms; SQL server not counted.")

    def _gunicorn(self, port, workers, threads, timing, profile) -> subprocess.Popen:
        env = {**os.environ, "DATABASE_URL": _database_url(), "DJANGO_ENV": settings.DJANGO_ENV,
               "DEBUG": "false", "ALLOWED_HOSTS": "127.0.0.1,localhost",
               "CONCORD_BENCH_TIMING_DIR": timing, "CONCORD_BENCH_PROFILE_DIR": profile}
        # the bench's own session and address limits: it is one address opening many battles
        for name in ("BATTLES_PER_HOUR_SESSION", "BATTLES_PER_HOUR_ADDRESS",
                     "MESSAGES_PER_HOUR_SESSION", "MESSAGES_PER_HOUR_ADDRESS"):
            env[f"CONCORD_ARENA_{name}"] = str(10**9)
        web = subprocess.Popen(
            [sys.executable, "-m", "gunicorn", "config.wsgi", "--preload",
             "--config", str(Path(settings.BASE_DIR) / "scripts" / "gunicorn_bench.py"),
             "--workers", str(workers), "--threads", str(threads), "--worker-class", "gthread",
             "--bind", f"127.0.0.1:{port}", "--log-level", "warning"],
            cwd=settings.BASE_DIR, env=env)
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            if web.poll() is not None:
                raise CommandError(f"gunicorn exited with {web.returncode}")
            try:
                if requests.get(f"http://127.0.0.1:{port}/", timeout=5).status_code < 500:
                    return web
            except requests.ConnectionError:
                time.sleep(0.2)
        web.terminate()
        raise CommandError("gunicorn did not answer within 2 minutes")

    def _run(self, base, benchmark, battles, turns, think, web, systems_process, urls) -> dict:
        records, errors, lock = [], [], threading.Lock()
        warmed, measured = threading.Barrier(battles + 1), threading.Barrier(battles + 1)

        def one_battle(number: int):
            browser = _Browser(base, number)
            try:
                uuid = browser.start(benchmark)
                browser.turn(uuid, 0)  # unmeasured: warms the worker that serves it
                warmed.wait()
                pause = random.Random(number)  # the same pauses on every run
                own = []
                for index in range(1, turns + 1):
                    time.sleep(pause.uniform(0, think))
                    own.append(browser.turn(uuid, index))
                with lock:
                    records.extend(own)
            except Exception as error:  # noqa: BLE001 - reported below
                with lock:
                    errors.append(f"{type(error).__name__}: {error}")
                warmed.abort()
            finally:
                try:
                    measured.wait()
                except threading.BrokenBarrierError:
                    pass

        threads = [threading.Thread(target=one_battle, args=(n,)) for n in range(battles)]
        for thread in threads:
            thread.start()
        try:
            warmed.wait()
        except threading.BrokenBarrierError:
            pass
        worker_pids = _children(web.pid)
        before = ({pid: _cpu_seconds([pid]) for pid in worker_pids},
                  _cpu_seconds([systems_process.pid]), time.process_time(), time.perf_counter())
        try:
            measured.wait()
        except threading.BrokenBarrierError:
            pass
        after = ({pid: _cpu_seconds([pid]) for pid in worker_pids},
                 _cpu_seconds([systems_process.pid]), time.process_time(), time.perf_counter())
        for thread in threads:
            thread.join()
        if errors:
            raise CommandError(f"{len(errors)} battles failed, e.g. {errors[0]}")
        held = {url: {(d, t): h for d, t, h in requests.get(
            url.rsplit("/", 1)[0] + "/held", timeout=30).json()} for url in urls}
        return {"records": records, "held": held,
                "cpu_s": {"web": {pid: after[0][pid] - before[0][pid] for pid in worker_pids},
                          "systems": after[1] - before[1],
                          "browsers": after[2] - before[2]},
                "wall_s": round(after[3] - before[3], 2)}

    @staticmethod
    def _figures(records, held, timing) -> dict:
        served = {}  # request tag -> (start, end, thread CPU) on the server's clock
        for path in Path(timing).glob("*.tsv"):
            for line in path.read_text().splitlines():
                tag, _, start, end, cpu = line.split("\t")
                served[tag] = (float(start), float(end), float(cpu))
        rows = {}
        for uuid, index, side, state, settled, endpoint_a, endpoint_b in (
                BattleTurn.objects.filter(battle__uuid__in={r["uuid"] for r in records})
                .exclude(side=BattleTurn.Side.USER).values_list(
                    "battle__uuid", "index", "side", "state", "settled_at",
                    "battle__system_a__live_endpoint", "battle__system_b__live_endpoint")):
            endpoint = endpoint_a if side == BattleTurn.Side.A else endpoint_b
            rows[(str(uuid), index, side)] = (state, settled.timestamp(), endpoint)
        concord, request_cpu, failed = [], [], 0
        for record in records:
            say_start, say_end, say_cpu = served[record["say"]]
            overheads = []
            for side in (BattleTurn.Side.A, BattleTurn.Side.B):
                state, settled, endpoint = rows[(record["uuid"], record["index"], side)]
                failed += state != BattleTurn.State.OK
                key = (f"arena-{record['uuid']}", 2 * record["index"] + 1)
                system_time = held[endpoint].get(key, 0.0)
                overheads.append(settled - say_end - system_time)
            shown = [served[tag] for tag in record["shown"]]
            concord.append(1000 * ((say_end - say_start) + max(overheads)
                                   + sum(end - start for start, end, _ in shown)))
            request_cpu.append(1000 * (say_cpu + sum(cpu for _, _, cpu in shown)))
        ms = concord
        p50, p95 = percentiles(ms, [0.5, 0.95])
        return {"turns_measured": len(ms), "failed_answers": failed,
                "concord_ms_p50": round(float(p50), 1), "concord_ms_p95": round(float(p95), 1),
                "concord_ms_max": round(max(ms), 1),
                "request_cpu_ms_mean": round(sum(request_cpu) / len(request_cpu), 1),
                "polls": sum(r["polls"] for r in records)}
