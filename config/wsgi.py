import gc
import os
import threading
from pathlib import Path

from django.core.servers.basehttp import WSGIRequestHandler
from django.core.wsgi import get_wsgi_application
from django.db import connections
from django.template import engines
from django.urls import get_resolver

from evaluation.lib.stats.arena import elo_kernels_load

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
application = get_wsgi_application()

# `make run`'s runserver keeps connections alive (HTTP/1.1) and sends a response's head and body
# in two writes; with Nagle's algorithm on, the body waits for the browser's delayed ACK of the
# head: 40 ms on every request of a kept connection after its first. (gunicorn closes each
# connection after its answer.)
WSGIRequestHandler.disable_nagle_algorithm = True


def warm_up() -> int:
    """Do now what each web process would otherwise do on its first requests; returns how many
    templates were compiled.

    With `gunicorn --preload` this runs once, before the workers fork (docs/performance.md):
    every view is imported (the URLconf pulls in NumPy, SciPy and scikit-learn: seconds), the
    arena's compiled Elo kernels and the in-process baselines' embedding model loaded (when a
    live system uses it), every template of the project compiled into the cached loader, the
    template tag libraries loaded. Then the objects made so far are moved out of
    the garbage collector's reach (`gc.freeze`): they live as long as the process, and each
    full collection would otherwise walk all of them (≈ 210,000, ≈ 100 ms) in the middle of
    some request, and write to the memory pages the forked workers share.
    """
    get_resolver().url_patterns  # noqa: B018 (the import is the point)
    from django.conf import settings

    if settings.WARM_UP_IN_BACKGROUND:
        # `make run` (one process, no fork): serve at once, load these meanwhile (a battle that
        # needs the model first waits for it within its deadline)
        threading.Thread(target=_models_load, name="warm-up", daemon=True).start()
    else:
        _models_load()
    compiled = 0
    for engine in engines.all():
        for folder in map(Path, engine.dirs):  # the project's own, not those of packages
            for path in sorted(folder.rglob("*.html")):
                engine.get_template(path.relative_to(folder).as_posix())
                compiled += 1
    connections.close_all()  # nothing opened before a fork may be shared by the workers
    gc.collect()
    gc.freeze()
    return compiled


def _models_load() -> None:
    # the arena's compiled Elo kernels (docs/performance-history.md, "Arena ratings")
    elo_kernels_load()
    # the in-process baselines' embedding model (docs/operations.md, "Deadlines and hostile
    # answers"): loaded, never run, so forked workers share its weights and start no threads
    from evaluation.services.live import live_warm_up

    live_warm_up()


warm_up()
