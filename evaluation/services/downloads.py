"""A benchmark's two downloads, built once per imported version and served as stored files.

The public bundle (`public.zip`) and the sample submission (`sample-submission.jsonl`) depend
only on the benchmark's stored content, which changes only by importing it again (a new row);
building them took 5–14 s per request. They are built by a worker task queued when a benchmark
is stored (`benchmark_downloads_build`), written atomically under
`MEDIA_ROOT/downloads/<key>/`, and read by `evaluation.selectors.downloads`. Until a build
lands a download is computed in the request, as before, and the bytes are the same.
"""

import os
import shutil
import tempfile
from pathlib import Path

from django.db import transaction

from evaluation.models import Benchmark
from evaluation.selectors.benchmarks import benchmark_public_zip, benchmark_sample_submission
from evaluation.selectors.downloads import DOWNLOADS, downloads_folder


def benchmark_downloads_build(*, benchmark_id: int) -> Path | None:
    """Write both downloads of the benchmark; None when it was deleted meanwhile."""
    benchmark = Benchmark.objects.filter(pk=benchmark_id).first()
    if benchmark is None:
        return None
    folder = downloads_folder(benchmark)
    folder.mkdir(parents=True, exist_ok=True)
    _write(folder / DOWNLOADS["public"], benchmark_public_zip(benchmark=benchmark)[1])
    _write(folder / DOWNLOADS["sample"],
           benchmark_sample_submission(benchmark=benchmark).encode("utf-8"))
    return folder


def benchmark_downloads_delete(*, benchmark: Benchmark) -> None:
    """Remove a benchmark's stored downloads once its deletion commits."""
    folder = downloads_folder(benchmark)
    transaction.on_commit(lambda: shutil.rmtree(folder, ignore_errors=True))


def _write(path: Path, body: bytes) -> None:
    """Write BODY to PATH so that a reader sees the old file or the whole new one."""
    handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=".part-")
    try:
        with os.fdopen(handle, "wb") as out:
            out.write(body)
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise
