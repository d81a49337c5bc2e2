"""Object-level access: own items only, authors their studies, strangers 404, members 403."""

import pytest
from django.urls import reverse

from annotation.services.handout import assignment_next
from annotation.services.members import study_member_add

from .conftest import make_study

pytestmark = pytest.mark.django_db


@pytest.fixture
def two_annotators(study, annotator, other_annotator):
    first = study_member_add(study=study, user=annotator)
    second = study_member_add(study=study, user=other_annotator)
    assignment_next(member=first)
    return first, second


def test_an_annotator_cannot_open_another_annotators_item(client, two_annotators,
                                                         other_annotator, study):
    client.force_login(other_annotator)  # has no assignment yet
    url = reverse("annotation:item_detail", args=[study.slug, 1])
    assert client.get(url).status_code == 404
    assert client.post(url + "submit/", {}).status_code == 404
    assert client.post(url + "draft/", {}).status_code == 404


def test_strangers_get_404_everywhere(client, study, outsider, researcher):
    for user in (outsider, researcher):
        client.force_login(user)
        for name in ("study_detail", "study_next", "study_dashboard", "study_export"):
            assert client.get(reverse(f"annotation:{name}", args=[study.slug])).status_code == 404


def test_members_read_but_get_403_on_the_authors_pages(client, two_annotators, annotator,
                                                       study):
    client.force_login(annotator)
    assert client.get(reverse("annotation:study_detail", args=[study.slug])).status_code == 200
    assert client.get(reverse("annotation:study_dashboard",
                              args=[study.slug])).status_code == 403
    assert client.post(reverse("annotation:study_export", args=[study.slug])).status_code == 403
    member = two_annotators[1]
    assert client.post(reverse("annotation:study_member_exclude",
                               args=[study.slug, member.pk]),
                       {"excluded": "1", "reason": "x"}).status_code == 403


def test_another_author_is_a_stranger_to_a_study(client, study, tiny_benchmark, staff):
    from tests.conftest import _user

    rival = _user("rival", "study_author")
    make_study(tiny_benchmark, rival)
    client.force_login(rival)
    assert client.get(reverse("annotation:study_dashboard", args=[study.slug])).status_code == 404
    client.force_login(staff)
    assert client.get(reverse("annotation:study_dashboard", args=[study.slug])).status_code == 200


def test_anonymous_visitors_are_sent_to_log_in(client, study):
    response = client.get(reverse("annotation:study_join", args=[study.invite_token]))
    assert response.status_code == 302 and "/accounts/login/" in response["Location"]


def test_a_bad_invitation_is_404_and_joining_twice_keeps_one_membership(client, study,
                                                                        outsider):
    client.force_login(outsider)
    assert client.get(reverse("annotation:study_join", args=["nope"])).status_code == 404
    url = reverse("annotation:study_join", args=[study.invite_token])
    assert client.post(url).status_code == 302
    assert client.post(url).status_code == 302
    assert study.members.filter(user=outsider).count() == 1
    assert outsider.groups.filter(name="annotator").exists()


def test_export_downloads_belong_to_their_study(client, study, author, tiny_benchmark):
    from evaluation.models import Job

    other = make_study(tiny_benchmark, author)
    job = Job.objects.create(kind=Job.Kind.STUDY_EXPORT, params={"study": other.pk},
                             status=Job.Status.SUCCEEDED, created_by=author)
    client.force_login(author)
    url = reverse("annotation:study_export_download", args=[study.slug, job.pk])
    assert client.get(url).status_code == 404
