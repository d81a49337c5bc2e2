"""The trust column: every metric column shows its best measured agreement with human labels on
the benchmark (Spearman ρ with CI and n, the study, a link to its metric leaderboard) or "not
validated" — on the leaderboard page, its exports, the REST API, the system and compare pages."""

import csv
import io

import pytest
from django.urls import reverse
from scipy import stats

from annotation.models import MetricValidation
from annotation.services.validation import metric_validations_refresh
from leaderboard.lib import trust as rule
from tests.support.trust import labelled_world

pytestmark = pytest.mark.django_db

def _candidate(value, low, high, clusters=20, units=40, study="s", aspect="a"):
    return rule.Candidate("e", "m", value, low, high, units, clusters, study, study, aspect,
                          aspect)


def test_rule_picks_the_largest_lower_bound_in_the_metrics_direction():
    solid = _candidate(0.50, 0.40, 0.60, clusters=300, study="big")
    lucky = _candidate(0.80, 0.10, 0.95, clusters=12, study="small")
    tiny = _candidate(0.99, 0.90, 1.00, clusters=9, study="nine")  # below 10 dialogues
    chosen = rule.best([lucky, solid, tiny], higher_is_better=True)
    assert chosen.study == "big" and chosen.candidates == 2  # 0.40 > 0.10; 'nine' never counts
    # Lower is better (a turn count): agreement is −ρ, its lower bound −ci_high.
    good_low = _candidate(-0.6, -0.7, -0.45, study="neg")
    assert rule.best([solid, good_low], higher_is_better=False).study == "neg"
    assert rule.best([tiny], higher_is_better=True) is None
    tie = _candidate(0.50, 0.40, 0.60, clusters=300, units=80, study="a-more-units")
    assert rule.best([solid, tie], higher_is_better=True).study == "a-more-units"


def test_a_study_with_labels_gives_its_column_a_real_correlation_and_others_not_validated(
        client, author):
    benchmark, study, pairs = labelled_world(author)
    board = reverse("leaderboard:board", args=[benchmark.slug, "turn"])
    assert 'class="num trust not-validated"' in client.get(board).content.decode()
    assert not MetricValidation.objects.exists()  # a page computes and stores nothing
    stored = metric_validations_refresh(study=study)
    assert stored == 2  # m01 on aspect m01: public runs and all runs
    assert metric_validations_refresh(study=study) is None  # nothing new: nothing done
    expected = stats.spearmanr([m for m, _ in pairs], [h for _, h in pairs]).statistic
    page = client.get(board).content.decode()
    header = page.split('class="trust-row"')[1].split("</tr>")[0]
    m01 = header.split('data-trust-key="synthetic:m01"')[1].split("</th>")[0]
    m02 = header.split('data-trust-key="synthetic:m02"')[1].split("</th>")[0]
    assert f"ρ {expected:.2f}" in m01 and f"n {len(pairs)}" in m01
    assert "/studies/trusty-labels/metric-leaderboard/?aspect=m01" in m01
    assert "Trusty &lt;labels&gt;" in m01 and "<labels>" not in m01  # escaped
    assert "not validated" in m02
    assert "largest lower 95% bound" in page  # the page says the rule
    # The linked metric leaderboard shows the same number.
    linked = client.get(reverse("annotation:metric_board", args=["trusty-labels"]) + "?aspect=m01")
    assert f"{expected:.3f}" in linked.content.decode()
    # Exports and the API carry it too.
    url = reverse("leaderboard:board_export", args=[benchmark.slug, "turn", "csv"])
    rows = list(csv.DictReader(io.StringIO(client.get(url).content.decode())))
    by_metric = {r["metric"]: r for r in rows}
    assert float(by_metric["m01"]["human_rho"]) == pytest.approx(expected)
    assert by_metric["m01"]["human_study"] == "trusty-labels"
    assert by_metric["m01"]["human_dialogues"] == str(len(pairs))
    assert by_metric["m02"]["human_agreement"] == "not validated"
    payload = client.get(reverse("leaderboard:board_export",
                                 args=[benchmark.slug, "turn", "json"])).json()
    assert "largest lower 95% bound" in payload["human_agreement"]
    api = client.get(reverse("leaderboard:api_leaderboard", args=[benchmark.slug])).json()
    columns = {c["metric"]: c for c in api["columns"]}
    assert columns["m01"]["human_agreement"]["value"] == pytest.approx(expected)
    low, high = (columns["m01"]["human_agreement"][k] for k in ("ci_low", "ci_high"))
    assert low < expected < high
    assert columns["m02"]["human_agreement"] is None


