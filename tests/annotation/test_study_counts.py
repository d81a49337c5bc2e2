"""The studies list counts items as the dashboard does: practice and gold items apart, and an
annotator's "done" counts only the items that count."""

import pytest
from django.urls import reverse

from annotation.lib import taskforms
from annotation.models import StudyItem
from annotation.services.annotations import annotation_submit
from annotation.services.handout import assignment_next
from annotation.services.members import study_member_add
from tests.annotation.conftest import full_answers, make_study, make_submissions

pytestmark = pytest.mark.django_db


def test_list_and_dashboard_agree_and_practice_is_not_done_work(client, tiny_benchmark, author,
                                                                annotator, researcher, settings,
                                                                tmp_path):
    settings.MEDIA_ROOT = tmp_path / "media"
    study = make_study(tiny_benchmark, author, forms=(taskforms.CITATION, taskforms.CHECKLIST,
                                                      taskforms.LIKERT),
                       submissions=make_submissions(tiny_benchmark, researcher),
                       calibration_count=1, gold_count=1)
    kinds = list(study.items.values_list("kind", flat=True))
    normal = kinds.count(StudyItem.Kind.NORMAL)
    assert 0 < normal < len(kinds)
    client.force_login(author)
    listing = client.get(reverse("annotation:study_list")).content.decode()
    row = listing.split(f'href="{reverse("annotation:study_dashboard", args=[study.slug])}"')[1]
    row = row.split("</tr>")[0]
    assert f'<td class="num">{normal} <span class="muted small">+ {len(kinds) - normal} ' \
           "practice/gold</span>" in row
    dashboard = client.get(reverse("annotation:study_dashboard", args=[study.slug]))
    assert f'<span class="tile-value">{normal}</span><span class="tile-label">items to label' \
        in dashboard.content.decode()
    member = study_member_add(study=study, user=annotator)
    first = assignment_next(member=member)
    assert first.item.kind == StudyItem.Kind.CALIBRATION  # practice comes first
    annotation_submit(assignment=first, data=full_answers(first.item))
    client.force_login(annotator)
    mine = client.get(reverse("annotation:study_list")).content.decode()
    assert "0 items done" in mine
