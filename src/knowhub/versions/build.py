"""Building a version: the active version's documents re-ingested, from their files, into a
new version beside it, embedded and chunked as asked, while the active one goes on answering.

The building process claims the version while it builds (:mod:`knowhub.versions.liveness`);
a build whose process is gone, or that was stopped (Ctrl-C), shows as interrupted and may be
resumed: its documents already built are unchanged, so only the rest is read and embedded.
A build that fails otherwise is marked failed (it may be resumed too).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import ValidationError

from knowhub import registry
from knowhub.config import ChunkingSettings, Settings
from knowhub.errors import ConfigError, QueryError
from knowhub.ingest.progress import IngestProgress, Progress
from knowhub.models import DocumentRecord
from knowhub.providers.embedders.base import Embedder
from knowhub.versions.gate import GateCheck, GateRun, run_gate
from knowhub.versions.liveness import Builder, describe, read_claim
from knowhub.versions.record import (
    BUILDING,
    FAILED,
    READY,
    Target,
    Version,
    VersionSet,
    embedder_spec,
    physical_name,
    read_versions,
    set_version,
    update_with,
    utc_now,
    version_settings,
)
from knowhub.versions.switch import activate_version, first_record, state_of

if TYPE_CHECKING:  # annotations only: the CLI's other commands never load the App
    from knowhub.app import App
    from knowhub.collection import Collection

__all__ = ["BuildReport", "build_version"]


@dataclass
class BuildReport:
    """What one build did: the version it made, from which, file by file."""

    collection: str
    version: Version
    base: int
    added: list[str] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)
    failed: list[tuple[str, str]] = field(default_factory=list)
    chunks: int = 0
    embedded: int = 0
    faq: int = 0
    seconds: float = 0.0
    gate: GateRun | None = None
    activated: bool = False

    @property
    def ok(self) -> bool:
        return not self.failed and (self.gate is None or self.gate.result.passed)

    def to_dict(self) -> dict[str, Any]:
        return {
            "collection": self.collection,
            "version": asdict(self.version),
            "base": self.base,
            "added": self.added,
            "missing": self.missing,
            "failed": [{"source": s, "reason": r} for s, r in self.failed],
            "chunks": self.chunks,
            "embedded": self.embedded,
            "faq": self.faq,
            "seconds": round(self.seconds, 3),
            "gate": None if self.gate is None else self.gate.to_dict(),
            "activated": self.activated,
        }


def build_version(
    app: App,
    collection: str | None,
    embedder: str | None = None,
    chunk_size: int | None = None,
    chunk_overlap: int | None = None,
    gate: GateCheck | None = None,
    activate: bool = False,
    progress: Progress | None = None,
    resume: int | None = None,
) -> BuildReport:
    """Build a new version of ``collection`` from its active version's files.

    The new version uses the configured embedder and chunking, except where ``embedder``
    (a provider name) or ``chunk_size``/``chunk_overlap`` say otherwise; ``resume`` builds
    the rest of version ``resume`` instead (interrupted or failed), as it was built. A file
    that is gone is reported and skipped. With ``gate`` the version must pass it, or it is
    marked failed; with ``activate`` it becomes active when built (and passed, and no file
    failed).
    """
    started = time.perf_counter()
    active = app.collection(collection)
    base = active.target
    records = active.documents()  # an unknown collection: an error
    version, model, claimed = _begin(
        app, base.collection, embedder, chunk_size, chunk_overlap, resume
    )
    report = BuildReport(base.collection, version, base.number)
    target = Target(base.collection, version.number, version.physical, version)
    with Builder(app.store, base.collection, version.number, replacing=claimed) as builder:
        try:
            if resume is not None:
                set_version(app.store, target, state=BUILDING)
            app.store.ensure_collection(version.physical, model.model_id, model.dim)
            built = app.collection(target.collection, target.number)
            _rebuild(built, records, report, _checked(progress, builder.check))
            report.faq = _copy_faq(active, built)
            builder.check()
        except KeyboardInterrupt:
            raise  # left building, its claim marked stopped: interrupted, to resume or drop
        except BaseException:
            if not builder.taken_over:  # else the version is the other build's to mark
                set_version(app.store, target, state=FAILED)
            raise
        report.version = set_version(app.store, target, state=READY)
    if gate is not None:
        report.gate = run_gate(app, gate, base, target)
        state = READY if report.gate.result.passed else FAILED
        report.version = set_version(app.store, target, state=state, gate=report.gate.to_dict())
    if activate and report.ok:
        activate_version(app, base.collection, version.number)
        report.activated = True
    report.seconds = time.perf_counter() - started
    return report


def _begin(
    app: App,
    collection: str,
    embedder: str | None,
    size: int | None,
    overlap: int | None,
    resume: int | None,
) -> tuple[Version, Embedder, str | None]:
    """The version to build (a new one reserved, or the one to resume), its embedder
    (loaded before anything is written: fails early) and the claim to take over."""
    if resume is None:
        settings = _build_settings(app.settings, embedder, size, overlap)
        model = app.runtime.embedder_with(settings)
        version = _reserve(app, collection, settings, model)
        return version, model, read_claim(app.store, collection, version.number)
    if embedder is not None or size is not None or overlap is not None:
        raise ConfigError(
            "--resume builds a version as it was begun: leave out --embedder, --chunk-size "
            "and --chunk-overlap"
        )
    version, claimed = _resumable(app, collection, resume)
    return version, app.runtime.embedder_with(version_settings(app.settings, version)), claimed


def _build_settings(
    settings: Settings, embedder: str | None, size: int | None, overlap: int | None
) -> Settings:
    chunking = settings.chunking
    if size is not None and overlap is None:
        # The overlap keeps its share of the chunk, unless given.
        overlap = round(chunking.overlap * size / chunking.size)
    try:
        new_chunking = ChunkingSettings(
            size=chunking.size if size is None else size,
            overlap=chunking.overlap if overlap is None else overlap,
            unit=chunking.unit,
        )
    except ValidationError as exc:
        problems = "; ".join(str(e["msg"]) for e in exc.errors())
        raise ConfigError(f"--chunk-size/--chunk-overlap: {problems}") from exc
    new_embedder = settings.embedder
    if embedder is not None:
        if embedder not in registry.known("embedder"):
            known = ", ".join(registry.known("embedder"))
            raise ConfigError(f"unknown embedder {embedder!r} for --embedder; known: {known}")
        new_embedder = new_embedder.model_copy(update={"provider": embedder})
    return settings.model_copy(update={"embedder": new_embedder, "chunking": new_chunking})


def _reserve(app: App, collection: str, settings: Settings, model: Embedder) -> Version:
    """Add the next version to the record, as building; its number is never one in use."""
    prefix = physical_name(collection, 2)[:-1]
    stored = {
        int(c.name[len(prefix) :]) for c in app.store.collections() if c.name.startswith(prefix)
    }

    def add(record: VersionSet | None) -> tuple[VersionSet, Version]:
        current = record or first_record(app, collection, pin=True)
        number = max({v.number for v in current.versions} | stored) + 1
        version = Version(
            number,
            physical_name(collection, number),
            model.model_id,
            model.dim,
            embedder_spec(settings),
            settings.chunking.model_dump(),
            utc_now(),
            BUILDING,
        )
        return current.put(version), version

    return update_with(app.store, collection, add)[1]


def _resumable(app: App, collection: str, number: int) -> tuple[Version, str | None]:
    """Version ``number``, if its build may be resumed (interrupted or failed), and the
    claim it was judged by (the one this build takes over)."""
    record = read_versions(app.store, collection)
    if record is None:
        raise QueryError(
            f"collection {collection!r} has no version {number} to resume (known: 1): build "
            f"one with `knowhub versions build --collection {collection}`"
        )
    version = record.get(number)
    claimed = read_claim(app.store, collection, number)
    state = state_of(app.store, collection, version)
    if state == READY:
        raise QueryError(
            f"version {number} of {collection!r} is built already: activate it with "
            f"`knowhub versions activate --collection {collection} {number}`"
        )
    if state == BUILDING:
        raise QueryError(
            f"version {number} of {collection!r} is still building ({describe(claimed)}): "
            "wait for it, or stop that process first"
        )
    return version, claimed


def _checked(progress: Progress | None, check: Callable[[], None]) -> Progress:
    """``progress``, calling ``check`` first at every step: a build whose claim was taken
    over stops at its next step (:meth:`~knowhub.versions.liveness.Builder.check`)."""

    def step(update: IngestProgress) -> None:
        check()
        if progress is not None:
            progress(update)

    return step


def _rebuild(
    built: Collection,
    records: Sequence[DocumentRecord],
    report: BuildReport,
    progress: Progress,
) -> None:
    from knowhub.ingest.discover import rediscover  # it loads the loaders: not at import
    from knowhub.ingest.members import container_path

    present = [r for r in records if Path(container_path(r.disk_path)).is_file()]
    report.missing = [r.source for r in records if not Path(container_path(r.disk_path)).is_file()]
    done = 0
    groups = rediscover(present)
    for number, group in enumerate(groups, start=1):
        step = _shifted(progress, done, report.embedded, len(present), number == len(groups))
        outcome = built.ingest(
            group.paths, group.tags, include=group.include, exclude=[], progress=step
        )
        report.added += [*outcome.added, *outcome.updated, *outcome.unchanged]
        report.failed += outcome.failed
        report.chunks += outcome.chunks
        report.embedded += outcome.embedded
        done += len(group.records)


def _shifted(progress: Progress, files: int, chunks: int, total: int, last: bool) -> Progress:
    """A group's progress as a share of the whole build's: ``files`` and ``chunks`` were
    done by the groups before it, of ``total`` files; only the ``last`` one finishes it."""

    def shifted(step: IngestProgress) -> None:
        event = "file_done" if step.event == "finished" and not last else step.event
        progress(
            replace(
                step,
                event=event,
                files_done=files + step.files_done,
                files_total=total,
                files_chunked=files + step.files_chunked,
                chunks_done=chunks + step.chunks_done,
                chunks_total=chunks + step.chunks_total,
            )
        )

    return shifted


def _copy_faq(base: Collection, built: Collection) -> int:
    """The base version's FAQ entries, embedded again by the new version's embedder."""
    entries = base.faq()
    sources: dict[str, list[tuple[str, str, int]]] = {}
    for entry in entries:
        sources.setdefault(entry.source, []).append((entry.question, entry.answer, entry.line))
    cid = built.store_id()  # the build created it
    for source, pairs in sources.items():
        built.put_faq(cid, source, pairs)
    return len(entries)
