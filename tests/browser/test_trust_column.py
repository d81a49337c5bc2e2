"""The trust column in Chromium: after a study with labels exists (and its validation has been
refreshed, as the background task does), the leaderboard shows a real correlation under the
labelled metric, "not validated" under the other, and the link opens the metric leaderboard."""

import pytest
from scipy import stats

from tests.browser.conftest import screenshot
from tests.support.trust import labelled_world

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_the_trust_row_shows_the_correlation_and_links_to_the_metric_leaderboard(page, author):
    from annotation.services.validation import metric_validations_refresh

    benchmark, study, pairs = labelled_world(author)
    page.goto(f"/leaderboards/{benchmark.slug}/turn/")
    row = page.locator("tr.trust-row")
    assert row.locator('th[data-trust-key="synthetic:m01"]').inner_text().strip() == "not validated"
    metric_validations_refresh(study=study)  # what refresh_validations_job does
    page.goto(f"/leaderboards/{benchmark.slug}/turn/")
    expected = stats.spearmanr([m for m, _ in pairs], [h for _, h in pairs]).statistic
    m01 = row.locator('th[data-trust-key="synthetic:m01"]')
    assert m01.locator("a").first.inner_text() == f"ρ {expected:.2f}"
    assert f"n {len(pairs)}" in m01.inner_text()
    assert "Best of 1 measurement" in m01.locator("a").first.get_attribute("title")
    assert row.locator('th[data-trust-key="synthetic:m02"]').inner_text().strip() == "not validated"
    assert page.locator("#trust-rule").is_visible()
    screenshot(page, "trust-column")
    m01.locator("a").first.click()
    page.wait_for_url("**/studies/trusty-labels/metric-leaderboard/?aspect=m01")
    assert f"{expected:.3f}" in page.locator("#metric-board").inner_text()
