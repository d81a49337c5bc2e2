"""`manage.py bench_simulation`: a PEPPER simulation of N users × T turns against a local
OpenAI-compatible server with a fixed latency and C slots (docs/performance.md).

The ideal wall time is latency × LLM calls ÷ concurrency; the command reports the measured time,
its excess over the ideal, and Concord's own time per turn (a dialogue's wall time minus the
time inside the live system and inside LLM calls). The live system is the in-process Popularity
baseline (it answers in microseconds), so the LLM is the only slow party.
"""

import json
import tempfile
import time
from pathlib import Path

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from evaluation.lib.demo import generate_demo_bundle
from evaluation.lib.formats.bundle import Bundle, write_bundle
from evaluation.lib.simulators.bench_server import BenchLLMServer
from evaluation.models import Benchmark
from evaluation.services.benchmarks import benchmark_import
from evaluation.services.live import live_baselines_ensure
from evaluation.services.llm_runs import model_options
from evaluation.services.simulations import simulation_batch_process, simulation_create


class Command(BaseCommand):
    help = "Measure a PEPPER simulation against a fixed-latency local LLM server."

    def add_arguments(self, parser):
        parser.add_argument("--benchmark", default="demo-tourism",
                            help="slug (the demo is generated and imported when absent)")
        parser.add_argument("--users", type=int, default=100)
        parser.add_argument("--turns", type=int, default=10)
        parser.add_argument("--latency", type=float, default=0.2)
        parser.add_argument("--concurrency", type=int, default=8)
        parser.add_argument("--system", default="popularity", help="an in-process baseline")
        parser.add_argument("--json", action="store_true", dest="as_json")

    def handle(self, *, benchmark, users, turns, latency, concurrency, system, as_json,
               **options):
        bench = Benchmark.objects.filter(slug=benchmark).first()
        if bench is None:
            if benchmark != "demo-tourism":
                raise CommandError(f"no benchmark {benchmark!r}")
            with tempfile.TemporaryDirectory() as folder:
                write_bundle(Bundle(**generate_demo_bundle(seed=42)), Path(folder))
                bench = benchmark_import(path=Path(folder))
        live = {s.live_adapter: s for s in live_baselines_ensure()}.get(system)
        if live is None:
            raise CommandError(f"no in-process baseline {system!r}")
        settings.LLM_MAX_CONCURRENCY = concurrency  # this process's gateway slots
        server = BenchLLMServer(latency=latency, concurrency=concurrency).start()
        try:
            # A model name of its own per run: the database cache must not answer.
            model = model_options(model=f"openai/bench-{time.time_ns()}",
                                  api_base=server.api_base)
            simulation = simulation_create(
                benchmark=bench, system=live, simulator="pepper", users=users, turns=turns,
                model=model, batch_size=users, failure_threshold=1.0, enqueue=False)
            started, cpu = time.perf_counter(), time.process_time()
            simulation_batch_process(simulation_id=simulation.pk, batch=0)
            wall, cpu = time.perf_counter() - started, time.process_time() - cpu
        finally:
            server.stop()
        simulation.refresh_from_db()
        simulation.job.refresh_from_db()
        if simulation.run_id is None:
            raise CommandError(f"the simulation failed: {simulation.job.error}")
        calls = server.calls
        ideal = latency * calls / concurrency
        result = {"users": users, "turns": turns, "latency_s": latency,
                  "concurrency": concurrency, "llm_calls": calls, "wall_s": round(wall, 2),
                  "ideal_s": round(ideal, 2), "excess": round(wall / ideal - 1, 4),
                  "cpu_s": round(cpu, 2),
                  "overhead_ms_per_turn": round(simulation.report["overhead_ms_per_turn"], 3),
                  "failed": simulation.report["failed"], "run_id": simulation.run_id}
        if as_json:
            self.stdout.write(json.dumps(result))
            return
        self.stdout.write(
            f"{users} users × {turns} turns, {calls} LLM calls at {latency * 1000:.0f} ms, "
            f"concurrency {concurrency}: {wall:.1f} s (ideal {ideal:.1f} s, "
            f"{100 * result['excess']:+.1f}%, {cpu:.1f} s of CPU in this process); "
            "Concord overhead "
            f"{result['overhead_ms_per_turn']:.2f} ms per turn; {result['failed']} failed")
