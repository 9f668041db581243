"""The Milvus store: a SQLite catalog, with vectors and BM25 served by Milvus.

Switched on with ``store: {provider: milvus}`` (milvus-lite, embedded in this process, in
``DATA_DIR/milvus.db``) or ``store: {provider: milvus, milvus: {uri: http://host:19530}}``
(a Milvus server or cluster). :class:`~knowhub.providers.stores.indexed.catalog.IndexedStore`
keeps documents, chunk text and a copy of every vector in ``DATA_DIR/knowhub-milvus.sqlite3``
and decides which rows exist; :class:`MilvusIndex` holds one Milvus collection per knowhub
collection and runs both search legs, filters inside each:

* ``vector``: the chunk's L2-normalised embedding, searched by COSINE similarity. milvus-lite
  searches it exactly (FLAT: an embedded index stays small, and an exact scan keeps its
  rankings those of the SQLite store); a server builds HNSW, which Milvus only applies to
  sealed segments large enough to need it (it scans small and growing ones exactly).
* ``tokens``: knowhub's own per-language terms (jieba, Snowball, bigrams), space-separated.
  A Milvus BM25 function turns them into the ``sparse`` field, the lexical leg. The analyzer
  must not re-tokenize them: a server splits on whitespace only; milvus-lite has no such
  tokenizer, so it gets its ``standard`` one (``\\w+``, lower-cased), and any term that one
  would split or fold is spelled as hex first (:func:`_lexical_text`), one word to both.
* ``terms``: the :func:`~knowhub.providers.stores.indexed.index.filter_terms` of the chunk,
  matched with ``array_contains_any`` per filter group, the groups ANDed.

Every request reads at consistency level Strong, so a write is visible to the next search.
"""

from __future__ import annotations

import hashlib
import logging
import re
import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager, nullcontext
from pathlib import Path
from typing import Any

from knowhub.config import Settings, secret_unset
from knowhub.errors import StoreError
from knowhub.providers.embedders.base import Vectors
from knowhub.providers.stores.base import Store
from knowhub.providers.stores.indexed.catalog import IndexedStore
from knowhub.providers.stores.indexed.index import IndexRow
from knowhub.providers.stores.indexed.milvus_client import (
    Gate,
    lite_servers,
    load_grpc,
    load_pymilvus,
    open_server,
    quiet_pymilvus,
    reason,
)

__all__ = ["CATALOG_NAME", "LITE_NAME", "MilvusIndex", "create"]

CATALOG_NAME = "knowhub-milvus.sqlite3"  # beside, never instead of, the SQLite store's file
LITE_NAME = "milvus.db"  # a folder: pymilvus starts milvus-lite for a URI ending in .db

log = logging.getLogger("knowhub.store")

_PREFIX = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,127}")  # what Milvus accepts in a name
# Milvus limits: VARCHAR bytes, elements of an ARRAY, top-k of one search.
_MAX_VARCHAR = 65_535
_MAX_TERMS = 4_096
_MAX_TOPK = 16_384
_TERM_BYTES = 512  # a longer filter term is stored (and matched) as its sha256
_BATCH_BYTES = 8 << 20  # gRPC messages are capped (64 MB by default on a server)
_PAGE = 4_096  # ids per query: well under the 16,384-row result window
# milvus-lite searches rows still in its memtable by a slow scan (a 5,000-row memtable
# costs ~1 s per BM25 query, 60 ms once flushed), so the embedded one is flushed after this
# many rows, behind its Gate. A milvus-lite server (no gate: other processes search it)
# flushes itself at 128 MB; a Milvus server seals its segments itself.
_LITE_FLUSH_ROWS = 1_000
# HNSW on a server: Milvus's usual build parameters; ef >= top k is required.
_HNSW = {"M": 16, "efConstruction": 200}
_HNSW_EF = 128
# FTS5's bm25() constants (the SQLite store), so both backends weigh terms alike.
_BM25 = {"bm25_k1": 1.2, "bm25_b": 0.75}
_PLAIN = re.compile(r"[^\W_]+")  # a term milvus-lite's \w+ tokenizer keeps whole


