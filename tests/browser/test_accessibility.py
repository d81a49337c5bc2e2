"""Every kind of page passes axe-core (WCAG 2.0/2.1 A and AA, tests/support/a11y.py) with no
critical or serious violation, in Chromium, for the persona that sees it."""

import re

import pytest
from django.core.cache import cache

from annotation.services.members import study_member_add
from tests.annotation.conftest import make_study, make_submissions
from tests.browser.conftest import htmx_settled, screenshot
from tests.browser.test_annotation_forms import log_in, quiesce
from tests.support.a11y import axe_violations, describe
from tests.support.leaderboard import PUBLIC_SUBMISSION, make_world

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.fixture(autouse=True)
def media(settings, tmp_path):
    settings.MEDIA_ROOT = tmp_path / "media"
    cache.clear()


def check_pages(page, paths: list[str], shot: str = "") -> None:
    """Visit each path and collect every blocking violation, so one run lists them all."""
    problems = []
    for path in paths:
        response = page.goto(path)
        assert response.status == 200, path
        page.wait_for_load_state("networkidle")
        htmx_settled(page)
        found = axe_violations(page)
        if found:
            problems.append(f"{path}\n{describe(found)}")
        if shot:
            name = re.sub(r"[^a-z0-9]+", "-", path.lower()).strip("-") or "home"
            screenshot(page, f"a11y-{shot}-{name}")
    assert not problems, "\n\n".join(problems)


def test_public_pages(page, live_server, tiny_benchmark, researcher, tmp_path):
    world = make_world(benchmark=tiny_benchmark, owner=researcher, folder=tmp_path)
    run = world["lb-public"][1]
    check_pages(page, [
        "/", "/benchmarks/", "/benchmarks/tiny/", "/benchmarks/tiny/dialogues/d1/",
        "/benchmarks/tiny/items/r1/", "/leaderboards/", "/leaderboards/tiny/turn/",
        "/systems/", "/systems/lb-public/", f"/submissions/{PUBLIC_SUBMISSION}/",
        "/compare/?benchmark=tiny", f"/runs/{run.pk}/",
        "/accounts/login/", "/signup/", "/api/docs/",
    ])


def test_researcher_pages(page, live_server, tiny_benchmark, researcher, tmp_path):
    run = make_world(benchmark=tiny_benchmark, owner=researcher, folder=tmp_path)["lb-private"][1]
    log_in(page, live_server, researcher)
    check_pages(page, [f"/jobs/{run.job_id}/", "/systems/new/", "/systems/lb-private/",
                       "/systems/lb-private/submit/", "/systems/lb-private/edit/"])


def test_author_pages(page, live_server, tiny_benchmark, author, annotator, researcher):
    study = make_study(tiny_benchmark, author, submissions=make_submissions(tiny_benchmark,
                                                                            researcher))
    study_member_add(study=study, user=annotator)
    log_in(page, live_server, author)
    check_pages(page, ["/studies/", "/studies/new/", f"/studies/{study.slug}/",
                       f"/studies/{study.slug}/dashboard/", f"/studies/{study.slug}/report/",
                       f"/studies/{study.slug}/handout/", "/studies/metric-leaderboards/",
                       f"/studies/{study.slug}/metric-leaderboard/"])


@pytest.mark.parametrize("forms", [("citation", "checklist", "likert"), ("recommend",),
                                   ("core",), ("face",), ("pairwise",)])
def test_annotator_pages(page, live_server, tiny_benchmark, author, annotator, researcher,
                         forms):
    study = make_study(tiny_benchmark, author, forms=forms,
                       submissions=make_submissions(tiny_benchmark, researcher))
    study_member_add(study=study, user=annotator)
    log_in(page, live_server, annotator)
    page.goto(f"/studies/{study.slug}/next/")  # a read: the button hands out (POST)
    with page.expect_navigation():
        page.click("#next-button")
    page.wait_for_url(re.compile(r".*/items/\d+/$"))
    item = page.url.split(live_server.url, 1)[1]
    check_pages(page, ["/studies/", f"/studies/{study.slug}/", item], shot="-".join(forms))
    quiesce(page)


@pytest.fixture
def annotating(page, live_server, annotator):
    def start(study):
        study_member_add(study=study, user=annotator)
        log_in(page, live_server, annotator)
        page.goto(f"/studies/{study.slug}/next/")  # a read: the button hands out (POST)
        with page.expect_navigation():
            page.click("#next-button")
        page.wait_for_url(re.compile(r".*/items/\d+/$"))
    yield start
    quiesce(page)


def focused(page) -> str:
    return page.evaluate("() => { const e = document.activeElement; "
                         "return (e.id ? '#' + e.id : '') + '.' + e.className; }")


def test_keyboard_only_blind_recommendation_with_a_quote(page, annotating, tiny_benchmark,
                                                         author):
    """Tab to a review, select a passage with Shift+arrows, Enter adds it as a quote; the
    skip link leads to the form; nothing needs the mouse."""
    from annotation.models import Annotation

    study = make_study(tiny_benchmark, author, forms=["recommend"])
    annotating(study)
    page.keyboard.press("Tab")
    assert "skip-link" in focused(page)
    assert page.evaluate("() => document.activeElement.textContent") == "Skip to the form"
    page.keyboard.press("Enter")
    assert focused(page).startswith("#annotation-form")
    card = page.locator(".candidate:has(.review-text)").first
    summary = card.locator("summary")
    for _ in range(60):  # Tab through the form until the card's "Reviews" summary
        page.keyboard.press("Tab")
        if summary.evaluate("el => el === document.activeElement"):
            break
    else:
        pytest.fail("the reviews of a candidate cannot be reached with Tab")
    page.keyboard.press("Enter")
    page.keyboard.press("Tab")
    assert "review-text" in focused(page), focused(page)
    text = card.locator(".review-text").first.inner_text()
    for _ in range(4):
        page.keyboard.press("ArrowRight")
    for _ in range(14):
        page.keyboard.press("Shift+ArrowRight")
    page.keyboard.press("Enter")
    quote = text[4:18].strip()
    assert page.locator("#rec-quote-list li").count() == 1
    assert f'because "{quote}"' in page.locator("#rec-text").input_value()
    assert card.locator("input[name=rec-item]").is_checked()
    assert card.locator(".review-text").first.inner_text() == text  # typing changed nothing
    screenshot(page, "keyboard-blind-recommendation")
    page.locator("#submit-button").focus()
    page.keyboard.press("Enter")
    page.wait_for_url(lambda url: "/items/1/" not in url)
    values = Annotation.objects.get(item__study=study).values["recommend"]
    assert values["quotes"][0]["text"] == quote


def test_enter_in_a_one_line_field_does_not_submit(page, annotating, tiny_benchmark, author):
    study = make_study(tiny_benchmark, author)
    annotating(study)
    before = page.url
    page.locator(".flag-box summary").click()
    box = page.locator("input[name=flag_reason]")
    box.fill("the quote is cut off")
    box.press("Enter")
    page.wait_for_timeout(800)
    assert page.url == before and page.locator(".ann-errors").count() == 0
    assert box.input_value() == "the quote is cut off"
