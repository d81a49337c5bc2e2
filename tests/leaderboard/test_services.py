"""Systems and submissions: a valid file is stored with its row, an invalid one not at all."""

import json
from io import BytesIO

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from evaluation.lib.formats.errors import FormatError
from evaluation.models import Submission, System
from evaluation.services.submissions import (
    submission_create,
    system_create,
    system_get_or_create_baseline,
)
from tests.support.submissions import stored_files, tiny_lines, write_lines

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def media_root(settings, tmp_path):
    settings.MEDIA_ROOT = tmp_path / "media"
    return settings.MEDIA_ROOT


def test_system_slugs_are_unique(researcher):
    first = system_create(name="My CRS", owner=researcher)
    second = system_create(name="My CRS", owner=researcher)
    assert (first.slug, second.slug) == ("my-crs", "my-crs-2")
    assert not first.is_baseline


def test_baseline_system_is_created_once():
    system = system_get_or_create_baseline(key="tfidf", name="TF-IDF", family="retrieval",
                                           description="lexical")
    again = system_get_or_create_baseline(key="tfidf", name="TF-IDF", family="retrieval",
                                          description="lexical, v2")
    assert system.pk == again.pk and again.is_baseline and again.slug == "baseline-tfidf"
    assert System.objects.get().description == "lexical, v2"


def test_a_valid_submission_is_stored_under_media_root(tiny_benchmark, researcher, tmp_path,
                                                       media_root):
    system = system_create(name="Mine", owner=researcher)
    path = write_lines(tmp_path / "upload.jsonl")
    submission = submission_create(system=system, benchmark=tiny_benchmark, path_or_file=path,
                                   user=researcher)
    assert submission.line_count == 4 and submission.protocol == "turn"
    assert submission.created_by == researcher and not submission.is_public
    (stored,) = stored_files(media_root)
    assert stored.name == f"{submission.uuid}.jsonl"
    assert stored.read_bytes() == path.read_bytes()


def test_an_uploaded_file_object_is_accepted(tiny_benchmark, researcher, tmp_path, media_root):
    content = write_lines(tmp_path / "x.jsonl").read_bytes()
    upload = SimpleUploadedFile("whatever.txt", content)
    submission = submission_create(system=system_create(name="Up"), benchmark=tiny_benchmark,
                                   path_or_file=upload, user=researcher)
    assert submission.file.read() == content


def test_an_invalid_submission_stores_nothing(tiny_benchmark, researcher, media_root):
    lines = tiny_lines()
    lines[0]["response"] = ""
    content = "".join(json.dumps(line) + "\n" for line in lines).encode()
    with pytest.raises(FormatError) as caught:
        submission_create(system=system_create(name="Bad"), benchmark=tiny_benchmark,
                          path_or_file=BytesIO(content), user=researcher)
    assert "submission.jsonl:1: $.response: the response is empty" in str(caught.value)
    assert not Submission.objects.exists() and stored_files(media_root) == []


def test_an_oversize_upload_is_refused_before_reading(tiny_benchmark, researcher, settings):
    settings.MAX_UPLOAD_BYTES = 100
    upload = SimpleUploadedFile("big.jsonl", b"x" * 101)
    with pytest.raises(FormatError, match="big.jsonl: \\$: file is 101 bytes, over the 100 bytes"):
        submission_create(system=system_create(name="Big"), benchmark=tiny_benchmark,
                          path_or_file=upload, user=researcher)


def test_baseline_submissions_are_public_others_private(tiny_benchmark, researcher, tmp_path):
    path = write_lines(tmp_path / "s.jsonl")
    baseline = system_get_or_create_baseline(key="x", name="X", family="f", description="")
    assert submission_create(system=baseline, benchmark=tiny_benchmark, path_or_file=path,
                             user=None).is_public
    mine = system_create(name="Mine", owner=researcher)
    assert not submission_create(system=mine, benchmark=tiny_benchmark, path_or_file=path,
                                 user=researcher).is_public


def test_system_update_changes_only_descriptive_fields(researcher):
    from evaluation.services.submissions import system_update

    system = system_create(name="Mine", owner=researcher)
    system_update(system=system, team="Lab", paper_url="https://example.org/p")
    system.refresh_from_db()
    assert (system.team, system.slug) == ("Lab", "mine")
    with pytest.raises(ValueError, match="cannot change is_baseline"):
        system_update(system=system, is_baseline=True)
