"""Find the files an ingest run should look at.

Discovery only ever stats (never opens) what it finds, so a FIFO, socket or device in a
folder cannot block it; anything that is not a regular file is passed over with a reason,
and so is a file of a type knowhub does not read (only files a run excludes go unsaid), and
a compressed copy of a file beside it (``index.html.gz`` beside ``index.html``: one document).
Under a confining root (a served folder), every file must also resolve inside that root:
a symlink leading out is passed over, so no file from elsewhere can be served.
"""

from __future__ import annotations

import errno
import fnmatch
import os
import stat
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from knowhub.ingest.loaders import unsupported_reason
from knowhub.ingest.loaders.compressed import is_compressed
from knowhub.ingest.members import container_path
from knowhub.models import DocumentRecord
from knowhub.surrogates import escape_surrogates, restore_surrogates

__all__ = ["Candidate", "Member", "Rediscovery", "Skipped", "discover", "matches", "rediscover"]


@dataclass(frozen=True)
class Member:
    """Where a member of an archive or mail file comes from: its ``container`` (the file on
    disk), its ``name`` inside, its bytes, and the container's ``stat`` (what integrity
    compares: an unchanged archive means unchanged members)."""

    container: str
    name: str
    data: bytes
    stat: os.stat_result


@dataclass(frozen=True)
class Candidate:
    """A file to ingest: its absolute ``path`` and ``source`` (relative to the given root).

    A ``member`` of an archive or mail file has the path and source of its container, then
    ``!/`` and its name (:mod:`knowhub.ingest.members`), and its bytes in hand."""

    path: str
    source: str
    explicit: bool  # named on the command line, so an unsupported type is an error
    member: Member | None = field(default=None, compare=False, repr=False)

    def __post_init__(self) -> None:
        # The source is shown, stored and traced: undecodable name bytes are escaped
        # (knowhub.surrogates); ``path`` keeps them, to open the file.
        object.__setattr__(self, "source", escape_surrogates(self.source))

    def stat(self) -> os.stat_result:
        """The file's stat (a member's: its container's); never blocks, opens nothing."""
        return self.member.stat if self.member is not None else Path(self.path).stat()


@dataclass(frozen=True)
class Skipped:
    """Something discovery passed over, and why (``reason`` starts with ``source``)."""

    path: str
    source: str
    reason: str
    explicit: bool  # named by the caller: its ingest failed, rather than a file was skipped
    unsupported: bool = False  # of a type knowhub does not read (not what it is, or where)

    @property
    def lasting(self) -> bool:
        """What it is, not a passing error (permissions, I/O): a document indexed from this
        path is pruned, where one only unreadable for now is kept."""
        return _UNREADABLE not in self.reason

    def __post_init__(self) -> None:
        object.__setattr__(self, "source", escape_surrogates(self.source))
        object.__setattr__(self, "reason", escape_surrogates(self.reason))


def matches(relative: str, patterns: Sequence[str]) -> bool:
    """Glob match on the posix relative path (``*`` crosses folders) or on the file name.

    Both sides are compared as sources are stored (undecodable bytes escaped), so the
    literal patterns :func:`rediscover` builds from stored sources find their files.
    """
    relative = escape_surrogates(relative)
    patterns = [escape_surrogates(p) for p in patterns]
    name = relative.rsplit("/", 1)[-1]
    return any(fnmatch.fnmatch(relative, p) or fnmatch.fnmatch(name, p) for p in patterns)