class MilvusIndex:
    """Chunk vectors, BM25 and filter terms in Milvus: one collection per space."""

    name = "milvus"
    lexical = True

    def __init__(
        self,
        client: Any,
        *,
        lite: bool,
        gate: Gate | None = None,
        on_close: Callable[[], None] | None = None,
        batch_bytes: int = _BATCH_BYTES,
        page: int = _PAGE,
    ) -> None:
        """``client``: a connected ``MilvusClient``; ``lite``: it talks to milvus-lite;
        ``gate``: shared by every index of one embedded milvus-lite (none for a server);
        ``on_close``: called once when the index closes (releases a milvus-lite server);
        ``batch_bytes``, ``page``: the most bytes one upsert sends, ids one request names
        (the defaults; a test makes them small to see writes and reads go in parts)."""
        self._client = client
        self._batch_bytes = batch_bytes
        self._page = page
        self._lite = lite
        self._gate = gate
        self._on_close = on_close
        self._closed = False
        self._loaded: set[str] = set()  # spaces known to exist and loaded for search
        self._unflushed: dict[str, int] = {}
        self._flush_lock = threading.Lock()

    # -- spaces --------------------------------------------------------------------------

    def create(self, space: str, dim: int) -> None:
        if self._exists(space):
            return
        pymilvus = load_pymilvus()
        with self._rpc(f"creating collection {space}"):
            schema = self._client.create_schema(auto_id=False, enable_dynamic_field=False)
            self._add_fields(pymilvus, schema, dim)
            self._client.create_collection(space, schema=schema, consistency_level="Strong")
            # milvus-lite indexes synchronously; waiting would only poll (0.5 s a round).
            self._client.create_index(space, self._index_params(), sync=not self._lite)
            self._client.load_collection(space)
        self._loaded.add(space)

    def _add_fields(self, pymilvus: Any, schema: Any, dim: int) -> None:
        types = pymilvus.DataType
        analyzer = {"tokenizer": "standard" if self._lite else "whitespace"}
        schema.add_field("id", types.INT64, is_primary=True)
        schema.add_field("vector", types.FLOAT_VECTOR, dim=dim)
        schema.add_field(
            "terms",
            types.ARRAY,
            element_type=types.VARCHAR,
            max_capacity=_MAX_TERMS,
            max_length=_TERM_BYTES,
        )
        schema.add_field(
            "tokens",
            types.VARCHAR,
            max_length=_MAX_VARCHAR,
            enable_analyzer=True,
            analyzer_params=analyzer,
        )
        schema.add_field("sparse", types.SPARSE_FLOAT_VECTOR)
        schema.add_function(
            pymilvus.Function(
                name="bm25",
                function_type=pymilvus.FunctionType.BM25,
                input_field_names=["tokens"],
                output_field_names=["sparse"],
            )
        )

    def _index_params(self) -> Any:
        params = self._client.prepare_index_params()
        if self._lite:
            params.add_index("vector", index_type="FLAT", metric_type="COSINE")
        else:
            params.add_index("vector", index_type="HNSW", metric_type="COSINE", params=_HNSW)
        params.add_index(
            "sparse", index_type="SPARSE_INVERTED_INDEX", metric_type="BM25", params=_BM25
        )
        return params

    def drop(self, space: str) -> None:
        with self._rpc(f"dropping collection {space}"):
            if self._client.has_collection(space):
                self._client.drop_collection(space)
        self._loaded.discard(space)

    def _exists(self, space: str) -> bool:
        """Whether the space exists, loaded for search: milvus-lite starts every collection
        released, and a server may have released one since."""
        self._check_open()
        if space in self._loaded:
            return True
        with self._rpc(f"opening collection {space}"):
            if not self._client.has_collection(space):
                return False
            self._client.load_collection(space)
        self._loaded.add(space)
        return True

    # -- writes --------------------------------------------------------------------------

    def upsert(self, space: str, rows: Sequence[IndexRow], vectors: Vectors) -> None:
        records = [_record(row, vector) for row, vector in zip(rows, vectors, strict=True)]
        if not self._exists(space):
            raise StoreError(f"milvus: collection {space} does not exist: reopen the store")
        for batch in _batches(records, self._batch_bytes):
            with self._writing(f"writing {len(batch)} rows to {space}"):
                self._client.upsert(space, batch)
        if self._gate is not None:  # embedded milvus-lite; see _LITE_FLUSH_ROWS
            self._maybe_flush(space, len(records))

    def _maybe_flush(self, space: str, written: int) -> None:
        with self._flush_lock:
            pending = self._unflushed.get(space, 0) + written
            self._unflushed[space] = 0 if pending >= _LITE_FLUSH_ROWS else pending
        if pending >= _LITE_FLUSH_ROWS:
            with self._writing(f"flushing {space}"):
                self._client.flush(space)

    def delete(self, space: str, ids: Sequence[int]) -> None:
        if not ids or not self._exists(space):
            return
        for start in range(0, len(ids), self._page):
            part = [int(i) for i in ids[start : start + self._page]]
            with self._writing(f"deleting {len(part)} rows from {space}"):
                self._client.delete(space, ids=part)

    # -- search --------------------------------------------------------------------------

    def dense_search(
        self, space: str, query: Vectors, limit: int, groups: Sequence[Sequence[str]]
    ) -> list[tuple[int, float]]:
        params: dict[str, Any] = {"metric_type": "COSINE"}
        if not self._lite:
            params["params"] = {"ef": max(_HNSW_EF, min(limit, _MAX_TOPK))}
        return self._search(space, query, "vector", params, limit, groups)

    def lexical_search(
        self, space: str, tokens: Sequence[str], limit: int, groups: Sequence[Sequence[str]]
    ) -> list[tuple[int, float]]:
        if not tokens:
            return []
        found = self._search(
            space, _lexical_text(tokens), "sparse", {"metric_type": "BM25"}, limit, groups
        )
        # A server reports the BM25 score, milvus-lite its negation (a distance): BM25 is
        # never negative, so its magnitude is the score either way; the order is Milvus's.
        return [(row_id, abs(distance)) for row_id, distance in found]

    def _search(
        self,
        space: str,
        data: Any,
        field: str,
        params: dict[str, Any],
        limit: int,
        groups: Sequence[Sequence[str]],
    ) -> list[tuple[int, float]]:
        expression = _filter_expression(groups)
        if limit <= 0 or expression is None or not self._exists(space):
            return []
        with self._reading(f"searching {space}"):
            results = self._client.search(
                space,
                data=[data],
                anns_field=field,
                limit=min(limit, _MAX_TOPK),
                filter=expression,
                search_params=params,
                output_fields=["id"],
                consistency_level="Strong",
            )
        return [(int(hit["id"]), float(hit["distance"])) for hit in results[0]]

    # -- inventory -----------------------------------------------------------------------

    def ids(self, space: str) -> set[int]:
        if not self._exists(space):
            return set()
        found: set[int] = set()
        with self._reading(f"listing the rows of {space}"):
            pages = self._client.query_iterator(space, batch_size=self._page, output_fields=["id"])
            try:
                while page := pages.next():
                    found.update(int(row["id"]) for row in page)
            finally:
                pages.close()
        return found

    def present(self, space: str, ids: Sequence[int]) -> set[int]:
        if not ids or not self._exists(space):
            return set()
        found: set[int] = set()
        for start in range(0, len(ids), self._page):
            part = [int(i) for i in ids[start : start + self._page]]
            with self._reading(f"reading rows of {space}"):
                rows = self._client.query(
                    space,
                    filter=f"id in {part}",
                    output_fields=["id"],
                    limit=len(part),
                    consistency_level="Strong",
                )
            found.update(int(row["id"]) for row in rows)
        return found

    # -- lifetime ------------------------------------------------------------------------

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        try:
            self._client.close()
        finally:
            if self._on_close is not None:
                self._on_close()

    def _check_open(self) -> None:
        if self._closed:
            raise StoreError("the milvus index is closed: open the store again")

    @contextmanager
    def _reading(self, what: str) -> Iterator[None]:
        with self._gate.shared() if self._gate else nullcontext(), self._rpc(what):
            yield

    @contextmanager
    def _writing(self, what: str) -> Iterator[None]:
        with self._gate.exclusive() if self._gate else nullcontext(), self._rpc(what):
            yield

    @contextmanager
    def _rpc(self, what: str) -> Iterator[None]:
        """Turn pymilvus and gRPC errors into a StoreError saying what was being done."""
        self._check_open()
        pymilvus, grpc = load_pymilvus(), load_grpc()
        try:
            yield
        except (pymilvus.MilvusException, grpc.RpcError) as exc:
            raise StoreError(
                f"milvus: {what} failed: {reason(exc)}; check store.milvus in knowhub.yaml "
                "and that the server runs"
            ) from exc


