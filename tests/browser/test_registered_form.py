"""A throwaway task form, defined and registered in this module only, in Chromium: an author
puts it in a study, annotators label it with the mouse, and its fields reach the export and
the agreement report page."""

import csv
import io
import re

import pytest
from django.test import Client

from annotation.lib import form_registry
from annotation.lib.form_registry import Choice, ChoiceField, FieldsForm, ScaleField, TextField
from annotation.models import Annotation, Study
from annotation.services.members import study_member_add
from annotation.services.study_exports import study_export_write
from tests.browser.conftest import screenshot

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

CLARITY = FieldsForm(
    key="clarity", label="Clarity check",
    questions=(
        ScaleField("clear", "Clear", 0, 3, question="Is the answer easy to follow?"),
        ChoiceField("verdict", "Would you send it?", (Choice("send", "Send", "s"),
                                                      Choice("rewrite", "Rewrite", "r"))),
        TextField("why", "Why"),
    ))


@pytest.fixture
def clarity():
    form_registry.register(CLARITY)
    yield CLARITY
    form_registry.unregister(CLARITY.key)


def log_in(page, live_server, user) -> None:
    client = Client()
    client.force_login(user)
    page.context.add_cookies([{"name": "sessionid", "value": client.cookies["sessionid"].value,
                               "url": live_server.url}])


def create_study(page, benchmark) -> Study:
    page.goto("/studies/new/")
    page.fill("input[name=title]", "Clarity study")
    page.select_option("select[name=benchmark]", benchmark.slug)
    checked = page.locator("input[name=task_forms]:checked")
    while checked.count():
        checked.first.uncheck()
    page.get_by_label("Clarity check").check()
    page.fill("input[name=overlap_k]", "2")
    page.fill("input[name=gold_rate]", "0")
    with page.expect_navigation():
        page.locator("form button[type=submit]").last.click()
    return Study.objects.get(title="Clarity study")


def label_everything(page, study, clear: str, verdict: str) -> int:
    labelled = 0
    while True:
        page.goto(f"/studies/{study.slug}/next/")
        if "/items/" not in page.url:
            button = page.locator("#next-button")
            if not button.count():
                return labelled
            with page.expect_navigation():
                button.click()
            if "/items/" not in page.url:
                return labelled
        page.locator(f"#row-clarity-clear label.point:has(input[value='{clear}'])").click()
        page.locator(f"#row-clarity-verdict label.point:has(input[value='{verdict}'])").click()
        page.fill("textarea[name=clarity-why]", f"<i>{verdict}</i>")
        screenshot(page, "registered-form")
        with page.expect_navigation():
            page.locator("#submit-button").click()
        labelled += 1


def test_a_form_registered_in_a_test_is_studied_labelled_exported_and_reported(
        clarity, page, live_server, tiny_benchmark, author, annotator, other_annotator,
        tmp_path, settings):
    settings.MEDIA_ROOT = tmp_path / "media"
    log_in(page, live_server, author)
    study = create_study(page, tiny_benchmark)
    assert study.forms == ["clarity"]
    for user, clear in ((annotator, "2"), (other_annotator, "3")):
        study_member_add(study=study, user=user)
        page.context.clear_cookies()
        log_in(page, live_server, user)
        assert label_everything(page, study, clear, "send") == study.items.count()
    stored = Annotation.objects.filter(item__study=study, annotator=annotator).first().values
    assert stored["clarity"] == {"clear": 2, "verdict": "send", "why": "<i>send</i>"}

    path = tmp_path / "export.csv"
    study_export_write(study=study, path=path)
    rows = [row for row in csv.DictReader(io.StringIO(path.read_text()))
            if row["field"].startswith("clarity.")]
    assert {row["field"] for row in rows} == {"clarity.clear", "clarity.verdict", "clarity.why"}

    page.context.clear_cookies()
    log_in(page, live_server, author)
    page.goto(f"/studies/{study.slug}/report/")
    agreement = page.locator("table").filter(has_text="Would you send it?").first
    assert agreement.is_visible()
    clear_row = agreement.locator("tr").filter(has_text=re.compile(r"^\s*Clear"))
    assert clear_row.count() >= 1 and "ordinal" in clear_row.first.inner_text()
    screenshot(page, "registered-form-report")