def discover(
    roots: Sequence[Path],
    include: Sequence[str],
    exclude: Sequence[str],
    confine: Path | None = None,
) -> Iterator[Candidate | Skipped]:
    """Yield files under each root (recursively, sorted) that pass include/exclude.

    A file of a type knowhub does not read (by its name) comes from a folder walk as
    :class:`Skipped`, saying so; a file named explicitly is always yielded, so that an
    unsupported one fails with the list of what is read. Anything that is not a regular
    file, and with ``confine`` anything resolving outside it, comes as :class:`Skipped`
    too. Missing roots raise ``FileNotFoundError``.
    """
    fence = None if confine is None else Path(os.path.realpath(confine))
    for root in roots:
        absolute = Path(os.path.abspath(root))
        is_dir, problem = _examine(absolute, fence)
        if problem == _MISSING:
            raise FileNotFoundError(f"{root}: no such file or folder")
        if problem:
            yield Skipped(str(absolute), absolute.name, f"{absolute.name}: {problem}", True)
        elif not is_dir:
            yield Candidate(str(absolute), absolute.name, explicit=True)
        else:
            yield from _walk_root(absolute, include, exclude, fence)


def _walk_root(
    root: Path, include: Sequence[str], exclude: Sequence[str], fence: Path | None
) -> Iterator[Candidate | Skipped]:
    walked = sorted(_walk(root))
    files = {found.path for found in walked if not found.folder}
    for found in walked:
        if found.path == root:  # the folder named could not be listed: that run failed
            yield Skipped(str(root), root.name, f"{root.name}: {found.problem}", explicit=True)
            continue
        relative = found.path.relative_to(root).as_posix()
        if found.folder:  # reported when the files in it could have been picked
            probe = relative + "/"
            if (include and not matches(probe, include)) or matches(probe, exclude):
                continue
        elif (include and not matches(relative, include)) or matches(relative, exclude):
            continue
        problem = found.problem  # what it is says more than what its name promises
        if not problem and not found.folder and (reason := unsupported_reason(relative)):
            yield Skipped(str(found.path), relative, f"{relative}: {reason}", False, True)
            continue
        if not problem and is_compressed(relative) and found.path.with_suffix("") in files:
            copy = f"a compressed copy of {found.path.stem}, beside it"  # nginx's gzip_static
            yield Skipped(str(found.path), relative, f"{relative}: {copy}", explicit=False)
            continue
        # Only a link can lead out of the fence: the walk never descends a symlinked
        # folder, so a plain entry lies inside the root, which _examine checked.
        if found.link and not problem:
            problem = _examine(found.path, fence)[1]
        if problem:
            yield Skipped(str(found.path), relative, f"{relative}: {problem}", explicit=False)
        else:
            yield Candidate(str(found.path), relative, explicit=False)


@dataclass(frozen=True, order=True)
class _Found:
    path: Path
    link: bool = False  # a symlink to a file: where it leads is checked later
    folder: bool = False
    problem: str = ""


def _walk(folder: Path) -> Iterator[_Found]:
    """Every entry under ``folder``; symlinked folders are reported, never descended.

    Folders wait in a list, not in a recursion: a tree may be deeper than Python recurses."""
    folders = [folder]
    while folders:
        yield from _listing(folders.pop(), folders)


def _listing(folder: Path, folders: list[Path]) -> Iterator[_Found]:
    """The entries of ``folder``; its subfolders go into ``folders``, to be listed next."""
    try:
        with os.scandir(folder) as listing:
            entries = list(listing)
    except OSError as exc:
        yield _Found(
            folder,
            folder=True,
            problem=f"folder not readable ({exc.strerror}); "
            "its files are left out: fix its permissions",
        )
        return
    for entry in entries:
        path = Path(entry.path)
        # DirEntry answers these from the directory listing: no stat, nothing opened.
        if entry.is_dir(follow_symlinks=False):
            if not entry.name.startswith("."):
                folders.append(path)
        elif entry.is_symlink():
            if not _links_to_folder(path):
                yield _Found(path, link=True)
            elif not entry.name.startswith("."):
                yield _Found(path, folder=True, problem=_FOLDER_LINK)
        elif entry.is_file(follow_symlinks=False):
            yield _Found(path)
        else:
            try:
                mode = entry.stat(follow_symlinks=False).st_mode
            except OSError:
                continue  # gone since the listing: nothing to report
            yield _Found(path, problem=_not_regular(mode))


