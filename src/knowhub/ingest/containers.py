"""Archives and mail files in an ingest run: each member becomes a candidate of its own.

A container (``bundle.zip``, ``box.mbox``, a message's attachments) is opened once, read
member by member in memory (:func:`~knowhub.ingest.loaders.container_entries`, within the
``ingest.archive_*`` limits), and each member goes through the pipeline as a file would,
named ``bundle.zip!/docs/guide.md`` (:mod:`knowhub.ingest.members`): integrity hashes its
bytes (only a changed member is embedded again), a failing one fails alone, dead letters and
moves work as for files. An archive inside an archive is read up to
``ingest.archive_max_depth`` levels.

An archive read whole is *marked* in the store with its size, mtime and the settings it was
read under, and with what it passed over: while those hold, a later run does not open it,
reporting its members unchanged (an archive is not listed again for nothing; a run stopped
half-way, or a member that failed for a passing reason, leaves no mark). Members gone from
an archive that was read are pruned as deleted files are (``--prune``, served folders).
"""

from __future__ import annotations

import bisect
import functools
import hashlib
import io
import json
import logging
import os
from collections.abc import Iterator, Sequence
from pathlib import Path, PurePosixPath
from typing import BinaryIO, Protocol

from knowhub.config import Settings
from knowhub.errors import KnowhubError, LoaderError
from knowhub.ingest.deadletters import DeadLetters
from knowhub.ingest.discover import Candidate, Member, Skipped, matches
from knowhub.ingest.identity import merged_tags, stored_tags
from knowhub.ingest.integrity import Integrity
from knowhub.ingest.loaders import (
    ArchiveLimits,
    container_entries,
    is_container,
    unsupported_reason,
)
from knowhub.ingest.loaders.reading import open_regular
from knowhub.ingest.members import MEMBER_SEPARATOR, container_path
from knowhub.ingest.progress import ProgressTracker
from knowhub.ingest.report import IngestReport
from knowhub.ingest.stopping import stop_if_shutting_down
from knowhub.models import DocumentRecord
from knowhub.providers.stores.base import Store, change_meta
from knowhub.surrogates import escape_surrogates, restore_surrogates

__all__ = ["Containers", "Ingesting", "archive_limits", "is_document_too", "member_bytes"]

log = logging.getLogger("knowhub.ingest")

_Passed = tuple[str, str, str, bool, bool]  # path, source, reason, explicit, unsupported


def archive_limits(settings: Settings) -> ArchiveLimits:
    options = settings.ingest
    return ArchiveLimits(
        options.max_file_bytes,
        options.archive_max_members,
        options.archive_max_bytes,
        options.archive_max_ratio,
        options.archive_max_depth,
    )


def is_document_too(name: str) -> bool:
    """A container that is a document itself: a message (its attachments are members)."""
    return name.lower().endswith(".eml")


class Ingesting(Protocol):
    """The run a container's members go through."""

    report: IngestReport
    tracker: ProgressTracker
    integrity: Integrity

    def process(self, candidate: Candidate) -> None: ...
    def pass_over(self, skipped: Skipped) -> None: ...


