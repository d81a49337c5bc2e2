"""Human-anchored system scores (PPI++) of a small imported study: `manage.py anchored`, the
report page's section, its downloads and the paper bundle, all equal to the estimator run on the
same numbers (evaluation/lib/stats/ppi.py, checked against ppi-python in its own tests)."""

import csv
import io
import json
import zipfile

import numpy as np
import pytest
from django.core.cache import cache
from django.core.management import call_command
from django.core.management.base import CommandError

from annotation.models import Study
from evaluation.lib.stats.ppi import AnchoredSample, anchored_mean
from evaluation.services.benchmarks import benchmark_import
from tests.support.bundles import tiny_data, write_tiny

pytestmark = pytest.mark.django_db

UNITS = [f"d{n}" for n in range(4, 44)]  # 40 dialogues; the first 20 are labelled
RNG = np.random.default_rng(11)
HUMAN = {unit: float(RNG.integers(1, 6)) for unit in UNITS}
JUDGE = {unit: round(0.4 * HUMAN[unit] + 2.0 + float(RNG.normal(scale=0.3)), 4)
         for unit in UNITS}
LENGTH = {unit: float(10 + n % 7) for n, unit in enumerate(UNITS)}


@pytest.fixture(autouse=True)
def fresh_cache(settings, tmp_path):
    settings.MEDIA_ROOT = tmp_path / "media"
    cache.clear()


@pytest.fixture
def study(tmp_path, staff):
    data = tiny_data()
    data["benchmark"]["slug"] = "forty"
    for unit in UNITS:
        data["dialogues"].append({"id": unit, "split": "test", "candidate_item_ids": [],
                                  "turns": [{"index": 0, "role": "user", "text": "hi",
                                             "action": "greet_and_seek"}]})
    benchmark_import(path=write_tiny(tmp_path / "forty", data))
    labels = tmp_path / "labels.jsonl"
    labels.write_text("".join(json.dumps({"unit_type": "dialogue", "unit_id": unit,
                                          "field": "overall", "value": HUMAN[unit]}) + "\n"
                              for unit in UNITS[:20]))
    call_command("import_judgments", str(labels), study="Anchors", benchmark="forty",
                 stdout=io.StringIO())
    for evaluator, metric, values in (("judge", "overall", JUDGE), ("lexical", "length", LENGTH)):
        scores = tmp_path / f"{evaluator}.jsonl"
        scores.write_text("".join(json.dumps({"metric": metric, "unit_type": "dialogue",
                                              "unit_id": unit, "value": values[unit]}) + "\n"
                                  for unit in UNITS))
        call_command("import_scores", str(scores), evaluator=evaluator, benchmark="forty",
                     stdout=io.StringIO())
    return Study.objects.get(slug="anchors")


def _anchored(**options) -> dict:
    out = io.StringIO()
    call_command("anchored", study="anchors", evaluator="judge", aspect="overall",
                 level="dialogue", json=True, stdout=out, **options)
    return json.loads(out.getvalue())


def _expected(labelled, values=JUDGE):
    rest = [unit for unit in UNITS if unit not in labelled]
    return anchored_mean(AnchoredSample([HUMAN[u] for u in labelled],
                                        [values[u] for u in labelled], labelled,
                                        [values[u] for u in rest], rest))


def test_the_command_prints_the_three_means_per_system(study):
    report = _anchored()
    (system,) = report["systems"]
    expected = _expected(UNITS[:20])
    assert system["system"] == "" and system["display"] == "Reference / unknown"
    assert (system["n_labelled"], system["n_unlabelled"]) == (20, 20)
    for name, estimate in (("ppi", expected.ppi), ("human_only", expected.human_only),
                           ("evaluator_only", expected.evaluator_only)):
        assert system[name]["mean"] == pytest.approx(estimate.value)
        assert system[name]["ci"] == pytest.approx([estimate.ci_low, estimate.ci_high])
    assert system["human_only"]["mean"] == pytest.approx(np.mean([HUMAN[u] for u in UNITS[:20]]))
    assert system["evaluator_only"]["mean"] == pytest.approx(np.mean(list(JUDGE.values())))
    assert system["lambda"] > 0.5 and system["effective_labels"] > 20
    width = system["ppi"]["ci"][1] - system["ppi"]["ci"][0]
    assert width < system["human_only"]["ci"][1] - system["human_only"]["ci"][0]
    assert report["ranking"][0]["rank"] == 1 and report["metric"] == "overall"


