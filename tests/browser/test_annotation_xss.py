"""Untrusted text (responses, reviews, item names, instructions, comments) never runs."""

import json

import pytest
from django.core.files.base import ContentFile

from annotation.lib import taskforms
from annotation.services.members import study_member_add
from evaluation.models import Item, Review, Submission, System, Turn
from tests.annotation.conftest import (
    make_study,
    media_root,  # noqa: F401 (fixture)
)
from tests.browser.conftest import screenshot
from tests.browser.test_annotation_forms import log_in, quiesce

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

PAYLOAD = ('<img src=x onerror="window.__pwned=1"><script>window.__pwned=1</script>'
           '"\'><svg onload="window.__pwned=1"></svg>')


def poison(benchmark, researcher) -> list[Submission]:
    for review in Review.objects.filter(benchmark=benchmark):
        Review.objects.filter(pk=review.pk).update(text=f"{review.text} {PAYLOAD}")
    for item in Item.objects.filter(benchmark=benchmark):
        Item.objects.filter(pk=item.pk).update(name=f"{item.name} {PAYLOAD}",
                                               categories=[PAYLOAD])
    for turn in Turn.objects.filter(dialogue__benchmark=benchmark, role="user"):
        Turn.objects.filter(pk=turn.pk).update(text=f"{turn.text} {PAYLOAD}")
    made = []
    for n in range(2):
        system = System.objects.create(slug=f"evil-{n}", name=f"Evil {n} {PAYLOAD}",
                                       owner=researcher)
        lines = [{"dialogue_id": d, "turn_index": t, "ranked_item_ids": [],
                  "response": f'{PAYLOAD} "the room was quiet" [R1] {PAYLOAD}',
                  "citations": [{"label": "R1", "review_id": "v1",
                                 "quote": "the room was quiet"}]}
                 for d, t in (("d1", 1), ("d1", 3), ("d2", 1))]
        submission = Submission(uuid=f"00000000-0000-0000-0000-0000000000a{n}", system=system,
                                benchmark=benchmark, protocol="turn", line_count=3)
        submission.file.save("s.jsonl", ContentFile(
            "\n".join(json.dumps(line) for line in lines).encode()), save=False)
        submission.save()
        made.append(submission)
    return made


def assert_clean(page, where: str) -> None:
    assert page.evaluate("window.__pwned") is None, f"script ran on {where}"


@pytest.fixture
def quiet_page(page):
    yield page
    quiesce(page)


def test_payloads_in_every_rendered_field_do_not_execute(quiet_page, live_server, tiny_benchmark,
                                                         author, annotator, researcher,
                                                         settings, tmp_path):
    settings.MEDIA_ROOT = tmp_path / "media"
    page = quiet_page
    dialogs = []
    page.on("dialog", lambda dialog: (dialogs.append(dialog.message), dialog.dismiss()))
    submissions = poison(tiny_benchmark, researcher)
    study = make_study(tiny_benchmark, author, forms=taskforms.ALL_FORMS,
                       submissions=submissions, overlap_k=1, sample_size=1,
                       instructions=f"# Welcome\n\n{PAYLOAD}\n\n"
                                    "[click](javascript:window.__pwned=1)")
    study.title = f"Study {PAYLOAD}"
    study.save()
    study_member_add(study=study, user=annotator)
    log_in(page, live_server, annotator)
    for url in ("/studies/", f"/studies/{study.slug}/"):
        page.goto(url)
        assert_clean(page, url)
    assert PAYLOAD in page.locator("h1").first.inner_text()  # shown as text, not markup
    modes = set()
    for n in range(40):
        page.goto(f"/studies/{study.slug}/next/")
        if "/items/" not in page.url:  # nothing held: ask for the next item (a POST)
            with page.expect_navigation():
                page.click("#next-button")
        if "/items/" not in page.url:
            break
        modes.add(page.get_attribute("#annotation-form", "class"))
        page.locator("details").evaluate_all("els => els.forEach(d => d.open = true)")
        assert_clean(page, page.url)
        if n == 0:
            screenshot(page, "annotation-xss-item")
        page.fill("#comment", PAYLOAD)
        page.check("#flag")
        page.fill("input[name=flag_reason]", PAYLOAD)
        before = page.url
        page.locator("#submit-button").click()
        page.wait_for_url(lambda url, before=before: url != before)
        page.goto(before)  # the comment comes back from the server
        assert page.locator("#comment").input_value() == PAYLOAD
        assert_clean(page, before)
    assert {"ann-form mode-response", "ann-form mode-conversation", "ann-form mode-recommend",
            "ann-form mode-pairwise"} <= modes
    log_in(page, live_server, author)
    page.goto(f"/studies/{study.slug}/dashboard/")
    assert_clean(page, "dashboard")
    assert PAYLOAD in page.locator("table").last.inner_text()  # flagged reasons, as text
    screenshot(page, "annotation-dashboard-xss")
    assert dialogs == []
