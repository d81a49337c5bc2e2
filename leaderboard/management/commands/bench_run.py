"""Time a Trace run at scale, end to end, with real Celery worker processes (docs/performance.md,
"Runs at scale").

For each size: generate a scale benchmark (`make_demo_benchmark --dialogues N`) and import it in
a child process (timed, with its peak memory); write the popularity baseline's submission for
every dialogue (not timed); then, for each worker count, start `celery -A config worker
--concurrency K` on the configured broker, validate and store the submission (timed), create the
run as the web does (queued on commit) and follow its job to the end, then wait for the rank
snapshot the worker's leaderboard refresh writes. Peak memory is each process's VmHWM
(/proc/PID/status), read before the worker stops. Everything the command created is deleted at
the end (`--keep` keeps it).
"""

import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError
from django.db import connection, transaction

from evaluation.lib.demo import generate_demo_bundle
from evaluation.lib.formats.bundle import Bundle, write_bundle
from evaluation.lib.formats.submission import write_turn_submission
from evaluation.lib.rankers import generate_submission
from evaluation.models import Benchmark, Job, Run, System
from evaluation.services.benchmarks import benchmark_delete
from evaluation.services.runs import run_create
from evaluation.services.submissions import submission_create, system_create
from leaderboard.models import RankSnapshot

ROOT = Path(settings.BASE_DIR)
MIB = 1024 * 1024


