import pytest

from tests.browser.conftest import htmx_settled, screenshot

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_dialogue_viewer_shows_turns_cards_and_highlighted_quotes(page, tiny_benchmark):
    page.goto("/benchmarks/tiny/")
    page.get_by_role("link", name="d1").click()
    page.wait_for_url("**/dialogues/d1/")
    turns = page.locator("article.turn")
    assert turns.count() == 4
    assert turns.nth(2).locator(".action").inner_text() == "Reject and refine"
    gold_card = turns.nth(1).locator(".item-card.is-gold")
    assert gold_card.locator(".item-name").inner_text() == "Harbor Grill"
    quote = turns.nth(1).locator("mark.quote")
    assert quote.inner_text() == "The crab cakes were incredible"
    assert quote.evaluate("el => getComputedStyle(el).backgroundColor") != "rgba(0, 0, 0, 0)"
    quote.locator("a").click()
    assert page.url.endswith("#review-v1")
    review = page.locator("#review-v1")
    assert review.is_visible()
    assert review.locator("mark.quote-span").inner_text() == "The crab cakes were incredible"
    screenshot(page, "dialogue-viewer")


def test_benchmark_page_filters_dialogues_without_reload(page, tiny_benchmark):
    page.goto("/benchmarks/tiny/")
    assert page.locator("figure.bars").count() == 4
    page.select_option("select[name=split]", "test")
    page.wait_for_url("**split=test**")
    htmx_settled(page)
    rows = page.locator("#dialogue-table tbody tr")
    assert rows.count() == 1 and "d2" in rows.first.inner_text()
    screenshot(page, "benchmark-page")
