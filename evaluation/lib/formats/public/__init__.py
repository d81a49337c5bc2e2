"""Importers for public, externally authored CRS data (formats.md §4). Pure Python, no Django.

Each importer reads a data set as its authors published it (the folder as in
`../shared/data/public/<name>/`, or its file(s)) and returns a PublicImport (see `base.py`):
a `log` benchmark bundle, per-system logs, human labels with their fields, the labelled units,
and notes on what the importer decided. Malformed input raises FormatError listing every
problem (`file:line: json.path: what was expected`); nothing partial is returned.

    from evaluation.lib.formats.public import import_public
    result = import_public("crs_arena_eval", Path(".../crs_arena_eval"))
"""

from collections.abc import Callable
from pathlib import Path

from evaluation.lib.formats.public.ab_redial import import_ab_redial
from evaluation.lib.formats.public.base import DEFAULT_MAX_BYTES, PublicImport
from evaluation.lib.formats.public.crs_arena_dial import import_crs_arena_dial
from evaluation.lib.formats.public.crs_arena_eval import import_crs_arena_eval
from evaluation.lib.formats.public.usr import import_usr

__all__ = ["PUBLIC_IMPORTERS", "PublicImport", "import_public"]

PUBLIC_IMPORTERS: dict[str, Callable[..., PublicImport]] = {
    "crs_arena_eval": import_crs_arena_eval,
    "ab_redial": import_ab_redial,
    "crs_arena_dial": import_crs_arena_dial,
    "usr": import_usr,
}


def import_public(name: str, path: Path, *, max_bytes: int = DEFAULT_MAX_BYTES) -> PublicImport:
    """Run the importer NAME (a key of PUBLIC_IMPORTERS) on PATH."""
    try:
        importer = PUBLIC_IMPORTERS[name]
    except KeyError:
        raise ValueError(f"unknown public data set {name!r} (expected one of "
                         f"{', '.join(PUBLIC_IMPORTERS)})") from None
    return importer(Path(path), max_bytes=max_bytes)
