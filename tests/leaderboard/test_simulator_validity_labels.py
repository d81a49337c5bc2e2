"""Simulator validity against human labels (issue 32 item 5): three systems simulated with one
design, a native study whose two Likert scales label their turn answers, and an imported study
whose labels reach only two of them. τ_b and Spearman against each study field's per-system
means are checked against scipy on numbers computed by hand from the labels submitted; the
board's trust row, the simulators page, the exports and the API show them; the imported field
(two systems) shows its reason; the page's statements do not grow with the studies."""

import csv
import io
import json
import uuid
from collections import defaultdict

import pytest
from django.core.files.base import ContentFile
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from scipy import stats

from annotation import report_selectors
from annotation.lib import taskforms
from annotation.models import ImportedField, ImportedLabel, Study, StudyMember
from annotation.services.annotations import annotation_submit
from annotation.services.handout import assignment_next
from annotation.services.members import study_member_add
from evaluation.models import Submission
from leaderboard.selectors.boards import leaderboard
from leaderboard.selectors.simulated import simulators_page
from tests.annotation.conftest import _answers, make_study
from tests.evaluation.simulation_fixtures import sim_benchmark  # noqa: F401
from tests.leaderboard.test_simulator_validity_board import BOARD, RANKINGS, _simulate
from tests.test_reads_never_write import WRITE

pytestmark = pytest.mark.django_db(transaction=True)

COLUMN = "simulation.template:pc@10"
SIMULATED = {"Coverer": 1.0, "Half": 0.5, "Misser": 0.0}  # PC@10 (test_simulator_validity_board)
# Each system's Likert labels: informativeness ranks Half > Misser > Coverer (against the
# simulated order), naturalness as the simulator does. The second annotator adds 1 on d1.
INFORMATIVENESS = {"Coverer": 2, "Half": 4, "Misser": 3}
NATURALNESS = {"Coverer": 4, "Half": 3, "Misser": 1}
HOSTILE = '<b>Panel</b> & "friends"'  # a study title: escaped wherever it is shown


def _submission(benchmark, system, owner, n):
    """A turn-protocol submission of SYSTEM answering the benchmark's three turns."""
    lines = "\n".join(json.dumps(r) for r in _answers(f"Answer {n}")) + "\n"
    submission = Submission(uuid=uuid.uuid4(), system=system, benchmark=benchmark,
                            protocol="turn", line_count=3, created_by=owner)
    submission.file.save("sub.jsonl", ContentFile(lines.encode()), save=False)
    submission.save()
    return submission


def _label_study(benchmark, author, annotators, submissions):
    """A public native Likert study of SUBMISSIONS (and the reference turns), every item
    labelled by both ANNOTATORS; (system, dialogue, field) -> the values submitted."""
    study = make_study(benchmark, author, forms=(taskforms.LIKERT,), submissions=submissions,
                       overlap_k=2, gold_rate=0)
    Study.objects.filter(pk=study.pk).update(is_public=True, title=HOSTILE)
    study.refresh_from_db()
    given = defaultdict(list)
    for k, user in enumerate(annotators):
        member = study_member_add(study=study, user=user)
        while (assignment := assignment_next(member=member)) is not None:
            item = assignment.item
            name = item.system.name if item.system else ""
            bump = k if item.dialogue.external_id == "d1" else 0
            values = {"informativeness": min(INFORMATIVENESS.get(name, 5) + bump, 5),
                      "naturalness": min(NATURALNESS.get(name, 5) + bump, 5)}
            result = annotation_submit(assignment=assignment, data={
                f"likert-{key}": str(value) for key, value in values.items()})
            assert not result.errors, result.errors
            for key, value in values.items():
                given[(name, item.dialogue.external_id, key)].append(value)
    return study, given


def _imported_study(benchmark, author, systems, title):
    """An imported public study whose dialogue-level `overall` labels SYSTEMS (by name)."""
    study = Study.objects.create(
        slug=title.lower().replace(" ", "-"), title=title, benchmark=benchmark, author=author,
        forms=[], likert_scales=[], overlap_k=1, gold_rate=0, invite_token=title,
        is_open=False, source="imported:overall.csv", is_public=True, config={})
    ImportedField.objects.create(study=study, name="overall", unit_type="dialogue",
                                 scale_min=1, scale_max=5, level="interval")
    ImportedLabel.objects.bulk_create(
        ImportedLabel(study=study, unit_type="dialogue", unit_id=f"{d}-{name}", dialogue_id=d,
                      system=name, annotator="a", field="overall", value_num=n + 1.0)
        for n, name in enumerate(systems) for d in ("d1", "d2"))
    return study


def _by_hand(given, key):
    """Per system: the mean of every label of KEY (each annotator's label counts once)."""
    values = defaultdict(list)
    for (name, _dialogue, field), found in given.items():
        if field == key and name in SIMULATED:
            values[name] += found
    return {name: sum(v) / len(v) for name, v in values.items()}


