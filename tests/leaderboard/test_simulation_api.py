"""The simulations' REST API (docs/api.md): a researcher starts a simulation on their own live
system, lists it and reads its progress and metrics (computed by hand); strangers get 404,
bad parameters 400 with nothing stored, and a cancelled simulation makes no run."""

import pytest
from django.urls import reverse
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from evaluation.models import Job, Simulation, Submission, System
from evaluation.services.live import live_system_create
from evaluation.services.simulations import simulation_create, simulation_run_here
from evaluation.services.submissions import system_create
from tests.evaluation.simulation_fixtures import sim_benchmark  # noqa: F401
from tests.support.live_server import live_server

pytestmark = pytest.mark.django_db(transaction=True)
LIST = "/api/simulations/"


def client_for(user):
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {Token.objects.create(user=user).key}")
    return client


def test_start_list_and_read_a_simulation_with_its_metrics(sim_benchmark,  # noqa: F811
                                                           researcher, outsider):
    api = client_for(researcher)
    system = system_create(name="Mine", owner=researcher)
    assert reverse("leaderboard:api_simulations") == LIST
    # The system answers r1 at every turn. Targets: d1 {r1, r2}, d2 {h1}, d3 {r1}, so at
    # K = 1: d1 1/2, d2 0, d3 1 at both turns.
    with live_server(lambda body: {"response": "Harbor Grill.", "ranked_item_ids": ["r1"]}) \
            as crs:
        answer = api.post(LIST, {"system": system.slug, "benchmark": sim_benchmark.slug,
                                 "simulator": "template", "users": 3, "turns": 2, "seed": 1,
                                 "endpoint": crs.url}, format="json")
    assert answer.status_code == 201, answer.content
    created = answer.json()
    # Tests run Celery eagerly: the batches ran when the request's transaction committed.
    detail = api.get(created["url"]).json()
    assert detail["status"] == "succeeded" and detail["progress"]["done"] == 3
    assert detail["system"] == "mine" and detail["simulator"] == "template"
    assert detail["config"]["users"] == 3 and detail["turns"] == 2
    assert detail["metrics"]["pc@1"] == pytest.approx([0.5, 0.5])
    assert detail["metrics"]["pcir@1"] == pytest.approx([0.5, 0.0])
    assert detail["metrics"]["recall@1"] == pytest.approx([0.5, 0.5])
    assert detail["summaries"]["pc@1"]["value"] == pytest.approx(0.5)
    assert detail["summaries"]["pcir_avg@1"]["value"] == pytest.approx(0.25)
    assert detail["failed"] == 0 and detail["run"] and detail["submission"]
    assert detail["page"] == f"/runs/{detail['run']}/"
    assert System.objects.get(pk=system.pk).live_endpoint == crs.url
    listed = api.get(LIST, {"simulator": "template"}).json()
    assert listed["count"] == 1 and listed["results"][0]["id"] == created["id"]
    assert api.get(LIST, {"simulator": "pepper"}).json()["count"] == 0
    assert api.get(LIST, {"limit": "0"}).status_code == 400
    # Strangers: nothing listed, 404 on the detail and on cancel; anonymous: 404 too.
    stranger = client_for(outsider)
    assert stranger.get(LIST).json()["count"] == 0
    assert stranger.get(created["url"]).status_code == 404
    assert stranger.post(f"{created['url']}cancel/").status_code == 404
    assert APIClient().get(created["url"]).status_code == 404
    # Cancelling a finished simulation: 409, nothing changes.
    again = api.post(f"{created['url']}cancel/")
    assert again.status_code == 409 and "already finished" in again.json()["detail"]


def test_bad_requests_store_nothing(sim_benchmark, researcher, outsider):  # noqa: F811
    api = client_for(researcher)
    mine = system_create(name="Mine", owner=researcher)
    theirs = system_create(name="Theirs", owner=outsider)
    base = {"benchmark": sim_benchmark.slug, "simulator": "template", "users": 3, "turns": 2}
    metadata = api.post(LIST, {**base, "system": mine.slug,
                               "endpoint": "http://169.254.169.254/latest/meta-data/"},
                        format="json")
    assert metadata.status_code == 400 and "link-local" in metadata.json()["detail"]
    not_live = api.post(LIST, {**base, "system": mine.slug}, format="json")
    assert not_live.status_code == 400 and "not a live system" in not_live.json()["detail"]
    assert api.post(LIST, {**base, "system": mine.slug, "users": 0},
                    format="json").status_code == 400
    assert api.post(LIST, {**base, "system": mine.slug, "simulator": "oracle"},
                    format="json").status_code == 400
    assert api.post(LIST, {**base, "system": theirs.slug}, format="json").status_code in (403,
                                                                                         404)
    assert APIClient().post(LIST, {**base, "system": mine.slug},
                            format="json").status_code in (401, 403)
    assert not Simulation.objects.exists() and not Job.objects.exists()
    assert not System.objects.get(pk=mine.pk).is_live


def test_a_cancelled_simulation_runs_no_batch_and_makes_no_run(sim_benchmark,  # noqa: F811
                                                                 researcher):
    api = client_for(researcher)
    with live_server(lambda body: {"response": "ok", "ranked_item_ids": ["r1"]}) as crs:
        system = live_system_create(name="Live", owner=researcher, endpoint=crs.url)
        simulation = simulation_create(benchmark=sim_benchmark, system=system,
                                       simulator="template", users=3, turns=2, batch_size=1,
                                       user=researcher, enqueue=False)
        answer = api.post(f"/api/simulations/{simulation.pk}/cancel/")
        assert answer.status_code == 200 and answer.json()["status"] == "cancelled"
        assert answer.json()["progress"]["error"] == "Cancelled by researcher."
        simulation_run_here(simulation=simulation)  # the batches a worker would receive
    assert crs.requests == [] and simulation.dialogues.count() == 0
    assert simulation.run_id is None and not Submission.objects.exists()
    assert Job.objects.get(pk=simulation.job_id).status == Job.Status.CANCELLED
