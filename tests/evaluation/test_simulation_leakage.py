"""The leakage audit of simulated dialogues (docs/simulation.md, "Leakage audit"; Zhu et al.
2024): the matcher by hand, then end to end a scripted LLM user that names its target on
purpose, through a real local LLM server and a real HTTP live system, to the run page and the
simulated board's sanitised (-Both) option."""

import json

import pytest
from django.core.management import call_command
from django.urls import reverse

from evaluation.lib.simulators.leakage import (
    FIRST_TURN_SUCCESS,
    FUZZY_THRESHOLD,
    NAMED_TARGET,
    TARGET_IN_HISTORY,
    Target,
    audit_dialogue,
    audit_summary,
    item_mention,
    name_match,
    tokens,
)
from evaluation.models import MetricSummary, Run, Simulation
from evaluation.services.live import live_system_create
from evaluation.services.llm_models import model_options
from evaluation.services.simulations import simulation_create
from leaderboard.selectors.boards import leaderboard
from tests.evaluation.simulation_fixtures import run_all, sim_benchmark  # noqa: F401
from tests.support.live_server import live_server

# --- the matcher, by hand --------------------------------------------------------------------


def test_tokens_drop_accents_case_and_punctuation():
    assert tokens("Café-Bar, L'ÉTOILE!") == ["cafe", "bar", "l", "etoile"]


@pytest.mark.parametrize(("text", "name", "expected"), [
    ("Take me to Harbor Grill tonight", "Harbor Grill", ("name", 1.0)),
    ("take me to HARBOR-GRILL", "Harbor Grill", ("name", 1.0)),
    ("I loved the café bar", "Cafe Bar", ("name", 1.0)),
    # a dropped article: "harbor grill" vs "the harbor grill" = 2·12 / (12 + 16)
    ("is harbor grill open?", "The Harbor Grill", ("fuzzy", 0.8571)),
    # a spelling variant: 2·12 / (13 + 12)
    ("the Harbour Grill please", "Harbor Grill", ("fuzzy", 0.96)),
    ("Noodle Nok?", "Noodle Nook", ("fuzzy", round(2 * 10 / 21, 4))),
])
def test_name_matches_exactly_or_fuzzily(text, name, expected):
    kind, score, _ = name_match(text, name)
    assert (kind, score) == (expected[0], pytest.approx(expected[1], abs=1e-4))


@pytest.mark.parametrize(("text", "name"), [
    ("harbor inn", "Harbor Grill"),  # 0.727 < 0.85: shares one of two words
    ("a seafood grill by the harbor", "Harbor Grill"),  # the words, not the name
    ("a noodle place", "Noodle Nook"),
    ("the inns are full", "Inn"),  # a short name matches exactly only
    ("", "Harbor Grill"),
])
def test_name_rejects_what_is_not_the_name(text, name):
    assert name_match(text, name) is None


def test_the_threshold_is_the_boundary():
    # "abcdefghij" vs one changed letter: 2·9 / 20 = 0.9 ≥ 0.85; two changed letters: 0.8.
    assert name_match("abcdefghiX", "abcdefghij")[1] == pytest.approx(0.9)
    assert name_match("abcdefghXY", "abcdefghij") is None
    assert FUZZY_THRESHOLD == 0.85


def test_an_id_matches_as_a_whole_token_only():
    target = Target("tus-r-016", "Some Place")
    assert item_mention("what about TUS-R-016?", target)[0] == "id"
    assert item_mention("what about tus-r-0167?", target) is None
    assert item_mention("xtus-r-016", target) is None


def _turns(*pairs):
    turns = []
    for role, payload in pairs:
        turn = {"index": len(turns), "role": role,
                "text": payload if role == "user" else "Here."}
        if role == "system":
            turn["ranked_item_ids"] = list(payload)
        turns.append(turn)
    return turns


TARGETS = [Target("r1", "Harbor Grill"), Target("r2", "Noodle Nook")]


