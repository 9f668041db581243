"""``knowhub verify``: prove an index matches the files it was built from, and repair it.

Everything is read through the :class:`~knowhub.providers.stores.base.Store` contract, so
the same checks hold for every backend. Per document: its file exists and is unchanged
(size and mtime, or the sha256 when those moved), and each of its chunks is present in
both the dense and the lexical leg. Per collection: no orphan rows, the embedder it
was built with is the configured one, and every file of its console uploads folder is a
document (:func:`~knowhub.ingest.uploads.leftovers`: a given-up upload's files are ingested
by the repair with its tags, as its uploader; a part file a stopped upload left is deleted; a
file no record owns is only reported, its tags unknown). Repair goes through
the ingest pipeline, so a fixed document is byte-for-byte what a fresh ingest would write.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from knowhub.errors import KnowhubError, LoaderError
from knowhub.ingest.discover import rediscover
from knowhub.ingest.loaders.reading import open_regular
from knowhub.ingest.members import container_path
from knowhub.ingest.pipeline import IngestReport
from knowhub.ingest.uploads import Leftovers, Queue, QueuedUpload
from knowhub.models import DocumentRecord
from knowhub.providers.stores.base import Store

__all__ = ["Problem", "Reingest", "Uploads", "VerifyReport", "render_verify", "verify_index"]

Reingest = Callable[[Sequence[Path], str, Mapping[str, str], Sequence[str]], IngestReport]
"""``reingest(paths, collection, tags, include)``: an ingest run (``Collection.ingest``)."""


@dataclass(frozen=True)
class Uploads:
    """The console's uploads, as verify checks and repairs them (``App.verify`` builds this)."""

    queue: Queue
    leftovers: Callable[[str, set[Path]], Leftovers]
    """``leftovers(collection, indexed)``: what its uploads folder holds that ``indexed``
    (its documents' resolved paths) does not."""
    ingest_as: Callable[[QueuedUpload, Sequence[Path]], IngestReport]
    """Ingest files of an upload with its tags, as its uploader (within its data scope)."""


# Kinds a re-ingest of the document repairs (the file is there, its index rows are not whole).
_INCOMPLETE = {"missing_chunks", "missing_lexical", "missing_vector", "bad_vector", "foreign"}
_UPLOADS = {"unindexed_upload", "partial_upload", "given_up_upload"}  # see _repair_uploads


@dataclass(frozen=True)
class Problem:
    """One way the index differs from its files; ``subject`` is a source or a chunk id."""

    collection: str
    kind: str
    subject: str
    detail: str
    path: str = ""

    def line(self) -> str:
        where = f"{self.collection}: " if self.collection else ""  # "": the data dir's
        return f"{where}{self.subject}: {self.detail}"


@dataclass
class VerifyReport:
    """What verify found (and, with ``--fix``, what it repaired before checking again)."""

    collections: list[str]
    documents: int = 0
    chunks: int = 0
    problems: list[Problem] = field(default_factory=list)
    info: list[str] = field(default_factory=list)
    fixed: list[str] = field(default_factory=list)
    found_before_fix: list[Problem] = field(default_factory=list)
    fix_failed: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.problems and not self.fix_failed

    def to_dict(self) -> dict[str, Any]:
        return {
            "ok": self.ok,
            "collections": self.collections,
            "documents": self.documents,
            "chunks": self.chunks,
            "problems": [asdict(p) for p in self.problems],
            "info": self.info,
            "fixed": self.fixed,
            "fix_failed": self.fix_failed,
            "found_before_fix": [asdict(p) for p in self.found_before_fix],
        }


def verify_index(
    store: Store,
    embedders: Mapping[str, tuple[str, int]],
    reingest: Reingest | None = None,
    uploads: Uploads | None = None,
) -> VerifyReport:
    """Check each collection of ``embedders`` against its files (and, with ``uploads``, its
    uploads folder); with ``reingest``, repair them and check again. ``embedders``:
    collection → the (model id, dim) it must have."""
    report = _check(store, embedders, uploads)
    if reingest is None or not report.problems:
        return report
    fixed, failed = _repair(store, report.problems, reingest, uploads)
    after = _check(store, embedders, uploads)
    after.found_before_fix = report.problems
    after.fixed, after.fix_failed = fixed, failed
    return after


