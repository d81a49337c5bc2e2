"""The annotation forms in Chromium: mouse, keyboard only, autosave, quote capture."""

import re

import pytest
from django.test import Client

from annotation.models import Annotation, Assignment, Draft
from annotation.services.members import study_member_add
from tests.annotation.conftest import make_study, make_submissions
from tests.browser.conftest import screenshot

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def log_in(page, live_server, user) -> None:
    client = Client()
    client.force_login(user)
    page.context.add_cookies([{"name": "sessionid", "value": client.cookies["sessionid"].value,
                               "url": live_server.url}])


def open_next(page, study) -> Assignment:
    page.goto(f"/studies/{study.slug}/next/")
    if "/items/" not in page.url:  # nothing held: ask for the next item (a POST)
        with page.expect_navigation():
            page.click("#next-button")
    page.wait_for_url(re.compile(r".*/items/\d+/$"))
    position = int(page.url.rstrip("/").rsplit("/", 1)[1])
    return Assignment.objects.select_related("item").get(member__study=study, position=position)


def choose(page, row_id: str, value) -> None:
    page.locator(f"#{row_id} label.point:has(input[value='{value}'])").click()


def submit(page) -> None:
    before = page.url
    page.locator("#submit-button").click()
    page.wait_for_url(lambda url: url != before)
    page.wait_for_load_state()


def stored(assignment) -> dict:
    return Annotation.objects.get(assignment=assignment).values


@pytest.fixture
def submissions(tiny_benchmark, researcher, settings, tmp_path):
    settings.MEDIA_ROOT = tmp_path / "media"
    return make_submissions(tiny_benchmark, researcher)


def quiesce(page) -> None:
    """Leave the page without autosaves in flight, so the test database can be flushed."""
    page.route("**/draft/", lambda route: route.abort())
    page.goto("about:blank")
    page.wait_for_timeout(300)


@pytest.fixture
def annotate(page, live_server, annotator):
    def start(study):
        study_member_add(study=study, user=annotator)
        log_in(page, live_server, annotator)
        return open_next(page, study)
    yield start
    quiesce(page)


def test_response_form_with_the_mouse_shows_highlights_and_keeps_no_errors_exclusive(
        page, annotate, tiny_benchmark, author, submissions):
    study = make_study(tiny_benchmark, author, submissions=submissions)
    assignment = annotate(study)
    while assignment.item.dialogue.external_id != "d2":  # the turn with two quotes per system
        Assignment.objects.filter(pk=assignment.pk).update(status="submitted")
        assignment = open_next(page, study)
    assert page.locator(".ann-response .speaker").inner_text() in {"System A", "System B",
                                                                  "System C"}
    review = page.locator("details.ann-review").first
    review.locator("summary").click()
    assert review.locator("mark.quote-span").first.is_visible()
    quotes = page.locator(".quote-row")
    assert quotes.count() == len(assignment.item.citations) >= 1
    for n in range(quotes.count()):  # no verdict is preselected
        assert quotes.nth(n).locator("input:checked").count() == 0
    quotes.nth(0).get_by_text("Supported", exact=True).click()
    for n in range(1, quotes.count()):
        quotes.nth(n).get_by_text("Partial", exact=True).click()
    checklist = page.locator("#form-checklist")
    checklist.get_by_text("Fabricated claim", exact=True).click()
    checklist.get_by_text("Too vague", exact=True).click()
    checklist.get_by_text("No errors", exact=True).click()
    assert not checklist.locator("input[value=fabricated_claim]").is_checked()
    assert not checklist.locator("input[value=too_vague]").is_checked()
    checklist.get_by_text("Exaggeration", exact=True).click()
    assert not checklist.locator("input[value=no_errors]").is_checked()
    choose(page, "row-likert-informativeness", 4)
    choose(page, "row-likert-naturalness", 2)
    screenshot(page, "annotation-response-form")
    submit(page)
    values = stored(assignment)
    assert values["citations"]["0"] == "supported" and values["errors"] == ["exaggeration"]
    assert values["likert"] == {"informativeness": 4, "naturalness": 2}