def test_a_target_named_before_it_was_shown_leaks_after_it_was_shown_does_not():
    audit = audit_dialogue(turns=_turns(
        ("user", "Something seafood?"), ("system", ["r3", "r1"]),
        ("user", "Harbor Grill sounds good; and is Noodle Nook cheap?"), ("system", ["a1"])),
        targets=TARGETS, shown_k=5)
    # r1 was shown at turn 1, so naming it at turn 2 reacts to it; r2 was never shown.
    named = [f for f in audit.flags if f.kind == NAMED_TARGET]
    assert [(f.item_id, f.turn, f.match) for f in named] == [("r2", 2, "name")]
    assert audit.leaked and audit.first_turn_success  # r1 at rank 2 of the first turn
    # Shown beyond what the user sees (shown_k = 1): r1 was not shown, so naming it leaks.
    audit = audit_dialogue(turns=_turns(
        ("user", "Something seafood?"), ("system", ["r3", "r1"]),
        ("user", "Harbor Grill?"), ("system", ["a1"])), targets=TARGETS, shown_k=1)
    assert [(f.item_id, f.turn) for f in audit.flags if f.kind == NAMED_TARGET] == [("r1", 2)]


def test_history_and_first_turn_flags():
    audit = audit_dialogue(
        turns=_turns(("user", "Hi"), ("system", ["a1", "x", "r2"]), ("user", "ok"),
                     ("system", ["r1"])),
        targets=TARGETS, seen=[("r1", ["nice"]), ("r3", ["Better than noodle nook, honestly."])],
        shown_k=5, success_k=3)
    kinds = [(f.kind, f.item_id, f.match) for f in audit.flags]
    assert (TARGET_IN_HISTORY, "r1", "seen") in kinds
    assert (TARGET_IN_HISTORY, "r2", "review") in kinds
    assert (FIRST_TURN_SUCCESS, "r2", "rank") in kinds
    first = next(f for f in audit.flags if f.kind == FIRST_TURN_SUCCESS)
    assert first.score == 3.0 and first.turn == 1
    # The first turn's success cut-off: r2 at rank 3 is outside the first 2.
    assert not audit_dialogue(turns=_turns(("user", "Hi"), ("system", ["a1", "x", "r2"])),
                              targets=TARGETS, success_k=2).first_turn_success


def test_a_first_turn_success_alone_is_not_a_leak_and_the_summary_counts():
    clean = audit_dialogue(turns=_turns(("user", "Hi"), ("system", ["r1"])), targets=TARGETS)
    assert clean.first_turn_success and not clean.leaked
    leaked = audit_dialogue(turns=_turns(("user", "Noodle Nook?"), ("system", ["r2"])),
                            targets=TARGETS)
    nothing = audit_dialogue(turns=_turns(("user", "Hi"), ("system", ["a1"])), targets=TARGETS)
    summary = audit_summary([a.as_json() for a in (clean, leaked, nothing)])
    assert summary["dialogues"] == 3 and summary["leaked"] == 1
    assert summary["share"] == pytest.approx(1 / 3)
    assert summary["first_turn_success"] == 2
    assert summary["by_kind"] == {NAMED_TARGET: 1, TARGET_IN_HISTORY: 0, FIRST_TURN_SUCCESS: 2}


# --- end to end: a simulator that leaks on purpose ----------------------------------------------

LEAKY_NAMES = {"Harbor Grill": "the Harbour Grill"}  # r1's name -> the name it says, misspelt


def leaky_user(request):
    """An iEvaLM user that breaks its instructions: told its targets (chat.py), when one is the
    Harbor Grill (d1, d3) it names it, misspelt, in its first message after the dataset's
    context; d2's user (a hotel) never does."""
    persona = request.messages[0]["content"]
    if "<rating>" in request.prompt_text:  # the persuasiveness rating at the end
        return "It found what I named. <rating>1</rating>"
    name = next((n for key, n in LEAKY_NAMES.items() if key in persona), None)
    text = f"I want to eat at {name}." if name else "Not that one, something else."
    return json.dumps({"utterance": text})


