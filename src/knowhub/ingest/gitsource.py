"""Git repositories as sources: the tracked files of a branch or tag, each document citing
``repo@commit:path``.

The mirror (``DATA_DIR/sources/git/SLUG``) holds a bare repository fetched with the ``git``
command, its commit alone (``--depth=1``), and ``tree/``: the commit's regular files, written
from their blobs as committed. Only tracked files exist there, so ``.gitignore`` is respected
by construction; no checkout runs, so no hook, filter (Git LFS) or attribute either.
Symbolic links and submodules are not followed, Git LFS pointers are skipped (their content
is not in the repository), and all are reported.

A re-fetch compares the new commit's tree with the files written before (by blob id, as
``git diff`` does): only changed files are written again, so the folder ingest that follows
reads only them (the others keep their size and mtime), deleted ones are pruned, and a
renamed one is a move. A document's source names the commit its text was read at: an
unchanged file keeps the commit it was first read at (its bytes there are those of the new
commit), so a new commit rewrites nothing but what it changed.
"""

from __future__ import annotations

import errno
import json
import shutil
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO

from knowhub.config import Settings
from knowhub.errors import IngestError
from knowhub.ingest.discover import matches
from knowhub.ingest.gitrun import Entry, Git
from knowhub.ingest.gitspec import GitSpec, parse_git_spec
from knowhub.ingest.origin import Origin
from knowhub.ingest.sources import Fetched, SourceNote, SourceOptions, mirror_lock, mirror_root

__all__ = ["GitSource", "git_source"]

_FETCHED = "refs/knowhub/fetched"
_WRITTEN = "refs/knowhub/written"  # the commit tree/ holds: kept from garbage collection
_STATE = "state.json"
_SHORT = 12  # hex digits of a commit in sources: unambiguous in any repository seen yet
_LFS_POINTER = b"version https://git-lfs.github.com/spec/"
_LFS_MAX = 1024  # a pointer is some 130 bytes
_REGULAR = ("100644", "100755")
# A path that cannot be there: gone, a name no file can bear, a parent that is a file.
_NO_SUCH_FILE = (errno.ENOENT, errno.ENAMETOOLONG, errno.ENOTDIR)


def git_source(spec: str, options: SourceOptions | None = None) -> GitSource | None:
    """The git repository ``spec`` names, or None when it is no git spec; raises an
    :class:`~knowhub.errors.IngestError` for a malformed one or an option a repository does
    not take. ``options``: ``ref`` (a ``sources:`` entry's, else the spec's ``@ref``),
    ``include`` and ``exclude`` (globs on the repository's paths, as a folder's are)."""
    given = dict(options or {})
    ref = given.pop("ref", None)
    parsed = parse_git_spec(spec, None if ref is None else str(ref))
    if parsed is None:
        return None
    include, exclude = list(given.pop("include", ())), list(given.pop("exclude", ()))
    if given:
        raise IngestError(
            f"{parsed.shown}: a git repository takes no {', '.join(sorted(given))} option "
            "(those are a website's): leave it out"
        )
    return GitSource(parsed, include, exclude)


@dataclass
class _State:
    """What ``tree/`` holds: the commit written, and each file's blob id and the short
    commit its bytes were first written at."""

    commit: str = ""
    files: dict[str, tuple[str, str]] = field(default_factory=dict)

    @classmethod
    def load(cls, path: Path) -> _State | None:
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
            files = {p: (blob, at) for p, (blob, at) in data["files"].items()}
            return cls(str(data["commit"]), files)
        except (OSError, ValueError, KeyError, TypeError):
            return None  # none yet, or unreadable: the tree is written again whole

    def save(self, path: Path) -> None:
        temporary = path.with_name(f".{path.name}.tmp")
        files = {p: list(pair) for p, pair in self.files.items()}
        temporary.write_text(json.dumps({"commit": self.commit, "files": files}), "utf-8")
        temporary.replace(path)