def test_an_item_can_be_completed_with_the_keyboard_only(page, annotate, tiny_benchmark,
                                                          author):
    study = make_study(tiny_benchmark, author)
    assignment = annotate(study)
    assert page.locator(".shortcuts").is_visible()
    for key in ("1", "n", "4", "5"):
        page.keyboard.press(key)
    assert page.locator("#row-likert-naturalness input[value='5']").is_checked()
    screenshot(page, "annotation-keyboard")
    page.keyboard.press("Enter")
    page.wait_for_url(re.compile(r".*/items/2/$"))
    assert stored(assignment) == {"citations": {"0": "supported"}, "errors": ["no_errors"],
                                  "likert": {"informativeness": 4, "naturalness": 5}}


def test_autosave_survives_a_reload_and_focused_time_is_recorded(page, annotate,
                                                                 tiny_benchmark, author):
    study = make_study(tiny_benchmark, author)
    assignment = annotate(study)
    saves = []
    page.on("request", lambda r: saves.append(r.headers) if r.url.endswith("/draft/") else None)
    choose(page, "row-likert-naturalness", 3)
    page.locator("#form-checklist").get_by_text("Too vague", exact=True).click()
    page.fill("#comment", "coming back to this")
    page.wait_for_function(
        "() => (document.getElementById('save-status')?.textContent || '').startsWith('Saved')")
    # htmx's own request (hx-post on the form), its reply swapped into the status
    assert saves and saves[0].get("hx-request") == "true"
    assert saves[0].get("hx-target") == "save-status"
    page.wait_for_timeout(1200)  # let the comment's debounced save land too
    page.reload()
    assert page.locator("#save-status").inner_text() == "Draft restored"
    assert page.locator("#row-likert-naturalness input[value='3']").is_checked()
    assert page.locator("input[value=too_vague]").is_checked()
    assert page.locator("#comment").input_value() == "coming back to this"
    assignment.refresh_from_db()
    assert assignment.focused_ms > 0


@pytest.mark.parametrize("status", [500, 503])
def test_a_failed_autosave_says_so_and_retries(page, annotate, tiny_benchmark, author, status):
    """A 503 too: base.html swaps 503 answers in site-wide, and a draft's 503 used to replace
    the status line with its body, so the retry message had nowhere to go."""
    study = make_study(tiny_benchmark, author)
    assignment = annotate(study)
    failures = []

    def fail_once(route):
        if not failures:
            failures.append(route.request.url)
            route.fulfill(status=status, body="<p>The task queue is unavailable</p>",
                          content_type="text/html")
        else:
            route.continue_()

    page.route("**/draft/", fail_once)
    choose(page, "row-likert-naturalness", 2)
    page.wait_for_function(
        "() => (document.getElementById('save-status')?.textContent || '')"
        ".startsWith('Not saved yet')")
    assert "queue is unavailable" not in page.content()
    page.wait_for_function(  # the retry, two seconds later, lands
        "() => (document.getElementById('save-status')?.textContent || '').startsWith('Saved')",
        timeout=8000)
    assert len(failures) == 1
    assert Draft.objects.get(assignment=assignment).values["likert"] == {"naturalness": 2}
    page.unroute("**/draft/")


