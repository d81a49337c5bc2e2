"""The study report's pairwise-preference summary (issue 34.4): per system pair the win / tie /
loss counts and the win rate with its clustered interval, Bradley–Terry strengths over all
systems by the arena's code, on the page and in every export (JSON, CSV, LaTeX, bundle)."""

import io
import json
import math
import zipfile

import numpy as np
import pytest
from django.contrib.auth.models import User
from django.core.cache import cache
from django.urls import reverse

from annotation.lib import exports, reports, taskforms
from annotation.lib.labels import FieldSpec, LabelRow, LabelTable
from annotation.lib.preferences import pairwise_preferences
from evaluation.lib.stats.clustered import cluster_mean
from evaluation.models import Job

from .conftest import make_study
from .test_report import label_all

FIELD = "pairwise.choice"


def _rows(votes):
    """votes: (dialogue, "first vs second", annotator, answer)."""
    return [LabelRow("turn", f"{d}#1", d, pair, who, FIELD, answer)
            for d, pair, who, answer in votes]


VOTES = [  # Alpha vs Beta in d1-d3; Beta vs Gamma and Gamma vs Alpha (stored the other way)
    ("d1", "Alpha vs Beta", "x", "a"), ("d1", "Alpha vs Beta", "y", "a"),
    ("d2", "Alpha vs Beta", "x", "tie"), ("d2", "Alpha vs Beta", "y", "b"),
    ("d3", "Alpha vs Beta", "x", "a"), ("d3", "Alpha vs Beta", "y", "tie"),
    ("d1", "Beta vs Gamma", "x", "a"), ("d2", "Beta vs Gamma", "x", "b"),
    ("d3", "Beta vs Gamma", "y", "a"),
    ("d1", "Gamma vs Alpha", "x", "b"), ("d2", "Gamma vs Alpha", "y", "a"),
    ("d3", "Gamma vs Alpha", "x", "b"), ("d3", "Gamma vs Alpha", "y", "tie"),
    ("d1", "Alpha vs Beta", "", "a"),  # an aggregated row: no annotator, left out
]


def test_counts_win_rates_and_their_interval_by_hand():
    summary = pairwise_preferences(_rows(VOTES), n_resamples=200)
    assert summary["votes"] == 13 and summary["systems"] == 3
    pairs = {(p["system"], p["opponent"]): p for p in summary["pairs"]}
    assert list(pairs) == [("Alpha", "Beta"), ("Alpha", "Gamma"), ("Beta", "Gamma")]
    ab = pairs[("Alpha", "Beta")]
    assert (ab["wins"], ab["ties"], ab["losses"], ab["votes"]) == (3, 2, 1, 6)
    assert ab["win_rate"]["value"] == pytest.approx((3 + 2 / 2) / 6)
    # the interval is cluster_mean's over dialogues of the 1 / 0.5 / 0 scores
    expected = cluster_mean([1, 1, 0.5, 0, 1, 0.5], ["d1", "d1", "d2", "d2", "d3", "d3"],
                            bounds=(0.0, 1.0))
    assert (ab["win_rate"]["ci_low"], ab["win_rate"]["ci_high"]) == pytest.approx(
        (expected.ci_low, expected.ci_high))
    assert ab["win_rate"]["method"] == "cluster_t_logit_mean"
    assert ab["win_rate"]["n"] == {"units": 6, "clusters": 3}
    # "Gamma vs Alpha" is turned round: Alpha won d1 and d3 (answer b), lost d2, tied once
    ag = pairs[("Alpha", "Gamma")]
    assert (ag["wins"], ag["ties"], ag["losses"]) == (2, 1, 1)
    bg = pairs[("Beta", "Gamma")]
    assert (bg["wins"], bg["ties"], bg["losses"]) == (2, 0, 1)
    json.dumps(summary, allow_nan=False)


