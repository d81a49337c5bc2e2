"""Issue 34 item 3 on the demo: with the demo's entrant and its simulated annotators loaded (as
`load_demo` does), the demo board's trust row shows measured numbers, marked as coming from
simulated labels; the grounding axis tells the entrant from the baselines; the metric
leaderboard says its annotators are simulated; both pages fit 390 px."""

import pytest
from django.core.management import call_command

from tests.browser.conftest import screenshot

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def _demo(tmp_path, author):
    """The demo generator's first 150 dialogues (24 in `test`), two cheap baselines, the
    entrant and the simulated study, through the services `load_demo` calls."""
    from annotation.services.demo import demo_simulated_study_create
    from evaluation.services.benchmarks import benchmark_import
    from evaluation.services.reference_rankers import baselines_ensure, demo_entrant_ensure

    call_command("make_demo_benchmark", str(tmp_path / "bundle"), dialogues=150)
    benchmark = benchmark_import(path=tmp_path / "bundle")
    runs = [run for _, run, _ in baselines_ensure(benchmark=benchmark,
                                                  names=["popularity", "tfidf"])]
    entrant, counts = demo_entrant_ensure(benchmark=benchmark)
    assert counts["misattributed"] > 0 and demo_entrant_ensure(benchmark=benchmark)[1] is None
    study = demo_simulated_study_create(
        benchmark=benchmark, author=author, sample_size=12,
        submission_ids=[run.submission_id for run in [*runs, entrant]])
    return benchmark, study, entrant


def test_the_demo_board_shows_validated_numbers_from_simulated_labels(page, author, tmp_path):
    from annotation.models import Annotation, MetricValidation
    from evaluation.models import MetricSummary

    benchmark, study, entrant = _demo(tmp_path, author)
    assert Annotation.objects.filter(item__study=study).count() == 3 * study.items.count()
    assert not study.is_open and study.is_public
    assert MetricValidation.objects.filter(study=study, clusters__gte=10).exists()
    gs = dict(MetricSummary.objects.filter(metric="gs", run__submission__benchmark=benchmark,
                                           run__config__splits=["test"])
              .values_list("run__submission__system__name", "value"))
    assert gs["Popularity"] == gs["TF-IDF"] == 1.0 and gs[entrant.submission.system.name] < 0.9

    for width, height in ((1366, 768), (390, 844)):
        page.set_viewport_size({"width": width, "height": height})
        page.goto(f"/leaderboards/{benchmark.slug}/turn/")
        cell = page.locator('tr.trust-row th[data-trust-key="trace:recall@1"]')
        assert cell.locator("a").first.inner_text().startswith("ρ 0.")
        assert "simulated labels" in cell.inner_text()
        assert "simulated annotators, not people" in cell.locator("a").first.get_attribute(
            "title")
        assert "FACE-style papers" in page.locator("#trust-rule").inner_text()
        assert page.evaluate("document.scrollingElement.scrollWidth") <= width
        screenshot(page, f"demo-trust-row-{width}")
    cell.locator("a").first.click()
    page.wait_for_url(f"**/studies/{study.slug}/metric-leaderboard/?aspect=*")
    assert "not people" in page.locator("#simulated-labels-note").inner_text()
    assert page.evaluate("document.scrollingElement.scrollWidth") <= 390
    screenshot(page, "demo-simulated-metric-board-390")