class Containers:
    """One run's containers in collection ``cid``: their members, and their marks."""

    def __init__(
        self,
        store: Store,
        cid: int,
        settings: Settings,
        exclude: Sequence[str],
        confine: Path | None,
        dead_letters: DeadLetters,
    ) -> None:
        self.store, self.cid, self.confine = store, cid, confine
        self.limits = archive_limits(settings)
        self.exclude = list(exclude)
        self.dead_letters = dead_letters
        self._marks: dict[str, dict[str, object]] | None = None
        self._recorded: list[tuple[str, DocumentRecord]] | None = None
        self._pending: dict[str, tuple[dict[str, object], list[tuple[str, str]]]] = {}
        self.gone: set[str] = set()  # members of containers read now that are no more
        self.warnings: list[tuple[str, str]] = []  # (source, warning) for the run's report

    @property
    def digest(self) -> str:
        """What a container's reading depends on: the settings and the run's exclusions."""
        facts = [self.dead_letters.digest, self.exclude]
        return hashlib.sha256(json.dumps(facts).encode()).hexdigest()[:16]

    def expand(self, candidate: Candidate, run: Ingesting) -> None:
        """Put the container's members through ``run``: read, or reported as they were
        when it is unchanged. A container refused whole fails; its documents are kept."""
        try:
            known = self.unchanged(candidate, run.integrity)
            if known is not None:
                self._report_known(candidate, run, *known)
            else:
                for found in self.members(candidate):
                    stop_if_shutting_down()  # between members, as between files
                    if isinstance(found, Skipped):
                        _pass_over(run, found)
                    else:
                        run.tracker.found()
                        run.process(found)
        except (KnowhubError, OSError) as exc:
            reason = str(exc) if isinstance(exc, KnowhubError) else f"{type(exc).__name__}: {exc}"
            run.report.failed.append((candidate.source, reason))
        run.report.warnings += self.warnings
        self.warnings.clear()
        if not is_document_too(candidate.source):
            run.tracker.file_done(candidate.source)

    def _report_known(
        self,
        candidate: Candidate,
        run: Ingesting,
        records: list[DocumentRecord],
        passed: list[Skipped],
    ) -> None:
        guard = run.integrity.guard
        run.report.unchanged += [r.source for r in records if guard is None or guard.visible(r)]
        prefix = escape_surrogates(candidate.path) + MEMBER_SEPARATOR
        for path, failed in self.dead_letters.known.items():
            if path.startswith(prefix) and failed.settings == self.dead_letters.digest:
                run.report.failed.append((failed.source, failed.skipped()))
        for skipped in passed:
            _pass_over(run, skipped)

    # -- members ------------------------------------------------------------------------

    def members(self, candidate: Candidate) -> Iterator[Candidate | Skipped]:
        """The members of ``candidate``'s container, one at a time (none when its mark
        says it is unchanged: :meth:`unchanged` says what it holds).

        Raises:
            LoaderError: the container is corrupt or refused whole; OSError: unreadable.
        """
        key = escape_surrogates(candidate.path)
        stat = candidate.stat()
        passed: list[_Passed] = []
        members: list[tuple[str, str]] = []
        with open_regular(Path(candidate.path), self.confine) as file:
            raw = io.BufferedReader(io.FileIO(file.fd, closefd=False))
            for found in self._walk(candidate, candidate.path, raw, stat, 1):
                if isinstance(found, Skipped):
                    passed.append(_passed(found))
                else:
                    members.append((escape_surrogates(found.path), found.source))
                yield found
        seen = {path for path, _ in members} | {entry[0] for entry in passed}
        self.gone.update(r.path for _, r in self._records_of(key) if r.path not in seen)
        mark = {"size": stat.st_size, "mtime_ns": stat.st_mtime_ns, "settings": self.digest}
        passed_over = [list(entry) for entry in passed]
        written = [path for path, _ in members]
        self._pending[key] = ({**mark, "passed": passed_over, "members": written}, members)

    def _walk(
        self, top: Candidate, path: str, file: BinaryIO, stat: os.stat_result, depth: int
    ) -> Iterator[Candidate | Skipped]:
        prefix, source_prefix = path + MEMBER_SEPARATOR, _source(top, path) + MEMBER_SEPARATOR
        taken: set[str] = set()
        for entry in container_entries(Path(path), file, self.limits):
            if _hidden(entry.name) or matches(entry.name, self.exclude):
                continue
            where, source = prefix + entry.name, source_prefix + entry.name
            if entry.name in taken:  # zip allows it; unzip keeps the last, we the first
                note = f"{source}: a second member of this name, not read (the first is)"
                self.warnings.append((source, note))
                continue
            taken.add(entry.name)
            if entry.problem:
                yield Skipped(where, source, f"{source}: {entry.problem}", entry.failed)
            elif reason := unsupported_reason(entry.name):
                yield Skipped(where, source, f"{source}: {reason}", False, True)
            elif entry.expand and is_container(entry.name):
                yield from self._nested(top, where, source, entry.data, stat, depth)
            else:
                member = Member(top.path, where[len(top.path) + 2 :], entry.data, stat)
                yield Candidate(where, source, False, member)

    def _nested(
        self, top: Candidate, where: str, source: str, data: bytes, stat: os.stat_result, depth: int
    ) -> Iterator[Candidate | Skipped]:
        """A container inside one: read when within ``ingest.archive_max_depth``; a message
        is a document too. One that fails fails alone."""
        if is_document_too(where):
            yield Candidate(
                where, source, False, Member(top.path, where[len(top.path) + 2 :], data, stat)
            )
        if depth >= self.limits.max_depth:
            reason = (
                f"{source}: an archive nested {depth + 1} deep, past ingest.archive_max_depth "
                f"({self.limits.max_depth}): not read; raise the setting to read it"
            )
            yield Skipped(where, source, reason, False)
            return
        try:
            yield from self._walk(top, where, io.BytesIO(data), stat, depth + 1)
        except LoaderError as exc:
            yield Skipped(where, source, f"{source}: {_problem(exc, where)}", True)

    # -- what is known without opening it ------------------------------------------------

    def unchanged(
        self, candidate: Candidate, integrity: Integrity
    ) -> tuple[list[DocumentRecord], list[Skipped]] | None:
        """What the container held when it was marked (its member documents, what was
        passed over), when it is as it was then and no member needs reading for its tags
        or extraction; None: it must be read."""
        key = escape_surrogates(candidate.path)
        mark = self._load_marks().get(key)
        try:
            stat = candidate.stat()
        except OSError:
            return None
        if mark is None or (mark.get("size"), mark.get("mtime_ns"), mark.get("settings")) != (
            stat.st_size,
            stat.st_mtime_ns,
            self.digest,
        ):
            return None
        records = [record for _, record in self._records_of(key)]
        if not self._all_there(mark, records):
            return None
        for record in records:
            same = (record.size, record.mtime_ns) == (stat.st_size, stat.st_mtime_ns)
            tags = stored_tags(record)
            if not same or integrity.stale(record) or merged_tags(tags, integrity.tags) != tags:
                return None
        passed = mark.get("passed")
        entries = passed if isinstance(passed, list) else []
        return records, [Skipped(*entry) for entry in entries if isinstance(entry, list)]

    def _all_there(self, mark: dict[str, object], records: list[DocumentRecord]) -> bool:
        """Each member the container was read with has its document, or failed for its own
        fault (one removed since, by ``verify --fix`` or ``remove``, must be read again)."""
        members = mark.get("members")
        have = {record.path for record in records}
        failed = self.dead_letters.known
        return isinstance(members, list) and all(m in have or m in failed for m in members)

    def _records_of(self, key: str) -> list[tuple[str, DocumentRecord]]:
        """The collection's documents inside the container stored as ``key``."""
        if self._recorded is None:
            records = self.store.records(self.cid)
            self._recorded = sorted((r.path, r) for r in records if MEMBER_SEPARATOR in r.path)
        prefix = key + MEMBER_SEPARATOR
        start = bisect.bisect_left(self._recorded, prefix, key=lambda item: item[0])
        end = start
        while end < len(self._recorded) and self._recorded[end][0].startswith(prefix):
            end += 1
        return self._recorded[start:end]

    # -- marks ----------------------------------------------------------------------------

    def _load_marks(self) -> dict[str, dict[str, object]]:
        if self._marks is None:
            self._marks = _parse(self.store.get_meta(_key(self.cid)))
        return self._marks

    def save(self, report: IngestReport) -> None:
        """Mark the containers read whole this run whose members all ended as they will
        again (written, unchanged, failed for their own fault); a failure here costs the next
        run a reading, nothing more."""
        failed = {source for source, _ in report.failed}
        blamed = set(self.dead_letters.failed) | set(self.dead_letters.known)
        marks = {
            key: mark
            for key, (mark, members) in self._pending.items()
            if not any(source in failed and path not in blamed for path, source in members)
        }
        if not marks:
            return
        try:
            change_meta(self.store, _key(self.cid), functools.partial(_marked, marks))
        except Exception as exc:  # whatever the store raised: the run stands
            log.warning("the marks of unchanged archives were not saved (%s): read again", exc)