@dataclass
class _Sync:
    """One fetch's changes to ``tree/``: paths written (``changed``, ``added``), removed,
    passed over and failed, with why."""

    changed: list[str] = field(default_factory=list)
    added: list[str] = field(default_factory=list)
    deleted: list[str] = field(default_factory=list)
    skipped: list[tuple[str, str]] = field(default_factory=list)
    failed: list[tuple[str, str]] = field(default_factory=list)


class GitSource:
    """A repository at a ref, as its spec named it (:mod:`knowhub.ingest.gitspec`)."""

    def __init__(
        self, parsed: GitSpec, include: Sequence[str] = (), exclude: Sequence[str] = ()
    ) -> None:
        self.parsed = parsed
        self.include, self.exclude = (
            list(include),
            list(exclude),
        )  # the run's, not yet the settings'

    @property
    def spec(self) -> str:
        """The spec without its credentials: they reach git and nothing else."""
        return self.parsed.shown

    @property
    def local_reach(self) -> bool:
        return True  # git reads this machine's repositories, with its keys, at any address

    def fetch(self, settings: Settings, note: SourceNote | None = None) -> Fetched:
        """Fetch the ref's commit and bring ``tree/`` to it, writing only what changed."""
        root = mirror_root(settings, "git", self.parsed.slug)
        root.mkdir(parents=True, exist_ok=True)
        tree = root / "tree"
        git = Git(root / "repo.git", self.parsed, settings.ingest.git.timeout_s)
        with mirror_lock(root):  # two fetches of one mirror wait for each other
            git.init()
            commit = git.fetch(self.parsed.ref, _FETCHED)
            old = _State.load(root / _STATE)
            if old is None:
                shutil.rmtree(tree, ignore_errors=True)  # what an interrupted first fetch left
            wanted = _Wanted(
                self.include or settings.ingest.include,
                [*settings.ingest.exclude, *self.exclude],
                settings.ingest.max_file_bytes,
            )
            state, sync = _synced(git, tree, old or _State(), commit, wanted)
            state.save(root / _STATE)
            git.keep(_WRITTEN, commit)
            (root / "received").unlink(missing_ok=True)
        if note is not None:
            note(self._summary(old, commit, sync, len(state.files)))
        return Fetched(
            Origin(tree, lambda relative: self._source(state, relative)),
            skipped=[self._said(state, path, why) for path, why in sync.skipped],
            failed=[self._said(state, path, why) for path, why in sync.failed],
        )

    def _said(self, state: _State, path: str, why: str) -> tuple[str, str]:
        """A report's entry: the path's source, and why (starting with it)."""
        source = self._source(state, path)
        return source, f"{source}: {why}"

    def _source(self, state: _State, relative: str) -> str:
        read_at = state.files.get(relative, ("", state.commit[:_SHORT]))[1]
        return f"{self.parsed.repo}@{read_at}:{relative}"

    def _summary(self, old: _State | None, commit: str, sync: _Sync, files: int) -> str:
        short = commit[:_SHORT]
        if old is None or not old.commit:
            return f"{self.spec}: fetched commit {short}, {files} files"
        if old.commit == commit and not (sync.changed or sync.added or sync.deleted):
            return f"{self.spec}: still at commit {short}"
        counts = (
            f"{len(sync.changed)} changed, {len(sync.added)} added, {len(sync.deleted)} deleted"
        )
        return f"{self.spec}: commit {old.commit[:_SHORT]} → {short}: {counts}"


@dataclass(frozen=True)
class _Wanted:
    """Which of a commit's files the mirror holds: those the globs keep (as a folder's
    files are kept: a file left out goes unsaid, and its document is pruned), within the
    size a file may have."""

    include: Sequence[str]
    exclude: Sequence[str]
    max_bytes: int

    def keeps(self, path: str) -> bool:
        return (not self.include or matches(path, self.include)) and not matches(path, self.exclude)


