"""`manage.py bench_simulation`: a PEPPER simulation of N users × T turns against a local
OpenAI-compatible server with a fixed latency and C slots (docs/performance.md).

The ideal wall time is latency × LLM calls ÷ concurrency; the command reports the measured time,
its excess over the ideal, and Concord's own time per turn (a dialogue's wall time minus the
time inside the live system and inside LLM calls). The live system is the in-process Popularity
baseline (it answers in microseconds), so the LLM is the only slow party.

By default the batches run in this process. `--workers N` starts N Celery worker processes
(one pool process each, on CELERY_BROKER_URL and this DATABASE_URL), queues the simulation's
batches (`--batch-size` users each) and times it from the queueing to the job's end: the same
run on 1 and on 2 worker processes (docs/performance.md). The LLM slots are split between the
processes (`--concurrency` ÷ N each), so the server's limit is never exceeded.
"""

import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from evaluation.lib.demo import generate_demo_bundle
from evaluation.lib.formats.bundle import Bundle, write_bundle
from evaluation.lib.llm.profiles import parse_profiles
from evaluation.lib.simulators.bench_server import BenchLLMServer
from evaluation.models import Benchmark, Job
from evaluation.services.benchmarks import benchmark_import
from evaluation.services.live import live_baselines_ensure
from evaluation.services.llm_models import model_options
from evaluation.services.simulations import simulation_batch_process, simulation_create
from evaluation.services.spending import EXEMPT


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
        parser.add_argument("--workers", type=int, default=0,
                            help="N Celery worker processes (0: run the batches here)")
        parser.add_argument("--batch-size", type=int, default=0,
                            help="users per batch (default: all in one batch without workers, "
                                 "10 with)")
        parser.add_argument("--json", action="store_true", dest="as_json")

    def handle(self, *, benchmark, users, turns, latency, concurrency, system, workers,
               batch_size, as_json, **options):
        if workers < 0 or (workers and concurrency % workers):
            raise CommandError("--workers must divide --concurrency (each gets an equal share "
                               "of the LLM slots)")
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
        pool = None
        try:
            # A model name of its own per run: the database cache must not answer. The bench
            # server is a model profile of this process and of the workers it starts.
            profiles = json.dumps({"bench": {"model": f"openai/bench-{time.time_ns()}",
                                             "api_base": server.api_base}})
            settings.LLM_PROFILES = parse_profiles(profiles, credentials=settings.CREDENTIALS)
            model = model_options(profile="bench")
            if workers:
                pool = WorkerPool(workers, llm_slots=concurrency // workers,
                                  env={"CONCORD_LLM_PROFILES": profiles}).start()
            simulation = simulation_create(
                benchmark=bench, system=live, simulator="pepper", users=users, turns=turns,
                model=model, batch_size=batch_size or (10 if workers else users),
                failure_threshold=1.0, enqueue=bool(workers),
                spending=EXEMPT)  # a local dry-run server: no money is spent
            started, cpu = time.perf_counter(), time.process_time()
            if workers:
                pool.wait_for(simulation.job_id)
            else:
                simulation_batch_process(simulation_id=simulation.pk, batch=0)
            wall, cpu = time.perf_counter() - started, time.process_time() - cpu
        finally:
            server.stop()
            if pool is not None:
                pool.stop()
        simulation.refresh_from_db()
        simulation.job.refresh_from_db()
        if simulation.run_id is None:
            raise CommandError(f"the simulation failed: {simulation.job.error}")
        calls = server.calls
        ideal = latency * calls / concurrency
        result = {"users": users, "turns": turns, "latency_s": latency,
                  "concurrency": concurrency, "workers": workers,
                  "batch_size": simulation.batch_size, "llm_calls": calls,
                  "wall_s": round(wall, 2),
                  "ideal_s": round(ideal, 2), "excess": round(wall / ideal - 1, 4),
                  "cpu_s": round(cpu, 2),
                  "overhead_ms_per_turn": round(simulation.report["overhead_ms_per_turn"], 3),
                  "failed": simulation.report["failed"], "run_id": simulation.run_id}
        if as_json:
            self.stdout.write(json.dumps(result))
            return
        where = (f"{workers} worker process{'es' if workers > 1 else ''}, batches of "
                 f"{simulation.batch_size}" if workers else "in this process")
        self.stdout.write(
            f"{users} users × {turns} turns ({where}), {calls} LLM calls at "
            f"{latency * 1000:.0f} ms, "
            f"concurrency {concurrency}: {wall:.1f} s (ideal {ideal:.1f} s, "
            f"{100 * result['excess']:+.1f}%"
            + (f", {cpu:.1f} s of CPU in this process); " if not workers else "); ")
            +
            "Concord overhead "
            f"{result['overhead_ms_per_turn']:.2f} ms per turn; {result['failed']} failed")


class WorkerPool:
    """N `celery worker --concurrency=1` processes on this broker and database, each with
    LLM_SLOTS gateway slots; their output is drained so that they never block on a pipe."""

    def __init__(self, count: int, *, llm_slots: int, env: dict | None = None):
        self.count, self.llm_slots, self.processes, self.ready = count, llm_slots, [], []
        self.env = env or {}

    def start(self) -> "WorkerPool":
        env = {**os.environ, **self.env, "CONCORD_LLM_MAX_CONCURRENCY": str(self.llm_slots),
               "CELERY_TASK_ALWAYS_EAGER": "0"}
        for number in range(self.count):
            process = subprocess.Popen(
                [sys.executable, "-m", "celery", "-A", "config", "worker", "--concurrency=1",
                 "--without-mingle", "--without-gossip", "--loglevel=INFO",
                 "-n", f"bench{number}-{os.getpid()}@%h"],
                cwd=settings.BASE_DIR, env=env, stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT, text=True)
            ready = threading.Event()
            threading.Thread(target=self._drain, args=(process, ready), daemon=True).start()
            self.processes.append(process)
            self.ready.append(ready)
        for ready in self.ready:
            if not ready.wait(120):
                self.stop()
                raise CommandError("a Celery worker did not start within 120 s")
        return self

    @staticmethod
    def _drain(process, ready) -> None:
        for line in process.stdout:
            if " ready." in line:
                ready.set()

    def wait_for(self, job_id: int, timeout: float = 3600) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if Job.objects.get(pk=job_id).is_finished:
                return
            if any(p.poll() is not None for p in self.processes):
                raise CommandError("a Celery worker exited during the run")
            time.sleep(0.05)
        raise CommandError(f"the simulation did not finish within {timeout:.0f} s")

    def stop(self) -> None:
        for process in self.processes:
            process.terminate()
        for process in self.processes:
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                process.kill()
