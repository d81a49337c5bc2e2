"""User simulations end to end: the template, PEPPER and iEvaLM simulators against a real local
HTTP live system (and an in-process baseline), with a real local LLM server for the LLM
simulators; faults recorded per dialogue; the failure threshold; export; `simulate --json`."""

import io
import json

import pytest
from django.core.exceptions import ValidationError
from django.core.management import CommandError, call_command

from evaluation.lib.metrics.preference import SimulatedUser, preference_report
from evaluation.models import Job, MetricSummary, Simulation, Submission
from evaluation.services.live import live_baselines_ensure, live_system_create
from evaluation.services.simulations import simulation_create
from tests.evaluation.simulation_fixtures import by_dialogue, run_all, stored_dialogue
from tests.support.live_server import Raw, live_server

pytestmark = pytest.mark.django_db(transaction=True)


def test_template_simulation_against_an_http_system_scores_coverage_by_hand(
        sim_benchmark, researcher, client):
    rankings = {"d1": [["r2", "h1"], ["r1"], ["a1"]], "d2": [["a1"], ["a1"], ["h1"]],
                "d3": [["r3"], ["r2"], ["r2"]]}

    def answer(user, body):
        turn = (body["turn_index"] - 1) // 2
        return {"response": f"Try these ({turn}).", "ranked_item_ids": rankings[user][turn]}

    system_answer = by_dialogue(answer)
    with live_server(system_answer) as server:
        system = live_system_create(name="My CRS", owner=researcher, endpoint=server.url)
        simulation = run_all(system_answer.follow(simulation_create(
            benchmark=sim_benchmark, system=system, simulator="template", users=3, turns=3,
            seed=1, user=researcher, batch_size=2, enqueue=False)))
    assert simulation.job.status == Job.Status.SUCCEEDED, simulation.job.error
    # Every request carried the conversation so far.
    last = [r for r in server.requests if system_answer.sources[r["dialogue_id"]] == "d1"][-1]
    assert [t["role"] for t in last["history"]] == ["user", "system", "user", "system"]
    assert last["turn_index"] == 5 and last["utterance"].endswith("?")
    assert last["history"][1]["ranked_item_ids"] == ["r2", "h1"]
    # By hand, K = 1: d1 targets {r1, r2}: t1 r2 (1/2), t2 r1 (2/2), t3 (2/2);
    # d2 {h1}: 0, 0, 1; d3 {r1}: 0, 0, 0.  PC_t@1 = mean over users.
    report = simulation.report
    near = {"abs": 1e-6}  # the report keeps six decimals
    assert report["pc@1"] == pytest.approx([(0.5 + 0 + 0) / 3, (1 + 0 + 0) / 3, (1 + 1 + 0) / 3],
                                           **near)
    assert report["pcir@1"] == pytest.approx([1 / 6, 1 / 6, 1 / 3], **near)
    assert report["recall@1"] == pytest.approx([1 / 6, 1 / 6, 1 / 3], **near)
    assert report["pc@5"][0] == pytest.approx(0.5 / 3, **near)  # r2 and h1: d1 has r2 only
    summary = MetricSummary.objects.get(run=simulation.run, metric="pcir_avg@1")
    assert summary.value == pytest.approx((2 / 3) / 3) and summary.n == 3
    # The dialogues are a `log` submission of the system, its run the simulation's.
    submission = Submission.objects.get(pk=simulation.submission_id)
    assert submission.protocol == "log" and submission.system == system
    assert simulation.run.evaluator == "simulation.template"
    assert simulation.run.job_id == simulation.job_id
    stored = stored_dialogue(simulation, "d1")
    assert stored.hidden["target_item_ids"] == ["r1", "r2"]
    assert stored.hidden["preferences"]["likes"] == ["seafood", "diner"]
    assert [t["ranked_item_ids"] for t in stored.turns if t["role"] == "system"] == \
        rankings["d1"]
    # Its job page says what was simulated and the headline number; the run page counts
    # turns as the form does (3 exchanges, not 6 messages).
    client.force_login(researcher)
    page = client.get(f"/jobs/{simulation.job_id}/").content.decode()
    assert f'›</a> <a href="/systems/{system.slug}/">My CRS</a> › simulation' in page.replace(
        "\n", "") or f'<a href="/systems/{system.slug}/">My CRS</a> › simulation #' in page
    summary = page.split('id="simulation-summary"')[1].split("</table>")[0]
    assert sim_benchmark.name in summary and "template" in summary and "3 × 3" in summary
    pc10 = MetricSummary.objects.get(run=simulation.run, metric="pc@10")
    assert f"<strong>{pc10.value:.3f}</strong>" in summary
    run_page = client.get(f"/runs/{simulation.run_id}/").content.decode()
    assert '<span class="muted">3 turns</span>' in run_page and "6 turns" not in run_page


