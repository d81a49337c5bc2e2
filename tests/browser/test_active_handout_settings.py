"""An author sets a study to hand items out by the active policy in Chromium (docs/annotation.md,
"How items are handed out"): a metric that did not score every item is refused on its field,
a good choice draws the first wave and the dashboard says so."""

import pytest

from annotation.models import HandoutWave
from tests.annotation.test_active_handout import ASPECT, JUDGE, make_world, new_study
from tests.browser.conftest import screenshot
from tests.browser.test_annotation_forms import log_in

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_the_author_sets_the_active_policy(page, live_server, tmp_path, settings, author):
    settings.MEDIA_ROOT = tmp_path / "media"
    study = new_study(make_world(tmp_path, author), author)
    log_in(page, live_server, author)
    page.goto(f"/studies/{study.slug}/dashboard/")
    assert "Hand-out policy: uniform" in page.locator("#handout-status").inner_text()
    page.click("#handout-status a.button")
    page.wait_for_url("**/handout/")
    page.check("input[name=handout_policy][value=active]")
    page.fill("input[name=handout_evaluator]", JUDGE)
    page.fill("input[name=handout_metric]", "partial")
    page.fill("input[name=handout_aspect]", ASPECT)
    page.fill("input[name=handout_budget]", "12")
    page.click("#handout-form button[type=submit]")
    error = page.locator(".field.has-error").inner_text()
    assert "scores 30 of the study's 32 response items" in error
    assert not HandoutWave.objects.filter(study=study).exists()
    screenshot(page, "handout-settings-refused")
    page.fill("input[name=handout_metric]", "quality")
    page.click("#handout-form button[type=submit]")
    page.wait_for_url("**/dashboard/")
    status = page.locator("#handout-status").inner_text()
    assert "Hand-out policy: active" in status and "Wave 1 of 4" in status
    assert HandoutWave.objects.filter(study=study).count() == 1
    screenshot(page, "handout-dashboard-active")