def test_a_labelled_fraction_keeps_a_seeded_share(study):
    report = _anchored(labelled_fraction=0.5, seed=3)
    (system,) = report["systems"]
    assert (system["n_labelled"], system["n_unlabelled"]) == (10, 30)
    again = _anchored(labelled_fraction=0.5, seed=3)
    assert again["systems"][0]["ppi"] == system["ppi"]
    assert _anchored(labelled_fraction=0.5, seed=4)["systems"][0]["ppi"] != system["ppi"]
    assert report["labelled_fraction"] == 0.5 and report["seed"] == 3


def test_a_metric_of_another_name_must_be_chosen(study):
    with pytest.raises(CommandError, match=r"choose one with --metric \(metrics: length\)"):
        call_command("anchored", study="anchors", evaluator="lexical", aspect="overall",
                     level="dialogue", json=True, stdout=io.StringIO())
    out = io.StringIO()
    call_command("anchored", study="anchors", evaluator="lexical", aspect="overall",
                 level="dialogue", metric="length", json=True, stdout=out)
    report = json.loads(out.getvalue())
    expected = _expected(UNITS[:20], LENGTH)
    assert report["systems"][0]["ppi"]["mean"] == pytest.approx(expected.ppi.value)
    assert any("not named like overall" in note for note in report["notes"])


@pytest.mark.parametrize(("options", "message"), [
    ({"aspect": "nope"}, r"no numeric dialogue-level human field 'nope' \(fields: overall\)"),
    ({"level": "turn"}, r"no numeric turn-level human field 'overall' \(fields: none\)"),
    ({"metric": "bleu"}, r"no dialogue-level metric 'bleu' \(metrics: overall\)"),
    ({"evaluator": "nobody"}, r"no finished run of 'nobody'"),
])
def test_bad_choices_name_what_exists(study, options, message):
    arguments = {"study": "anchors", "evaluator": "judge", "aspect": "overall",
                 "level": "dialogue", **options}
    with pytest.raises(CommandError, match=message):
        call_command("anchored", json=True, stdout=io.StringIO(), **arguments)


def test_a_labelled_fraction_outside_0_1_is_refused(study):
    with pytest.raises(CommandError, match=r"in \(0, 1\] of the labelled units, not '1.5'"):
        call_command("anchored", "--study", "anchors", "--evaluator", "judge", "--aspect",
                     "overall", "--level", "dialogue", "--labelled-fraction", "1.5")


def test_the_report_shows_and_exports_the_section(client, study, staff, tmp_path):
    client.force_login(staff)
    page = client.get(f"/studies/{study.slug}/report/",
                      {"evaluator": "external:judge", "aspect": "overall"}).content.decode()
    expected = _expected(UNITS[:20])
    assert "Human-anchored system scores (PPI++)" in page
    assert f"{expected.ppi.value:.3f} [{expected.ppi.ci_low:.3f}, {expected.ppi.ci_high:.3f}]" \
        in page
    assert f"{expected.human_only.value:.3f} [" in page and 'class="forest"' in page
    download = client.get(f"/studies/{study.slug}/report/anchored.csv",
                          {"evaluator": "external:judge", "aspect": "overall"})
    block = download.content.decode().split("\n\n")[0].split("\n", 1)[1]  # anchored_systems
    rows = list(csv.DictReader(io.StringIO(block)))
    assert float(rows[0]["value"]) == pytest.approx(expected.ppi.value, rel=1e-5)
    assert float(rows[0]["human_ci_low"]) == pytest.approx(expected.human_only.ci_low, rel=1e-5)
    assert rows[0]["n_labelled"] == "20" and rows[0]["n_unlabelled"] == "20"
    latex = client.get(f"/studies/{study.slug}/report/anchored.latex",
                       {"evaluator": "external:judge", "aspect": "overall"}).content.decode()
    assert "PPI++" in latex and "Reference / unknown" in latex
    missing = client.get(f"/studies/{study.slug}/report/anchored.json",
                         {"evaluator": "external:lexical", "aspect": "overall"})
    assert missing.status_code == 404
    from annotation.services.study_exports import study_bundle_write

    study_bundle_write(study=study, path=tmp_path / "bundle.zip")
    archive = zipfile.ZipFile(tmp_path / "bundle.zip")
    bundled = json.loads(archive.read("anchored/external-judge-overall-overall.json"))
    assert bundled["systems"][0]["ppi"]["mean"] == pytest.approx(expected.ppi.value)
    assert not any(name.startswith("anchored/external-lexical") for name in archive.namelist())
    assert "### ppi_mean" in archive.read("README.md").decode()