def member_bytes(path: str, limits: ArchiveLimits) -> bytes:
    """The bytes of the member at ``path`` (``/docs/bundle.zip!/guide.md``, nested or not),
    read from its container as ingest read them (to serve the original of a citation).

    Raises:
        FileNotFoundError: the container, or the member in it, is gone; LoaderError: the
            container is corrupt or over a limit now.
    """
    container = container_path(path)
    if container == path:
        raise FileNotFoundError(f"{path}: no archive holds it")
    names = path[len(container) + len(MEMBER_SEPARATOR) :].split(MEMBER_SEPARATOR)
    with open_regular(Path(container)) as file:
        raw = io.BufferedReader(io.FileIO(file.fd, closefd=False))
        return _find(Path(container), raw, names, limits)


def _find(path: Path, file: BinaryIO, names: list[str], limits: ArchiveLimits) -> bytes:
    for entry in container_entries(path, file, limits):
        if entry.name != names[0]:
            continue
        if entry.problem:
            break
        if len(names) == 1:
            return entry.data
        inner = Path(f"{path}{MEMBER_SEPARATOR}{names[0]}")
        return _find(inner, io.BytesIO(entry.data), names[1:], limits)
    raise FileNotFoundError(f"{path}: holds no readable member {names[0]!r} any more")


