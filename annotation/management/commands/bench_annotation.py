"""Load test of the annotation item page and submission (docs/performance-history.md, "Annotation").

What it does, bounded and on loopback only:
1. (re)creates a PostgreSQL database (default `concord_bench` on 127.0.0.1:5432) and, in a child
   process pointed at it, migrates, loads the generated demo benchmark, creates a Trace Task 1
   study (citation check + checklist + Likert) with N simulated annotators, hands each of them
   their own queue of items and logs them in; it also counts the SQL queries of both requests;
2. starts gunicorn (`config.wsgi`, DEBUG off) on a free 127.0.0.1 port;
3. runs N simulated annotators at once (asyncio tasks in this process, one connection each);
   each loops "GET the item page, POST a complete annotation" over its own queue, a fixed
   number of times;
4. prints requests/s, p50/p95/p99 latency per request kind and SQL queries per request, stops
   gunicorn, and drops the database unless --keep.

`--against URL` measures another tool the same way instead (docs/performance.md says how to
set up Label Studio for it): N clients GET the URL in a closed loop, `{n}` in it counting
1..--tasks, with --session as their session cookie.
"""

from __future__ import annotations

import asyncio
import http.client
import json
import os
import re
import resource
import socket
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from urllib.parse import urlencode, urlsplit

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

DEFAULT_URL = "postgres://postgres@127.0.0.1:5432/concord_bench"
TOKEN_RE = re.compile(rb'name="csrfmiddlewaretoken" value="([^"]+)"')