def test_bench_anchored_counts_coverage_over_resampled_labels(study):
    from evaluation.lib.stats.ppi import keep_labelled_share

    out = io.StringIO()
    call_command("bench_anchored", study="anchors", evaluator="judge", aspect="overall",
                 fraction=[0.5], draws=6, json=True, stdout=out)
    (result,) = json.loads(out.getvalue())
    truth = np.mean([HUMAN[u] for u in UNITS[:20]])
    hits, ratios = [], []
    for seed in range(6):
        kept = {unit for _, unit in keep_labelled_share([("", u) for u in UNITS[:20]], 0.5,
                                                        seed)}
        expected = _expected(sorted(kept))
        hits.append(expected.ppi.ci_low <= truth <= expected.ppi.ci_high)
        ratios.append((expected.ppi.ci_high - expected.ppi.ci_low)
                      / (expected.human_only.ci_high - expected.human_only.ci_low))
    system = result["systems"]["Reference / unknown"]
    assert system["n_labelled_all"] == 20 and system["draws"] == 6
    assert system["coverage"] == pytest.approx(np.mean(hits))
    assert system["width_ratio"] == pytest.approx(np.mean(ratios))
    assert result["overall"]["largest_width_ratio"] <= 1.0
    with pytest.raises(CommandError, match="every --fraction in"):
        call_command("bench_anchored", study="anchors", evaluator="judge", aspect="overall",
                     fraction=[0.0], stdout=io.StringIO())


def test_untrusted_metric_names_are_escaped(client, study, staff, tmp_path):
    evil = "<img src=x onerror=alert(1)>"
    scores = tmp_path / "evil.jsonl"
    scores.write_text("".join(json.dumps({"metric": evil, "unit_type": "dialogue",
                                          "unit_id": unit, "value": JUDGE[unit]}) + "\n"
                              for unit in UNITS))
    call_command("import_scores", str(scores), evaluator="sneaky", benchmark="forty",
                 stdout=io.StringIO())
    client.force_login(staff)
    page = client.get(f"/studies/{study.slug}/report/", {
        "evaluator": "external:sneaky", "aspect": "overall", "metric": evil}).content.decode()
    assert "Human-anchored system scores (PPI++)" in page
    assert evil not in page and "&lt;img src=x onerror=alert(1)&gt;" in page
    latex = client.get(f"/studies/{study.slug}/report/anchored.latex", {
        "evaluator": "external:sneaky", "aspect": "overall", "metric": evil}).content.decode()
    assert "PPI++" in latex


def test_the_public_human_anchored_view(client, study):
    url = f"/studies/{study.slug}/metric-leaderboard/anchored/"
    query = {"evaluator": "external:judge", "metric": "overall", "aspect": "overall"}
    assert client.get(url, query).status_code == 404  # a private study: not to strangers
    study.is_public = True
    study.save(update_fields=["is_public"])
    study.benchmark.is_public = True
    study.benchmark.save(update_fields=["is_public"])
    page = client.get(url, query).content.decode()
    expected = _expected(UNITS[:20])
    assert "Human-anchored system scores (PPI++)" in page
    assert f"{expected.ppi.value:.3f} [{expected.ppi.ci_low:.3f}" in page
    assert "manage.py anchored" not in page  # the downloads are the author's
    assert client.get(url, {**query, "aspect": "nope"}).status_code == 404


def test_the_leaderboard_links_its_optional_human_anchored_view(client, author):
    """A leaderboard column whose metric has a measured human aspect (the trust row) links the
    human-anchored view of that metric on that study's labels."""
    import html

    from django.urls import reverse

    from annotation.services.validation import metric_validations_refresh
    from tests.support.trust import labelled_world

    benchmark, study, _ = labelled_world(author)
    metric_validations_refresh(study=study)
    client.force_login(author)
    page = client.get(reverse("leaderboard:board", args=[benchmark.slug, "turn"])).content
    header = page.decode().split('class="trust-row"')[1].split("</tr>")[0]
    m01 = header.split('data-trust-key="synthetic:m01"')[1].split("</th>")[0]
    link = html.unescape(m01.split('class="anchored-link small" href="')[1].split('"')[0])
    assert link == (f"/studies/{study.slug}/metric-leaderboard/anchored/?evaluator=synthetic"
                    "&metric=m01&aspect=m01")
    view = client.get(link).content.decode()
    assert "Human-anchored system scores (PPI++)" in view and "PPI++ [95% CI]" in view
