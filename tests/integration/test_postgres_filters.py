"""Filters in the postgres store: read through indexes, the same rows as the text test alone,
and the indexes reach databases made by an older knowhub."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import numpy as np
import psycopg
import pytest

from knowhub.lang.tokenize import query_tokens
from knowhub.models import Filters
from knowhub.providers.stores.pg_schema import PG_SCHEMA_VERSION
from knowhub.providers.stores.pg_search import dense_statement, lexical_statement
from knowhub.providers.stores.postgres import PostgresStore
from knowhub.testing.store_data import make_doc, new_collection, put
from tests.pg_server import PgServer

# Metadata values of every JSON kind, and filters on them, with the rows each must keep:
# the values' text as jsonb writes it, a list matching on any element.
METADATA: list[dict[str, Any]] = [
    {"n": 3},
    {"n": 3.0},
    {"n": 1.50},
    {"n": "3"},
    {"n": [3, "x"]},
    {"n": True},
    {"n": None},
    {"n": {"a": 1}},
    {"n": [[1, 2]]},
    {"n": "NaN"},
    {},
]
EXPECTED: dict[str, set[int]] = {
    "3": {0, 3, 4},
    "3.0": {1},
    "1.5": {2},
    "1.50": set(),  # a Python float keeps no trailing zero
    "x": {4},
    "true": {5},
    "null": set(),
    '{"a": 1}': {7},
    "[1, 2]": {8},
    "NaN": {9},
}


@pytest.fixture
def store(pg_server: PgServer) -> Iterator[PostgresStore]:
    opened = PostgresStore(pg_server.create_database())
    yield opened
    opened.close()


def _explain(store: PostgresStore, statement: str, params: dict[str, Any]) -> str:
    with store._conn() as conn, conn.transaction():
        conn.execute("SET LOCAL enable_seqscan = off")  # a tiny table would be scanned anyway
        rows = conn.execute(f"EXPLAIN (FORMAT JSON) {statement}".encode(), params).fetchall()
    return json.dumps(rows)


def test_metadata_filters_keep_the_rows_their_text_names(store: PostgresStore) -> None:
    cid = new_collection(store)
    texts = [f"shared row{i}" for i in range(len(METADATA))]
    put(store, cid, make_doc("kinds.md", texts, chunk_metadata=METADATA))
    query = np.full(16, 0.25, dtype=np.float32)

    def found(filters: Filters) -> tuple[set[int], set[int]]:
        def rows(hits: list[tuple[int, float]]) -> set[int]:
            found = store.hits([i for i, _ in hits]).values()
            return {int(h.text.removeprefix("shared row")) for h in found}

        return (
            rows(store.lexical_search(cid, query_tokens("shared"), 50, filters)),
            rows(store.dense_search(cid, query, 50, filters)),
        )

    for value, expected in EXPECTED.items():
        assert found({"n": value}) == (expected, expected), value
    assert found({"n": ("3.0", "x", "absent")}) == ({1, 4}, {1, 4})


def test_a_selective_metadata_filter_reads_the_metadata_index(store: PostgresStore) -> None:
    cid = new_collection(store)
    teams = [{"team": f"t{i % 100}"} for i in range(1000)]
    put(store, cid, make_doc("a.md", [f"c{i}" for i in range(1000)], chunk_metadata=teams))
    with store._conn() as conn:
        conn.execute("ANALYZE knowhub.chunks")
    statement, params = dense_statement({"team": ("t3", "t7")}, cid, 16, exact=True)
    params.update(limit=5, query=np.full(16, 0.25, dtype=np.float32))
    assert "chunks_metadata" in _explain(store, statement, params)


def test_a_filtered_lexical_search_reads_the_chunks_once(store: PostgresStore) -> None:
    cid = new_collection(store)
    put(store, cid, make_doc("a.md", ["shared a"], metadata={"team": "a"}))
    for filters in ({"team": "a"}, {"source": "a.md", "language": "en"}):
        lexical = lexical_statement(filters, query_tokens("shared"))
        assert lexical is not None
        statement, params = lexical
        params.update(cid=cid, limit=5, k1=1.2, b=0.75)
        plan = json.loads(_explain(store, statement, params))
        relations = [n for n in _nodes(plan) if n.get("Relation Name") == "chunks"]
        assert len(relations) == 1, (filters, relations)  # no second pass to filter


def _nodes(plan: Any) -> Iterator[dict[str, Any]]:
    if isinstance(plan, dict):
        yield plan
        plan = list(plan.values())
    if isinstance(plan, list):
        for item in plan:
            yield from _nodes(item)


def test_opening_a_version_1_database_adds_the_filter_indexes(pg_server: PgServer) -> None:
    url = pg_server.create_database()
    store = PostgresStore(url)
    cid = new_collection(store)
    put(store, cid, make_doc("a.md", ["shared a"], metadata={"team": "a"}))
    store.close()
    with psycopg.connect(url, autocommit=True) as conn:  # as knowhub 1 left it
        for index in ("chunks_metadata", "chunks_language", "documents_source", "documents_format"):
            conn.execute(f"DROP INDEX knowhub.{index}".encode())
        conn.execute("UPDATE knowhub.meta SET value = '1' WHERE key = 'schema_version'")

    reopened = PostgresStore(url)
    try:
        indexes = {r[0] for r in reopened._all("SELECT indexname FROM pg_indexes")}
        assert {"chunks_metadata", "chunks_language", "documents_source"} <= indexes
        assert reopened._one("SELECT value FROM knowhub.meta WHERE key = 'schema_version'") == (
            PG_SCHEMA_VERSION,  # and on: every later upgrade applies too
        )
        assert len(reopened.lexical_search(cid, query_tokens("shared"), 5, {"team": "a"})) == 1
    finally:
        reopened.close()