def test_blind_recommendation_captures_a_selected_review_quote(page, annotate, tiny_benchmark,
                                                               author):
    study = make_study(tiny_benchmark, author, forms=["recommend"])
    assignment = annotate(study)
    assert page.locator(".ann-response").count() == 0  # no system answer is shown
    request = page.locator(".turn.is-request")
    assert request.count() == 1 and "current request" in request.inner_text().lower()
    card = page.locator(".candidate:has(.review-text)").first
    card.locator("summary").click()
    paragraph = card.locator(".review-text").first
    text = paragraph.inner_text()
    start, end = 4, min(len(text), 24)
    select = """(el, [s, e]) => {
        const range = document.createRange();
        range.setStart(el.firstChild, s); range.setEnd(el.firstChild, e);
        const sel = window.getSelection(); sel.removeAllRanges(); sel.addRange(range);
    }"""
    paragraph.evaluate(select, [start, end])
    card.locator(".add-quote").first.click()
    name, item_id = card.get_attribute("data-item-name"), card.get_attribute("data-item-id")
    quote = text[start:end].strip()
    assert card.locator("input[name=rec-item]").is_checked()
    assert f'I recommend {name} because "{quote}".' in page.locator("#rec-text").input_value()
    assert page.locator("#rec-quote-list li").count() == 1
    assert page.locator("#rec-count").inner_text() == "1"
    page.fill("#rec-text", page.locator("#rec-text").input_value() + " It fits the budget.")
    # the same passage again, by keyboard (Enter in the review), is refused
    paragraph.evaluate(select, [start, end])
    paragraph.focus()
    page.keyboard.press("Enter")
    assert page.locator("#rec-quote-list li").count() == 1
    screenshot(page, "annotation-blind-recommendation")
    # Ctrl+Enter inside the review submits the item; it adds no quote
    paragraph.evaluate(select, [start, end])
    paragraph.focus()
    before = page.url
    page.keyboard.press("Control+Enter")
    page.wait_for_url(lambda url: url != before)
    rec = stored(assignment)["recommend"]
    assert len(rec["quotes"]) == 1
    captured = rec["quotes"][0]
    assert captured["text"] == quote and captured["item_id"] == item_id
    assert text[captured["start"]:captured["end"]] == quote
    assert rec["text"].endswith("It fits the budget.")


def test_core_and_face_forms_rate_turns_factors_and_overall(page, annotate, tiny_benchmark,
                                                            author):
    study = make_study(tiny_benchmark, author, forms=["core", "face"])
    assignment = annotate(study)
    rated = [t["index"] for t in assignment.item.context if t["rated"]]
    for index in rated:
        for aspect in ("relevance", "interestingness"):
            choose(page, f"row-face-turn-{index}-{aspect}", 2)
    for aspect, value in (("understanding", "2"), ("task_completion", "1"), ("efficiency", "1"),
                          ("interest_arousal", "0"), ("overall", "3")):
        choose(page, f"row-face-{aspect}", value)
    page.locator("#row-core-coherence").click()
    for _ in range(12):
        page.keyboard.press("3")
    assert page.locator("#form-core details.row-help").count() == 12
    page.fill("#core-overall", "85")
    screenshot(page, "annotation-core-face")
    submit(page)
    values = stored(assignment)
    assert values["core"]["overall"] == 85 and set(values["core"].values()) == {3, 85}
    assert len(values["core"]) == 13
    assert values["face"]["turns"] == {str(i): {"relevance": 2, "interestingness": 2}
                                       for i in rated}
    assert values["face"]["efficiency"] == 1 and values["face"]["overall"] == 3


def test_pairwise_preference_between_two_blinded_responses(page, annotate, tiny_benchmark,
                                                           author, submissions):
    study = make_study(tiny_benchmark, author, forms=["pairwise"], submissions=submissions)
    assignment = annotate(study)
    left = page.locator(".side-left .speaker").inner_text()
    right = page.locator(".side-right .speaker").inner_text()
    assert left != right and left.startswith("System ")
    page.get_by_text(f"{left} is better").click()
    page.fill("#pair-reason", "cites more precisely")
    screenshot(page, "annotation-pairwise")
    submit(page)
    assignment.refresh_from_db()
    values = stored(assignment)
    expected = "b" if assignment.swapped else "a"
    assert values["pairwise"] == {"choice": expected, "reason": "cites more precisely"}


def test_typing_saves_without_evaluating_code(page, annotate, tiny_benchmark, author):
    """Issue 34.8: the item page's autosave while typing needs no eval (htmx runs with
    allowEval off, the CSP forbids it): typing alone saves, and nothing is refused."""
    page.add_init_script("""window.__csp = [];
        document.addEventListener("securitypolicyviolation", (e) => window.__csp.push(
            e.violatedDirective));""")
    console = []
    page.on("console", lambda message: console.append(message.text))
    study = make_study(tiny_benchmark, author)
    assignment = annotate(study)
    page.locator("#comment").press_sequentially("typed only", delay=20)
    page.wait_for_function(
        "() => (document.getElementById('save-status')?.textContent || '').startsWith('Saved')")
    draft = Draft.objects.get(assignment=assignment)
    assert "typed only" in str(draft.values)
    assert page.evaluate("window.__csp") == []
    assert not [text for text in console
                if "eval" in text.lower() or "Content Security Policy" in text], console
