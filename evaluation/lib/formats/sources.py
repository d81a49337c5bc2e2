"""Reading a bundle from a folder, a .zip or a .tar.gz safely.

Sizes are checked before any byte is read: each file against `max_bytes`, and the bundle's
files together against `max_total_bytes` (an archive's declared sizes, so a zip bomb is
refused before anything is decompressed; reading stops at the declared size, so a lying
header cannot make it bigger). Archive members that escape the root (`../`, `..\\`, absolute
paths), links and devices are refused, so a hostile archive cannot write or read outside its
own content (nothing is ever extracted to disk).
"""

import tarfile
import zipfile
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

from evaluation.lib.formats.errors import FormatError, FormatIssue


def _human(size: int) -> str:
    for unit in ("bytes", "KB", "MB", "GB"):
        if size < 1024 or unit == "GB":
            return f"{size:.0f} {unit}" if unit == "bytes" else f"{size:.1f} {unit}"
        size /= 1024
    return str(size)


def _too_big(name: str, size: int, limit: int) -> FormatError:
    return FormatError(
        [FormatIssue(name, None, "$", f"file is {_human(size)}, over the {_human(limit)} limit")]
    )


@dataclass
class BundleSource:
    """Named files of a bundle, each read lazily as bytes after its size was checked."""

    label: str
    _members: dict[str, object]
    _reader: object
    sizes: dict[str, int] = field(default_factory=dict)

    def names(self) -> set[str]:
        return set(self._members)

    def read(self, name: str) -> bytes:
        return self._reader(self._members[name])


def open_bundle(path: Path, *, max_bytes: int, wanted: tuple[str, ...],
                max_total_bytes: int | None = None) -> BundleSource:
    """Open PATH (folder or archive); return the `wanted` files found at its root."""
    source = _open_bundle(path, max_bytes=max_bytes, wanted=wanted)
    if max_total_bytes is not None:
        total = sum(source.sizes.values())
        if total > max_total_bytes:
            raise FormatError([FormatIssue(
                source.label.rsplit("/", 1)[-1], None, "$",
                f"the bundle's files hold {_human(total)} uncompressed, over the "
                f"{_human(max_total_bytes)} limit for a whole bundle (nothing was extracted)")])
    return source


def _open_bundle(path: Path, *, max_bytes: int, wanted: tuple[str, ...]) -> BundleSource:
    path = Path(path)
    if not path.exists():
        raise FormatError([FormatIssue(str(path), None, "$", "no such file or folder")])
    if path.is_dir():
        return _open_folder(path, max_bytes=max_bytes, wanted=wanted)
    size = path.stat().st_size
    if size > max_bytes:
        raise _too_big(path.name, size, max_bytes)
    if zipfile.is_zipfile(path):
        return _open_zip(path, max_bytes=max_bytes, wanted=wanted)
    if tarfile.is_tarfile(path):
        return _open_tar(path, max_bytes=max_bytes, wanted=wanted)
    raise FormatError(
        [FormatIssue(path.name, None, "$", "expected a folder, a .zip or a .tar.gz archive")]
    )


def _open_folder(path: Path, *, max_bytes: int, wanted) -> BundleSource:
    members = {}
    for name in wanted:
        file = path / name
        if file.is_symlink():
            raise FormatError([FormatIssue(name, None, "$", "symbolic links are not accepted")])
        if file.is_file():
            size = file.stat().st_size
            if size > max_bytes:
                raise _too_big(name, size, max_bytes)
            members[name] = file
    return BundleSource(str(path), members, lambda file: file.read_bytes(),
                        {name: file.stat().st_size for name, file in members.items()})


def _check_member_name(archive: str, name: str) -> PurePosixPath:
    pure = PurePosixPath(name)
    if pure.is_absolute() or ".." in pure.parts or "\\" in name or ":" in name:
        raise FormatError(
            [FormatIssue(archive, None, name, "archive member points outside the bundle root")]
        )
    return pure


def _root_members(archive: str, entries: list[tuple[PurePosixPath, object]], wanted):
    """Files may sit at the archive root or inside one top-level folder."""
    by_name: dict[PurePosixPath, object] = dict(entries)
    tops = {p.parts[0] for p, _ in entries if len(p.parts) > 1}
    prefix = PurePosixPath()
    if not any(PurePosixPath(w) in by_name for w in wanted) and len(tops) == 1:
        prefix = PurePosixPath(next(iter(tops)))
    return {w: by_name[prefix / w] for w in wanted if prefix / w in by_name}


def _open_zip(path: Path, *, max_bytes: int, wanted) -> BundleSource:
    archive = zipfile.ZipFile(path)
    entries = []
    for info in archive.infolist():
        pure = _check_member_name(path.name, info.filename)
        if info.is_dir():
            continue
        mode = (info.external_attr >> 16) & 0o170000
        if mode and mode != 0o100000:
            raise FormatError(
                [FormatIssue(path.name, None, info.filename, "links and special files are refused")]
            )
        if info.file_size > max_bytes:
            raise _too_big(info.filename, info.file_size, max_bytes)
        entries.append((pure, info))
    members = _root_members(path.name, entries, wanted)
    return BundleSource(str(path), members, lambda info: _read_declared(
        path.name, info.filename, archive.open(info), info.file_size),
        {name: info.file_size for name, info in members.items()})


def _open_tar(path: Path, *, max_bytes: int, wanted) -> BundleSource:
    archive = tarfile.open(path, "r:*")
    entries = []
    for info in archive.getmembers():
        pure = _check_member_name(path.name, info.name)
        if info.isdir():
            continue
        if not info.isfile():
            raise FormatError(
                [FormatIssue(path.name, None, info.name, "links and special files are refused")]
            )
        if info.size > max_bytes:
            raise _too_big(info.name, info.size, max_bytes)
        entries.append((pure, info))
    members = _root_members(path.name, entries, wanted)
    return BundleSource(str(path), members, lambda info: _read_declared(
        path.name, info.name, archive.extractfile(info), info.size),
        {name: info.size for name, info in members.items()})


def _read_declared(archive: str, name: str, handle, size: int) -> bytes:
    """A member's bytes, never more than its header declares (the limits were checked
    against that size)."""
    with handle:
        data = handle.read(size + 1)
    if len(data) > size:
        raise FormatError([FormatIssue(archive, None, name, "the member is larger than its "
                                                            "archive header says")])
    return data