def _peak_kib(pid: int) -> int:
    """VmHWM of a live process in KiB (its peak resident memory so far)."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    except OSError:
        pass
    return 0


def _children(pid: int) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[1]) == pid:
                found.append(int(entry.name))
    return found


def _database_url() -> str:
    db = connection.settings_dict
    return f"postgres://{db['USER'] or 'postgres'}@{db['HOST']}:{db['PORT']}/{db['NAME']}"


class Command(BaseCommand):
    help = "Wall time and peak memory of a Trace run at scale, with 1 and 2 worker processes."

    def add_arguments(self, parser):
        parser.add_argument("--dialogues", type=int, nargs="+", default=[10_000])
        parser.add_argument("--workers", type=int, nargs="+", default=[1, 2],
                            help="worker processes (the pool size of one Celery worker)")
        parser.add_argument("--seed", type=int, default=42)
        parser.add_argument("--keep", action="store_true", help="keep what was created")
        parser.add_argument("--json", metavar="FILE", dest="json_path",
                            help="also write the figures as JSON")

    def handle(self, dialogues, workers, seed, keep, json_path, **options):
        if connection.vendor != "postgresql":
            raise CommandError("bench_run measures PostgreSQL: set DATABASE_URL=postgres://…")
        if settings.CELERY_BROKER_URL.startswith("filesystem://"):
            self.stderr.write("note: the filesystem broker (embedded mode) is being measured")
        figures = []
        with tempfile.TemporaryDirectory(prefix="bench-run-") as folder:
            for count in dialogues:
                figures += self._size(Path(folder), count, workers, seed, keep)
        if json_path:
            Path(json_path).write_text(json.dumps(figures, indent=2))

    # --- one size ------------------------------------------------------------------------

    def _size(self, folder: Path, count: int, workers: list[int], seed: int, keep: bool):
        out = self.stdout.write
        started = time.perf_counter()
        data = generate_demo_bundle(seed=seed, dialogues=count)
        bundle_dir = folder / f"bundle-{count}"
        write_bundle(Bundle(**data), bundle_dir)
        system_turns = sum(t["role"] == "system" for d in data["dialogues"] for t in d["turns"])
        slug = data["benchmark"]["slug"]
        out(f"\n== {count:,} dialogues, {system_turns:,} system turns "
            f"(generated in {time.perf_counter() - started:.1f} s)")
        if Benchmark.objects.filter(slug=slug).exists():
            raise CommandError(f"benchmark {slug!r} exists already; delete it first")
        seconds, peak = self._child([sys.executable, "manage.py", "import_benchmark",
                                     str(bundle_dir), "--no-progress"])
        out(f"import_benchmark: {seconds:.1f} s, peak {peak / 1024:.0f} MiB")
        lines = generate_submission("popularity", items=data["items"], reviews=data["reviews"],
                                    dialogues=data["dialogues"])
        del data
        path = folder / f"popularity-{count}.jsonl"
        write_turn_submission(lines, path)
        out(f"submission: {len(lines):,} lines, {path.stat().st_size / MIB:.1f} MiB")
        benchmark = Benchmark.objects.get(slug=slug)
        rows = []
        try:
            for processes in workers:
                row = self._run(benchmark, path, processes, len(lines))
                row.update(dialogues=count, system_turns=system_turns, import_s=seconds,
                           import_peak_mib=round(peak / 1024))
                rows.append(row)
        finally:
            if not keep:
                self._delete(benchmark)
        if len(rows) > 1 and rows[0]["workers"] == 1:
            for row in rows[1:]:
                out(f"speed-up with {row['workers']} worker processes: "
                    f"{rows[0]['run_s'] / row['run_s']:.2f}×")
        return rows

    def _child(self, command: list[str]) -> tuple[float, int]:
        """Wall seconds and peak RSS (KiB) of a child process."""
        started = time.perf_counter()
        process = subprocess.Popen(command, cwd=ROOT, stdout=subprocess.DEVNULL)
        _, status, usage = os.wait4(process.pid, 0)
        if status:
            raise CommandError(f"{' '.join(command)} failed ({status})")
        return time.perf_counter() - started, usage.ru_maxrss

    def _run(self, benchmark, path: Path, processes: int, lines: int) -> dict:
        out = self.stdout.write
        worker = self._start_worker(processes)
        try:
            system = system_create(name=f"bench-run-{benchmark.slug}-{processes}-{time.time_ns()}")
            started = time.perf_counter()
            submission = submission_create(system=system, benchmark=benchmark,
                                           path_or_file=path, user=None)
            stored = time.perf_counter()
            with transaction.atomic():
                run = run_create(submission=submission)  # queued as the transaction commits
            job = run.job
            peaks: dict[int, int] = {}
            while not job.is_finished:
                time.sleep(0.25)
                job.refresh_from_db()
                for pid in [worker.pid, *_children(worker.pid)]:
                    peaks[pid] = max(peaks.get(pid, 0), _peak_kib(pid))
            finished = time.perf_counter()
            if job.status != Job.Status.SUCCEEDED:
                raise CommandError(f"run {run.pk} failed: {job.error}")
            refresh_deadline = time.monotonic() + 600
            while not RankSnapshot.objects.filter(benchmark=benchmark, protocol="turn",
                                                  run_ids__contains=[run.pk]).exists():
                if time.monotonic() > refresh_deadline:
                    raise CommandError("the leaderboard refresh never came")
                time.sleep(0.1)
            refreshed = time.perf_counter()
            for pid in [worker.pid, *_children(worker.pid)]:
                peaks[pid] = max(peaks.get(pid, 0), _peak_kib(pid))
        finally:
            self._stop_worker(worker)
        run = Run.objects.select_related("job").get(pk=run.pk)
        timeline = (run.job.started_at, run.job.finished_at)
        row = {
            "workers": processes, "lines": lines,
            "validate_store_s": round(stored - started, 2),
            "run_s": round(finished - stored, 2),
            "job_s": round((timeline[1] - timeline[0]).total_seconds(), 2),
            "refresh_s": round(refreshed - finished, 2),
            "end_to_end_s": round(refreshed - started, 2),
            "chunks": run.job.result.get("chunks"), "values": run.job.result.get("values"),
            "peak_mib": {("worker" if pid == worker.pid else f"pool {pid}"): round(kib / 1024)
                         for pid, kib in peaks.items()},
            "bench_process_peak_mib": round(
                resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024),
        }
        out(f"-- {processes} worker process{'es' if processes > 1 else ''}: "
            f"validate + store {row['validate_store_s']:.1f} s, run {row['run_s']:.1f} s "
            f"({row['chunks']} chunks, {row['values']:,} values), leaderboard refresh "
            f"{row['refresh_s']:.1f} s; end to end {row['end_to_end_s']:.1f} s")
        out(f"   peak memory (MiB): {json.dumps(row['peak_mib'])}; this process "
            f"{row['bench_process_peak_mib']}")
        return row

    def _start_worker(self, processes: int) -> subprocess.Popen:
        env = {**os.environ, "DATABASE_URL": _database_url(),
               "CELERY_BROKER_URL": settings.CELERY_BROKER_URL,
               "MEDIA_ROOT": str(settings.MEDIA_ROOT), "NLI_MODEL_PATH": ""}
        worker = subprocess.Popen(
            [sys.executable, "-m", "celery", "-A", "config", "worker",
             f"--concurrency={processes}", "--without-mingle", "--without-gossip",
             "--loglevel=WARNING"],
            cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 60
        while len(_children(worker.pid)) < processes:  # the pool is up
            if worker.poll() is not None or time.monotonic() > deadline:
                raise CommandError("the Celery worker did not start")
            time.sleep(0.2)
        time.sleep(1.0)
        return worker

    def _stop_worker(self, worker: subprocess.Popen) -> None:
        worker.terminate()
        try:
            worker.wait(timeout=30)
        except subprocess.TimeoutExpired:
            worker.kill()

    def _delete(self, benchmark) -> None:
        runs = Run.objects.filter(submission__benchmark=benchmark)
        job_ids = list(runs.values_list("job_id", flat=True))
        system_ids = list(benchmark.submissions.values_list("system_id", flat=True))
        benchmark_delete(benchmark=benchmark)
        Job.objects.filter(pk__in=job_ids).delete()
        System.objects.filter(pk__in=system_ids).delete()