# -- rows, terms and filters -----------------------------------------------------------------


def _record(row: IndexRow, vector: Vectors) -> dict[str, Any]:
    """One Milvus row; a row Milvus would refuse is a StoreError before anything is written."""
    tokens = _lexical_text(row.tokens.split())
    if len(tokens.encode()) > _MAX_VARCHAR:
        raise StoreError(
            f"milvus: chunk row {row.id} has {len(tokens.encode())} bytes of lexical terms, "
            f"over Milvus's VARCHAR limit of {_MAX_VARCHAR}: lower chunking.size"
        )
    if len(row.terms) > _MAX_TERMS:
        raise StoreError(
            f"milvus: chunk row {row.id} has {len(row.terms)} filter terms (metadata values), "
            f"over Milvus's array limit of {_MAX_TERMS}: shorten its metadata lists"
        )
    terms = [_stored_term(term) for term in row.terms]
    return {"id": row.id, "vector": vector, "terms": terms, "tokens": tokens}


def _lexical_text(tokens: Sequence[str]) -> str:
    """Terms joined by spaces, each one word to whitespace and ``\\w+`` tokenizers alike.

    knowhub's terms are lower-case letters and digits, which pass as they are; any other
    (an underscore, a mark, a capital: from an imported bundle, say) is written as ``_``
    and its UTF-8 in hex, which no plain term can equal (plain terms hold no ``_``).
    """
    return " ".join(
        token if _PLAIN.fullmatch(token) and token == token.lower() else "_" + token.encode().hex()
        for token in tokens
    )