def test_validity_against_study_labels_on_the_board_the_page_and_the_exports(
        sim_benchmark, researcher, author, annotator, other_annotator, client):  # noqa: F811
    sims = {name: _simulate(sim_benchmark, researcher, name) for name in RANKINGS}
    systems = {name: sim.system for name, sim in sims.items()}
    submissions = [_submission(sim_benchmark, systems[name], researcher, n)
                   for n, name in enumerate(RANKINGS)]
    study, given = _label_study(sim_benchmark, author, [annotator, other_annotator],
                                submissions)
    _imported_study(sim_benchmark, author, ["Coverer", "Half"], "Two systems")

    board = leaderboard(benchmark=sim_benchmark, protocol=BOARD, user=researcher)
    cell = board.validity[COLUMN]
    column = board.columns.index(board.column(COLUMN))
    assert {row.run.name: row.cells[column].value for row in board.rows} == \
        pytest.approx(SIMULATED)
    by_aspect = {ref.aspect: ref for ref in cell.labels}
    assert set(by_aspect) == {"likert.informativeness", "likert.naturalness", "overall"}
    x = [SIMULATED[name] for name in RANKINGS]
    for aspect, key in (("likert.informativeness", "informativeness"),
                        ("likert.naturalness", "naturalness")):
        means = _by_hand(given, key)
        y = [means[name] for name in RANKINGS]
        ref = by_aspect[aspect]
        tau, rho = ref.agreement(), ref.agreement("spearman")
        assert tau.value == pytest.approx(stats.kendalltau(x, y).statistic)
        assert rho.value == pytest.approx(stats.spearmanr(x, y).statistic)
        assert dict(zip(ref.validity.systems, ref.validity.human, strict=True)) == \
            pytest.approx({systems[name].pk: means[name] for name in RANKINGS})
        assert tau.n_systems == 3 and ref.validity.n_users == 3
        assert ref.validity.n_human == 6  # 3 systems × 2 labelled dialogues (d1, d2)
        assert tau.ci_low <= tau.ci_high and ref.study == study.slug and not ref.simulated
    informativeness = by_aspect["likert.informativeness"].agreement()
    assert informativeness.value == pytest.approx(-1 / 3)  # one concordant pair of three
    assert by_aspect["likert.naturalness"].agreement().value == pytest.approx(1.0)
    # The imported field reaches two systems: not measured, and why.
    overall = by_aspect["overall"]
    assert not overall.measured and "2 systems with both" in overall.why
    assert "at least 3 are needed" in overall.why
    # The headline: measured, then (no overall one measured) by study and field name.
    assert cell.labels[0].aspect == "likert.informativeness" and cell.more == 2
    assert not cell.arena.measured and "no arena" in cell.arena.why

    client.force_login(researcher)
    html = client.get(reverse("leaderboard:board", args=[sim_benchmark.slug, BOARD])
                      ).content.decode()
    trust = html.split(f'data-trust-key="{COLUMN}"')[1].split("</th>")[0]
    assert f"τb vs labels (Informativeness) {informativeness.value:.2f}" in trust
    assert "τb vs arena not measured" in trust and "+2 more" in trust
    assert HOSTILE not in html and "&lt;b&gt;Panel&lt;/b&gt; &amp; &quot;friends&quot;" in trust

    page = client.get(reverse("leaderboard:simulators", args=[sim_benchmark.slug]))
    body = page.content.decode()
    assert HOSTILE not in body and "&lt;b&gt;Panel&lt;/b&gt;" in body
    row = body.split('data-aspect="likert.informativeness"')[1].split("</tr>")[0]
    assert f"{informativeness.value:.2f}" in row and "3 systems" in row
    assert ("τ<sub>b</sub> vs labels (overall) not measured: 2 systems with both a simulated "
            "score and a human label; at least 3 are needed") in body
    design = next(d for d in simulators_page(benchmark=sim_benchmark, user=researcher)
                  ["designs"] if d["protocol"] == BOARD and not d["coverage"].endswith("-both"))
    found = {r["ref"].aspect: r for r in design["references"] if r["ref"].kind == "labels"}
    assert found["likert.naturalness"]["tau"].value == pytest.approx(1.0)
    assert sorted(found["likert.naturalness"]["compared"]) == sorted(RANKINGS)

    export = client.get(reverse("leaderboard:board_export",
                                args=[sim_benchmark.slug, BOARD, "json"])).json()
    record = next(r for r in export["rows"] if r["metric"] == "pc@10")
    assert record["labels_aspect"] == "likert.informativeness"
    assert record["labels_kendall_tau_b"] == pytest.approx(informativeness.value)
    assert record["arena_validity"].startswith("not validated: this benchmark has no arena")
    labels = export["simulator_validity"]["columns"][COLUMN]["labels"]
    values = {entry["aspect"]: entry["kendall_tau_b"]["value"] for entry in labels}
    assert values["likert.informativeness"] == pytest.approx(-1 / 3)
    assert values["likert.naturalness"] == pytest.approx(1.0) and values["overall"] is None
    assert [entry["aspect"] for entry in labels][0] == "likert.informativeness"
    csv_rows = list(csv.DictReader(io.StringIO(client.get(reverse(
        "leaderboard:board_export", args=[sim_benchmark.slug, BOARD, "csv"])).content.decode())))
    assert {r["labels_aspect"] for r in csv_rows if r["metric"] == "pc@10"} == \
        {"likert.informativeness"}
    api = client.get(reverse("leaderboard:api_leaderboard", args=[sim_benchmark.slug])
                     + f"?protocol={BOARD}").json()
    api_column = next(c for c in api["columns"] if c["key"] == COLUMN)
    assert api_column["simulator_validity"]["labels"][0]["kendall_tau_b"]["value"] == \
        pytest.approx(informativeness.value)


