"""Issue 17.5, reports you can read, fast: the same numbers by the fast paths (alpha's jackknife
leave-outs all at once, the leaderboard's jackknife on all evaluators at once, score reads
restricted to the labelled units, the page's headline rows computed alone), the filters and the
collapsed sections, the cache's invalidation on a new label and on a finished run, and the
statement counts."""

import json

import numpy as np
import pytest
from django.contrib.auth.models import User
from django.core.cache import cache
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from django.utils import timezone

from annotation import report_selectors
from annotation.imports import scores_import
from annotation.lib import reports
from annotation.models import ImportedLabel
from annotation.report_bench import JUDGE, synthetic_report_study
from evaluation.lib.stats import correlation
from evaluation.lib.stats.agreement import _alpha_leave_outs, alpha_with_ci
from evaluation.lib.stats.alpha import alpha_parts, alpha_resampled, prepare
from evaluation.lib.stats.clustered import jackknife_leave_outs
from evaluation.models import Job, Run, Submission, UnitScore

from .test_report import (
    labelled_study,  # noqa: F401  (a fixture)
    score_file,
)


@pytest.fixture(autouse=True)
def fresh_cache():
    cache.clear()
    yield
    cache.clear()


# --- the same numbers ------------------------------------------------------------------------


def _random_data(rng):
    likert = rng.integers(1, 6, size=(4, 120)).astype(float)
    likert[rng.random(likert.shape) < 0.35] = np.nan
    scores = rng.normal(50, 20, size=(3, 80))
    scores[rng.random(scores.shape) < 0.4] = np.nan
    labels = ["a", "b", "c"]
    nominal = [[None if rng.random() < 0.3 else labels[rng.integers(3)] for _ in range(90)]
               for _ in range(3)]
    sets = [[None if rng.random() < 0.3 else frozenset(
        rng.choice(labels, size=rng.integers(0, 3), replace=False).tolist())
        for _ in range(90)] for _ in range(4)]
    return [(likert, "interval"), (likert, "ordinal"), (likert, "nominal"), (likert, "ratio"),
            (scores, "interval"), (np.abs(scores), "ratio"), (np.round(scores), "ordinal"),
            (nominal, "nominal"), (sets, "masi"),
            (np.array([[1.0, 1, 1], [1, 1, 1]]), "interval"),  # no variance: undefined
            (np.array([[1.0, np.nan], [np.nan, 3]]), "nominal")]  # nothing pairable


def test_alpha_on_all_resamples_at_once_equals_alpha_on_each_resample():
    rng = np.random.default_rng(17)
    for data, level in _random_data(rng):
        prepared = prepare(data, level)
        draws = rng.integers(0, prepared.n_units, size=(40, prepared.n_units))
        weights = np.stack([np.bincount(row, minlength=prepared.n_units) for row in draws])
        one_by_one = [alpha_parts(prepared.columns(row)).value for row in draws]
        at_once = alpha_resampled(prepared, weights)
        for single, batched in zip(one_by_one, at_once, strict=True):
            if single is None:
                assert np.isnan(batched), level
            else:
                assert batched == pytest.approx(single, abs=1e-12), level


def test_alpha_leave_outs_at_once_equal_the_one_by_one_jackknife():
    rng = np.random.default_rng(4)
    for data, level in _random_data(rng):
        prepared = prepare(data, level)
        units = np.arange(prepared.n_units)
        groups = [units[start::7] for start in range(min(7, prepared.n_units))]
        one_by_one = jackknife_leave_outs(
            lambda idx, p=prepared: alpha_parts(p.columns(idx)).value, groups,
            prepared.n_units)
        at_once = _alpha_leave_outs(prepared, groups)
        assert np.allclose(at_once, one_by_one, rtol=0, atol=1e-12, equal_nan=True), level
        assert alpha_with_ci(data, level).to_dict()  # the interval is built from them


