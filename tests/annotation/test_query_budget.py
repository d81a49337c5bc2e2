"""The item page and a submission stay within 10 SQL queries (docs/performance.md)."""

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from annotation.lib import taskforms
from annotation.selectors import item_layout
from annotation.services.handout import assignment_next
from annotation.services.members import study_member_add

from .conftest import full_answers, make_study

pytestmark = pytest.mark.django_db
BUDGET = 10


@pytest.mark.parametrize("forms", [("citation", "checklist", "likert"), ("core", "face"),
                                   ("recommend",), ("pairwise",)])
def test_item_page_and_submit_stay_within_the_query_budget(client, tiny_benchmark, author,
                                                           annotator, submissions, forms):
    study = make_study(tiny_benchmark, author, forms=forms, submissions=submissions)
    member = study_member_add(study=study, user=annotator)
    assignment = assignment_next(member=member)
    client.force_login(annotator)
    page = reverse("annotation:item_detail", args=[study.slug, assignment.position])
    client.get(page)  # warm the content-type and template caches
    with CaptureQueriesContext(connection) as get_queries:
        assert client.get(page).status_code == 200
    data = full_answers(item_layout(assignment.item, study))
    if taskforms.RECOMMEND in forms:
        data["rec-quotes"] = "[]"
    with CaptureQueriesContext(connection) as post_queries:
        assert client.post(page + "submit/", data).status_code == 307
    assert len(statements(get_queries)) <= BUDGET, statements(get_queries)
    assert len(statements(post_queries)) <= BUDGET, statements(post_queries)


def statements(captured) -> list[str]:
    """The queries a server runs; the savepoints are the test's own transaction (a real
    request's BEGIN/COMMIT are not logged either)."""
    return [q["sql"][:100] for q in captured if "SAVEPOINT" not in q["sql"]]