def _pass_over(run: Ingesting, skipped: Skipped) -> None:
    """A member passed over is pruned like a file passed over (a link now); one failed for
    its own fault (too large) keeps its document, as a file that fails does."""
    if skipped.explicit:
        run.report.failed.append((skipped.source, skipped.reason))
    else:
        run.pass_over(skipped)


def _passed(skipped: Skipped) -> _Passed:
    path = escape_surrogates(skipped.path)  # as the store spells paths
    return (path, skipped.source, skipped.reason, skipped.explicit, skipped.unsupported)


def _source(top: Candidate, path: str) -> str:
    """The source of the container at ``path`` (``top`` or one nested in it)."""
    return top.source + path[len(top.path) :]


def _hidden(name: str) -> bool:
    """A member in a hidden folder (``.git/``), or macOS's resource forks (``__MACOSX/``):
    passed over unsaid, as a folder walk does."""
    parts = PurePosixPath(name).parts
    return parts[0] == "__MACOSX" or any(part.startswith(".") for part in parts[:-1])


def _problem(exc: LoaderError, where: str) -> str:
    text = str(exc)
    return text[len(where) + 2 :] if text.startswith(where + ": ") else text


def _key(cid: int) -> str:
    return f"ingest-archives:{cid}"


def _marked(marks: dict[str, dict[str, object]], raw: str | None) -> str:
    """The stored marks of archives still there, with this run's."""
    entries = {
        path: mark for path, mark in _parse(raw).items() if Path(restore_surrogates(path)).is_file()
    }
    entries.update(marks)
    return json.dumps(entries, ensure_ascii=False)


def _parse(raw: str | None) -> dict[str, dict[str, object]]:
    if raw is None:
        return {}
    try:
        loaded = json.loads(raw)
    except ValueError:
        return {}
    return (
        {k: v for k, v in loaded.items() if isinstance(v, dict)} if isinstance(loaded, dict) else {}
    )