def test_faults_fail_their_dialogue_only_and_nothing_partial_is_stored(sim_benchmark,
                                                                       researcher):
    def answer(user, body):
        if user == "d2" and body["turn_index"] == 3:
            return Raw(200, b"<html>oops</html>")
        if user == "d3":
            return {"response": "x", "ranked_item_ids": ["r1", "ghost"]}
        return {"response": "ok", "ranked_item_ids": ["r1"]}

    system_answer = by_dialogue(answer)
    with live_server(system_answer) as server:
        system = live_system_create(name="Flaky", owner=researcher, endpoint=server.url,
                                    max_retries=0)
        simulation = run_all(system_answer.follow(simulation_create(
            benchmark=sim_benchmark, system=system, simulator="template", users=3, turns=2,
            failure_threshold=0.9, enqueue=False)))
    assert simulation.job.status == Job.Status.SUCCEEDED
    failed = {d.source_dialogue_id: d for d in simulation.dialogues.filter(status="failed")}
    assert set(failed) == {"d2", "d3"}
    assert failed["d2"].error_kind == "not_json" and failed["d2"].turns == []
    assert "turn 3" in failed["d2"].error
    assert failed["d3"].error_kind == "invalid" and "unknown item id 'ghost'" in failed["d3"].error
    assert simulation.report["failed"] == 2 and simulation.report["users"] == 1
    assert simulation.report["failures_by_kind"] == {"not_json": 1, "invalid": 1}
    assert simulation.job.result["failed"] == 2


def test_failures_past_the_threshold_stop_the_run(sim_benchmark, researcher):
    with live_server(lambda body: Raw(503, b"down")) as server:
        system = live_system_create(name="Down", owner=researcher, endpoint=server.url,
                                    max_retries=1, backoff_seconds=0.01)
        simulation = run_all(simulation_create(
            benchmark=sim_benchmark, system=system, simulator="template", users=3, turns=2,
            failure_threshold=0.5, batch_size=1, enqueue=False))
    assert simulation.job.status == Job.Status.FAILED
    assert simulation.job.error.startswith(
        "Stopped: 2 of 3 dialogues failed, over the threshold of 50%: the live system failed a "
        "turn in 2 of them with http_status, e.g. turn 1: HTTP 503")
    assert simulation.run is None and not Submission.objects.exists()
    assert simulation.dialogues.count() == 2  # the third batch saw the job stopped


def test_bundles_without_the_seen_target_split_are_refused(tiny_benchmark, researcher):
    system = live_baselines_ensure()[1]
    with pytest.raises(ValidationError, match="no simulated users: user simulation needs "
                                              "dialogues with both seen_item_ids"):
        simulation_create(benchmark=tiny_benchmark, system=system, simulator="pepper",
                          users=2, turns=3, enqueue=False)
    assert not Simulation.objects.exists() and not Job.objects.exists()


def test_simulate_command_json_and_export(sim_benchmark, tmp_path):
    out = io.StringIO()
    call_command("simulate", benchmark=sim_benchmark.slug,
                 system="baseline-tfidf", simulator="template", users=3, turns=4, seed=3,
                 as_json=True, stdout=out)
    result = json.loads(out.getvalue())
    assert set(result["metrics"]) >= {"pc@1", "pcir@10", "recall@50"}
    assert all(len(values) == 4 for values in result["metrics"].values())
    simulation = Simulation.objects.get(run_id=result["run_id"])
    # The numbers are the metrics module's on the stored rankings.
    users = [SimulatedUser(d.user_id, tuple(d.target_item_ids),
                           tuple(tuple(t["ranked_item_ids"]) for t in d.turns
                                 if t["role"] == "system")) for d in simulation.dialogues.all()]
    expected = preference_report(users, turns=4, n_resamples=10)
    assert result["metrics"]["pc@5"] == pytest.approx(expected.pc[5], abs=1e-6)
    assert result["metrics"]["recall@1"] == pytest.approx(expected.recall[1], abs=1e-6)
    # Same seed, same run: the template simulator and the ranker are deterministic.
    again = io.StringIO()
    call_command("simulate", benchmark=sim_benchmark.slug, system="baseline-tfidf",
                 simulator="template", users=3, turns=4, seed=3, as_json=True, stdout=again)
    assert json.loads(again.getvalue())["metrics"] == result["metrics"]

    call_command("export_simulation", result["run_id"], str(tmp_path / "out"),
                 stdout=io.StringIO())
    lines = [json.loads(line) for line in
             (tmp_path / "out" / "dialogues.jsonl").read_text().splitlines()]
    assert len(lines) == 3 and all(set(line) == {"user_id", "target_item_ids", "turns",
                                                 "preferences", "reflections", "leakage"}
                                   for line in lines)
    assert all(set(line["preferences"]) == {"likes", "dislikes"} for line in lines)
    assert all(line["leakage"]["leaked"] is False for line in lines)  # the template never leaks
    report = json.loads((tmp_path / "out" / "report.json").read_text())
    assert report["leakage"]["dialogues"] == 3 and report["behaviour"]["user_turns"] > 0
    system_turns = [t for t in lines[0]["turns"] if t["role"] == "system"]
    assert len(system_turns) == 4 and all("ranked_item_ids" in t for t in system_turns)
    with pytest.raises(CommandError, match="not a finished simulation"):
        call_command("export_simulation", 999999, str(tmp_path / "x"))


