"""Writes for systems and submissions (formats.md §2). Keyword-only service functions.

`submission_create` validates the whole file first (line-numbered FormatError, nothing stored)
and only then stores the file under MEDIA_ROOT and its row. Quotas, publishing and the web
upload build on top of these functions.
"""

from collections.abc import Sequence
from uuid import uuid4

from django.conf import settings
from django.core.files import File
from django.db import transaction
from django.utils.text import slugify

from evaluation.formats.submission import TURN, open_source, validate_submission
from evaluation.metrics.suite import CLOSED
from evaluation.models import Benchmark
from evaluation.selectors import benchmark_submission_reference

from .models import Submission, System


def _unique_slug(name: str, prefix: str = "") -> str:
    base = (prefix + slugify(name))[:90] or "system"
    slug, n = base, 1
    while System.objects.filter(slug=slug).exists():
        n += 1
        slug = f"{base}-{n}"
    return slug


def system_create(*, name: str, owner=None, description: str = "", family: str = "",
                  team: str = "", paper_url: str = "", code_url: str = "",
                  is_baseline: bool = False) -> System:
    """A new system with a unique slug derived from its name."""
    return System.objects.create(
        slug=_unique_slug(name), name=name, owner=owner, description=description, family=family,
        team=team, paper_url=paper_url, code_url=code_url, is_baseline=is_baseline,
    )


def system_get_or_create_baseline(*, key: str, name: str, family: str,
                                  description: str) -> System:
    """The system of one of Concord's reference baselines (slug `baseline-<key>`, no owner)."""
    system, _ = System.objects.update_or_create(
        slug=f"baseline-{slugify(key)}",
        defaults={"name": name, "family": family, "description": description,
                  "is_baseline": True},
    )
    return system


def submission_create(*, system: System, benchmark: Benchmark, path_or_file, user,
                      protocol: str = TURN, splits: Sequence[str] | None = None,
                      pool_mode: str = CLOSED, note: str = "") -> Submission:
    """Validate a submission file against the benchmark, then store the file and its row.

    `path_or_file` is a path or an open binary file (an upload). Raises FormatError listing
    every problem when the file is invalid; then nothing is stored. For protocol `turn`, every
    answered turn of `splits` (default: the splits the file answers) must be present.
    """
    reference = benchmark_submission_reference(benchmark=benchmark, pool_mode=pool_mode)
    summary = validate_submission(path_or_file, protocol=protocol, reference=reference,
                                  splits=splits, max_bytes=settings.MAX_UPLOAD_BYTES)
    submission = Submission(uuid=uuid4(), system=system, benchmark=benchmark, protocol=protocol,
                            line_count=summary.line_count, note=note, created_by=user)
    with open_source(path_or_file, name="submission.jsonl",
                     max_bytes=settings.MAX_UPLOAD_BYTES) as (stream, _):
        # The storage names the file after the submission's uuid (submission_upload_path).
        submission.file.save("submission.jsonl", File(stream), save=False)
    try:
        with transaction.atomic():
            submission.save()
    except BaseException:
        submission.file.delete(save=False)
        raise
    return submission