def crs(body):
    """A system that recommends what the user named: r1 when asked for the Harbour Grill."""
    said = body["utterance"].lower()
    return {"response": "Here you go.",
            "ranked_item_ids": ["r1", "r3"] if "harbour" in said else ["a1", "r3"]}


@pytest.mark.django_db(transaction=True)
def test_a_leaking_simulator_is_flagged_shown_and_sanitised(
        sim_benchmark, researcher, llm_server, llm_settings, client):  # noqa: F811
    llm = llm_server(leaky_user)
    with live_server(crs) as server:
        system = live_system_create(name="Echo CRS", owner=researcher, endpoint=server.url)
        simulation = run_all(simulation_create(
            benchmark=sim_benchmark, system=system, simulator="ievalm", users=3, turns=3,
            user=researcher, model=model_options(profile=llm.profile,
                                                 model="openai/scripted-user"),
            enqueue=False))
    assert simulation.run_id, simulation.job.error
    by_source = {d.source_dialogue_id: d for d in simulation.dialogues.all()}
    for source in ("d1", "d3"):
        audit = by_source[source].leakage
        # the dataset's opening (a context turn) found nothing; the user then named r1
        assert audit["leaked"] and not audit["first_turn_success"]
        named = [f for f in audit["flags"] if f["kind"] == NAMED_TARGET]
        assert [(f["item_id"], f["turn"], f["match"]) for f in named] == [("r1", 2, "fuzzy")]
        assert named[0]["evidence"] == "harbour grill"
    assert not by_source["d2"].leakage["leaked"]
    summary = simulation.report["leakage"]
    assert (summary["dialogues"], summary["leaked"], summary["first_turn_success"]) == (3, 2, 0)
    assert summary["share"] == pytest.approx(2 / 3)

    # The sanitised (-Both) run: the same metrics on d2 alone (it never found h1: all 0).
    sanitised = Run.objects.get(pk=simulation.sanitised_run_id)
    assert sanitised.evaluator == "simulation.ievalm"
    assert sanitised.config["dialogues"] == "sanitised-both"
    full = dict(MetricSummary.objects.filter(run=simulation.run_id)
                .values_list("metric", "value"))
    clean = dict(MetricSummary.objects.filter(run=sanitised).values_list("metric", "n"))
    assert clean["pc@10"] == 1 and dict(MetricSummary.objects.filter(
        run=sanitised).values_list("metric", "value"))["pc@10"] == 0.0
    # d1 targets {r1, r2}: r1 covered, 1/2; d3 {r1}: 1; d2 {h1}: 0 -> (0.5 + 1 + 0) / 3.
    assert full["pc@10"] == pytest.approx(0.5)

    # The board: the leaked share beside the row, and the sanitised option ranks d2 only.
    board = leaderboard(benchmark=sim_benchmark, protocol="simulated-ievalm", user=researcher)
    assert not board.sanitised and board.leakage.offered
    assert (board.leakage.leaked, board.leakage.dialogues) == (2, 3)
    assert board.rows[0].leak.text == "2/3"
    # iEvaLM's Recall@10 (the board's headline): pairs (d1,r1)=1 (d1,r2)=0 (d2,h1)=0 (d3,r1)=1
    column = board.columns.index(board.column("simulation.ievalm:ievalm_recall@10"))
    assert board.rows[0].cells[column].value == pytest.approx(0.5)
    clean_board = leaderboard(benchmark=sim_benchmark, protocol="simulated-ievalm",
                              user=researcher, dialogues="both")
    assert clean_board.sanitised and clean_board.coverage.endswith("-both")
    assert clean_board.rows[0].run.run_id == sanitised.pk
    assert clean_board.rows[0].cells[column].value == 0.0
    assert "sanitised (-Both)" in clean_board.coverage_label

    client.force_login(researcher)
    url = reverse("leaderboard:board", args=[sim_benchmark.slug, "simulated-ievalm"])
    page = client.get(url).content.decode()
    assert 'id="lb-leakage"' in page and "Leaked dialogues: 2 of 3" in page
    assert 'name="dialogues"' in page and "2/3" in page
    page = client.get(url + "?dialogues=both").content.decode()
    assert "Sanitised protocol (-Both)" in page and "2 of 3 dialogues removed" in page
    export = client.get(reverse("leaderboard:board_export", args=[
        sim_benchmark.slug, "simulated-ievalm", "json"]) + "?dialogues=both").json()
    assert export["dialogues"].startswith("sanitised (-Both)")
    assert {r["leaked_dialogues"] for r in export["rows"]} == {2}

    # The run page: the audit, the flagged turns, the link to the sanitised run.
    page = client.get(reverse("run_detail", args=[simulation.run_id])).content.decode()
    assert 'id="leakage"' in page and "<strong>2</strong> of 3" in page
    assert "I want to eat at the Harbour Grill." in page
    assert "names target r1 (fuzzy: harbour grill)" in page
    assert reverse("run_detail", args=[sanitised.pk]) in page
    page = client.get(reverse("run_detail", args=[sanitised.pk])).content.decode()
    assert 'id="sanitised-note"' in page

    # A stranger sees that dialogues leaked, never which target or turn.
    client.logout()
    page = client.get(reverse("run_detail", args=[simulation.run_id])).content.decode()
    if "Leakage audit" in page:
        assert "names target r1" not in page and "fuzzy: harbour grill" not in page


