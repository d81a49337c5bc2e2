"""The API keeps its own contract (issue 18, point 9): schemathesis, every check (`--checks
all`), against /api/schema/ on a live server with real data in PostgreSQL (a benchmark with
public and private submissions, a baseline, an arena, a finished simulation), once anonymous
and once with a researcher's token. Any server error, undocumented status or content type,
answer that does not match its schema, accepted invalid input or ignored credentials fails the
test, with schemathesis's report (and a curl line per failure) as the message.

Bounded: a fixed seed and 4 examples per operation; the two runs go in parallel and take about
a minute and a half together on two busy cores (docs/api.md, "The contract, checked").
"""

import io
import json
import re
import subprocess
import sys

import pytest
import requests
from django.core.management import call_command

from tests.conftest import PASSWORD
from tests.evaluation.formats.test_public_crs_arena_dial import _conversation
from tests.evaluation.simulation_fixtures import run_all, simulation_bundle
from tests.leaderboard.test_arena_ratings import CLOSED, OPEN, _write
from tests.support.bundles import write_tiny
from tests.support.live_server import live_server as crs_server

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]

MAX_EXAMPLES = 4
SEED = 18009  # fixed: the same cases every run, so a failure reproduces

# Where a request that matches the schema is still refused by design, with 400 and the
# reason: the data decides, and no schema can say it.
REFUSED_BY_DESIGN = {
    "/api/token/": "a wrong username or password",
    "/api/leaderboards/{benchmark}/": "a split set no run was evaluated on (?splits=)",
    "/api/submissions/": "a file that is not a valid submission (docs/formats.md §2)",
    "/api/simulations/": "a system that is not live, or a benchmark without simulated users",
    "/api/submissions/{uuid}/llm-runs/": "an evaluator that does not read the submission's "
                                         "protocol, or a model profile the operator does not "
                                         "offer (the operator's settings decide)",
}


def _config(world, *, anonymous: bool) -> str:
    lines = []
    if anonymous:
        # Without credentials every write is a 401 before its body is read: the fuzzing and
        # stateful phases show that; the coverage phase's hundreds of bodies are for the
        # token run, where they reach the code.
        lines += ["[[operations]]", 'include-method = ["POST", "PATCH"]',
                  'exclude-path = "/api/token/"', "phases.coverage.enabled = false", ""]
    for path, why in REFUSED_BY_DESIGN.items():
        lines += [f"# {why}", "[[operations]]", f'include-path = "{path}"',
                  'checks.positive_data_acceptance.expected-statuses = '
                  '["2XX", "400", "401", "403", "404", "409", "429"]', ""]
    # Real objects for the path parameters, so the operations reach their code, not only 404.
    for path, name, value in (
            ("/api/leaderboards/{benchmark}/", "benchmark", "tiny"),
            ("/api/benchmarks/{slug}/", "slug", "tiny"),
            ("/api/benchmarks/{slug}/public.zip", "slug", "tiny"),
            ("/api/benchmarks/{slug}/sample-submission.jsonl", "slug", "tiny"),
            ("/api/systems/{slug}/", "slug", world["system"]),
            ("/api/submissions/{uuid}/", "uuid", world["submission"]),
            ("/api/runs/{run_id}/", "run_id", world["run"]),
            ("/api/arenas/{slug}/ratings/", "slug", world["arena"]),
            ("/api/simulations/{simulation_id}/", "simulation_id", world["simulation"]),
            ("/api/simulations/{simulation_id}/cancel/", "simulation_id", world["simulation"])):
        lines += ["[[operations]]", f'include-path = "{path}"',
                  f'parameters = {{ "path.{name}" = {json.dumps(value)} }}', ""]
    return "\n".join(lines)


@pytest.fixture
def world(tiny_benchmark, researcher, board_world, staff, tmp_path):
    from evaluation.models import Arena
    from evaluation.services.benchmarks import benchmark_import
    from evaluation.services.live import live_system_create
    from evaluation.services.simulations import simulation_create

    folder = tmp_path / "arena"
    folder.mkdir()
    (folder / "crs_arena_dial_open.json").write_text(
        json.dumps([_conversation(), _conversation("barcor_redial_u2")]))
    _write(folder / "votes_open.csv", OPEN)
    _write(folder / "votes_closed.csv", CLOSED)
    call_command("import_public", "crs_arena_dial", str(folder), stdout=io.StringIO())
    # A finished simulation of the researcher's live system (with its metrics).
    data = simulation_bundle()
    data["benchmark"].update(slug="tiny-sim", name="Tiny Simulated")
    benchmark = benchmark_import(path=write_tiny(tmp_path / "sim", data))
    with crs_server(lambda body: {"response": "Harbor Grill.", "ranked_item_ids": ["r1"]}) as crs:
        live = live_system_create(name="Live", owner=researcher, endpoint=crs.url)
        simulation = run_all(simulation_create(
            benchmark=benchmark, system=live, simulator="template", users=2, turns=2,
            batch_size=1, user=researcher, enqueue=False))
    assert simulation.job.status == "succeeded" and simulation.report
    submission, run = board_world["runs"]["echo"]
    return {"system": board_world["echo"].slug, "submission": str(submission.uuid), "run": run.pk,
            "arena": Arena.objects.get().slug, "simulation": simulation.pk}


def _schemathesis(live_server, config, output, *headers) -> subprocess.Popen:
    command = [sys.executable, "-m", "schemathesis.cli", "--no-color", "--config-file",
               str(config), "run", f"{live_server.url}/api/schema/", "--checks", "all",
               "--max-examples", str(MAX_EXAMPLES), "--seed", str(SEED), "--workers", "1",
               "--request-timeout", "30"]
    for header in headers:
        command += ["--header", header]
    # In the test's own folder: schemathesis keeps a cache (.schemathesis/) where it runs.
    return subprocess.Popen(command, stdout=output, stderr=subprocess.STDOUT,
                            cwd=config.parent)


def test_the_api_keeps_its_contract_anonymous_and_with_a_token(live_server, world, tmp_path):
    answer = requests.post(f"{live_server.url}/api/token/",
                           data={"username": "researcher", "password": PASSWORD}, timeout=30)
    assert answer.status_code == 200, answer.text
    token = answer.json()["token"]

    # The two runs' first schema requests come at the same moment: drf-spectacular's first
    # schema generation is not thread-safe (leaderboard.schema.GENERATION_LOCK).
    runs = {}  # both at once: the live server answers each in its own thread
    for who, headers in (("anonymous", ()), ("token", (f"Authorization: Token {token}",))):
        config = tmp_path / f"schemathesis-{who}.toml"
        config.write_text(_config(world, anonymous=who == "anonymous"))
        with open(tmp_path / f"schemathesis-{who}.txt", "wb") as output:
            runs[who] = _schemathesis(live_server, config, output, *headers)
    try:
        for who, process in runs.items():
            process.wait(timeout=300)
            report = (tmp_path / f"schemathesis-{who}.txt").read_text(errors="replace")
            assert process.returncode == 0, \
                f"schemathesis ({who}) found failures:\n{report[-20000:]}"
            # It tested every operation of the schema (a run that tested nothing would pass).
            selected = re.search(r"Selected: (\d+)/(\d+)", report)
            tested = re.search(r"Tested: (\d+)", report)
            assert selected and tested, report[-3000:]
            assert int(tested[1]) == int(selected[2]) >= 20, report[-3000:]
    finally:  # the other run must not outlive the live server and its database
        for process in runs.values():
            if process.poll() is None:
                process.kill()
                process.wait()
