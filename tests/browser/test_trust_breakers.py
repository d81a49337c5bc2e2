"""Small things that make a first visitor stop trusting Concord, checked in Chromium."""

import time

import pytest
from django.core.cache import cache

from annotation.services.study_exports import study_export_start
from annotation.tasks import study_export_job
from tests.annotation.conftest import make_study
from tests.browser.conftest import screenshot
from tests.browser.test_annotation_forms import log_in

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.fixture(autouse=True)
def media(settings, tmp_path):
    settings.MEDIA_ROOT = tmp_path / "media"
    cache.clear()


def test_paper_bundle_download_appears_without_a_reload(page, live_server, tiny_benchmark,
                                                        author, settings):
    """The outer export poll used to race the inner job poll and stop after a second or two,
    so a bundle that finished later showed its Download button only after a reload."""
    study = make_study(tiny_benchmark, author, slug="export-study")
    settings.CELERY_TASK_ALWAYS_EAGER = False
    job = study_export_start(study=study, user=author, bundle=True)  # queued: no worker yet
    log_in(page, live_server, author)
    page.goto(f"/studies/{study.slug}/dashboard/")
    status = page.locator("#bundle-status")
    assert "Queued" in status.inner_text()
    time.sleep(3.5)  # several polls while the job waits
    study_export_job(job.pk)  # the worker's task, run here: the job finishes now
    page.locator("#bundle-status a", has_text="Download ZIP").wait_for(timeout=5_000)
    screenshot(page, "study-dashboard-bundle-ready")