def percentile(values: list[float], q: float) -> float:
    """Nearest-rank percentile (q in 0..100) of a non-empty list."""
    ordered = sorted(values)
    rank = max(1, -(-len(ordered) * q // 100))
    return ordered[int(rank) - 1]


def _cpu_seconds(match) -> float:
    """CPU time (user + system) of the live processes for which MATCH(pid, ppid, name) holds."""
    tick = os.sysconf("SC_CLK_TCK")
    total = 0
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            raw = (entry / "stat").read_text()
        except OSError:
            continue
        name = raw[raw.index("(") + 1:raw.rindex(")")]
        fields = raw[raw.rindex(")") + 2:].split()
        if match(int(entry.name), int(fields[1]), name):
            total += int(fields[11]) + int(fields[12])
    return total / tick


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _wait_for_port(port: int, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                return
        except OSError:
            time.sleep(0.2)
    raise CommandError(f"gunicorn did not answer on 127.0.0.1:{port} within {timeout:.0f} s")


def _admin(url: str, statement: str, database: str = "postgres") -> None:
    import psycopg

    parts = urlsplit(url)
    admin = parts._replace(path=f"/{database}").geturl()
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(statement)


def _bench_database(url: str) -> str:
    name = urlsplit(url).path.lstrip("/")
    if not re.fullmatch(r"[a-z_][a-z0-9_]{0,62}", name) or "bench" not in name:
        raise CommandError("the benchmark database name must contain 'bench' (it is dropped)")
    if urlsplit(url).hostname not in ("127.0.0.1", "localhost", "::1"):
        raise CommandError("the benchmark runs on loopback only")
    return name


# --- the simulated annotators ----------------------------------------------------------------

class _Client:
    """A minimal HTTP/1.1 client on asyncio streams: keeps the connection while the server
    does, counts as little CPU as possible (it shares the machine with what it measures)."""

    def __init__(self, port: int, session: str):
        self.port, self.cookies = port, {"sessionid": session}
        self.reader = self.writer = None

    async def request(self, method: str, path: str, body: bytes = b"") -> tuple[int, bytes]:
        if self.writer is None:
            self.reader, self.writer = await asyncio.open_connection("127.0.0.1", self.port)
        cookie = "; ".join(f"{k}={v}" for k, v in self.cookies.items())
        head = (f"{method} {path} HTTP/1.1\r\nHost: 127.0.0.1:{self.port}\r\n"
                f"Cookie: {cookie}\r\nContent-Length: {len(body)}\r\n")
        if body:
            head += "Content-Type: application/x-www-form-urlencoded\r\n"
        self.writer.write(head.encode() + b"\r\n" + body)
        raw = await self.reader.readuntil(b"\r\n\r\n")
        lines = raw.decode("latin-1").split("\r\n")
        status, length, close = int(lines[0].split(" ", 2)[1]), 0, False
        for line in lines[1:]:
            name, _, value = line.partition(":")
            name, value = name.strip().lower(), value.strip()
            if name == "content-length":
                length = int(value)
            elif name == "connection":
                close = value.lower() == "close"
            elif name == "set-cookie":
                key, _, rest = value.partition("=")
                self.cookies[key.strip()] = rest.split(";", 1)[0]
        content = await self.reader.readexactly(length)
        if close:
            self.close()
        return status, content

    def close(self) -> None:
        if self.writer is not None:
            self.writer.close()
            self.reader = self.writer = None


async def annotator_loop(port: int, session: str, slug: str, positions: list[int],
                         answers: dict, think: float = 0.0) -> list[tuple[str, float, int]]:
    """One simulated annotator: GET the item, POST it, next position. Returns samples.

    THINK seconds pass after every response (0: a closed loop, as fast as the server allows).
    """
    client, samples = _Client(port, session), []
    filled = urlencode({**answers, "focused_ms": 30000}, doseq=True).encode()
    for position in positions:
        path = f"/studies/{slug}/items/{position}/"
        began = time.perf_counter()
        status, body = await client.request("GET", path)
        samples.append(("item page (GET)", time.perf_counter() - began, status))
        await asyncio.sleep(think)
        match = TOKEN_RE.search(body)
        form = b"csrfmiddlewaretoken=" + (match.group(1) if match else b"") + b"&" + filled
        began = time.perf_counter()
        status, _ = await client.request("POST", path + "submit/", form)
        samples.append(("submit (POST)", time.perf_counter() - began, status))
        await asyncio.sleep(think)
    client.close()
    return samples


async def _all_annotators(port: int, plan: dict, think: float) -> list:
    loops = [annotator_loop(port, a["session"], plan["slug"], a["positions"], plan["answers"],
                            think) for a in plan["annotators"]]
    return [sample for samples in await asyncio.gather(*loops) for sample in samples]


async def _get_clients(port: int, session: str, paths: list[str], clients: int,
                       requests: int, kind: str) -> list:
    """CLIENTS simulated clients GET PATHS in turn, REQUESTS in all: the same closed loop as the
    annotators', for the floor and for other tools (`--against`)."""
    async def one(first: int, count: int) -> list:
        client, samples = _Client(port, session), []
        for n in range(count):
            began = time.perf_counter()
            status, _ = await client.request("GET", paths[(first + n) % len(paths)])
            samples.append((kind, time.perf_counter() - began, status))
        client.close()
        return samples
    count = requests // clients
    loops = [one(k * count, count) for k in range(clients)]
    return [sample for samples in await asyncio.gather(*loops) for sample in samples]


def empty_app(environ, start_response):
    """The floor's WSGI app: no Django, no database, two bytes."""
    start_response("200 OK", [("Content-Type", "text/plain"), ("Content-Length", "2")])
    return [b"ok"]


class Command(BaseCommand):
    help = "Benchmark the annotation item page and submission under concurrent annotators."

    def add_arguments(self, parser):
        parser.add_argument("--database-url", default=DEFAULT_URL)
        parser.add_argument("--annotators", type=int, default=16)
        parser.add_argument("--items", type=int, default=50,
                            help="items each annotator opens and submits (bounded loop)")
        parser.add_argument("--workers", type=int, default=2, help="gunicorn workers")
        parser.add_argument("--threads", type=int, default=1, help="gunicorn threads per worker")
        parser.add_argument("--think-ms", type=int, default=0,
                            help="pause of each annotator after every response (0: closed loop)")
        parser.add_argument("--keep", action="store_true", help="keep the database afterwards")
        parser.add_argument("--json", action="store_true", help="print the result as JSON")
        parser.add_argument("--against", metavar="URL",
                            help="measure another tool instead: GET this loopback URL ({n} "
                                 "counts 1..--tasks) in the same closed loop")
        parser.add_argument("--session", default="", help="with --against: its session cookie")
        parser.add_argument("--tasks", type=int, default=60,
                            help="with --against: how many values {n} takes")
        parser.add_argument("--seed-only", metavar="FILE",
                            help="only build the data (migrate, benchmark, study) in the "
                                 "database of DATABASE_URL and write the plan to FILE")
        parser.add_argument("--replay", metavar="FILE",
                            help="serve a --seed-only plan's requests in this process (Django's "
                                 "test client), --rounds rounds, for counting instructions "
                                 "under valgrind (docs/performance.md, issue 13)")
        parser.add_argument("--rounds", type=int, default=2, help="with --replay")

    def handle(self, *args, **options):
        if options["seed_only"]:
            return self._seed(Path(options["seed_only"]), options)
        if options["replay"]:
            return self._replay(json.loads(Path(options["replay"]).read_text()),
                                options["rounds"])
        if not 1 <= options["annotators"] <= 64 or not 1 <= options["items"] <= 500:
            raise CommandError("use 1-64 annotators and 1-500 items each")
        if options["against"]:
            return self._against(options)
        url = options["database_url"]
        name = _bench_database(url)
        _admin(url, f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        _admin(url, f'CREATE DATABASE "{name}"')
        env = {**os.environ, "DATABASE_URL": url, "DJANGO_ENV": "development", "DEBUG": "false",
               "CONCORD_VAR_DIR": tempfile.mkdtemp(prefix="concord-bench-")}
        try:
            with tempfile.TemporaryDirectory() as tmp:
                plan_file = Path(tmp) / "plan.json"
                self.stdout.write("Preparing the database (migrate, demo benchmark, study)…")
                subprocess.run([sys.executable, "manage.py", "bench_annotation", "--seed-only",
                                str(plan_file), "--annotators", str(options["annotators"]),
                                "--items", str(options["items"])],
                               cwd=settings.BASE_DIR, env=env, check=True, timeout=900)
                plan = json.loads(plan_file.read_text())
            # a freshly loaded database would otherwise be vacuumed and analyzed mid-run
            _admin(url, "VACUUM ANALYZE", database=name)
            result = self._load(plan, env, options)
        finally:
            if not options["keep"]:
                _admin(url, f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        self._report(result, options)

    # --- child process: build the data -------------------------------------------------------
    def _seed(self, plan_file: Path, options) -> None:
        from django.core.management import call_command

        from annotation.bench_setup import seed_study

        call_command("migrate", verbosity=0)
        plan = seed_study(annotators=options["annotators"], items=options["items"],
                          stdout=self.stdout)
        plan_file.write_text(json.dumps(plan))

    def _replay(self, plan: dict, rounds: int) -> None:
        """Three warm-up renders, then ROUNDS x (GET the item, POST it) for every annotator in
        turn: the closed loop's requests without a server, so that two runs with different
        ROUNDS differ by exactly the requests' own instructions."""
        from django.test import Client

        def client(session: str) -> Client:
            browser = Client(enforce_csrf_checks=True)
            browser.cookies["sessionid"] = session
            return browser

        probe, slug = client(plan["warm_up"]["session"]), plan["slug"]
        for _ in range(3):
            probe.get(f"/studies/{slug}/items/{plan['warm_up']['position']}/")
        filled = urlencode({**plan["answers"], "focused_ms": 30000}, doseq=True)
        statuses, browsers = [], [(client(a["session"]), a["positions"])
                                  for a in plan["annotators"]]
        for n in range(rounds):
            for browser, positions in browsers:
                path = f"/studies/{slug}/items/{positions[n]}/"
                page = browser.get(path)
                token = TOKEN_RE.search(page.content).group(1).decode()
                answer = browser.post(path + "submit/", f"csrfmiddlewaretoken={token}&{filled}",
                                      content_type="application/x-www-form-urlencoded")
                statuses += [page.status_code, answer.status_code]
        self.stdout.write(f"{len(statuses)} requests, statuses {sorted(set(statuses))}")

    # --- parent: serve and load -------------------------------------------------------------
    def _gunicorn(self, app: str, env: dict, options) -> tuple[subprocess.Popen, int]:
        port = _free_port()
        server = subprocess.Popen(
            [sys.executable, "-m", "gunicorn", app, "--bind", f"127.0.0.1:{port}",
             "--workers", str(options["workers"]), "--threads", str(options["threads"]),
             "--worker-class", "gthread" if options["threads"] > 1 else "sync",
             "--preload", "--log-level", "warning", "--keep-alive", "30"],
            cwd=settings.BASE_DIR, env=env)
        _wait_for_port(port, 60)
        return server, port

    def _measure(self, server: subprocess.Popen | None, loop) -> dict:
        """Run the coroutine LOOP; its samples, wall time and the CPU it cost (the web
        processes' only when SERVER, their parent, is ours)."""
        def web(pid, ppid, name):
            return server is not None and ppid == server.pid

        def database(pid, ppid, name):
            return name.startswith("postgres")

        clients_before = resource.getrusage(resource.RUSAGE_SELF)
        cpu_before = (_cpu_seconds(web), _cpu_seconds(database))
        started = time.time()
        # a thread of its own: the caller may already run an event loop (a test does)
        with ThreadPoolExecutor(1) as pool:
            samples = pool.submit(asyncio.run, loop).result()
        wall = time.time() - started
        cpu = (_cpu_seconds(web) - cpu_before[0], _cpu_seconds(database) - cpu_before[1])
        clients_after = resource.getrusage(resource.RUSAGE_SELF)
        clients = (clients_after.ru_utime + clients_after.ru_stime
                   - clients_before.ru_utime - clients_before.ru_stime)
        return {"samples": samples, "wall": wall,
                "cpu": {**({"web": cpu[0]} if server is not None else {}), "database": cpu[1],
                        "load generator": clients}}

    def _load(self, plan: dict, env: dict, options) -> dict:
        server, port = self._gunicorn("config.wsgi", env, options)
        try:
            self._warm_up(port, plan)
            result = self._measure(server, _all_annotators(port, plan, options["think_ms"] / 1000))
        finally:
            server.terminate()
            server.wait(timeout=30)
        # The floor: the same server, clients and loop around a WSGI app that does nothing.
        server, port = self._gunicorn(f"{__name__}:empty_app", env, options)
        try:
            floor = self._measure(server, _get_clients(
                port, "-", ["/"], len(plan["annotators"]), len(result["samples"]),
                "empty app (GET)"))
        finally:
            server.terminate()
            server.wait(timeout=30)
        return {**result, "queries": plan["queries"], "floor": floor}

    def _warm_up(self, port: int, plan: dict) -> None:
        """One request per worker-ish so imports and connections are not in the figures."""
        spare = plan["warm_up"]
        for _ in range(max(4, 2 * len(plan["annotators"]) // 8)):
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
            conn.request("GET", f"/studies/{plan['slug']}/items/{spare['position']}/",
                         headers={"Cookie": f"sessionid={spare['session']}"})
            conn.getresponse().read()
            conn.close()

    def _report(self, result: dict, options) -> None:
        by_kind: dict[str, list[float]] = {}
        errors = 0
        for kind, seconds, status in result["samples"]:
            by_kind.setdefault(kind, []).append(seconds * 1000)
            expected = 200 if kind.startswith("item") else 307
            errors += status != expected
        total = len(result["samples"])
        summary = {
            "annotators": options["annotators"], "gunicorn_workers": options["workers"],
            "think_ms": options["think_ms"],
            "requests": total, "errors": errors, "seconds": round(result["wall"], 2),
            "requests_per_second": round(total / result["wall"], 1),
            "cpu_ms_per_request": {k: round(1000 * v / total, 2) for k, v in result["cpu"].items()},
            "cpus": os.cpu_count(),
            "kinds": {kind: {"n": len(ms), "p50_ms": round(percentile(ms, 50), 1),
                             "p95_ms": round(percentile(ms, 95), 1),
                             "p99_ms": round(percentile(ms, 99), 1),
                             "queries": result["queries"][kind]}
                      for kind, ms in by_kind.items()},
            "floor": self._get_summary(result["floor"], database=False),
        }
        if options["json"]:
            self.stdout.write(json.dumps(summary, indent=1))
            return
        self.stdout.write(
            f"\n{summary['annotators']} concurrent annotators (pause {options['think_ms']} ms), "
            f"gunicorn {options['workers']} worker(s), PostgreSQL, loopback\n"
            f"{total} requests in {summary['seconds']} s = "
            f"{summary['requests_per_second']} requests/s, {errors} errors\n")
        self.stdout.write(f"{'request':<18}{'n':>6}{'p50 ms':>9}{'p95 ms':>9}{'p99 ms':>9}"
                          f"{'SQL/request':>13}")
        for kind, row in summary["kinds"].items():
            self.stdout.write(f"{kind:<18}{row['n']:>6}{row['p50_ms']:>9}{row['p95_ms']:>9}"
                              f"{row['p99_ms']:>9}{row['queries']:>13}")
        cpu = ", ".join(f"{k} {v} ms" for k, v in summary["cpu_ms_per_request"].items())
        self.stdout.write(f"CPU per request on {summary['cpus']} CPU(s): {cpu}")
        floor = summary["floor"]
        self.stdout.write(
            f"Floor (same gunicorn, clients and loop; a WSGI app that only answers \"ok\"): "
            f"{floor['requests_per_second']} requests/s, p50 {floor['p50_ms']} ms, "
            f"p95 {floor['p95_ms']} ms; CPU per request: web {floor['cpu_ms_per_request']['web']}"
            f" ms, load generator {floor['cpu_ms_per_request']['load generator']} ms")

    @staticmethod
    def _get_summary(result: dict, *, database: bool) -> dict:
        """Figures of a run of `_get_clients`; errors are answers other than 200."""
        ms = [seconds * 1000 for _, seconds, status in result["samples"] if status == 200]
        total = len(result["samples"])
        if not ms:
            raise CommandError(f"none of the {total} requests was answered with 200")
        return {"requests": total, "errors": total - len(ms),
                "requests_per_second": round(total / result["wall"], 1),
                "p50_ms": round(percentile(ms, 50), 1), "p95_ms": round(percentile(ms, 95), 1),
                "p99_ms": round(percentile(ms, 99), 1),
                "cpu_ms_per_request": {k: round(1000 * v / total, 2)
                                       for k, v in result["cpu"].items()
                                       if database or k != "database"}}

    def _against(self, options) -> None:
        """Another tool, the same load: as many requests as the annotators' run would make."""
        parts = urlsplit(options["against"])
        if parts.scheme != "http" or parts.hostname not in ("127.0.0.1", "localhost"):
            raise CommandError("--against takes an http:// URL on 127.0.0.1 or localhost")
        if not 1 <= options["tasks"] <= 100_000:
            raise CommandError("--tasks must be between 1 and 100000")
        if re.search(r"[\s;,]", options["session"]):
            raise CommandError("--session takes the session cookie's value alone (no spaces, "
                               "';' or ',')")
        target = parts.path + (f"?{parts.query}" if parts.query else "")
        paths = [target.replace("{n}", str(n)) for n in range(1, options["tasks"] + 1)]
        clients = options["annotators"]
        result = self._measure(None, _get_clients(
            parts.port or 80, options["session"], paths, clients,
            clients * options["items"] * 2, "GET"))
        summary = {"url": options["against"], "clients": clients,
                   **self._get_summary(result, database=True)}
        if options["json"]:
            self.stdout.write(json.dumps(summary, indent=1))
            return
        cpu = ", ".join(f"{k} {v} ms" for k, v in summary["cpu_ms_per_request"].items())
        self.stdout.write(
            f"\n{clients} concurrent clients, closed loop, GET {options['against']}\n"
            f"{summary['requests']} requests in {round(result['wall'], 2)} s = "
            f"{summary['requests_per_second']} requests/s, {summary['errors']} errors "
            f"(answers other than 200)\n"
            f"p50 {summary['p50_ms']} ms, p95 {summary['p95_ms']} ms, p99 {summary['p99_ms']} ms; "
            f"CPU per request: {cpu}")
