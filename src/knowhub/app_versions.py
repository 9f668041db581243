"""Building and switching knowledge-base versions: what ``knowhub versions`` does.

A build re-ingests the active version's documents, from their files, into a new version
beside it, embedded and chunked as asked, while the active version goes on answering.
An optional gate then runs the collection's golden questions on both and checks the new
version against ``eval.gates``. Activation and rollback are one compare-and-set of the
versions record (:mod:`knowhub.versions`), so they are atomic for every process using the
store, and each request reads the record when it starts.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
from pydantic import ValidationError

from knowhub import registry
from knowhub.config import ChunkingSettings, Settings
from knowhub.errors import ConfigError, KnowhubError, QueryError, StoreError
from knowhub.eval.gate import GateResult, check_gate, find_gate
from knowhub.eval.golden import golden_set
from knowhub.eval.runner import EvalResult, IngestOutcome, check_judgments, run_queries
from knowhub.eval.sets import EvalSet
from knowhub.ingest.progress import IngestProgress, Progress
from knowhub.models import DocumentRecord, Hit
from knowhub.providers.embedders.base import Embedder
from knowhub.query.pipeline import SearchResult
from knowhub.versions import (
    BUILDING,
    FAILED,
    READY,
    Target,
    Version,
    VersionSet,
    embedder_spec,
    physical_name,
    read_versions,
    update,
    utc_now,
)

if TYPE_CHECKING:  # annotations only: the CLI's other commands never load the App
    from knowhub.app import App

__all__ = [
    "BuildReport",
    "GateCheck",
    "GateRun",
    "VersionRow",
    "activate_version",
    "build_version",
    "drop_version",
    "gate_check",
    "list_versions",
    "rollback_version",
]

# Hits per golden query, as `knowhub eval` takes them (recall@100 needs 100).
_GATE_TOP_K = 100


@dataclass(frozen=True)
class GateCheck:
    """What a gate runs: the golden questions and the minimums they must reach."""

    evalset: EvalSet
    key: str
    thresholds: dict[str, float]


@dataclass(frozen=True)
class GateRun:
    """A gate's outcome: the new version's metrics next to the active version's (empty,
    with ``compared_error``, when the active one could not be searched)."""

    result: GateResult
    golden: str
    queries: int
    metrics: dict[str, float]
    compared_with: int
    compared_metrics: dict[str, float]
    compared_error: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            **self.result.to_dict(),
            "golden": self.golden,
            "queries": self.queries,
            "metrics": self.metrics,
            "compared_with": self.compared_with,
            "compared_metrics": self.compared_metrics,
            "compared_error": self.compared_error,
        }


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


@dataclass(frozen=True)
class VersionRow:
    """One line of ``knowhub versions list``."""

    collection: str
    version: Version
    active: bool
    previous: bool
    documents: int | None  # None: its store collection does not exist (yet)
    chunks: int | None

    def to_dict(self) -> dict[str, Any]:
        return {
            "collection": self.collection,
            **asdict(self.version),
            "active": self.active,
            "previous": self.previous,
            "documents": self.documents,
            "chunks": self.chunks,
        }


# -- build --------------------------------------------------------------------------------


def gate_check(app: App, collection: str | None, golden: Path) -> GateCheck:
    """The gate a build of ``collection`` must pass; a clear error when there is none."""
    name = app.resolve(collection).collection
    evalset = golden_set(golden)
    found = find_gate(app.settings.eval.gates, [name, evalset.name])
    if found is None:
        raise ConfigError(
            f"no gate for collection {name!r} in eval.gates (configured: "
            f"{', '.join(app.settings.eval.gates) or 'none'}): add its minimums to knowhub.yaml, "
            f"e.g. `eval: {{gates: {{{name}: {{ndcg@10: 0.8, hit_rate@10: 0.9}}}}}}`"
        )
    return GateCheck(evalset, found[0], dict(found[1]))


def build_version(
    app: App,
    collection: str | None,
    embedder: str | None = None,
    chunk_size: int | None = None,
    chunk_overlap: int | None = None,
    gate: GateCheck | None = None,
    activate: bool = False,
    progress: Progress | None = None,
) -> BuildReport:
    """Build a new version of ``collection`` from its active version's files.

    The new version uses the configured embedder and chunking, except where ``embedder``
    (a provider name) or ``chunk_size``/``chunk_overlap`` say otherwise. A file that is
    gone is reported and skipped. With ``gate`` the version must pass it, or it is marked
    failed; with ``activate`` it becomes active when built (and passed, and no file failed).
    """
    started = time.perf_counter()
    base = app.resolve(collection)
    records = app.documents(base.collection, version=base.number)  # unknown: an error
    settings = _build_settings(app.settings, embedder, chunk_size, chunk_overlap)
    model = app.embedder_with(settings)  # loaded before anything is written: fails early
    version = _reserve(app, base.collection, settings, model)
    report = BuildReport(base.collection, version, base.number)
    target = Target(base.collection, version.number, version.physical, version)
    try:
        app.store.ensure_collection(version.physical, model.model_id, model.dim)
        _rebuild(app, target, records, report, progress)
        report.faq = _copy_faq(app, base, target)
    except BaseException:
        _set(app, target, state=FAILED)
        raise
    report.version = _set(app, target, state=READY)
    if gate is not None:
        report.gate = _run_gate(app, gate, base, target)
        state = READY if report.gate.result.passed else FAILED
        report.version = _set(app, target, state=state, gate=report.gate.to_dict())
    if activate and report.ok:
        activate_version(app, base.collection, version.number)
        report.activated = True
    report.seconds = time.perf_counter() - started
    return report


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
    chosen: list[Version] = []

    def add(record: VersionSet | None) -> VersionSet:
        current = record or _first_record(app, collection, pin=True)
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
        chosen[:] = [version]
        return current.put(version)

    update(app.store, collection, add)
    return chosen[0]


def _first_record(app: App, collection: str, pin: bool = False) -> VersionSet:
    """The record of a collection that has had one version so far, "as configured". With
    ``pin`` (when the record is first written) that version is pinned to the configured
    embedder and chunking if its vectors are the configured model's: what built it, then."""
    _, cid = app.locate(collection)
    built, dim = app.store.embedder_of(cid)
    info = next(c for c in app.store.collections() if c.name == collection)
    pinned = pin and (built, dim) == (app.embedder.model_id, app.embedder.dim)
    first = Version(
        1,
        collection,
        built,
        dim,
        embedder_spec(app.settings) if pinned else None,
        app.settings.chunking.model_dump() if pinned else None,
        info.created_at,
        READY,
    )
    return VersionSet(collection, (first,), active=1)