def test_metric_leaderboard_ranks_all_evaluators_at_once_as_one_by_one():
    """Evaluators that scored every human unit go through rowwise_correlation; adding a human
    unit nobody scored (in an existing dialogue) sends every evaluator through the one-by-one
    path on exactly the same units and leave-outs: the rows must be equal."""
    rng = np.random.default_rng(9)
    units = [f"u{i}" for i in range(160)]
    clusters = {unit: f"d{i // 4}" for i, unit in enumerate(units)}
    human = {unit: float(rng.integers(1, 6)) for unit in units}
    evaluators = {f"e{e}": {u: human[u] * rng.uniform(-0.3, 1) + rng.normal() for u in units}
                  for e in range(6)}
    evaluators["ties"] = {unit: float(rng.integers(0, 3)) for unit in units}
    for method in ("spearman", "pearson"):
        fast = correlation.rank_evaluators(evaluators, human, method=method, clusters=clusters)
        slow = correlation.rank_evaluators(evaluators, {**human, "extra": 3.0}, method=method,
                                           clusters={**clusters, "extra": "d0"})
        for a, b in zip(fast, slow, strict=True):
            a, b = a.to_dict(), b.to_dict()
            assert (a["system"], a["rank"], a["significantly_better"]) == (
                b["system"], b["rank"], b["significantly_better"])
            for key in ("value", "ci_low", "ci_high"):
                assert a[key] == pytest.approx(b[key], abs=1e-12)


@pytest.fixture
def scored_study(labelled_study, submissions, tmp_path):  # noqa: F811
    """The labelled study with an external metric on labelled and on unlabelled units."""
    scores_import(path=score_file(tmp_path, submissions), benchmark=labelled_study.benchmark,
                  evaluator="toy")
    return labelled_study


def test_reading_only_labelled_units_gives_the_full_reads_numbers(scored_study):
    table = report_selectors.study_label_table(study=scored_study)
    benchmark = scored_study.benchmark
    full = report_selectors.evaluator_score_sets(benchmark=benchmark)
    some = report_selectors.evaluator_score_sets(
        benchmark=benchmark, units={unit for _, unit in table.units()})
    assert [(s.evaluator, s.metric, s.unit_type) for sets in full.values() for s in sets] == [
        (s.evaluator, s.metric, s.unit_type) for sets in some.values() for s in sets]
    assert sum(len(s.values) for s in some["external:toy"]) < sum(
        len(s.values) for s in full["external:toy"])  # d1#1 is scored, nobody labelled it
    for evaluator in full:
        assert reports.build_correlation(table, full[evaluator], evaluator=evaluator,
                                         with_points=True) == reports.build_correlation(
            table, some[evaluator], evaluator=evaluator, with_points=True)


def test_cached_headline_and_plots_equal_the_uncached_full_report(scored_study):
    evaluator = "external:toy"
    table = report_selectors.study_label_table(study=scored_study)
    full_read = report_selectors.evaluator_score_sets(benchmark=scored_study.benchmark)[evaluator]
    uncached = reports.build_correlation(table, full_read, evaluator=evaluator, with_points=True)
    for _ in range(2):  # computed, then from the cache
        headline = report_selectors.study_correlation_headline(study=scored_study,
                                                               evaluator=evaluator)
        rows = {(r["metric"], r["aspect"], r["subset"]): r for r in uncached["item_level"]}
        assert headline["item_level"]
        for row in headline["item_level"]:
            assert row == rows[(row["metric"], row["aspect"], row["subset"])]
        plots = report_selectors.study_scatter(study=scored_study, evaluator=evaluator,
                                               aspect=headline["aspect"])
        assert plots == [p for p in uncached["scatter"] if p["aspect"] == headline["aspect"]]
        cached = report_selectors.study_correlation(study=scored_study, evaluator=evaluator)
        assert cached["item_level"] == uncached["item_level"]
        assert cached["system_level"] == uncached["system_level"]


