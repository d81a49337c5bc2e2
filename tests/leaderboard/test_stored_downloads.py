"""A benchmark's public bundle and sample submission are built once per imported version by a
worker task and then served from the stored files, byte for byte what the request would build
(issue 34, point 7)."""

import pytest
from django.test import Client
from django.urls import reverse

from evaluation.selectors.benchmarks import benchmark_public_zip, benchmark_sample_submission
from evaluation.selectors.downloads import DOWNLOADS, downloads_folder
from evaluation.services.benchmarks import benchmark_delete, benchmark_import
from tests.support.bundles import tiny_data, write_tiny

URLS = {"public": ("benchmark_public_download", "leaderboard:api_benchmark_public"),
        "sample": ("benchmark_sample_submission", "leaderboard:api_benchmark_sample")}


@pytest.fixture
def imported(tmp_path, settings, django_capture_on_commit_callbacks):
    settings.MEDIA_ROOT = tmp_path / "media"
    with django_capture_on_commit_callbacks(execute=True):
        benchmark = benchmark_import(path=write_tiny(tmp_path / "tiny"))
    return benchmark


@pytest.mark.django_db
def test_the_import_builds_both_downloads_and_pages_serve_them(imported):
    folder = downloads_folder(imported)
    stored = {kind: (folder / name).read_bytes() for kind, name in DOWNLOADS.items()}
    assert stored["public"] == benchmark_public_zip(benchmark=imported)[1]
    assert stored["sample"] == benchmark_sample_submission(benchmark=imported).encode()
    client = Client()
    for kind, names in URLS.items():
        for name in names:
            response = client.get(reverse(name, args=[imported.slug]))
            assert response.status_code == 200, name
            assert response.content == stored[kind], name
            assert "attachment" in response["Content-Disposition"]


@pytest.mark.django_db
def test_the_stored_file_is_what_is_served(imported):
    """Not rebuilt per request: a marker written into the stored file comes back."""
    path = downloads_folder(imported) / DOWNLOADS["sample"]
    path.write_bytes(b"stored\n")
    response = Client().get(reverse("benchmark_sample_submission", args=[imported.slug]))
    assert response.content == b"stored\n"


@pytest.mark.django_db
def test_without_a_build_the_request_computes_the_same_bytes(imported):
    folder = downloads_folder(imported)
    for name in DOWNLOADS.values():
        (folder / name).unlink()
    response = Client().get(reverse("benchmark_public_download", args=[imported.slug]))
    assert response.content == benchmark_public_zip(benchmark=imported)[1]


@pytest.mark.django_db
def test_a_new_import_gets_its_own_files_and_a_deletion_removes_them(
        imported, tmp_path, django_capture_on_commit_callbacks):
    old = downloads_folder(imported)
    old_bytes = (old / DOWNLOADS["public"]).read_bytes()
    data = tiny_data()
    data["items"][0]["name"] = "Renamed Place"
    with django_capture_on_commit_callbacks(execute=True):
        again = benchmark_import(path=write_tiny(tmp_path / "again", data), replace=True)
    assert downloads_folder(again) != old and not old.exists()
    new_bytes = (downloads_folder(again) / DOWNLOADS["public"]).read_bytes()
    assert new_bytes == benchmark_public_zip(benchmark=again)[1] and new_bytes != old_bytes
    with django_capture_on_commit_callbacks(execute=True):
        benchmark_delete(benchmark=again)
    assert not downloads_folder(again).exists()
