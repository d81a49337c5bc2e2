"""The pages pass their own Content-Security-Policy in Chromium: no violation while they load,
swap htmx fragments, upload, and draw charts (issue 18, point 7)."""

import pytest

from tests.browser.conftest import htmx_settled
from tests.conftest import PASSWORD
from tests.support.leaderboard import make_world
from tests.support.submissions import tiny_lines, write_lines

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

RECORD_VIOLATIONS = """
window.__cspViolations = [];
document.addEventListener("securitypolicyviolation", (e) => {
  window.__cspViolations.push(e.violatedDirective + " " + e.blockedURI);
});
"""


def test_pages_load_and_work_without_csp_violations(page, settings, tmp_path, tiny_benchmark,
                                                    researcher):
    settings.MEDIA_ROOT = tmp_path / "media"
    world = make_world(benchmark=tiny_benchmark, owner=researcher, folder=tmp_path)
    system, run = world["lb-private"]
    console = []
    page.on("console", lambda message: console.append(message.text))
    page.add_init_script(RECORD_VIOLATIONS)
    violations = []

    def visit(path):
        page.goto(path)
        htmx_settled(page)
        violations.extend(page.evaluate("window.__cspViolations"))

    page.goto("/accounts/login/")
    page.fill("input[name=username]", "researcher")
    page.fill("input[name=password]", PASSWORD)
    page.click("form.stack button[type=submit]")
    page.wait_for_url("**/")
    for path in ("/", "/benchmarks/", "/benchmarks/tiny/", "/benchmarks/tiny/dialogues/d1/",
                 "/leaderboards/", "/leaderboards/tiny/turn/", f"/systems/{system.slug}/",
                 f"/runs/{run.pk}/", "/api/", "/compare/?benchmark=tiny", "/studies/"):
        visit(path)
    visit(f"/systems/{system.slug}/submit/")
    page.set_input_files("input[name=file]", str(write_lines(tmp_path / "up.jsonl",
                                                             tiny_lines())))
    page.click("#submission-form button[type=submit]")
    page.locator("#submission-status").wait_for()
    htmx_settled(page)
    violations.extend(page.evaluate("window.__cspViolations"))
    assert violations == []
    assert not [text for text in console if "Content Security Policy" in text], console