def _synced(git: Git, tree: Path, old: _State, commit: str, want: _Wanted) -> tuple[_State, _Sync]:
    """Bring ``tree`` from ``old`` to ``commit``: removals first (a file may become a
    folder), then the blobs that differ."""
    sync = _Sync()
    wanted: dict[str, Entry] = {}
    for path, entry in git.listing(commit).items():
        if not want.keeps(path):
            continue
        if (why := _not_read(path, entry, want.max_bytes)) is not None:
            sync.skipped.append((path, why))
        else:
            wanted[path] = entry
    for path in sorted(set(old.files) - set(wanted)):
        _remove(tree, path)
        sync.deleted.append(path)
    # A file gone from the mirror behind its back (a cleanup, a disk repair) is written again.
    writes = {
        p: e.oid
        for p, e in wanted.items()
        if old.files.get(p, ("",))[0] != e.oid or not (tree / p).is_file()
    }
    state = _State(commit, {p: old.files[p] for p in wanted if p not in writes})
    by_blob: dict[str, list[str]] = {}
    for path, oid in writes.items():
        by_blob.setdefault(oid, []).append(path)
    tree.mkdir(parents=True, exist_ok=True)
    with git.blobs(list(by_blob)) as blobs:
        for oid, size, stream in blobs:
            paths = by_blob[oid]
            placed = _placed(tree, paths, size, stream, sync)
            for path in placed:
                state.files[path] = (oid, commit[:_SHORT])
                (sync.changed if path in old.files else sync.added).append(path)
            for path in set(paths) - set(placed):  # no document of another commit's bytes
                _remove(tree, path)
    return state, sync


def _not_read(path: str, entry: Entry, max_bytes: int) -> str | None:
    """Why a tree entry is not written to the mirror, or None."""
    parts = path.split("/")
    if any(part in ("", ".", "..") or part.lower() == ".git" for part in parts):
        return "a path that would lead out of the mirror: not read"
    if entry.mode == "120000":
        return "a symbolic link: not followed"
    if entry.kind == "commit":
        return "a submodule: not followed (ingest its repository as a source of its own)"
    if entry.mode not in _REGULAR:
        return f"not a regular file (mode {entry.mode}): not read"
    if entry.size > max_bytes:
        return f"{entry.size} bytes, over ingest.max_file_bytes ({max_bytes}): not read"
    return None


def _placed(tree: Path, paths: list[str], size: int, stream: IO[bytes], sync: _Sync) -> list[str]:
    """Write a blob of ``size`` bytes from ``stream`` at each of ``paths``, each replaced
    whole (a run stopped midway leaves no half file): those written. A Git LFS pointer is
    skipped, a path the file system refuses (a name too long) failed, in ``sync``."""
    head = stream.read(min(size, _LFS_MAX))
    if size < _LFS_MAX and head.startswith(_LFS_POINTER):
        sync.skipped += [(p, "a Git LFS pointer: its content is not fetched") for p in paths]
        return []
    received = tree.parent / "received"
    _receive(received, head, size - len(head), stream)
    placed = []
    for path in paths:
        target = tree / path
        # Hidden (discovery skips it), short (a name near the limit must still fit), one
        # name (one fetch of a mirror at a time).
        temporary = target.with_name(".knowhub-writing")
        try:
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(received, temporary)
            temporary.replace(target)
            placed.append(path)
        except OSError as exc:
            sync.failed.append((path, f"not written to the mirror: {exc.strerror or exc}"))
    return placed


def _receive(target: Path, head: bytes, rest: int, stream: IO[bytes]) -> None:
    """The blob's bytes into ``target``: ``head``, then ``rest`` more from ``stream``."""
    with target.open("wb") as out:
        out.write(head)
        while rest > 0:
            piece = stream.read(min(rest, 1 << 20))
            if not piece:
                raise IngestError("git cat-file ended within a blob: run the ingest again")
            out.write(piece)
            rest -= len(piece)


def _remove(tree: Path, path: str) -> None:
    """Remove ``path`` and the folders it leaves empty."""
    target = tree / path
    try:
        target.unlink()
    except OSError as exc:
        if exc.errno not in _NO_SUCH_FILE:
            raise
    folder = target.parent
    while folder != tree and folder.is_dir() and not any(folder.iterdir()):
        folder.rmdir()
        folder = folder.parent
