"""`manage.py bench_downloads` (docs/performance.md, "Today's figures"): both downloads timed
built in the request and served stored, and the stored files rebuilt as they were."""

import re

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from evaluation.selectors.downloads import DOWNLOADS, downloads_folder
from evaluation.services.benchmarks import benchmark_import
from tests.support.bundles import write_tiny

pytestmark = pytest.mark.django_db


def test_both_downloads_are_timed_and_the_stored_files_are_left_as_they_were(
        tmp_path, settings, capsys, django_capture_on_commit_callbacks):
    settings.MEDIA_ROOT = tmp_path / "media"
    with django_capture_on_commit_callbacks(execute=True):
        benchmark = benchmark_import(path=write_tiny(tmp_path / "tiny"))
    folder = downloads_folder(benchmark)
    before = {name: (folder / name).read_bytes() for name in DOWNLOADS.values()}

    call_command("bench_downloads", benchmark=benchmark.slug, repeat=3)

    out = capsys.readouterr().out.splitlines()
    for kind in DOWNLOADS:
        assert any(re.fullmatch(rf"{kind}: built in the request \d+\.\d\d s", line)
                   for line in out), out
        assert any(re.fullmatch(rf"{kind}: stored, median \d+\.\d ms, max \d+\.\d ms over 3", line)
                   for line in out), out
    assert any(re.fullmatch(r"build of both \(the worker task\) \d+\.\d\d s", line) for line in out)
    assert {name: (folder / name).read_bytes() for name in DOWNLOADS.values()} == before


def test_a_benchmark_that_is_not_public_is_refused_by_name(tiny_benchmark):
    tiny_benchmark.is_public = False
    tiny_benchmark.save(update_fields=["is_public"])
    with pytest.raises(CommandError, match=f"no public benchmark '{tiny_benchmark.slug}'"):
        call_command("bench_downloads", benchmark=tiny_benchmark.slug)