def render_verify(report: VerifyReport) -> str:
    """The text form: repairs, then problems, then one summary line."""
    lines = [f"fixed: {f}" for f in report.fixed]
    lines += [f"not fixed: {f}" for f in report.fix_failed]
    lines += [f"problem: {p.line()}" for p in report.problems]
    lines += [f"info: {i}" for i in report.info]
    names = ", ".join(report.collections) or "no collections"
    counts = f"{report.documents} documents, {report.chunks} chunks in {names}"
    if report.problems:
        lines.append(
            f"FAILED: {len(report.problems)} problems in {counts}; "
            "`knowhub verify --fix` repairs them"
        )
    elif report.fix_failed:
        lines.append(f"FAILED: {len(report.fix_failed)} repairs did not succeed ({counts})")
    else:
        lines.append(f"ok: {counts} match their files; both search legs are whole")
    return "\n".join(lines)


# -- checks -----------------------------------------------------------------------------


def _check(
    store: Store, embedders: Mapping[str, tuple[str, int]], uploads: Uploads | None
) -> VerifyReport:
    report = VerifyReport(list(embedders))
    for name, embedder in embedders.items():
        cid = store.collection_id(name)
        if cid is None:
            report.problems.append(
                Problem(name, "collection", name, "no such collection: ingest into it first")
            )
            continue
        built = store.embedder_of(cid)
        if built != embedder:
            report.problems.append(
                Problem(
                    name,
                    "embedder",
                    name,
                    (
                        f"built with embedder {built[0]} (dim {built[1]}), but {embedder[0]} (dim "
                        f"{embedder[1]}) is configured: switch embedder.provider back, or "
                        "re-ingest into a new collection (--fix cannot change a collection's "
                        "embedder)"
                    ),
                )
            )
        for orphan in store.orphans(cid):
            report.problems.append(
                Problem(name, f"orphan_{orphan.kind}", orphan.key, _orphan_detail(orphan.kind))
            )
        indexed: set[Path] = set()
        for record in store.records(cid):
            report.documents += 1
            report.chunks += _check_document(store, cid, record, built[1], report)
            indexed.add(Path(container_path(record.disk_path)).resolve())
        if uploads is not None:
            _check_uploads(name, uploads.leftovers(name, indexed), report)
    if uploads is not None:
        _check_records(uploads.queue.records()[1], report)
    if not embedders:
        report.info.append("no collections yet: ingest something first")
    return report


def _check_uploads(name: str, found: Leftovers, report: VerifyReport) -> None:
    for path in found.unindexed:
        detail = (
            f"uploaded file {path} is no document, and no upload record says whose it is "
            "(its tags, and so who may read it, are unknown): `knowhub ingest "
            f"{path} --collection {name} --tag …` with its tags, or delete it"
        )
        report.problems.append(Problem(name, "unindexed_upload", path.name, detail, str(path)))
    for path, record in found.given_up.items():
        detail = (
            f"uploaded file {path} is of an upload given up after its ingest was cut short "
            f"too often (a file of it may stop the server; its record: {record}): `knowhub "
            "verify --fix` ingests it with that upload's tags, as its uploader; or delete "
            "the file and the record"
        )
        report.problems.append(Problem(name, "given_up_upload", path.name, detail, str(path)))
    for path in found.partial:
        detail = (
            f"{path} is part of a file an upload was receiving when the server stopped: "
            "`knowhub verify --fix` deletes it (upload the file again)"
        )
        report.problems.append(Problem(name, "partial_upload", path.name, detail, str(path)))
    for path, job in found.queued.items():
        report.info.append(
            f"{name}: {path.name}: queued by upload {job}, not yet ingested (`knowhub serve "
            "http` ingests it, resuming at its start if it was stopped)"
        )


def _check_records(unreadable: Mapping[Path, str], report: VerifyReport) -> None:
    for record, why in unreadable.items():
        detail = (
            f"upload job record {record} does not read ({why}), so no start resumes it: "
            "delete it (verify then reports its files, if any are left, as uploads that no "
            "document records)"
        )
        report.problems.append(Problem("", "bad_upload_record", record.name, detail, str(record)))


def _orphan_detail(kind: str) -> str:
    if kind == "chunk":
        return "chunk without a document"
    if kind == "derived":  # the SQLite store's search index, derived from its rows
        return "the search index differs from the store: --fix rebuilds it from the store"
    return f"{kind} index row without a chunk"


def _check_document(
    store: Store, cid: int, record: DocumentRecord, dim: int, report: VerifyReport
) -> int:
    """Append the document's problems to ``report``; return its stored chunk count."""

    def problem(kind: str, subject: str, detail: str) -> None:
        report.problems.append(Problem(record.collection, kind, subject, detail, record.path))

    state = _file_state(record)
    if state == "missing":
        problem("missing_file", record.source, f"file {record.path} is gone (--fix removes it)")
    elif state == "changed":
        problem(
            "changed_file",
            record.source,
            f"file {record.path} changed since it was indexed (sha256 differs)",
        )
    elif state == "touched":
        report.info.append(f"{record.collection}: {record.source}: mtime moved, content same")
    stored = store.stored_chunks(cid, record.path)
    present = {s.chunk.index for s in stored}
    gaps = [i for i in range(record.chunk_count) if i not in present]
    if gaps or len(stored) != record.chunk_count:
        shown = ", ".join(map(str, gaps[:10])) + (" …" if len(gaps) > 10 else "")
        problem(
            "missing_chunks",
            record.source,
            (
                f"has {len(stored)} of its {record.chunk_count} chunks"
                + (f" (missing index {shown})" if gaps else "")
            ),
        )
    for item in stored:
        chunk = item.chunk
        if item.tokens is None:
            problem(
                "missing_lexical",
                chunk.chunk_id,
                f"chunk of {record.source} has no lexical (BM25) row",
            )
        if item.vector is None:
            problem("missing_vector", chunk.chunk_id, f"chunk of {record.source} has no vector")
        elif item.vector.shape != (dim,) or not np.all(np.isfinite(item.vector)):
            problem(
                "bad_vector",
                chunk.chunk_id,
                (
                    f"chunk of {record.source} has a vector of shape {item.vector.shape} "
                    f"(or non-finite values); the collection's dim is {dim}"
                ),
            )
        if chunk.chunk_id[:16] != record.doc_id[:16]:
            owner = f"{record.source} (document id {record.doc_id[:16]})"
            problem("foreign", chunk.chunk_id, f"chunk id is not one of {owner}")
    return len(stored)


def _file_state(record: DocumentRecord) -> str:
    """``same``, ``touched`` (mtime/size moved, bytes same), ``changed`` or ``missing``. A
    member of an archive is as its archive is (whose size and mtime it records)."""
    path = Path(container_path(record.disk_path))
    try:
        stat = path.stat()
    except OSError:
        return "missing"
    if (stat.st_size, stat.st_mtime_ns) == (record.size, record.mtime_ns):
        return "same"  # the ingest fast path trusts size+mtime too
    if str(path) != record.disk_path:
        return "changed"  # an archive: its member is read again by ingest, not here
    digest = hashlib.sha256()
    try:
        with open_regular(path) as file, open(file.fd, "rb", closefd=False) as handle:
            for block in iter(lambda: handle.read(1 << 20), b""):
                digest.update(block)
    except LoaderError:
        return "changed"  # no longer a regular file (a FIFO would block the read forever)
    except OSError:
        return "missing"
    return "touched" if digest.hexdigest() == record.doc_hash else "changed"


# -- repair -----------------------------------------------------------------------------