def _stored_term(term: str) -> str:
    """A filter term as stored and matched: itself, or its sha256 when longer than an
    array element may be (a term always holds the key separator, a digest never does)."""
    if len(term.encode()) <= _TERM_BYTES:
        return term
    return "sha256:" + hashlib.sha256(term.encode()).hexdigest()


def _filter_expression(groups: Sequence[Sequence[str]]) -> str | None:
    """The Milvus boolean expression of filter groups: "" for none, None when a group is
    empty (nothing can match it)."""
    if any(not group for group in groups):
        return None
    return " and ".join(
        f"array_contains_any(terms, [{', '.join(_literal(_stored_term(t)) for t in group)}])"
        for group in groups
    )


def _literal(text: str) -> str:
    """A string literal of Milvus's expression grammar (and milvus-lite's, which knows only
    the escapes ``\\\\ \\" \\' \\n \\r \\t``): every other character stands for itself."""
    escaped = (
        text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n").replace("\r", "\\r")
    )
    return f'"{escaped}"'


def _batches(records: list[dict[str, Any]], limit: int) -> Iterator[list[dict[str, Any]]]:
    """Records in batches of at most ``limit`` bytes (estimated), each non-empty."""
    batch: list[dict[str, Any]] = []
    size = 0
    for record in records:
        weight = 64 + 4 * len(record["vector"]) + len(record["tokens"]) * 3
        weight += sum(len(term) * 3 for term in record["terms"])
        if batch and size + weight > limit:
            yield batch
            batch, size = [], 0
        batch.append(record)
        size += weight
    if batch:
        yield batch


def _token(settings: Settings) -> str:
    env = settings.store.milvus.token_env
    if not env:
        return ""
    token = settings.secret(env)
    if not token:
        what = "the Milvus token (user:password, or an API key)"
        raise StoreError(secret_unset("store.milvus.token_env", env, what))
    return token


def create(settings: Settings, *, batch_bytes: int = _BATCH_BYTES, page: int = _PAGE) -> Store:
    """The store ``settings`` name (``batch_bytes``, ``page``: as :class:`MilvusIndex`
    takes them; the registry passes the settings alone)."""
    # Typed as the contract, so mypy proves IndexedStore keeps every method of it.
    options = settings.store.milvus
    if not _PREFIX.fullmatch(options.prefix):
        raise StoreError(
            f"store.milvus.prefix {options.prefix!r} is not a Milvus name: use letters, digits "
            "and _ (not starting with a digit)"
        )
    data_dir = Path(settings.data_dir)
    data_dir.mkdir(parents=True, exist_ok=True)
    load_pymilvus()
    quiet_pymilvus()  # after pymilvus configured its loggers on import
    if options.uri:
        client, lite = open_server(options.uri, _token(settings), options.db_name)
        index = MilvusIndex(client, lite=lite, batch_bytes=batch_bytes, page=page)
    else:
        client, gate, release = lite_servers.open(data_dir / LITE_NAME, options.db_name)
        index = MilvusIndex(
            client, lite=True, gate=gate, on_close=release, batch_bytes=batch_bytes, page=page
        )
    try:
        return IndexedStore(data_dir / CATALOG_NAME, index, options.prefix)
    except BaseException:
        index.close()
        raise
