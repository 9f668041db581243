"""The peers of ``benchmarks/scale.py``: LanceDB, Chroma and qdrant-client's local mode.

Each gets the same texts, vectors (cosine = dot: they are unit length), teams and query
vectors as knowhub, and returns corpus indices as ids. Their SDKs are the ``bench`` extra
(``pip install -e '.[bench]'``), imported only here and only when that peer runs.

- LanceDB: no vector index, so its vector search is an exact scan; its native full-text
  index on the raw text (its own tokenizer, stemming and stopwords); a bitmap index on
  ``team`` for the prefilter; hybrid = both fused by its ``RRFReranker``.
- Chroma: ``PersistentClient``, HNSW (its defaults), dense only, ``where={"team": "t3"}``.
- qdrant: ``QdrantClient(path=...)``, the local mode (exact numpy scan, payload filter in
  Python), dense only.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import partial
from pathlib import Path
from typing import Any

from benchmarks.scale_corpus import DIM, F32, FILTER_TEAM, Corpus, log, team_of, timed

_LANCE_WHERE = f"team = '{FILTER_TEAM}'"
_BATCH = 5_000


def _teams(start: int, count: int) -> list[str]:
    return [team_of(i) for i in range(start, start + count)]


# -- LanceDB ---------------------------------------------------------------------------


def lance_build(folder: Path, corpus: Corpus) -> Any:
    import lancedb
    import pyarrow as pa

    schema = pa.schema(
        [
            ("id", pa.int64()),
            ("text", pa.string()),
            ("team", pa.string()),
            ("vector", pa.list_(pa.float32(), DIM)),
        ]
    )

    def batches() -> Any:
        for start, texts, _, vectors in corpus.batches(_BATCH * 10):
            flat = pa.array(vectors.reshape(-1), type=pa.float32())
            yield pa.RecordBatch.from_arrays(
                [
                    pa.array(range(start, start + len(texts)), type=pa.int64()),
                    pa.array(texts),
                    pa.array(_teams(start, len(texts))),
                    pa.FixedSizeListArray.from_arrays(flat, DIM),
                ],
                schema=schema,
            )
            log(f"  lancedb wrote {start + len(texts):,}/{corpus.n:,}")

    table = lancedb.connect(folder).create_table("bench", data=batches(), schema=schema)
    table.create_fts_index("text")
    table.create_scalar_index("team", index_type="BITMAP")
    return table


def lance_measure(table: Any, queries: Sequence[str], vectors: F32) -> dict[str, Any]:
    from lancedb.rerankers import RRFReranker

    reranker = RRFReranker()

    def vector(q: int, where: str | None) -> Any:
        query = table.search(vectors[q]).distance_type("dot").limit(10).select(["id"])
        return (query.where(where, prefilter=True) if where else query).to_arrow()

    def hybrid(q: int, where: str | None) -> Any:
        query = (
            table.search(query_type="hybrid")
            .vector(vectors[q])
            .text(queries[q])
            .distance_type("dot")
            .rerank(reranker)
            .limit(10)
            .select(["id"])
        )
        return (query.where(where, prefilter=True) if where else query).to_arrow()

    def ids(found: Any) -> list[int]:
        return [int(i) for i in found.column("id").to_pylist()]

    modes = {}
    for mode, run in (("vector", vector), ("hybrid", hybrid)):
        for suffix, where in (("", None), ("_filter", _LANCE_WHERE)):
            modes[mode + suffix] = timed(partial(run, where=where), len(queries), ids)
            log(f"  lancedb {mode + suffix} done")
    return modes


# -- Chroma ----------------------------------------------------------------------------


def _chroma_client(folder: Path) -> Any:
    import chromadb
    from chromadb.config import Settings

    return chromadb.PersistentClient(str(folder), Settings(anonymized_telemetry=False))


def chroma_build(folder: Path, corpus: Corpus) -> Any:
    client = _chroma_client(folder)
    collection = client.create_collection("bench", metadata={"hnsw:space": "ip"})
    step = min(_BATCH, int(client.get_max_batch_size()))
    for start, texts, _, vectors in corpus.batches(step):
        collection.add(
            ids=[str(i) for i in range(start, start + len(texts))],
            embeddings=vectors,
            documents=texts,
            metadatas=[{"team": t} for t in _teams(start, len(texts))],
        )
        if (start + len(texts)) % 50_000 < step:
            log(f"  chroma wrote {start + len(texts):,}/{corpus.n:,}")
    return collection


def chroma_measure(collection: Any, queries: Sequence[str], vectors: F32) -> dict[str, Any]:
    def vector(q: int, where: dict[str, str] | None) -> Any:
        return collection.query(
            query_embeddings=vectors[q : q + 1], n_results=10, where=where, include=[]
        )

    def ids(found: Any) -> list[int]:
        return [int(i) for i in found["ids"][0]]

    modes = {}
    for mode, where in (("vector", None), ("vector_filter", {"team": FILTER_TEAM})):
        modes[mode] = timed(partial(vector, where=where), len(queries), ids)
        log(f"  chroma {mode} done")
    return modes


# -- qdrant-client, local mode -----------------------------------------------------------


def qdrant_build(folder: Path, corpus: Corpus) -> Any:
    from qdrant_client import QdrantClient, models

    client = QdrantClient(path=str(folder))
    client.create_collection(
        "bench", vectors_config=models.VectorParams(size=DIM, distance=models.Distance.DOT)
    )
    for start, _, _, vectors in corpus.batches(_BATCH):
        client.upload_collection(
            "bench",
            vectors=vectors,
            ids=range(start, start + len(vectors)),
            payload=[{"team": t} for t in _teams(start, len(vectors))],
        )
        if (start + len(vectors)) % 50_000 < _BATCH:
            log(f"  qdrant wrote {start + len(vectors):,}/{corpus.n:,}")
    return client


def qdrant_measure(client: Any, queries: Sequence[str], vectors: F32) -> dict[str, Any]:
    from qdrant_client import models

    team = models.Filter(
        must=[models.FieldCondition(key="team", match=models.MatchValue(value=FILTER_TEAM))]
    )

    def vector(q: int, where: Any) -> Any:
        return client.query_points("bench", query=vectors[q], limit=10, query_filter=where)

    def ids(found: Any) -> list[int]:
        return [int(p.id) for p in found.points]

    modes = {}
    for mode, where in (("vector", None), ("vector_filter", team)):
        modes[mode] = timed(partial(vector, where=where), len(queries), ids)
        log(f"  qdrant {mode} done")
    return modes
