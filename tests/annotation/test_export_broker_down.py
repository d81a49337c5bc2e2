"""A study export asked for while the broker is down stores no job (issue 18, point 2)."""

import pytest
from django.urls import reverse

from evaluation.models import Job
from tests.support.broker import unreachable_broker

pytestmark = pytest.mark.django_db(transaction=True)


def test_an_export_while_the_broker_is_down_stores_no_job(client, author, study):
    client.force_login(author)
    url = reverse("annotation:study_export", args=[study.slug])
    with unreachable_broker():
        fragment = client.post(url, HTTP_HX_REQUEST="true")
        page = client.post(url)
    assert fragment.status_code == page.status_code == 503
    assert "nothing was stored" in fragment.content.decode()
    assert "<h1>Evaluation queue unavailable</h1>" in page.content.decode()
    assert not Job.objects.filter(kind=Job.Kind.STUDY_EXPORT).exists()
