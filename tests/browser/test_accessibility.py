"""Every kind of page passes axe-core (WCAG 2.0/2.1 A and AA, tests/support/a11y.py) with no
critical or serious violation, in Chromium, for the persona that sees it."""

import re

import pytest
from django.core.cache import cache

from annotation import services
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
    services.study_member_add(study=study, user=annotator)
    log_in(page, live_server, author)
    check_pages(page, ["/studies/", "/studies/new/", f"/studies/{study.slug}/",
                       f"/studies/{study.slug}/dashboard/", f"/studies/{study.slug}/report/",
                       "/studies/metric-leaderboards/",
                       f"/studies/{study.slug}/metric-leaderboard/"])


@pytest.mark.parametrize("forms", [("citation", "checklist", "likert"), ("recommend",),
                                   ("core",), ("face",), ("pairwise",)])
def test_annotator_pages(page, live_server, tiny_benchmark, author, annotator, researcher,
                         forms):
    study = make_study(tiny_benchmark, author, forms=forms,
                       submissions=make_submissions(tiny_benchmark, researcher))
    services.study_member_add(study=study, user=annotator)
    log_in(page, live_server, annotator)
    page.goto(f"/studies/{study.slug}/next/")
    page.wait_for_url(re.compile(r".*/items/\d+/$"))
    item = page.url.split(live_server.url, 1)[1]
    check_pages(page, ["/studies/", f"/studies/{study.slug}/", item], shot="-".join(forms))
    quiesce(page)
