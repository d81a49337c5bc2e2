"""Issue 34: the page types that scrolled sideways at 390×844 (study dashboard, new study,
arena ratings with its Filter, FACE, the study and metric-board reports, study page, API docs)
fit the phone's width: wide tables scroll inside their box, never the page."""

import io

import pytest
from django.core.cache import cache
from django.core.management import call_command

from annotation.services.members import study_member_add
from evaluation.models import Arena
from tests.annotation.conftest import make_study, make_submissions
from tests.browser.conftest import htmx_settled, screenshot
from tests.browser.test_annotation_forms import log_in
from tests.leaderboard.test_arena_ratings import folder  # noqa: F401 (fixture)

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

PHONE = {"width": 390, "height": 844}


@pytest.fixture(autouse=True)
def media(settings, tmp_path):
    settings.MEDIA_ROOT = tmp_path / "media"
    cache.clear()


def test_no_page_scrolls_sideways_at_390_px(page, live_server, tiny_benchmark, author, staff,
                                            annotator, researcher, folder):  # noqa: F811
    call_command("import_public", "crs_arena_dial", str(folder), stdout=io.StringIO())
    arena = Arena.objects.get()
    submissions = make_submissions(tiny_benchmark, researcher)
    study = make_study(tiny_benchmark, author, submissions=submissions)
    study_member_add(study=study, user=annotator)
    face = make_study(tiny_benchmark, author, forms=("face",), submissions=submissions)
    log_in(page, live_server, staff)
    page.set_viewport_size(PHONE)
    wide = []
    for path in [f"/studies/{study.slug}/dashboard/", "/studies/new/",
                 f"/studies/{study.slug}/handout/",
                 f"/arenas/{arena.slug}/ratings/", f"/arenas/{arena.slug}/ratings/?method=bt",
                 f"/studies/{face.slug}/face/", f"/studies/{study.slug}/report/",
                 f"/studies/{study.slug}/metric-leaderboard/", f"/studies/{study.slug}/",
                 "/api/docs/", f"/arena/{arena.benchmark.slug}/", "/leaderboards/tiny/turn/"]:
        response = page.goto(path)
        assert response.status == 200, path
        page.wait_for_load_state("networkidle")
        htmx_settled(page)
        width = page.evaluate("document.scrollingElement.scrollWidth")
        if width > PHONE["width"]:
            wide.append(f"{path}: {width} px")
        screenshot(page, "narrow-" + path.strip("/").replace("/", "-").replace("?", "-"))
    assert not wide, "pages wider than 390 px:\n" + "\n".join(wide)
    page.goto(f"/arenas/{arena.slug}/ratings/")
    box = page.get_by_role("button", name="Filter").bounding_box()
    assert box["x"] + box["width"] <= PHONE["width"]  # the Filter is on screen
