"""The Celery application: one for the whole project, configured from Django settings."""

import logging
import os
import threading

from celery import Celery
from celery.signals import worker_process_init, worker_ready, worker_shutdown

logger = logging.getLogger(__name__)

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")

app = Celery("concord")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()


@worker_ready.connect
def _sweep_jobs_on_start_and_on_a_timer(**kwargs):
    """A starting worker fails the jobs whose worker died while nobody was watching and sends
    the jobs whose task never reached the broker; then it does so again every
    JOB_SWEEP_SECONDS on its own timer thread (no Celery beat needed); it also deletes staged
    uploads' files that no job needs any more. Every worker sweeps: the sweep is a few small
    statements and a listing of MEDIA_ROOT/staged/, and any one live worker is enough."""
    from django.conf import settings

    from evaluation.services.jobs import jobs_sweep
    from evaluation.services.staged_uploads import staged_files_sweep

    def sweep():
        from django.db import close_old_connections

        try:
            close_old_connections()
            found = {**jobs_sweep(), "staged": staged_files_sweep()}
            if any(found.values()):
                logger.warning("job sweep: %(failed)s failed (dead worker), %(resent)s resent, "
                               "%(staged)s staged uploads' files deleted", found)
        except Exception:  # noqa: BLE001 - the next tick tries again
            logger.exception("job sweep failed")

    def loop():
        while not stop.wait(settings.JOB_SWEEP_SECONDS):
            sweep()

    sweep()
    threading.Thread(target=loop, name="concord-job-sweep", daemon=True).start()


stop = threading.Event()


@worker_process_init.connect
def _warm_inprocess_baselines(**kwargs):
    """Each worker process loads the in-process baselines' embedding model as it starts, on
    a thread (a process must finish starting within seconds), so the first simulation of the
    Dense baseline does not wait for it (docs/operations.md, "Deadlines and hostile answers")."""

    def warm():
        from django.db import connection

        from evaluation.services.live import live_warm_up

        try:
            logger.info("in-process baselines: %s", live_warm_up())
        except Exception:  # noqa: BLE001 - the first call loads it then, within its deadline
            logger.exception("warming the in-process baselines failed")
        finally:
            connection.close()

    threading.Thread(target=warm, name="concord-warm-up", daemon=True).start()


@worker_shutdown.connect
def _stop_sweeping(**kwargs):
    stop.set()
