"""The daily submission quota: per researcher account (every system it owns counts) and UTC
day, failed runs count, enforced atomically (20 concurrent uploads with quota 5 accept exactly
5, also when spread over several systems of one account)."""

import threading
from datetime import timedelta
from io import BytesIO

import pytest
from django.db import connection
from django.utils import timezone

from evaluation.models import Job, Submission
from evaluation.services.submissions import QuotaExceeded, submission_submit, system_create
from tests.support.submissions import stored_files, write_lines


@pytest.fixture
def content(tmp_path) -> bytes:
    return write_lines(tmp_path / "s.jsonl").read_bytes()


def submit(system, benchmark, user, content):
    return submission_submit(system=system, benchmark=benchmark, file=BytesIO(content),
                             user=user)


@pytest.mark.django_db
def test_failed_runs_count_against_the_quota(settings, tiny_benchmark, researcher, content):
    settings.DAILY_SUBMISSION_QUOTA = 2
    system = system_create(name="Q", owner=researcher)
    first, run = submit(system, tiny_benchmark, researcher, content)
    Job.objects.filter(pk=run.job_id).update(status=Job.Status.FAILED)
    submit(system, tiny_benchmark, researcher, content)
    with pytest.raises(QuotaExceeded, match="used its 2 submissions for today .failed runs"):
        submit(system, tiny_benchmark, researcher, content)
    assert Submission.objects.filter(system=system).count() == 2


@pytest.mark.django_db
def test_a_system_may_have_its_own_quota_and_yesterday_does_not_count(
        settings, tiny_benchmark, researcher, content):
    settings.DAILY_SUBMISSION_QUOTA = 5
    system = system_create(name="Q", owner=researcher)
    system.daily_quota = 1
    system.save()
    old, _ = submit(system, tiny_benchmark, researcher, content)
    Submission.objects.filter(pk=old.pk).update(created_at=timezone.now() - timedelta(days=1))
    submit(system, tiny_benchmark, researcher, content)
    with pytest.raises(QuotaExceeded, match="This system has used its 1 submission"):
        submit(system, tiny_benchmark, researcher, content)
    other = system_create(name="Other", owner=researcher)  # the system's own quota is its own
    submit(other, tiny_benchmark, researcher, content)


@pytest.mark.django_db
def test_the_quota_is_per_account_not_per_system(settings, tiny_benchmark, researcher,
                                                 outsider, content):
    """A second system does not buy a second quota (issue 18: a researcher may create any
    number of systems); another researcher's uploads do not count."""
    settings.DAILY_SUBMISSION_QUOTA = 2
    first = system_create(name="First", owner=researcher)
    second = system_create(name="Second", owner=researcher)
    submit(first, tiny_benchmark, researcher, content)
    submit(second, tiny_benchmark, researcher, content)
    with pytest.raises(QuotaExceeded, match="Your account has used its 2 submissions .* every "
                                            "system of the account counts"):
        submit(system_create(name="Third", owner=researcher), tiny_benchmark, researcher,
               content)
    submit(system_create(name="Theirs", owner=outsider), tiny_benchmark, outsider, content)
    assert Submission.objects.filter(system__owner=researcher).count() == 2


@pytest.mark.django_db
def test_a_refused_upload_stores_no_file(settings, tiny_benchmark, researcher, content,
                                         media_root):
    settings.DAILY_SUBMISSION_QUOTA = 1
    system = system_create(name="Q", owner=researcher)
    submit(system, tiny_benchmark, researcher, content)
    with pytest.raises(QuotaExceeded):
        submit(system, tiny_benchmark, researcher, content)
    assert len(stored_files(media_root)) == 1


@pytest.mark.django_db(transaction=True)
def test_twenty_concurrent_uploads_with_quota_five_accept_exactly_five(
        settings, tiny_benchmark, researcher, content, media_root):
    if connection.vendor != "postgresql":
        pytest.skip("needs PostgreSQL: SQLite serialises writers, so there is no race to test")
    settings.DAILY_SUBMISSION_QUOTA = 5
    systems = [system_create(name=f"Race {n}", owner=researcher) for n in range(4)]
    start = threading.Barrier(20)
    outcomes, lock = [], threading.Lock()

    def upload(system):
        try:
            start.wait()
            submit(system, tiny_benchmark, researcher, content)
            outcome = "accepted"
        except QuotaExceeded:
            outcome = "refused"
        except Exception as exc:  # noqa: BLE001 - reported by the assertion below
            outcome = repr(exc)
        finally:
            connection.close()
        with lock:
            outcomes.append(outcome)

    threads = [threading.Thread(target=upload, args=(systems[n % 4],)) for n in range(20)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    assert sorted(outcomes) == ["accepted"] * 5 + ["refused"] * 15
    assert Submission.objects.filter(system__owner=researcher).count() == 5
    assert len(stored_files(media_root)) == 5
