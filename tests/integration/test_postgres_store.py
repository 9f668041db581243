"""The postgres store end to end: `knowhub ingest`, `search` and `ask` as a user runs them,
switched by configuration alone, give the same hits as the embedded SQLite store.

Both backends score BM25 alike and search vectors exactly on a corpus this small, so the
fused rankings must agree chunk for chunk, in order.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from knowhub import load_settings
from knowhub.errors import StoreError
from knowhub.providers.stores import postgres
from knowhub.providers.stores.postgres import create, display_url
from knowhub.testing.store_data import make_doc, new_collection, put
from tests.helpers import knowhub, write
from tests.pg_server import PgServer

URL_ENV = "KNOWHUB_TEST_PG_URL"

CORPUS = {
    "ops/backups.md": "# Backups\n\nBackups run every night at 02:30 and are kept for 35 days.\n\n"
    "## Restore\n\nRestoring a backup takes about an hour; ask the on-call engineer.\n",
    "ops/monitoring.md": "# Monitoring\n\nAlerts go to the on-call engineer by pager.\n\n"
    "Dashboards show disk usage, backups and error rates per service.\n",
    "hr/travel.md": "# Travel\n\nHotel costs are refunded up to 150 euros per night.\n\n"
    "Book trains rather than flights for trips under four hours.\n",
    "hr/leave.txt": "Every employee has 28 days of paid leave per year.\n\n"
    "Unused leave days expire at the end of March.\n",
    "zh/报销.md": "# 报销\n\n出差住宿每晚最多报销六百元。\n\n火车票凭发票报销。\n",
    "ru/копии.txt": "Резервные копии хранятся тридцать пять дней.\n\n"
    "Восстановление занимает около часа.\n",
}
# Each is two CLI runs (~1.5 s each): a few, in each language and both legs' terms.
QUERIES = ["when do backups run", "出差住宿报销", "сколько хранятся копии", "on-call engineer"]


def _run(cwd: Path, env: dict[str, str], *args: str) -> Any:
    result = knowhub(*args, "--json", cwd=cwd, env=env)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def _hits(cwd: Path, env: dict[str, str], query: str) -> list[tuple[str, str]]:
    return [(h["chunk_id"], h["source"]) for h in _run(cwd, env, "search", query, "-k", "8")]


def _answer(cwd: Path, env: dict[str, str], question: str) -> tuple[str, list[str]]:
    answer = _run(cwd, env, "ask", question)
    return answer["answer"], [s["chunk_id"] for s in answer["sources"]]


def test_ingest_search_and_ask_match_sqlite(tmp_path: Path, pg_server: PgServer) -> None:
    for name, text in CORPUS.items():
        write(tmp_path / "docs" / name, text)
    docs = str(tmp_path / "docs")
    sqlite_dir, pg_dir = tmp_path / "sqlite", tmp_path / "pg"
    sqlite_dir.mkdir()
    pg_dir.mkdir()
    sqlite_env: dict[str, str] = {}
    pg_env = {
        "KNOWHUB_STORE__PROVIDER": "postgres",
        "KNOWHUB_STORE__POSTGRES__URL_ENV": URL_ENV,
        URL_ENV: pg_server.create_database(),
    }

    for cwd, env in ((sqlite_dir, sqlite_env), (pg_dir, pg_env)):
        summary = knowhub("ingest", docs, cwd=cwd, env=env)
        assert summary.returncode == 0, summary.stderr
        assert "6 added" in summary.stdout and "0 failed" in summary.stdout
    assert not (pg_dir / "data" / "knowhub.sqlite3").exists(), "postgres run wrote SQLite"

    for query in QUERIES:
        expected = _hits(sqlite_dir, sqlite_env, query)
        assert expected, query
        assert _hits(pg_dir, pg_env, query) == expected, query
    question = "how long are backups kept"
    assert _answer(pg_dir, pg_env, question) == _answer(sqlite_dir, sqlite_env, question)


def test_a_missing_url_or_server_is_a_clear_error(tmp_path: Path) -> None:
    unset = load_settings(
        env={"KNOWHUB_STORE__PROVIDER": "postgres", "KNOWHUB_STORE__POSTGRES__URL_ENV": URL_ENV},
        cwd=tmp_path,
    )
    with pytest.raises(StoreError, match=URL_ENV):
        create(unset)

    url = "postgresql://kb:s3cret@127.0.0.1:1/kb"  # nothing listens on port 1
    down = load_settings(
        env={
            "KNOWHUB_STORE__PROVIDER": "postgres",
            "KNOWHUB_STORE__POSTGRES__URL_ENV": URL_ENV,
            URL_ENV: url,
        },
        cwd=tmp_path,
    )
    with pytest.raises(StoreError) as refused:
        create(down)
    message = str(refused.value)
    assert display_url(url) in message and "127.0.0.1:1" in message
    assert "s3cret" not in message


def test_large_collections_search_through_the_hnsw_index(pg_server: PgServer) -> None:
    # Every collection is "large".
    store = postgres.PostgresStore(pg_server.create_database(), exact_search_max_chunks=10)
    try:
        cid = new_collection(store)
        doc = put(store, cid, make_doc("a.md", [f"chunk {i}" for i in range(60)], seed=3))
        put(store, cid, make_doc("b.md", ["other"], seed=4, metadata={"team": "b"}))
        with store._conn() as conn:  # the plan must really use the partial index
            conn.execute("SET enable_seqscan = off")
            plan = conn.execute(
                f"EXPLAIN SELECT id FROM knowhub.chunks k WHERE k.collection_id = {cid} "
                "ORDER BY k.embedding::vector(16) <=> %s::vector(16) LIMIT 5",
                (doc.vectors[0],),
            ).fetchall()
            conn.execute("RESET enable_seqscan")
        assert f"chunks_hnsw_{cid}" in str(plan)
        [(best, score)] = store.dense_search(cid, doc.vectors[17], 1, {})
        assert store.hits([best])[best].text == "chunk 17"
        assert score == pytest.approx(1.0, abs=1e-5)
        found = store.dense_search(cid, doc.vectors[17], 5, {"team": "b"})
        assert [store.hits([i])[i].text for i, _ in found] == ["other"]
    finally:
        store.close()