# --- the page: headline first, filters, collapsed sections ------------------------------------


@pytest.fixture
def generated(db):
    staff = User.objects.create_user("report-staff", is_staff=True)
    return synthetic_report_study(slug="generated", author=staff, labels=600, systems=4,
                                  annotators=3, scored_factor=2, seed=3), staff


def test_report_shows_headline_metrics_and_collapses_variants_and_diagnostics(client,
                                                                               generated):
    study, staff = generated
    client.force_login(staff)
    url = reverse("annotation:study_report", args=[study.slug])
    html = client.get(url, {"evaluator": "trace"}).content.decode()
    assert html.index('id="table-agreement_headline"') < html.index('id="correlation"')
    headline = html[html.index('id="table-correlation_headline"'):]
    headline = headline[:headline.index("</table>")]
    assert ">gs</td>" in headline and ">cgs</td>" in headline
    assert "cgs_t70" not in headline and "spatial_coherence_1km" not in headline  # variants
    assert '<details class="report-more" id="correlation-all" hx-get=' in html  # not open
    assert 'id="table-item_level"' not in html  # every row: computed when asked for
    for section in ("agreement-all", "leave-one-out", "annotators"):
        assert f'<details class="report-more" id="{section}">' in html
    assert html.count('class="scatter-figure"') == 1 and html.count('class="curve-figure"') == 1
    every = client.get(url, {"evaluator": "trace", "rows": "all"}).content.decode()
    assert '<details class="report-more" id="correlation-all" open>' in every
    item_level = every[every.index('id="table-item_level"'):]
    assert "cgs_t70" in item_level[:item_level.index("</table>")]


def test_report_filters_by_evaluator_aspect_and_metric(client, generated):
    study, staff = generated
    client.force_login(staff)
    url = reverse("annotation:study_report", args=[study.slug])
    default = client.get(url, {"evaluator": "trace"}).content.decode()
    assert '<option value="overall" selected>' in default  # an "overall" aspect by default
    page = client.get(url, {"evaluator": "trace", "aspect": "relevance", "metric": "mrr"})
    html = page.content.decode()
    assert '<option value="relevance" selected>' in html
    assert "trace against the human relevance" in html
    plots = html[html.index('id="plots"'):]
    assert 'data-metric="mrr" data-aspect="relevance"' in plots
    assert plots.count('class="scatter-figure"') == 1
    judge = client.get(url, {"evaluator": JUDGE, "aspect": "satisfaction"}).content.decode()
    assert '<option value="satisfaction" selected>' in judge  # matched by name: own aspect
    assert ">satisfaction</td>" in judge and ">mrr</td>" not in judge
    fragment = client.get(url, {"evaluator": "trace", "aspect": "relevance"},
                          HTTP_HX_REQUEST="true").content.decode()
    assert fragment.lstrip().startswith('<section id="correlation"') and "<html" not in fragment
    unknown = client.get(url, {"evaluator": "trace", "aspect": "no-such-field"})
    assert unknown.status_code == 200 and '<option value="overall" selected>' in \
        unknown.content.decode()
    assert client.get(url, {"evaluator": "no-such-evaluator"}).status_code == 404


def test_report_statement_counts_stay_small(client, generated):
    study, staff = generated
    client.force_login(staff)
    url = reverse("annotation:study_report", args=[study.slug]) + "?evaluator=trace"
    with CaptureQueriesContext(connection) as cold:
        assert client.get(url).status_code == 200
    with CaptureQueriesContext(connection) as warm:
        assert client.get(url).status_code == 200
    # warm: session, user, study, evaluators, grouping keys, field specs, fingerprint (4)…
    assert len(warm) <= 15, [q["sql"][:80] for q in warm.captured_queries]
    # cold: +2 since the evaluators on offer are those sharing labelled units (their runs, one
    # count of the shared units)
    assert len(cold) <= 32, [q["sql"][:80] for q in cold.captured_queries]
    assert not [q for q in cold.captured_queries + warm.captured_queries
                if q["sql"].lstrip().upper().startswith(("INSERT", "UPDATE", "DELETE"))]
    board = reverse("annotation:metric_board", args=[study.slug])
    client.get(board)
    with CaptureQueriesContext(connection) as board_warm:
        assert client.get(board).status_code == 200
    assert len(board_warm) <= 10