_MISSING = "no such file or folder"
_UNREADABLE = "cannot be read"
_FOLDER_LINK = (
    "is a symlink to a folder; folder symlinks are not followed: name its target to ingest it"
)


def _links_to_folder(path: Path) -> bool:
    try:
        return stat.S_ISDIR(path.stat().st_mode)
    except OSError:
        return False  # broken or looping: examined (and reported) as a file


def _examine(path: Path, fence: Path | None) -> tuple[bool, str]:
    """(is a folder, what is wrong with it or ''), following symlinks; nothing is opened."""
    try:
        mode = path.stat().st_mode
    except OSError as exc:
        return False, _unreachable(path, exc)
    if not (stat.S_ISDIR(mode) or stat.S_ISREG(mode)):
        return False, _not_regular(mode)
    if fence is not None and not Path(os.path.realpath(path)).is_relative_to(fence):
        return stat.S_ISDIR(mode), (
            f"leads outside {fence} (through a symlink), so it is not served: "
            "move the file inside or remove the link"
        )
    return stat.S_ISDIR(mode), ""


def _unreachable(path: Path, exc: OSError) -> str:
    if exc.errno == errno.ELOOP:
        return "is a symlink loop: fix or remove the link"
    if exc.errno == errno.ENOENT:
        return (
            "is a broken symlink (its target is gone): fix or remove it"
            if path.is_symlink()
            else _MISSING
        )
    return f"{_UNREADABLE} ({exc.strerror}): check its permissions"


def _not_regular(mode: int) -> str:
    kind = (
        "a FIFO (named pipe)"
        if stat.S_ISFIFO(mode)
        else "a socket"
        if stat.S_ISSOCK(mode)
        else "a device"
        if stat.S_ISCHR(mode) or stat.S_ISBLK(mode)
        else "not a file or folder"
    )
    return f"is {kind}, not a regular file; only regular files are ingested"


@dataclass(frozen=True)
class Rediscovery:
    """An ingest run's arguments that find ``records``' files again, each under its old
    source (its citation name) and with its old tags."""

    paths: list[Path]
    tags: dict[str, str]
    include: list[str]
    records: list[DocumentRecord]


def rediscover(records: Sequence[DocumentRecord]) -> list[Rediscovery]:
    """How to ingest these documents' files again (verify's repair, a version's build)."""
    groups: dict[tuple[str, tuple[tuple[str, str], ...]], list[DocumentRecord]] = {}
    for record in records:
        tags = tuple(sorted(record.metadata.get("tags", {}).items()))
        groups.setdefault((_root(record), tags), []).append(record)
    found = []
    for (root, tags), group in groups.items():
        if root:  # a folder walk with each source as a literal pattern keeps "guide/a.md"
            include = sorted({_literal(_file_source(r)) for r in group})
            found.append(Rediscovery([Path(root)], dict(tags), include, group))
        else:  # a file named on its own gets its file name as source, as it had
            files = sorted({container_path(r.disk_path) for r in group})
            found.append(Rediscovery([Path(f) for f in files], dict(tags), [], group))
    return found


def _file_source(record: DocumentRecord) -> str:
    """The source of the file on disk that holds the document: a member's is its
    archive's (``bundle.zip`` for ``bundle.zip!/guide.md``), found again by a walk."""
    inside = len(record.disk_path) - len(container_path(record.disk_path))
    return record.source[: len(record.source) - inside] if inside else record.source


def _root(record: DocumentRecord) -> str:
    """The folder the document was ingested from ('' when it was named on its own)."""
    path = Path(record.path).as_posix()
    if "/" not in record.source or not path.endswith("/" + record.source):
        return ""
    return str(Path(restore_surrogates(record.path[: len(record.path) - len(record.source)])))


def _literal(source: str) -> str:
    """A glob that matches exactly ``source`` (``[``, ``*`` and ``?`` escaped)."""
    return "".join(f"[{c}]" if c in "[*?" else c for c in source)