def _set(app: App, target: Target, **changes: Any) -> Version:
    """Change the version's entry in the record (state, gate) and return it."""

    def change(record: VersionSet | None) -> VersionSet:
        if record is None:
            raise StoreError(f"the versions record of {target.collection!r} disappeared")
        return record.put(replace(record.get(target.number), **changes))

    return update(app.store, target.collection, change).get(target.number)


def _rebuild(
    app: App,
    target: Target,
    records: Sequence[DocumentRecord],
    report: BuildReport,
    progress: Progress | None,
) -> None:
    from knowhub.ingest.discover import rediscover  # it loads the loaders: not at import

    present = [r for r in records if Path(r.disk_path).is_file()]
    report.missing = [r.source for r in records if not Path(r.disk_path).is_file()]
    done = 0
    groups = rediscover(present)
    for number, group in enumerate(groups, start=1):
        step = None
        if progress is not None:
            step = _shifted(progress, done, report.embedded, len(present), number == len(groups))
        outcome = app.ingest(
            group.paths,
            target.collection,
            group.tags,
            include=group.include,
            exclude=[],
            progress=step,
            version=target.number,
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


def _copy_faq(app: App, base: Target, target: Target) -> int:
    """The base version's FAQ entries, embedded again by the new version's embedder."""
    base_cid = app.store.collection_id(base.physical)
    entries = app.store.faq(base_cid) if base_cid is not None else []
    if not entries:
        return 0
    cid = app.store.collection_id(target.physical)
    assert cid is not None, "the build created it"
    embedder = app.embedder_for(target)
    sources: dict[str, list[tuple[str, str, int]]] = {}
    for entry in entries:
        sources.setdefault(entry.source, []).append((entry.question, entry.answer, entry.line))
    for source, pairs in sources.items():
        vectors = np.stack([embedder.embed_query(question) for question, _, _ in pairs])
        app.store.replace_faq(cid, source, pairs, vectors)
    return len(entries)


# -- gate ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Pinned:
    """The runner's view of one version of a collection (``knowhub.eval.runner.Searcher``)."""

    app: App
    target: Target

    def ingest(
        self,
        paths: Sequence[Path],
        collection: str | None = None,
        *,
        prune: bool = False,
        progress: Progress | None = None,
    ) -> IngestOutcome:
        return self.app.ingest(
            paths, collection, prune=prune, progress=progress, version=self.target.number
        )

    def search(
        self, query: str, collection: str | None = None, top_k: int | None = None
    ) -> SearchResult:
        return self.app.search(query, collection, top_k, version=self.target.number)

    def documents(self, collection: str | None = None) -> Sequence[DocumentRecord]:
        return self.app.documents(collection, version=self.target.number)

    def chunk(self, chunk_id: str) -> Sequence[Hit]:
        found = self.app.store.chunks_by_id(chunk_id.strip())
        return [
            replace(h, collection=self.target.collection)
            for h in found
            if h.collection == self.target.physical
        ]


def _run_gate(app: App, gate: GateCheck, base: Target, target: Target) -> GateRun:
    try:
        new = _measure(app, gate.evalset, target, judged=True)
    except BaseException:
        _set(app, target, state=FAILED)  # a version the gate could not measure is not proven
        raise
    compared: dict[str, float] = {}
    error = None
    try:  # only for comparison: the gate judges the new version alone
        compared = _measure(app, gate.evalset, base, judged=False).metrics
    except KnowhubError as exc:  # e.g. built with an embedder the configuration has left
        error = str(exc)
    return GateRun(
        check_gate(gate.key, gate.thresholds, new.metrics),
        str(gate.evalset.source),
        len(gate.evalset.queries),
        _rounded(new.metrics),
        base.number,
        _rounded(compared),
        error,
    )


def _rounded(metrics: dict[str, float]) -> dict[str, float]:
    return {name: round(value, 6) for name, value in metrics.items()}


def _measure(app: App, evalset: EvalSet, target: Target, judged: bool) -> EvalResult:
    searcher = _Pinned(app, target)
    if judged:  # every expected source must be in the version, else it could only score 0
        check_judgments(searcher, evalset, target.collection)
    return run_queries(searcher, evalset, target.collection, _GATE_TOP_K)


# -- switch, list, drop -------------------------------------------------------------------


def activate_version(app: App, collection: str | None, number: int, force: bool = False) -> int:
    """Make version ``number`` the active one; returns the number of the one it replaced.

    A building or failed version is refused unless ``force``; one without data always.
    """
    name = app.resolve(collection).collection
    if read_versions(app.store, name) is None and number == 1:
        app.locate(name)  # an unknown collection is an error
        return 1  # it never had another version: nothing to switch

    def change(record: VersionSet | None) -> VersionSet:
        current = record or _first_record(app, name)
        version = current.get(number)
        if version.state != READY and not force:
            raise QueryError(
                f"version {number} of {name!r} is {version.state}"
                + (" (its gate failed)" if version.gate and not version.gate["passed"] else "")
                + ": activate it anyway with --force, or build another"
            )
        if app.store.collection_id(version.physical) is None:
            raise StoreError(f"version {number} of {name!r} has no data in the store: build it")
        if current.active == number:
            return current
        return replace(current, active=number, previous=current.active)

    was: list[int] = []
    update(app.store, name, _remember_active(change, was))
    return was[-1]


def rollback_version(app: App, collection: str | None) -> tuple[int, int]:
    """Make the previously active version active again; returns the numbers of the one now
    active and of the one it replaced (rolling back twice returns to where you started)."""
    name = app.resolve(collection).collection

    def change(record: VersionSet | None) -> VersionSet:
        if record is None or record.previous is None:
            raise QueryError(
                f"collection {name!r} has no previously active version to roll back to: "
                f"see `knowhub versions list --collection {name}`"
            )
        back = record.get(record.previous)
        return replace(record, active=back.number, previous=record.active)

    was: list[int] = []
    record = update(app.store, name, _remember_active(change, was))
    return record.active, was[-1]


def _remember_active(
    change: Callable[[VersionSet | None], VersionSet], was: list[int]
) -> Callable[[VersionSet | None], VersionSet]:
    """``change``, noting the version active before it (in the round that was written)."""

    def noting(record: VersionSet | None) -> VersionSet:
        was[:] = [1 if record is None else record.active]
        return change(record)

    return noting


def drop_version(app: App, collection: str | None, number: int, force: bool = False) -> Version:
    """Delete version ``number``: out of the record first (so nothing resolves to it any
    more), then its data. The active version is refused; a building one unless ``force``."""
    name = app.resolve(collection).collection
    dropped: list[Version] = []

    def change(record: VersionSet | None) -> VersionSet:
        current = record or _first_record(app, name)
        version = current.get(number)
        if number == current.active:
            raise QueryError(
                f"version {number} is the active version of {name!r}: activate another "
                "first (`knowhub versions activate`), then drop it"
            )
        if version.state == BUILDING and not force:
            raise QueryError(
                f"version {number} of {name!r} is still building; if its build died, "
                "drop it with --force"
            )
        dropped[:] = [version]
        rest = tuple(v for v in current.versions if v.number != number)
        previous = None if current.previous == number else current.previous
        return replace(current, versions=rest, previous=previous)

    update(app.store, name, change)
    cid = app.store.collection_id(dropped[0].physical)
    if cid is not None:
        app.store.drop_collection(cid)
    return dropped[0]


def list_versions(app: App, collection: str | None = None) -> list[VersionRow]:
    """Every version of ``collection`` (of every collection when None), oldest first."""
    names = (
        [app.resolve(collection).collection] if collection else [c.name for c in app.collections()]
    )
    counts = {c.name: (c.documents, c.chunks) for c in app.store.collections()}
    rows = []
    for name in names:
        record = read_versions(app.store, name) or _first_record(app, name)
        for version in record.versions:
            documents, chunks = counts.get(version.physical, (None, None))
            rows.append(
                VersionRow(
                    name,
                    version,
                    version.number == record.active,
                    version.number == record.previous,
                    documents,
                    chunks,
                )
            )
    return rows