def test_run_page_shows_the_simulation_and_hidden_parts_to_the_owner_only(
        sim_benchmark, researcher, staff, client):
    def answer(body):
        return {"response": "Harbor <b>Grill</b>", "ranked_item_ids": ["r1", "r2"]}

    with live_server(answer) as server:
        system = live_system_create(name="Owned", owner=researcher, endpoint=server.url)
        simulation = run_all(simulation_create(benchmark=sim_benchmark, system=system,
                                               simulator="template", users=3, turns=2,
                                               user=researcher, enqueue=False))
    client.force_login(researcher)
    page = client.get(f"/runs/{simulation.run_id}/").content.decode()
    assert "template simulator, no LLM" in page and "PC<sub>t</sub>@10" in page
    assert "Harbor &lt;b&gt;Grill&lt;/b&gt;" in page  # system text is escaped
    # The owner sees every user's targets: the hidden split's gold (d3) is released. Users are
    # named by their opaque ids only; which dialogue each simulates is for staff.
    assert page.count("Hidden from the system") == 3
    assert all(d.user_id in page for d in simulation.dialogues.all())
    assert "simulates dialogue" not in page
    client.force_login(staff)
    page = client.get(f"/runs/{simulation.run_id}/").content.decode()
    assert page.count("Hidden from the system") == 3
    assert all(f"simulates dialogue {d}" in page for d in ("d1", "d2", "d3"))


def test_a_simulations_old_intervals_are_recomputed_as_the_simulation_computed_them(
        sim_benchmark, researcher):
    # docs/statistics.md, "Stored intervals and their method": preference coverage and the
    # simulation's Trace run, set back to version 0 with other bounds, come back equal.
    from django.db.models import F

    fields = ("metric", "value", "ci_low", "ci_high", "std", "n", "undefined_reason",
              "ci_method", "ci_version")

    def answer(body):
        return {"response": "Try these.", "ranked_item_ids": [["r1", "r2"], ["a1"]][
            body["turn_index"] % 2]}

    with live_server(answer) as server:
        system = live_system_create(name="Recomputed", owner=researcher, endpoint=server.url)
        simulation = run_all(simulation_create(benchmark=sim_benchmark, system=system,
                                               simulator="template", users=3, turns=3,
                                               user=researcher, enqueue=False))
    runs = [simulation.run_id, simulation.report["trace_run"]]
    fresh = {run: list(MetricSummary.objects.filter(run_id=run).order_by("metric")
                       .values_list(*fields)) for run in runs}
    assert any(row[2] is not None for row in fresh[runs[0]])  # coverage has intervals
    MetricSummary.objects.filter(run_id__in=runs, ci_low__isnull=False).update(
        ci_low=F("ci_low") / 2, ci_method="", ci_version=0)
    call_command("recompute_intervals", "--no-progress", stdout=io.StringIO())
    assert {run: list(MetricSummary.objects.filter(run_id=run).order_by("metric")
                      .values_list(*fields)) for run in runs}[runs[0]] == fresh[runs[0]]
    trace = list(MetricSummary.objects.filter(run_id=runs[1]).order_by("metric")
                 .values_list(*fields))
    # The Trace run is recomputed from per-dialogue sums, as a chunked run finishes: equal to
    # the values it stored from the unit values up to rounding.
    assert [row[0] for row in trace] == [row[0] for row in fresh[runs[1]]]
    for row, before in zip(trace, fresh[runs[1]], strict=True):
        assert row[-2:] == before[-2:] and row[5:7] == before[5:7]
        for got, want in zip(row[1:5], before[1:5], strict=True):
            assert got == want if want is None else got == pytest.approx(want, rel=1e-12,
                                                                         abs=1e-12)
