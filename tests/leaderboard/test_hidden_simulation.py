"""The hidden-split probe, extended to simulations (issue 28.2): before the benchmark's hidden
gold is released, no simulated user comes from a hidden dialogue, and nothing that leaves the
server in a simulation — what the live endpoint received, the simulation's pages, its API
answers and its exports — names a hidden item, a dialogue id or a hidden target set. Users are
known outside by opaque ids, stable within a simulation and different across simulations.

A real loopback HTTP live system (tests/support/live_server.py) records every request body.
"""

import io
import json
import re

import pytest
from django.core.exceptions import ValidationError
from django.core.management import call_command
from django.test import Client
from django.urls import reverse
from rest_framework.authtoken.models import Token

from evaluation.services.benchmarks import benchmark_import
from evaluation.services.live import live_system_create
from evaluation.services.simulations import simulation_create
from evaluation.services.submissions import submission_set_public
from tests.evaluation.simulation_fixtures import release_hidden, run_all, simulation_bundle
from tests.support.bundles import write_tiny
from tests.support.live_server import live_server

pytestmark = pytest.mark.django_db(transaction=True)

SECRET_ID, SECRET_NAME = "x-secret", "Secret Garden Cafe"
DIALOGUES = ("d1", "d2", "d3")  # d3 is the hidden one
OPAQUE = re.compile(r"^u-[0-9a-f]{16}$")


@pytest.fixture
def hidden_benchmark(tmp_path, settings):
    """Tiny with the seen/target split; the hidden dialogue d3 (not released) wants an item
    named nowhere else: its target set and its candidate pool are its only mention."""
    settings.MEDIA_ROOT = tmp_path / "media"
    data = simulation_bundle()
    data["benchmark"]["slug"] = "secret-sim"
    data["items"].append({"id": SECRET_ID, "name": SECRET_NAME, "type": "restaurant",
                          "city": "Philadelphia", "categories": ["garden"]})
    d3 = next(d for d in data["dialogues"] if d["id"] == "d3")
    assert d3["split"] == "hidden"
    d3["target_item_ids"] = [SECRET_ID]
    d3["candidate_item_ids"].append(SECRET_ID)
    return benchmark_import(path=write_tiny(tmp_path / "secret", data))


def _answer(body):
    # The system ranks the pool it is given (the whole catalogue: r1 and h1, the public users'
    # targets); it never names the secret item itself.
    ranked = body.get("candidate_item_ids") or ["r1", "h1"]
    return {"response": "Harbor Grill or Old City Inn?", "ranked_item_ids": ranked[:3]}


def _simulate(benchmark, system, owner, **options):
    return run_all(simulation_create(benchmark=benchmark, system=system, simulator="template",
                                     turns=3, seed=4, user=owner, enqueue=False,
                                     **{"users": 2, "pool": "dialogue", **options}))


def _texts_leaving_the_server(simulation, owner, staff, outsider, tmp_path):
    """(who, where, text) of every page, API answer and export of the simulation."""
    run, trace = simulation.run_id, simulation.report["trace_run"]
    uuid, slug = simulation.submission.uuid, simulation.benchmark.slug
    board = reverse("leaderboard:board", args=[slug, "simulated-template"])
    urls = [board, board + "?columns=all",
            reverse("leaderboard:board_export", args=[slug, "simulated-template", "csv"]),
            reverse("leaderboard:board_export", args=[slug, "simulated-template", "json"]),
            reverse("leaderboard:api_leaderboard", args=[slug]) + "?protocol=simulated-template",
            reverse("run_detail", args=[run]), reverse("run_detail", args=[trace]),
            reverse("job_detail", args=[simulation.job_id]),
            reverse("leaderboard:system_detail", args=[simulation.system.slug]),
            reverse("leaderboard:submission_detail", args=[uuid]),
            reverse("leaderboard:submission_download", args=[uuid]),
            reverse("leaderboard:api_run", args=[run]),
            reverse("leaderboard:api_run", args=[trace]),
            reverse("leaderboard:api_submission", args=[uuid]),
            reverse("leaderboard:api_simulations"),
            reverse("leaderboard:api_simulation", args=[simulation.pk])]
    texts = []
    for who, user in (("anonymous", None), ("outsider", outsider), ("owner", owner),
                      ("staff", staff)):
        client = Client()
        headers = {}
        if user is not None:
            client.force_login(user)
            headers["HTTP_AUTHORIZATION"] = f"Token {Token.objects.get_or_create(user=user)[0]}"
        for url in urls:
            response = client.get(url, **(headers if url.startswith("/api/") else {}))
            assert response.status_code in (200, 302, 403, 404), (who, url, response.status_code)
            body = b"".join(response) if response.streaming else response.content
            texts.append((who, url, body.decode()))
    out = tmp_path / "export"
    call_command("export_simulation", run, str(out), stdout=io.StringIO())
    for name in ("dialogues.jsonl", "report.json"):
        texts.append(("export", name, (out / name).read_text()))
    return texts