def _repair(
    store: Store, problems: Sequence[Problem], reingest: Reingest, uploads: Uploads | None
) -> tuple[list[str], list[str]]:
    fixed: list[str] = []
    failed: list[str] = []
    by_collection: dict[str, list[Problem]] = {}
    for p in problems:
        if p.collection:  # not the data dir's (a record verify cannot repair)
            by_collection.setdefault(p.collection, []).append(p)
    for name, found in by_collection.items():
        cid = store.collection_id(name)
        if cid is None:
            continue
        # Orphans first: a stray FTS row can hold the row id a re-ingest is about to reuse.
        if any(p.kind.startswith("orphan_") for p in found):
            fixed.append(f"{name}: removed {store.remove_orphans(cid)} orphan rows")
        f, bad = _repair_uploads(name, found, uploads)
        fixed += f
        failed += bad
        gone = {p.path for p in found if p.kind == "missing_file"}
        for p in found:
            if p.kind == "missing_file" and store.remove_document(cid, p.path):
                fixed.append(f"{name}: {p.subject}: removed (its file is gone)")
        records = {r.path: r for r in store.records(cid)}
        todo: dict[str, DocumentRecord] = {}
        for p in found:
            record = records.get(p.path)
            if record is None or record.path in gone or p.kind in _UPLOADS:
                continue
            if p.kind in _INCOMPLETE and record.path not in todo:
                # The file may be unchanged, which ingest skips: drop the rows, then rebuild.
                store.remove_document(cid, record.path)
            todo[record.path] = record
        if any(p.kind == "embedder" for p in found):
            failed += [
                f"{name}: {r.source}: not re-ingested: the collection's embedder "
                "differs from the configured one"
                for r in todo.values()
            ]
            continue
        f, bad = _reingest(name, list(todo.values()), reingest)
        fixed += f
        failed += bad
    return fixed, failed


def _repair_uploads(
    name: str, found: Sequence[Problem], uploads: Uploads | None
) -> tuple[list[str], list[str]]:
    """Delete part files; ingest given-up uploads as their uploaders, each with its tags,
    deleting its record once its files are in. A file no record owns is left: ingested
    without its tags it would be open to every tenant (docs/security.md)."""
    fixed: list[str] = []
    for p in found:
        if p.kind == "partial_upload":
            Path(p.path).unlink(missing_ok=True)
            fixed.append(f"{name}: {p.subject}: deleted (a part of an interrupted upload)")
    wanted = {Path(p.path).resolve() for p in found if p.kind == "given_up_upload"}
    if not wanted or uploads is None:
        return fixed, []
    failed: list[str] = []
    for record, upload in uploads.queue.records()[0].items():
        paths = [p for p in upload.paths(uploads.queue.data_dir) if p.resolve() in wanted]
        if upload.given_up and paths:
            f, bad = _ingest_given_up(name, upload, paths, uploads)
            if not bad and uploads.queue.remove(record):
                f.append(f"{name}: {record.name}: deleted (its upload's files are in)")
            fixed += f
            failed += bad
    return fixed, failed


def _ingest_given_up(
    name: str, upload: QueuedUpload, paths: Sequence[Path], uploads: Uploads
) -> tuple[list[str], list[str]]:
    try:
        result = uploads.ingest_as(upload, paths)
    except KnowhubError as exc:  # its tags outside its uploader's scope, say
        return [], [f"{name}: {p.name}: not ingested: {exc}" for p in paths]
    failed = [f"{name}: {s}: not ingested: {r}" for s, r in result.not_ingested().items()]
    done = f"ingested (given-up upload {upload.id}, with its tags)"
    return [f"{name}: {s}: {done}" for s in result.added + result.updated], failed


def _reingest(
    name: str, records: Sequence[DocumentRecord], reingest: Reingest
) -> tuple[list[str], list[str]]:
    """Ingest the records' files again so that each keeps its source (its citation name)."""
    fixed: list[str] = []
    failed: list[str] = []
    for group in rediscover(records):
        result = reingest(group.paths, name, group.tags, group.include)
        failures = result.not_ingested()
        for record in group.records:
            if record.source in failures:
                failed.append(
                    f"{name}: {record.source}: re-ingest failed: {failures[record.source]}"
                )
            elif record.source in result.added or record.source in result.updated:
                fixed.append(f"{name}: {record.source}: re-ingested")
            else:
                failed.append(f"{name}: {record.source}: re-ingest did not pick the file up")
    return fixed, failed
