"""gunicorn settings for the benchmarks that time real server processes (`bench_arena_battles`,
docs/performance.md): `gunicorn -c scripts/gunicorn_bench.py config.wsgi …`.

Each worker appends one line per request to `$CONCORD_BENCH_TIMING_DIR/<pid>.tsv`: the
request's `X-Bench-Request` header, its path, the wall-clock time gunicorn started on it and
the time it had written the answer and closed it (Django's `request_finished` included), and the
CPU time of the thread that served it. Measured by gunicorn's own hooks around the request, so
nothing in Concord's request path changes for the benchmark. With `CONCORD_BENCH_PROFILE_DIR`
set, each worker also profiles the requests it serves (cProfile, their threads only) and
writes `<pid>.prof` when it exits.
"""

import cProfile
import os
import pstats
import threading
import time

_TIMING_DIR = os.environ.get("CONCORD_BENCH_TIMING_DIR", "")
_PROFILE_DIR = os.environ.get("CONCORD_BENCH_PROFILE_DIR", "")
_state = threading.local()
_out = []  # this worker's timing file, opened at its first request
_profiles: list[cProfile.Profile] = []
_lock = threading.Lock()


def pre_request(worker, req):
    _state.started = (time.time(), time.thread_time())
    if _PROFILE_DIR:
        if getattr(_state, "profile", None) is None:
            _state.profile = cProfile.Profile(time.thread_time)  # CPU, not waiting
            with _lock:
                _profiles.append(_state.profile)
        _state.profile.enable()


def post_request(worker, req, environ, resp):
    if _PROFILE_DIR:
        _state.profile.disable()
    ended, cpu = time.time(), time.thread_time()
    started, cpu_started = _state.started
    tag = next((value for name, value in req.headers if name == "X-BENCH-REQUEST"), "")
    if not _TIMING_DIR:
        return
    with _lock:
        if not _out:
            _out.append(open(os.path.join(_TIMING_DIR, f"{os.getpid()}.tsv"), "a", buffering=1))  # noqa: SIM115
        _out[0].write(f"{tag}\t{req.path}\t{started:.6f}\t{ended:.6f}\t{cpu - cpu_started:.6f}\n")


def worker_exit(server, worker):
    with _lock:
        if _PROFILE_DIR and _profiles:
            merged = _profiles[0]
            merged.create_stats()
            stats = pstats.Stats(merged)
            for profile in _profiles[1:]:
                profile.create_stats()
                stats.add(profile)
            stats.dump_stats(os.path.join(_PROFILE_DIR, f"{os.getpid()}.prof"))
            _profiles.clear()