def test_no_hidden_user_item_dialogue_id_or_target_leaves_a_simulation(
        hidden_benchmark, researcher, staff, outsider, tmp_path):
    with live_server(_answer) as crs:
        system = live_system_create(name="Prober", owner=researcher, endpoint=crs.url)
        # Only d1 and d2 are users before the release: a third user does not exist.
        with pytest.raises(ValidationError, match="has 2 simulated users, 3 were asked for"):
            simulation_create(benchmark=hidden_benchmark, system=system, simulator="template",
                              users=3, turns=3, user=researcher, enqueue=False)
        first = _simulate(hidden_benchmark, system, researcher)
        first_requests = list(crs.requests)
        second = _simulate(hidden_benchmark, system, researcher)
    assert first.job.status == second.job.status == "succeeded", first.job.error
    assert first.config["hidden_users"] is False
    assert sorted(first.dialogues.values_list("source_dialogue_id", flat=True)) == ["d1", "d2"]

    # What the endpoint received: opaque ids only, stable within a simulation (every turn of
    # a user carries the same one), never a dialogue id, the hidden pool or the secret item.
    first_ids = {r["dialogue_id"] for r in first_requests}
    assert len(first_ids) == 2 and all(OPAQUE.match(i) for i in first_ids)
    assert first_ids == set(first.dialogues.values_list("user_id", flat=True))
    assert len(first_requests) == 2 * 3  # two users, three turns each, one id per user
    for body in crs.requests:
        text = json.dumps(body)
        assert SECRET_ID not in text and SECRET_NAME not in text
        assert not any(re.search(rf'"{d}"|\b{d}\b', text) for d in DIALOGUES), text
        assert "sim" not in body["dialogue_id"]
    # Unlinkable across simulations: the same users under other names.
    second_ids = set(second.dialogues.values_list("user_id", flat=True))
    assert len(second_ids) == 2 and not second_ids & first_ids

    # No hidden target set: the users' targets are the public dialogues' ({r1, r2}, {h1}).
    assert sorted(map(tuple, first.dialogues.values_list("target_item_ids", flat=True))) == \
        [("h1",), ("r1", "r2")]

    # Pages, API answers and exports, as a stranger, another researcher, the owner and staff
    # (the simulation's submission published, so strangers see its run).
    submission_set_public(submission=first.submission, user=researcher, public=True)
    first.refresh_from_db()
    texts = _texts_leaving_the_server(first, researcher, staff, outsider, tmp_path)
    shown = {who for who, url, text in texts if first.dialogues.first().user_id in text}
    assert {"anonymous", "owner", "export"} <= shown  # the probe reads real pages
    for who, where, text in texts:
        assert SECRET_ID not in text and SECRET_NAME not in text, (who, where)
        assert not re.search(r"\bd3\b", text), (who, where)
        # Which dialogue a user simulates is shown to staff only.
        if who != "staff":
            assert not re.search(r"\bd[12]\b", text), (who, where)
    staff_run_page = next(text for who, where, text in texts
                          if who == "staff" and where == f"/runs/{first.run_id}/")
    assert "simulates dialogue d1" in staff_run_page


def test_after_the_release_hidden_dialogues_may_be_users_still_under_opaque_ids(
        hidden_benchmark, researcher, client):
    release_hidden(hidden_benchmark)
    with live_server(_answer) as crs:
        system = live_system_create(name="Later", owner=researcher, endpoint=crs.url)
        simulation = _simulate(hidden_benchmark, system, researcher, users=3)
    assert simulation.job.status == "succeeded", simulation.job.error
    assert simulation.config["hidden_users"] is True
    d3 = simulation.dialogues.get(source_dialogue_id="d3")
    assert OPAQUE.match(d3.user_id) and d3.target_item_ids == [SECRET_ID]
    assert all(OPAQUE.match(r["dialogue_id"]) for r in crs.requests)
    assert d3.user_id in {r["dialogue_id"] for r in crs.requests}
    # Released gold is no secret any more: the owner sees d3's targets on the run page.
    client.force_login(researcher)
    page = client.get(f"/runs/{simulation.run_id}/").content.decode()
    assert page.count("Hidden from the system") == 3 and SECRET_ID in page
    assert not re.search(r"\bd[123]\b", page)


def test_a_simulation_created_before_the_release_keeps_its_users(hidden_benchmark,
                                                                  researcher):
    """A simulation's users are fixed when it is created: a release while it waits in the
    queue does not add a hidden user to it."""
    with live_server(_answer) as crs:
        system = live_system_create(name="Queued", owner=researcher, endpoint=crs.url)
        simulation = simulation_create(benchmark=hidden_benchmark, system=system,
                                       simulator="template", users=2, turns=2, seed=4,
                                       user=researcher, enqueue=False)
        release_hidden(hidden_benchmark)
        simulation = run_all(simulation)
    assert simulation.job.status == "succeeded", simulation.job.error
    assert sorted(simulation.dialogues.values_list("source_dialogue_id", flat=True)) == \
        ["d1", "d2"]