def test_bradley_terry_strengths_solve_the_likelihood_equations():
    summary = pairwise_preferences(_rows(VOTES), n_resamples=200)
    rating = {row["system"]: row["strength"]["value"] for row in summary["strengths"]}
    assert sum(rating.values()) / 3 == pytest.approx(1000.0)
    # at the maximum-likelihood fit every system's expected score equals its observed score
    # (wins + ties / 2) against the opponents it met, each game counted once
    observed, expected = dict.fromkeys(rating, 0.0), dict.fromkeys(rating, 0.0)
    for pair in summary["pairs"]:
        first, second = pair["system"], pair["opponent"]
        p = 1.0 / (1.0 + 10 ** ((rating[second] - rating[first]) / 400.0))
        score = pair["wins"] + pair["ties"] / 2
        observed[first] += score
        observed[second] += pair["votes"] - score
        expected[first] += pair["votes"] * p
        expected[second] += pair["votes"] * (1 - p)
    for system in rating:
        assert expected[system] == pytest.approx(observed[system], abs=1e-6)
    alpha = next(row for row in summary["strengths"] if row["system"] == "Alpha")
    assert (alpha["wins"], alpha["ties"], alpha["losses"], alpha["votes"]) == (5, 3, 2, 10)
    assert alpha["strength"]["method"] == "bradley_terry" and alpha["rank"] == 1
    # fewer than 10 votes: no interval, and the note says why
    gamma = next(row for row in summary["strengths"] if row["system"] == "Gamma")
    assert gamma["strength"]["ci_low"] is None and "too few votes" in gamma["strength"][
        "params"]["ci_note"]


def test_every_export_format_carries_both_tables():
    rng = np.random.default_rng(7)
    votes = [(f"d{d}", pair, who, str(rng.choice(["a", "a", "b", "tie"])))
             for d in range(12) for pair in ("Alpha vs Beta", "Beta vs Gamma", "Alpha vs Gamma")
             for who in "xyz"]
    table = LabelTable(_rows(votes), {FIELD: FieldSpec(FIELD, "turn", "nominal")})
    report = reports.build_agreement(table, n_resamples=200)
    tables = exports.agreement_tables(report)
    names = [t.name for t in tables]
    assert "pairwise_pairs" in names and "pairwise_bradley_terry" in names
    as_json = json.loads(exports.render(report, tables, "json"))
    assert as_json["pairwise_preferences"]["votes"] == 108
    csv_text = exports.render(report, tables, "csv")
    pair = report["pairwise_preferences"]["pairs"][0]
    assert (f"Alpha,Beta,{pair['wins']},{pair['ties']},{pair['losses']},36,"
            f"{pair['win_rate']['value']:.6g}") in csv_text
    latex = exports.render(report, tables, "latex")
    assert "Bradley--Terry strengths" in latex or "Bradley–Terry strengths" in latex
    assert {"bradley_terry", "cluster_t_logit_mean"} <= set(exports.methods_used(report))
    for row in report["pairwise_preferences"]["strengths"]:
        strength = row["strength"]
        assert strength["ci_low"] < strength["value"] < strength["ci_high"]
        assert row["rank_low"] <= row["rank"] <= row["rank_high"]
        assert not math.isnan(strength["value"])


@pytest.mark.django_db
def test_a_pairwise_study_report_shows_the_summary_and_the_bundle_has_it(
        client, tiny_benchmark, author, annotator, other_annotator, submissions, media_root,
        django_capture_on_commit_callbacks):
    cache.clear()
    study = make_study(tiny_benchmark, author, forms=[taskforms.PAIRWISE],
                       submissions=submissions, overlap_k=3, tie_break_extra=False,
                       slug="pair-study")
    for user in (annotator, other_annotator, User.objects.create_user("third")):
        label_all(study, user, "plain")
    client.force_login(author)
    page = client.get(reverse("annotation:study_report", args=[study.slug])).content.decode()
    assert '<section id="pairwise-preferences">' in page
    assert "Pairwise preferences per system pair" in page and "Bradley–Terry strengths" in page
    for fmt in ("json", "csv", "latex"):
        body = client.get(reverse("annotation:study_report_download",
                                  args=[study.slug, "agreement", fmt])).content.decode()
        assert "pairwise" in body.lower(), fmt
    with django_capture_on_commit_callbacks(execute=True):
        client.post(reverse("annotation:study_export", args=[study.slug]),
                    {"format": "bundle"}, HTTP_HX_REQUEST="true")
    job = Job.objects.get(kind=Job.Kind.STUDY_EXPORT)
    assert job.status == Job.Status.SUCCEEDED, job.error
    response = client.get(reverse("annotation:study_export_download", args=[study.slug, job.pk]))
    archive = zipfile.ZipFile(io.BytesIO(b"".join(response.streaming_content)))
    agreement = json.loads(archive.read("agreement.json"))
    summary = agreement["pairwise_preferences"]
    assert summary["votes"] == 3 * study.items.filter(mode="pairwise", kind="normal").count()
    assert "# pairwise_bradley_terry" in archive.read("agreement.csv").decode()
    readme = archive.read("README.md").decode()
    assert "### bradley_terry" in readme and "### cluster_t_logit_mean" in readme
    cache.clear()
