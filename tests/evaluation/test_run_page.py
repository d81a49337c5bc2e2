import pytest
from django.urls import reverse

from evaluation.services.runs import run_create, run_process
from evaluation.services.submissions import submission_create, system_create
from tests.support.submissions import write_lines

pytestmark = pytest.mark.django_db


@pytest.fixture
def finished_run(tiny_benchmark, researcher, tmp_path):
    system = system_create(name="Echo", owner=researcher)
    submission = submission_create(system=system, benchmark=tiny_benchmark,
                                   path_or_file=write_lines(tmp_path / "s.jsonl"),
                                   user=researcher)
    run = run_create(submission=submission, user=researcher)
    run_process(job_id=run.job_id)
    run.refresh_from_db()
    return run


def test_run_page_shows_values_cis_and_how_they_were_made(client, researcher, finished_run):
    client.force_login(researcher)
    page = client.get(reverse("run_detail", args=[finished_run.pk])).content.decode()
    assert "trace" in page and finished_run.config_hash[:12] in page
    assert 'id="metric-recall1"' in page and "95% CI" in page
    assert "Accuracy" in page and "Grounding" in page
    assert "studentized cluster intervals over dialogues" in page


def test_private_run_is_404_for_others_and_visible_once_published(client, outsider,
                                                                 finished_run):
    url = reverse("run_detail", args=[finished_run.pk])
    client.force_login(outsider)
    assert client.get(url).status_code == 404
    finished_run.submission.is_public = True
    finished_run.submission.save()
    assert client.get(url).status_code == 200


def test_job_page_links_back_to_its_run(client, researcher, finished_run):
    client.force_login(researcher)
    page = client.get(reverse("job_detail", args=[finished_run.job_id])).content.decode()
    assert f'href="{reverse("run_detail", args=[finished_run.pk])}"' in page