def test_the_study_labels_cost_the_same_statements_however_many_studies(
        sim_benchmark, researcher, author, annotator, client):  # noqa: F811
    sims = {name: _simulate(sim_benchmark, researcher, name) for name in RANKINGS}
    submissions = [_submission(sim_benchmark, sim.system, researcher, n)
                   for n, sim in enumerate(sims.values())]
    _label_study(sim_benchmark, author, [annotator], submissions)
    _imported_study(sim_benchmark, author, list(RANKINGS), "First import")
    url = reverse("leaderboard:board", args=[sim_benchmark.slug, BOARD])
    client.force_login(researcher)

    def statements():
        client.get(url)  # fills the per-study caches
        with CaptureQueriesContext(connection) as queries:
            html = client.get(url).content.decode()
        assert not [q for q in queries.captured_queries if WRITE.match(q["sql"])]
        return len(queries.captured_queries), html

    before, html = statements()
    assert "τb vs labels (" in html
    for n in range(3):
        _imported_study(sim_benchmark, author, list(RANKINGS), f"More import {n}")
    after, html = statements()
    assert after == before
    assert "+5 more" in html  # 2 Likert scales + 4 imported `overall` fields, one shown
    # The fingerprints read in bulk are the ones a report reads study by study (so the label
    # caches are shared with the reports), an exclusion included.
    StudyMember.objects.filter(user=annotator).update(excluded=True, exclusion_reason="test")
    studies = list(Study.objects.all())
    report_selectors._label_fingerprints(studies)
    assert len({s._report_fingerprints[False] for s in studies}) == len(studies) == 5
    for study in studies:
        alone = Study.objects.get(pk=study.pk)
        assert study._report_fingerprints[False] == report_selectors._fingerprint(
            alone, runs=False)


def test_the_demo_says_why_its_labels_give_no_number(author, researcher, client, tmp_path,
                                                     settings):
    """The demo as `load_demo` builds it (fewer dialogues): its labelled study (simulated
    annotators) labels Popularity and TF-IDF, its simulated board has Popularity, TF-IDF and
    Spatial — two systems with both, so the labels line says why it has no number."""
    from django.core.management import call_command

    from annotation.management.commands.load_demo import (
        DEMO_SIMULATED,
        DEMO_SIMULATED_TURNS,
        DEMO_SIMULATED_USERS,
    )
    from annotation.services.demo import demo_simulated_study_create
    from evaluation.services.benchmarks import benchmark_import
    from evaluation.services.live import live_baselines_ensure
    from evaluation.services.reference_rankers import baselines_ensure
    from evaluation.services.simulations import demo_simulations_ensure

    settings.MEDIA_ROOT = tmp_path / "media"
    call_command("make_demo_benchmark", str(tmp_path / "bundle"), dialogues=150)
    benchmark = benchmark_import(path=tmp_path / "bundle")
    runs = [run for _, run, _ in baselines_ensure(benchmark=benchmark,
                                                  names=["popularity", "tfidf"])]
    demo_simulated_study_create(benchmark=benchmark, author=author, sample_size=12,
                                submission_ids=[run.submission_id for run in runs])
    live = [s for s in live_baselines_ensure() if s.live_adapter in DEMO_SIMULATED]
    for _system, simulation, _created in demo_simulations_ensure(
            benchmark=benchmark, systems=live, users=DEMO_SIMULATED_USERS,
            turns=DEMO_SIMULATED_TURNS):
        assert simulation.run_id, simulation.job.error
    client.force_login(researcher)
    html = client.get(reverse("leaderboard:board", args=[benchmark.slug, BOARD])
                      ).content.decode()
    trust = html.split(f'data-trust-key="{COLUMN}"')[1].split("</th>")[0]
    assert "τb vs labels (Informativeness) not measured" in trust
    assert ("2 systems with both a simulated score and a human label; at least 3 are needed"
            in trust)
    body = client.get(reverse("leaderboard:simulators", args=[benchmark.slug])).content.decode()
    assert "simulated annotators, not people" in body
    assert "not measured: 2 systems with both a simulated score and a human label" in body