def test_a_private_study_counts_for_its_author_only(client, author):
    benchmark, study, _ = labelled_world(author, public=False)
    metric_validations_refresh(study=study)
    board = reverse("leaderboard:board", args=[benchmark.slug, "turn"])
    header = client.get(board).content.decode().split('class="trust-row"')[1].split("</tr>")[0]
    assert "ρ " not in header  # the public does not see a private study's numbers
    client.force_login(author)
    header = client.get(board).content.decode().split('class="trust-row"')[1].split("</tr>")[0]
    assert "ρ " in header


def test_system_and_compare_pages_show_the_trust_of_each_metric(client, author):
    benchmark, study, pairs = labelled_world(author)
    metric_validations_refresh(study=study)
    expected = stats.spearmanr([m for m, _ in pairs], [h for _, h in pairs]).statistic
    page = client.get(reverse("leaderboard:system_detail", args=["trusty-s000"])).content.decode()
    assert f"ρ {expected:.2f}" in page and "not validated" in page


def test_compare_page_shows_each_metrics_trust(client, board_world, author):
    # A stored metric-leaderboard row (what annotation.services.validation writes) for the
    # Trace suite's recall@1 on the tiny benchmark; every other metric is not validated.
    from django.utils import timezone

    from annotation.models import Study

    tiny = board_world["echo"].submissions.first().benchmark
    study = Study.objects.create(slug="tiny-labels", title="Tiny labels", benchmark=tiny,
                                 author=author, invite_token="u" * 20, source="imported:x",
                                 is_public=True)
    MetricValidation.objects.create(
        study=study, benchmark=tiny, scope="public", evaluator="trace", metric="recall@1",
        aspect="relevance", value=0.41, ci_low=0.12, ci_high=0.63, units=60, clusters=30,
        computed_at=timezone.now())
    page = client.get(reverse("leaderboard:compare") + "?benchmark=tiny&a=echo&b=baseline-reverse"
                      ).content.decode()
    row = page.split("<td>recall@1 ")[1].split("</tr>")[0]
    assert "ρ 0.41" in row and "[0.12, 0.63] · n 60" in row
    assert "/studies/tiny-labels/metric-leaderboard/?aspect=relevance" in row
    assert "not validated" in page.split("<td>mrr ")[1].split("</tr>")[0]


def test_a_finished_run_refreshes_the_stored_correlations_in_the_background(
        author, django_capture_on_commit_callbacks):
    # results_changed (a run finished, a submission was published) queues
    # annotation.tasks.refresh_validations_job for every study of the benchmark; Celery runs
    # eagerly in the tests.
    from evaluation.signals import results_changed_notify

    benchmark, study, _ = labelled_world(author)
    assert not MetricValidation.objects.exists()
    with django_capture_on_commit_callbacks(execute=True):
        results_changed_notify(benchmark_id=benchmark.pk, protocol="turn")
    assert set(MetricValidation.objects.values_list("study__slug", "metric", "scope")) == {
        ("trusty-labels", "m01", "public"), ("trusty-labels", "m01", "all")}
    assert study.validation_state.fingerprint


def test_a_run_on_a_benchmark_no_study_labels_queues_no_refresh(
        author, django_capture_on_commit_callbacks):
    from evaluation.signals import results_changed_notify

    benchmark, study, _ = labelled_world(author)
    study.delete()
    with django_capture_on_commit_callbacks(execute=True) as callbacks:
        results_changed_notify(benchmark_id=benchmark.pk, protocol="turn")
    # the signal's own callback, then the leaderboard's rank refresh only
    assert [c.__qualname__.split(".")[0] for c in callbacks] == [
        "results_changed_notify", "task_enqueue"]