# --- the cache: a stale value is never served --------------------------------------------------


def test_a_new_label_is_in_the_next_report_and_metric_leaderboard(generated):
    study, _ = generated
    before = report_selectors.study_agreement(study=study)
    board = report_selectors.study_metric_leaderboard(study=study, aspect="overall",
                                                      include_private=True)
    headline = report_selectors.study_correlation_headline(study=study, evaluator="trace")
    first = ImportedLabel.objects.filter(study=study, field="overall").first()
    ImportedLabel.objects.create(study=study, unit_type="turn", unit_id=first.unit_id,
                                 dialogue_id=first.dialogue_id, system=first.system,
                                 annotator="late-annotator", field="overall",
                                 value_num=1.0 if first.value_num >= 3 else 5.0)
    study = type(study).objects.get(pk=study.pk)  # a new request
    after = report_selectors.study_agreement(study=study)
    assert after["study"]["counts"]["labels"] == before["study"]["counts"]["labels"] + 1
    assert "late-annotator" in after["annotators"]
    overall = next(f for f in after["fields"] if f["field"] == "overall")
    assert overall["labels"] == next(f for f in before["fields"]
                                     if f["field"] == "overall")["labels"] + 1
    board_after = report_selectors.study_metric_leaderboard(study=study, aspect="overall",
                                                            include_private=True)
    assert board_after["rows"] != board["rows"]  # the unit's human mean moved
    headline_after = report_selectors.study_correlation_headline(study=study,
                                                                 evaluator="trace")
    assert headline_after["item_level"] != headline["item_level"]


def test_a_run_that_finishes_is_in_the_next_report(generated):
    study, _ = generated
    assert "trace" in report_selectors.evaluator_names(benchmark=study.benchmark)
    template = Run.objects.filter(evaluator="trace").select_related("submission").first()
    job = Job.objects.create(kind=Job.Kind.EVALUATION, status=Job.Status.RUNNING)
    run = Run.objects.create(submission=template.submission, evaluator="late-judge",
                             evaluator_version="1", config={}, config_hash="late", job=job)
    UnitScore.objects.bulk_create([
        UnitScore(run=run, metric="overall", unit_type="turn", unit_id=score.unit_id,
                  dialogue_id=score.dialogue_id, value=score.value)
        for score in UnitScore.objects.filter(run=template, metric="gs")])
    running = report_selectors.study_metric_leaderboard(study=study, aspect="overall",
                                                        include_private=True)
    assert "late-judge" not in {row["evaluator"] for row in running["rows"]}
    job.status, job.finished_at = Job.Status.SUCCEEDED, timezone.now()
    job.save(update_fields=["status", "finished_at"])
    study = type(study).objects.get(pk=study.pk)
    finished = report_selectors.study_metric_leaderboard(study=study, aspect="overall",
                                                         include_private=True)
    assert "late-judge" in {row["evaluator"] for row in finished["rows"]}
    headline = report_selectors.study_correlation_headline(study=study, evaluator="late-judge")
    assert headline["aspect"] == "overall" and headline["item_level"]


def test_a_published_submission_joins_the_public_metric_leaderboard(generated):
    study, _ = generated
    Submission.objects.filter(benchmark=study.benchmark).update(is_public=False)
    hidden = report_selectors.study_metric_leaderboard(study=study, aspect="overall",
                                                       include_private=False)
    assert hidden["rows"] == []
    Submission.objects.filter(benchmark=study.benchmark).update(is_public=True)
    study = type(study).objects.get(pk=study.pk)
    shown = report_selectors.study_metric_leaderboard(study=study, aspect="overall",
                                                      include_private=False)
    assert shown["rows"] and json.dumps(shown)  # plain data, as the exports need