@pytest.mark.django_db(transaction=True)
def test_audit_simulations_audits_a_simulation_finished_before_the_audit(
        sim_benchmark, researcher, llm_server, llm_settings):  # noqa: F811
    llm = llm_server(leaky_user)
    with live_server(crs) as server:
        system = live_system_create(name="Echo CRS", owner=researcher, endpoint=server.url)
        simulation = run_all(simulation_create(
            benchmark=sim_benchmark, system=system, simulator="ievalm", users=3, turns=2,
            model=model_options(profile=llm.profile, model="openai/scripted-user"),
            enqueue=False))
    # As it was before the audit: no flags, no summary, no sanitised run.
    old = simulation.sanitised_run
    simulation.dialogues.update(leakage={})
    report = dict(simulation.report)
    report.pop("leakage")
    Simulation.objects.filter(pk=simulation.pk).update(report=report, sanitised_run=None)
    old.delete()
    call_command("audit_simulations")
    simulation.refresh_from_db()
    assert simulation.report["leakage"]["leaked"] == 2 and simulation.sanitised_run_id
    first = simulation.sanitised_run_id
    call_command("audit_simulations")  # nothing left to audit
    simulation.refresh_from_db()
    assert simulation.sanitised_run_id == first
    call_command("audit_simulations", "--all")  # again: the old sanitised run is replaced
    simulation.refresh_from_db()
    assert simulation.sanitised_run_id != first and not Run.objects.filter(pk=first).exists()


@pytest.mark.django_db(transaction=True)
def test_the_api_ranks_the_sanitised_runs_on_request(
        sim_benchmark, researcher, llm_server, llm_settings, client):  # noqa: F811
    llm = llm_server(leaky_user)
    with live_server(crs) as server:
        system = live_system_create(name="Echo CRS", owner=researcher, endpoint=server.url)
        simulation = run_all(simulation_create(
            benchmark=sim_benchmark, system=system, simulator="ievalm", users=3, turns=2,
            user=researcher, model=model_options(profile=llm.profile,
                                                 model="openai/scripted-user"),
            enqueue=False))
    client.force_login(researcher)
    url = reverse("leaderboard:api_leaderboard", args=[sim_benchmark.slug])
    both = client.get(url, {"protocol": "simulated-ievalm", "dialogues": "both"}).json()
    assert both["splits"].endswith("-both")
    assert both["systems"][0]["runs"] == {"simulation.ievalm": simulation.sanitised_run_id}
    every = client.get(url, {"protocol": "simulated-ievalm"}).json()
    assert every["systems"][0]["runs"] == {"simulation.ievalm": simulation.run_id}
    assert client.get(url, {"protocol": "simulated-ievalm", "dialogues": "x"}).status_code == 400
