"""A researcher drives the simulation form in Chromium: a metadata address is refused with a
clear message and nothing is stored; their own local endpoint runs and the run page shows the
preference coverage and the hidden targets."""

import pytest

from evaluation.models import Job, Simulation, System
from evaluation.services.benchmarks import benchmark_import
from evaluation.services.submissions import system_create
from tests.browser.conftest import screenshot
from tests.browser.test_leaderboard import log_in
from tests.evaluation.simulation_fixtures import simulation_bundle
from tests.support.bundles import write_tiny
from tests.support.live_server import live_server

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def sim_benchmark(tmp_path, settings):
    settings.MEDIA_ROOT = tmp_path / "media"
    return benchmark_import(path=write_tiny(tmp_path / "sim", simulation_bundle()))


def test_the_simulation_form_refuses_metadata_and_runs_a_local_endpoint(
        page, sim_benchmark, researcher):
    system = system_create(name="My Live CRS", owner=researcher)
    log_in(page)
    page.goto(f"/systems/{system.slug}/")
    page.click("text=Simulate users")
    page.fill("input[name=endpoint]", "http://169.254.169.254/latest/meta-data/")
    page.select_option("select[name=benchmark]", sim_benchmark.slug)
    page.fill("input[name=users]", "2")
    page.fill("input[name=turns]", "2")
    page.click("#simulate-form button[type=submit]")
    alert = page.locator("#simulate-form .error[role=alert]")
    assert "link-local" in alert.inner_text() and "CONCORD_LIVE_ALLOWED_HOSTS" in \
        alert.inner_text()
    system.refresh_from_db()
    assert not system.is_live and not Simulation.objects.exists() and not Job.objects.exists()

    with live_server(lambda body: {
            "response": "Harbor Grill is great.", "ranked_item_ids": ["r1", "r2"]}) as crs:
        page.fill("input[name=endpoint]", crs.url)
        page.select_option("select[name=simulator]", "template")
        page.click("#simulate-form button[type=submit]")
        page.wait_for_url("**/jobs/*/")
    simulation = Simulation.objects.get()
    assert System.objects.get(pk=system.pk).live_endpoint == crs.url
    assert simulation.job.status == Job.Status.SUCCEEDED, simulation.job.error
    page.goto(f"/runs/{simulation.run_id}/")
    assert page.locator("#simulation figure.curve-figure").count() == 3
    assert "template simulator, no LLM" in page.locator("#simulation").inner_text()
    page.locator("#simulation details.sim-dialogue summary").first.click()
    assert page.locator("#simulation .hidden-profile").first.is_visible()
    screenshot(page, "simulation-run")


def test_an_endpoint_without_a_scheme_reaches_the_server(page, sim_benchmark, researcher):
    """<input type="url"> refused "169.254.169.254/…" in the browser although the server
    accepts a link without a scheme (assume_scheme): now the server answers it."""
    system = system_create(name="Schemeless CRS", owner=researcher)
    log_in(page)
    page.goto(f"/systems/{system.slug}/simulate/")
    assert page.locator("input[name=endpoint]").get_attribute("type") == "text"
    page.fill("input[name=endpoint]", "169.254.169.254/latest/meta-data/")
    page.select_option("select[name=benchmark]", sim_benchmark.slug)
    page.click("#simulate-form button[type=submit]")
    alert = page.locator("#simulate-form .error[role=alert]")
    assert "link-local" in alert.inner_text()  # the server's answer: the browser let it through
    assert not Simulation.objects.exists()