def test_the_report_offers_evaluators_with_shared_units_the_most_first(client, generated):
    """Issue 34.4: the correlation section opens on the evaluator with the most labelled units
    it scored, and an evaluator that scored none of them is not offered."""
    study, staff = generated
    template = Run.objects.filter(evaluator="trace").select_related("submission").first()
    labelled = ImportedLabel.objects.filter(study=study, unit_type="turn").values("unit_id")
    few = list(UnitScore.objects.filter(run=template, metric="gs", unit_id__in=labelled)
               .order_by("pk")[:5])
    assert len(few) == 5
    for name, scores in (("few-judge", [(s.unit_id, s.dialogue_id) for s in few]),
                         ("stranger", [("nowhere#1", "nowhere")])):
        job = Job.objects.create(kind=Job.Kind.EVALUATION, status=Job.Status.SUCCEEDED,
                                 finished_at=timezone.now())
        run = Run.objects.create(submission=template.submission, evaluator=name,
                                 evaluator_version="1", config={}, config_hash=name, job=job)
        UnitScore.objects.bulk_create([
            UnitScore(run=run, metric="overall", unit_type="turn", unit_id=unit,
                      dialogue_id=dialogue, value=1.0) for unit, dialogue in scores])
    study = type(study).objects.get(pk=study.pk)
    names = report_selectors.study_evaluators(study=study)
    assert set(names) == {"trace", "external:judge", "few-judge"}
    assert names[-1] == "few-judge"  # 5 shared units; the others scored every labelled unit
    client.force_login(staff)
    html = client.get(reverse("annotation:study_report", args=[study.slug])).content.decode()
    assert f"{names[0]} against the human" in html and 'value="stranger"' not in html
    assert "against the human :" not in html


def test_free_text_scenario_fields_are_not_offered_under_split_by(tiny_benchmark):
    for k, dialogue in enumerate(tiny_benchmark.dialogues.all()):
        dialogue.scenario = {**dialogue.scenario, "persona_description": f"A traveller {k} "
                             "who likes quiet places and long walks by the river",
                             "city_group": "east" if k % 2 else "west"}
        dialogue.save(update_fields=["scenario"])
    keys = report_selectors.grouping_keys(benchmark=tiny_benchmark)
    assert "city_group" in keys and "persona_description" not in keys
    with pytest.raises(ValueError, match="split by one of"):
        report_selectors.resolve_grouping(benchmark=tiny_benchmark, by="persona_description")


def test_both_scopes_share_one_board_until_a_run_is_private(generated, monkeypatch):
    """The trust column's refresh builds each aspect's board for the public and the full
    scope; with no private run they read the same runs, so the second is the first's."""
    study, _ = generated
    builds = []
    real = report_selectors.reports.build_metric_leaderboard
    monkeypatch.setattr(report_selectors.reports, "build_metric_leaderboard",
                        lambda *a, **k: builds.append(1) or real(*a, **k))
    full = report_selectors.study_metric_leaderboard(study=study, aspect="overall",
                                                     include_private=True)
    public = report_selectors.study_metric_leaderboard(study=study, aspect="overall",
                                                       include_private=False)
    assert public == full and len(builds) == 1
    Submission.objects.filter(pk=Submission.objects.filter(
        benchmark=study.benchmark).first().pk).update(is_public=False)
    study = type(study).objects.get(pk=study.pk)
    full = report_selectors.study_metric_leaderboard(study=study, aspect="overall",
                                                     include_private=True)
    public = report_selectors.study_metric_leaderboard(study=study, aspect="overall",
                                                       include_private=False)
    assert len(builds) == 3 and public["rows"] != full["rows"]
