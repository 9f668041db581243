"""Files that failed to load, and are not read again until they or the settings change.

A file that fails on a run (too deep, too many pages to OCR, over its time, corrupt …)
would fail the same way on the next, at the same cost: a 1,000-page scan spends its whole
time budget again. So each such failure is recorded with the file's size, mtime and sha256
and a digest of the settings it failed under; a later run passes over the file while those
match, reporting it failed with "skipped as previously failed" and the reason, and reads it
again once the file (size or mtime, as integrity trusts them) or the settings change (or
knowhub's version). ``knowhub ingest --failed`` lists them.

The list lives in the store, the single source of truth, under one meta key per collection
(``ingest-failed:<collection id>``: every backend has compare-and-set meta, and collection ids
are never reused). Only what the file is to blame for is recorded (a ``LoaderError``): an
unreadable file, an embedder or store failing, a scan OCR cannot run for, are tried again.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from functools import cache, cached_property
from importlib.metadata import version
from typing import Any

from knowhub.config import Settings
from knowhub.ingest.discover import Candidate
from knowhub.ingest.extraction import EXTRACTION_VERSION, TEXT_EXTRACTION_VERSION
from knowhub.ingest.integrity import Changed
from knowhub.ingest.members import container_path
from knowhub.providers.stores.base import Store, change_meta
from knowhub.surrogates import escape_surrogates, restore_surrogates

__all__ = ["DeadLetters", "FailedFile", "failed_files"]

log = logging.getLogger("knowhub.ingest")

# Settings that say how a run reports, not how a file is read: changing them retries nothing.
_NOT_READING = {"progress_interval_s", "long_file_warning_s", "include", "exclude", "scope"}


@dataclass(frozen=True)
class FailedFile:
    """A file that failed to load, as the store keeps it."""

    path: str  # the file, at the path a run found it (surrogates escaped)
    source: str  # as reports name it
    size: int
    mtime_ns: int
    sha256: str
    settings: str  # digest of the settings it failed under
    reason: str
    failed_at: str  # UTC, ISO 8601

    def skipped(self) -> str:
        """The reason a run gives for passing it over."""
        return (
            f"skipped as previously failed ({self.failed_at}; read again once the file or the "
            f"settings change; to retry it as it is, touch it): {self.reason}"
        )


def failed_files(store: Store, cid: int) -> list[FailedFile]:
    """The collection's failed files, by source."""
    return sorted(_read(store, cid).values(), key=lambda failed: failed.source)


class DeadLetters:
    """One run's view of the failed files of collection ``cid``: which to pass over, which
    failed now, which are no longer failing. :meth:`save` writes the changes."""

    def __init__(self, store: Store, cid: int, settings: Settings) -> None:
        self.store = store
        self.cid = cid
        self.settings = settings
        self.known = _read(store, cid)
        self.failed: dict[str, FailedFile] = {}
        self.done: set[str] = set()  # read this run, failing or not

    @cached_property
    def digest(self) -> str:
        """The settings' digest (computed once a file failed, or one failed before)."""
        return _settings_digest(self.settings)

    def held(self, candidate: Candidate) -> FailedFile | None:
        """The failure to report instead of reading ``candidate`` again: the file and the
        settings are as they were when it failed."""
        known = self.known.get(escape_surrogates(candidate.path))
        if known is None or known.settings != self.digest:
            return None
        try:
            stat = candidate.stat()
        except OSError:
            return None  # reading it will say what is wrong
        if (stat.st_size, stat.st_mtime_ns) != (known.size, known.mtime_ns):
            return None
        return known

    def read(self, candidate: Candidate) -> None:
        """``candidate`` is read this run: its old failure, if any, no longer holds."""
        self.done.add(escape_surrogates(candidate.path))

    def failure(self, candidate: Candidate, changed: Changed, reason: str) -> None:
        """``candidate``'s file (read as ``changed``) failed to load, for ``reason``."""
        # Keyed by the path it was found at, as :meth:`held` and :meth:`read` look it up
        # (``changed.key`` is the document's path, another spelling for a moved file).
        key = escape_surrogates(candidate.path)
        self.failed[key] = FailedFile(
            key,
            changed.source,
            changed.stat.st_size,
            changed.stat.st_mtime_ns,
            changed.doc_hash,
            self.digest,
            reason,
            datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        )

    def save(self) -> None:
        """Write this run's changes to the list (merged with another run's, if one wrote it
        meanwhile); a failure costs the next run a retry of these files, nothing more."""
        if not self.failed and not self.done.intersection(self.known):
            return
        try:
            change_meta(self.store, _key(self.cid), self._merged)
        except Exception as exc:  # whatever the store raised (a full disk): the run stands
            log.warning("the list of failed files was not saved (%s): they are read again", exc)

    def _merged(self, raw: str | None) -> str | None:
        """The stored list with this run's changes (another run's kept)."""
        entries = {
            path: entry
            for path, entry in _parse(raw).items()
            if path not in self.done and os.path.lexists(container_path(restore_surrogates(path)))
        }
        entries.update(self.failed)
        return _dump(entries) if entries else None


def _settings_digest(settings: Settings) -> str:
    """What a file's loading depends on: the ingest and chunking settings, knowhub's version."""
    facts: dict[str, Any] = {
        "ingest": settings.ingest.model_dump(mode="json", exclude=_NOT_READING),
        "chunking": settings.chunking.model_dump(mode="json"),
        "knowhub": [_version(), EXTRACTION_VERSION, TEXT_EXTRACTION_VERSION],
    }
    return hashlib.sha256(json.dumps(facts, sort_keys=True).encode()).hexdigest()[:16]


@cache
def _version() -> str:
    return version("knowhub")  # reads the package's metadata file: once a process


def _key(cid: int) -> str:
    return f"ingest-failed:{cid}"


def _read(store: Store, cid: int) -> dict[str, FailedFile]:
    return _parse(store.get_meta(_key(cid)))


def _parse(raw: str | None) -> dict[str, FailedFile]:
    """The entries of a stored list; an unreadable one is dropped (its files are retried)."""
    if raw is None:
        return {}
    try:
        return {path: FailedFile(**entry) for path, entry in json.loads(raw).items()}
    except (ValueError, TypeError, AttributeError):
        return {}


def _dump(entries: dict[str, FailedFile]) -> str:
    return json.dumps({path: asdict(entry) for path, entry in entries.items()}, ensure_ascii=False)
