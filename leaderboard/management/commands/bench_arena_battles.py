"""`manage.py bench_arena_battles`: Concord's own time per arena battle turn (docs/performance.md).

B battles run at once (one thread each, a browser session each, through the real views with
Django's test client: no network between "browser" and Concord), T messages per battle, against
two local live systems that answer after exactly L seconds (`BenchLiveServer`). Per turn:

    Concord's time = (the "send" request) + max over the two systems of
                     (answer settled − send answered − the time the system held the request)
                     + (the two answer fragments the page then fetches)

so everything but the systems' own latency counts: the view, the transaction writing the
message and the pending rows, the call threads, `live_client` and its HTTP call, validation,
settling the row, and rendering. Each system allows B concurrent calls, so no call waits for a
slot (a system's own concurrency limit is its latency, not Concord's).
"""

import json
import threading
import time
from pathlib import Path
from tempfile import TemporaryDirectory

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError
from django.db import connection
from django.test import Client

from evaluation.lib.demo import generate_demo_bundle
from evaluation.lib.formats.bundle import Bundle, write_bundle
from evaluation.lib.live.bench_server import BenchLiveServer
from evaluation.lib.stats.bootstrap import percentiles
from evaluation.models import Battle, BattleTurn, Benchmark, System
from evaluation.services.arena import arena_catalogue, arena_open
from evaluation.services.benchmarks import benchmark_import
from evaluation.services.live import system_set_live

SLUG = "bench-arena"


def _benchmark() -> Benchmark:
    bench = Benchmark.objects.filter(slug=SLUG).first()
    if bench is None:
        data = generate_demo_bundle(seed=42)
        data["benchmark"] = {**data["benchmark"], "slug": SLUG, "name": "Arena bench"}
        with TemporaryDirectory() as folder:
            write_bundle(Bundle(**data), Path(folder))
            bench = benchmark_import(path=Path(folder))
    return bench


class Command(BaseCommand):
    help = "Measure Concord's own time per arena battle turn with concurrent battles."

    def add_arguments(self, parser):
        parser.add_argument("--battles", type=int, default=16, help="battles at once")
        parser.add_argument("--turns", type=int, default=5, help="messages per battle")
        parser.add_argument("--latency", type=float, default=0.3, help="each system's seconds")
        parser.add_argument("--json", action="store_true", dest="as_json")

    def handle(self, *, battles, turns, latency, as_json, **options):
        if battles < 1 or not 1 <= turns <= 10 or latency < 0:
            raise CommandError("--battles ≥ 1, --turns 1..10, --latency ≥ 0")
        bench = _benchmark()
        items = tuple(bench.items.order_by("pk").values_list("external_id", flat=True)[:10])
        servers = [BenchLiveServer(latency=latency, item_ids=items).start() for _ in range(2)]
        # the bench's own session and address limits: it is one address opening many battles
        for name in ("BATTLES_PER_HOUR_SESSION", "BATTLES_PER_HOUR_ADDRESS",
                     "MESSAGES_PER_HOUR_SESSION", "MESSAGES_PER_HOUR_ADDRESS"):
            setattr(settings, f"ARENA_{name}", 10**9)
        stamp = time.time_ns()
        systems, arena = [], None
        try:
            for n, server in enumerate(servers):
                system = System.objects.create(slug=f"bench-arena-{n}-{stamp}",
                                               name=f"Bench system {n}")
                systems.append(system_set_live(system=system, endpoint=server.url,
                                               timeout_seconds=max(5.0, 10 * latency),
                                               max_retries=0,
                                               max_concurrency=min(64, max(4, battles))))
            arena = arena_open(benchmark=bench, systems=systems)
            arena_catalogue(bench)  # a running web process has it from its first battle
            samples, errors, lock = [], [], threading.Lock()
            barrier = threading.Barrier(battles)

            def one_battle(number: int):
                try:
                    client = Client(REMOTE_ADDR=f"10.9.{number // 250}.{number % 250 + 1}")
                    started = client.post(f"/arena/{bench.slug}/battles/")
                    if started.status_code != 302:
                        raise CommandError(f"starting a battle answered {started.status_code}")
                    battle = Battle.objects.get(uuid=started.url.rstrip("/").split("/")[-1])
                    barrier.wait()
                    for index in range(turns):
                        value = self._turn(client, battle, index, servers, latency)
                        with lock:
                            samples.append(value)
                except Exception as error:  # noqa: BLE001 - reported below
                    with lock:
                        errors.append(f"{type(error).__name__}: {error}")
                    barrier.abort()
                finally:
                    connection.close()  # this thread's own connection

            wall, cpu = time.perf_counter(), time.process_time()
            threads = [threading.Thread(target=one_battle, args=(n,)) for n in range(battles)]
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join()
            wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
        finally:
            for server in servers:
                server.stop()
            if arena is not None:  # later runs draw fresh pairs; the battles stay
                arena.systems.remove(*systems)
        if errors:
            raise CommandError(f"{len(errors)} battles failed, e.g. {errors[0]}")
        failed = BattleTurn.objects.filter(battle__arena=arena, battle__system_a__in=systems,
                                           state="error").count()
        ms = [1000 * s for s in samples]
        p50, p95 = percentiles(ms, [0.5, 0.95])
        result = {"battles": battles, "turns": turns, "latency_s": latency,
                  "turns_measured": len(ms), "failed_answers": failed,
                  "concord_ms_p50": round(float(p50), 1), "concord_ms_p95": round(float(p95), 1),
                  "concord_ms_max": round(max(ms), 1), "wall_s": round(wall, 2),
                  "cpu_s": round(cpu, 2)}
        if as_json:
            self.stdout.write(json.dumps(result))
            return
        self.stdout.write(
            f"{battles} battles × {turns} turns at once, systems answering in "
            f"{latency * 1000:.0f} ms: Concord's own time per turn p50 {result['concord_ms_p50']}"
            f" ms, p95 {result['concord_ms_p95']} ms, max {result['concord_ms_max']} ms "
            f"({failed} failed answers; {wall:.1f} s wall, {cpu:.1f} s CPU in this process)")

    @staticmethod
    def _turn(client, battle, index, servers, latency) -> float:
        base = f"/arena/battles/{battle.uuid}/"
        sent = time.perf_counter()
        sent_wall = time.time()
        response = client.post(base + "say/", {"message": f"Something quiet, please ({index})"},
                               HTTP_HX_REQUEST="true")
        if response.status_code != 200:
            raise CommandError(f"sending a message answered {response.status_code}")
        say_s = time.perf_counter() - sent
        answered_wall = sent_wall + say_s
        time.sleep(latency)  # no answer settles sooner; polling meanwhile would only add CPU
        while True:  # the answers' own timestamps say when they settled; this only waits
            rows = list(BattleTurn.objects.filter(battle=battle, index=index).exclude(
                side="user").values("side", "state", "settled_at"))
            if all(row["state"] != "pending" for row in rows):
                break
            time.sleep(0.05)
        dialogue = f"arena-{battle.uuid}"
        overheads = []
        for row in rows:
            system = battle.system_a if row["side"] == "a" else battle.system_b
            server = servers[0] if system.live_endpoint == servers[0].url else servers[1]
            held = server.held.get((dialogue, 2 * index + 1), 0.0)
            overheads.append(row["settled_at"].timestamp() - answered_wall - held)
        fetched = time.perf_counter()
        for side in "ab":
            if client.get(f"{base}replies/{index}/{side}/").status_code != 200:
                raise CommandError("an answer fragment failed")
        return say_s + max(overheads) + (time.perf_counter() - fetched)
