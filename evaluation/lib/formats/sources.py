"""Reading a bundle from a folder, a .zip or a .tar.gz safely.

Sizes are checked before any byte is read; archive members that escape the root (`../`,
absolute paths), links and devices are refused, so a hostile archive cannot write or read
outside its own content (nothing is ever extracted to disk).
"""

import tarfile
import zipfile
from dataclasses import dataclass
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

    def names(self) -> set[str]:
        return set(self._members)

    def read(self, name: str) -> bytes:
        return self._reader(self._members[name])


def open_bundle(path: Path, *, max_bytes: int, wanted: tuple[str, ...]) -> BundleSource:
    """Open PATH (folder or archive); return the `wanted` files found at its root."""
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
    return BundleSource(str(path), members, lambda file: file.read_bytes())


def _check_member_name(archive: str, name: str) -> PurePosixPath:
    pure = PurePosixPath(name)
    if pure.is_absolute() or ".." in pure.parts or name.startswith(("\\", "/")) or ":" in name:
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
    return BundleSource(str(path), members, archive.read)


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
    return BundleSource(str(path), members, lambda info: archive.extractfile(info).read())
