"""A fresh process's first search on a built collection: ``benchmarks/scale.py``'s cold open.

    python -m benchmarks.scale_cold SYSTEM FOLDER < {"query": ..., "vector": [...]}

Kept apart from the other benchmark modules so that a peer's cold start does not pay for
knowhub's imports (nor knowhub's for a peer's): this imports only the system it opens. The
caller times the whole process; this prints what it took from its first line on.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import Any

STARTED = time.perf_counter()


def knowhub(folder: Path, query: str, vector: Any) -> None:
    from knowhub.config import SearchSettings
    from knowhub.providers.embedders.hashing import HashingEmbedder
    from knowhub.providers.stores.sqlite import DB_NAME, SQLiteStore
    from knowhub.query.pipeline import SearchRequest, search

    store = SQLiteStore(folder / DB_NAME)
    request = SearchRequest(query, "bench", top_k=10)
    search(store, HashingEmbedder(len(vector)), SearchSettings(), request)


def lancedb(folder: Path, query: str, vector: Any) -> None:
    import lancedb
    from lancedb.rerankers import RRFReranker

    table: Any = lancedb.connect(folder).open_table("bench")
    (
        table.search(query_type="hybrid")
        .vector(vector)
        .text(query)
        .distance_type("dot")
        .rerank(RRFReranker())
        .limit(10)
        .to_arrow()
    )


def chroma(folder: Path, query: str, vector: Any) -> None:
    import chromadb
    from chromadb.config import Settings

    client = chromadb.PersistentClient(str(folder), Settings(anonymized_telemetry=False))
    client.get_collection("bench").query(query_embeddings=[vector], n_results=10, include=[])


def qdrant(folder: Path, query: str, vector: Any) -> None:
    from qdrant_client import QdrantClient

    QdrantClient(path=str(folder)).query_points("bench", query=vector, limit=10)


def main() -> None:
    system, folder = sys.argv[1], Path(sys.argv[2])
    given = json.load(sys.stdin)
    {"knowhub": knowhub, "lancedb": lancedb, "chroma": chroma, "qdrant": qdrant}[system](
        folder, given["query"], given["vector"]
    )
    print(json.dumps({"first_search_s": round(time.perf_counter() - STARTED, 3)}))


if __name__ == "__main__":
    main()
