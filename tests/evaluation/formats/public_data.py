"""Where the public data sets live for tests, and small helpers shared by the format tests.

The data sit next to the repository (`../shared/data/public/`) on the development machines and
are absent elsewhere: tests that need them skip.
"""

from pathlib import Path

import pytest

from evaluation.lib.formats.bundle import Bundle, read_bundle, write_bundle
from evaluation.lib.formats.errors import FormatError

PUBLIC = Path(__file__).resolve().parents[3].parent / "shared" / "data" / "public"


def dataset(name: str) -> Path:
    folder = PUBLIC / name
    if not folder.is_dir():
        pytest.skip(f"public data set not present at {folder}")
    return folder


def roundtrip(bundle: Bundle, directory: Path) -> Bundle:
    """Write the bundle and read it back through the validating reader."""
    write_bundle(bundle, directory)
    return read_bundle(directory, max_bytes=1 << 30)


def messages(error: FormatError) -> list[str]:
    return [str(issue) for issue in error.issues]
