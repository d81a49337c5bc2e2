"""A benchmark's downloads: the stored file when its build has landed, else computed now
(`evaluation.services.downloads` builds them once per imported version)."""

from pathlib import Path

from django.conf import settings

from evaluation.models import Benchmark
from evaluation.selectors.benchmarks import benchmark_public_zip, benchmark_sample_submission

DOWNLOADS = {"public": "public.zip", "sample": "sample-submission.jsonl"}


def downloads_folder(benchmark: Benchmark) -> Path:
    """The folder of this imported version: a benchmark imported again is a new row, with a new
    primary key and time, so a stale build is never served for it."""
    key = f"{benchmark.pk}-{benchmark.created_at:%Y%m%dT%H%M%S%f}"
    return Path(settings.MEDIA_ROOT) / "downloads" / benchmark.slug / key


def benchmark_public_download(*, benchmark: Benchmark) -> tuple[str, bytes]:
    """(file name, bytes) of the public bundle .zip."""
    stored = downloads_folder(benchmark) / DOWNLOADS["public"]
    if stored.is_file():
        return f"{benchmark.slug}-public.zip", stored.read_bytes()
    return benchmark_public_zip(benchmark=benchmark)


def benchmark_sample_download(*, benchmark: Benchmark) -> tuple[str, bytes]:
    """(file name, bytes) of the sample submission."""
    stored = downloads_folder(benchmark) / DOWNLOADS["sample"]
    name = f"{benchmark.slug}-sample-submission.jsonl"
    if stored.is_file():
        return name, stored.read_bytes()
    return name, benchmark_sample_submission(benchmark=benchmark).encode("utf-8")
