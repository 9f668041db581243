"""The milvus store end to end: the real CLI and MCP server on milvus-lite, embedded and as a
server, switched by the README's configuration alone.

What the contract suite cannot show: the keyword leg really is Milvus's BM25 (the catalog's
FTS5 is emptied and Chinese and Russian are still found by it), a process killed mid-write
leaves searches whole and the next write cleans Milvus, milvus-lite refuses a second process
clearly, a bundle exported from SQLite searches alike in Milvus, and stdout stays protocol.
"""

from __future__ import annotations

import json
import re
import signal
import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from mcp import Client
from mcp.client.stdio import stdio_client

from knowhub import build_app, load_settings
from knowhub.errors import ConfigError, StoreError
from knowhub.providers.stores.base import Store
from knowhub.providers.stores.indexed import milvus
from knowhub.providers.stores.indexed.catalog import IndexedStore
from knowhub.providers.stores.schema import fts_table
from knowhub.testing.store_data import make_doc, new_collection, put
from tests.helpers import ROOT, cli_env, fast_settings, knowhub, spawned, write
from tests.mcp_helpers import eventually, stdio_params
from tests.milvus_server import MilvusServer

MILVUS = {"KNOWHUB_STORE__PROVIDER": "milvus"}
README = (ROOT / "docs" / "configuration.md").read_text(encoding="utf-8")
SECTION = README.split("### Milvus\n", 1)[1].split("\n## ", 1)[0]

CORPUS = {
    "ops/backups.md": "# Backups\n\nBackups run every night at 02:30 and are kept for 35 days.\n\n"
    "## Restore\n\nRestoring a backup takes about an hour; ask the on-call engineer.\n",
    "hr/travel.md": "# Travel\n\nHotel costs are refunded up to 150 euros per night.\n\n"
    "Book trains rather than flights for trips under four hours.\n",
    "zh/远程办公.md": "# 远程办公\n\n经直属主管同意，员工每周最多可远程办公两天。\n\n"
    "涉及机器人实机调试的岗位，远程办公须提前一个工作日登记。\n",
    "zh/报销.md": "# 报销\n\n出差住宿每晚最多报销六百元。\n\n火车票凭发票报销。\n",
    "ru/отпуск.txt": "Ежегодный оплачиваемый отпуск составляет двадцать восемь дней.\n\n"
    "Неиспользованные дни отпуска переносятся на следующий год.\n",
    "ru/копии.txt": "Резервные копии хранятся тридцать пять дней.\n\n"
    "Восстановление занимает около часа.\n",
}
# (query, the source it must find first): each language, both legs' terms.
QUERIES = [
    ("远程办公", "zh/远程办公.md"),
    ("отпуска переносятся", "ru/отпуск.txt"),
    ("when do backups run", "ops/backups.md"),
]


def _blocks(language: str) -> list[str]:
    return re.findall(rf"```{language}\n(.*?)```", SECTION, flags=re.DOTALL)


def _corpus(root: Path) -> Path:
    for name, text in CORPUS.items():
        write(root / "docs" / name, text)
    return root / "docs"


def _ok(*args: str, cwd: Path, env: dict[str, str] | None = None) -> str:
    result = knowhub(*args, cwd=cwd, env=env)
    assert result.returncode == 0, f"{args}\n{result.stdout}\n{result.stderr}"
    return result.stdout


def _search(query: str, *extra: str, cwd: Path, env: dict[str, str] | None = None) -> Any:
    """``knowhub search --json``: its stdout must be nothing but the JSON document."""
    return json.loads(_ok("search", query, "--json", *extra, cwd=cwd, env=env))


@contextmanager
def _catalog(data: Path) -> Iterator[sqlite3.Connection]:
    """The milvus store's SQLite catalog, one transaction, closed after."""
    db = sqlite3.connect(data / milvus.CATALOG_NAME)
    try:
        with db:
            yield db
    finally:
        db.close()


# -- the README's one line ---------------------------------------------------------------


def test_the_readme_line_serves_both_legs_from_milvus_lite(tmp_path: Path) -> None:
    _corpus(tmp_path)
    write(tmp_path / "knowhub.yaml", _blocks("yaml")[0])  # store: {provider: milvus}
    added = json.loads(_ok("ingest", "docs", "--json", cwd=tmp_path))
    assert len(added["added"]) == len(CORPUS) and not added["failed"]
    data = tmp_path / "data"
    assert (data / milvus.LITE_NAME).is_dir() and (data / milvus.CATALOG_NAME).is_file()
    assert not (data / "knowhub.sqlite3").exists(), "the milvus store wrote the SQLite store"
    assert _ok("verify", cwd=tmp_path).startswith(f"ok: {len(CORPUS)} documents")

    # Blank the catalog's own BM25 (FTS5): whatever the keyword leg finds now, Milvus found.
    with _catalog(data) as db:
        (cid,) = db.execute("SELECT id FROM collections WHERE name = 'default'").fetchone()
        db.execute(f"DELETE FROM {fts_table(cid)}")
    for query, source in QUERIES[:2]:  # Chinese, Russian
        hits = _search(query, "-k", "3", cwd=tmp_path)
        assert hits[0]["source"] == source, (query, [h["source"] for h in hits])
        assert hits[0]["lexical_rank"] == 1, (query, hits[0])

    # A filter acts inside both legs: each finds only Russian chunks, and still finds them.
    hits = _search("отпуск backups 报销", "--filter", "language=ru", cwd=tmp_path)
    assert {h["language"] for h in hits} == {"ru"}
    assert any(h["lexical_rank"] for h in hits) and all(h["dense_rank"] for h in hits)


# -- a process killed mid-write ------------------------------------------------------------


def _versioned_corpus(folder: Path, version: int) -> None:
    for i in range(120):
        paragraphs = [
            f"Document {i} version {version} paragraph {p}: "
            + " ".join(f"word{(i * 7 + p * 3 + w) % 97}" for w in range(40))
            for p in range(3)
        ]
        write(folder / f"doc{i:03d}.md", "\n\n".join(paragraphs) + "\n")


def _kill_mid_write(folder: Path, data: Path) -> bool:
    """Run ``knowhub ingest`` and SIGKILL it the moment the catalog journals a write whose
    rows are on their way to Milvus (once 20 documents are in); False when it finished
    before one was seen."""
    env = cli_env({**MILVUS, "KNOWHUB_CHUNKING__SIZE": "300"})
    command = [sys.executable, "-m", "knowhub", "--data-dir", str(data), "ingest", str(folder)]
    journal = (
        "SELECT 1 FROM index_journal WHERE op = 'pending' AND n > 0 "
        "AND (SELECT count(*) FROM documents) >= 20"
    )
    with spawned(command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL) as process:
        while process.poll() is None:
            if not (data / milvus.CATALOG_NAME).exists():
                continue
            try:
                with _catalog(data) as db:
                    if db.execute(journal).fetchone():
                        process.send_signal(signal.SIGKILL)
                        return True
            except sqlite3.OperationalError:  # not created yet
                continue
        return False


def _index_and_catalog(store: Store, cid: int) -> tuple[set[int], set[int], set[int]]:
    """Row ids Milvus holds, the catalog holds, and the catalog's journal names."""
    assert isinstance(store, IndexedStore)
    held = store.index.ids(store.space(cid))
    with _catalog(store.path.parent) as db:
        catalog = {
            r[0] for r in db.execute("SELECT id FROM chunks WHERE collection_id = ?", (cid,))
        }
        journal = [json.loads(r[0]) for r in db.execute("SELECT ids FROM index_journal")]
    return held, catalog, {i for ids in journal for i in ids}


def test_a_killed_ingest_leaves_search_whole_and_the_next_write_cleans_milvus(
    tmp_path: Path,
) -> None:
    folder, data = tmp_path / "docs", tmp_path / "data"
    settings = fast_settings(data, **{"store.provider": "milvus"})
    for version in range(5):  # a kill lands between Milvus and the catalog within a few runs
        _versioned_corpus(folder, version)
        if _kill_mid_write(folder, data):
            break
    else:
        pytest.fail("no ingest was caught with a write in flight")

    store = milvus.create(settings)
    try:
        cid = store.collection_id("default")
        assert cid is not None
        held, catalog, journaled = _index_and_catalog(store, cid)
        assert held - catalog <= journaled, "Milvus holds rows no journal entry explains"
        assert all(count == 0 for count in store.integrity_report().values())
        assert store.orphans(cid) == []
        found = store.lexical_search(cid, ["paragraph"], 10_000, {})
        assert found, "no document survived the kill"
        hits = store.hits([row_id for row_id, _ in found])
        assert set(hits) == {row_id for row_id, _ in found}, "a hit the catalog does not hold"
        versions: dict[str, set[str]] = {}
        for hit in hits.values():
            versions.setdefault(hit.source, set()).add(hit.text.split(" version ")[1].split()[0])
        assert all(len(v) == 1 for v in versions.values()), "a document mixes versions"
    finally:
        store.close()

    _ok("--data-dir", str(data), "ingest", str(folder), cwd=tmp_path, env=MILVUS)
    assert _ok("--data-dir", str(data), "verify", cwd=tmp_path, env=MILVUS).startswith("ok: ")
    store = milvus.create(settings)
    try:
        held, catalog, journaled = _index_and_catalog(store, cid)
        assert held == catalog and not journaled, "the next write left Milvus unclean"
    finally:
        store.close()


# -- one process at a time, and a clean stdout, under a running MCP server ----------------


@pytest.mark.anyio
async def test_an_mcp_server_on_milvus_lite_answers_and_a_second_process_is_refused(
    tmp_path: Path,
) -> None:
    docs = _corpus(tmp_path)
    params = stdio_params(
        "--data-dir",
        str(tmp_path / "data"),
        "serve",
        "mcp",
        "--docs",
        str(docs),
        cwd=tmp_path,
        env=MILVUS,
    )
    with (tmp_path / "stderr.log").open("w", encoding="utf-8") as errlog:
        async with Client(stdio_client(params, errlog=errlog)) as client:

            async def indexed() -> bool:
                out = await client.call_tool("list_collections", {})
                counts = {c["name"]: c["documents"] for c in out.structured_content["collections"]}
                return counts.get("default") == len(CORPUS)

            await eventually(indexed)
            # Any stray byte on stdout would have broken the JSON-RPC stream by now.
            for query, source in QUERIES:
                out = await client.call_tool("query_knowledge_hub", {"query": query, "top_k": 3})
                assert not out.is_error, out.content
                assert out.structured_content["hits"][0]["source"] == source, query

            refused = knowhub("search", "backups", cwd=tmp_path, env=MILVUS)
            assert refused.returncode == 1
            assert "open in another process" in refused.stderr
            assert str(tmp_path / "data" / milvus.LITE_NAME) in refused.stderr
            assert "Traceback" not in refused.stderr


# -- SQLite → Milvus through a bundle ------------------------------------------------------


def test_a_bundle_exported_from_sqlite_searches_alike_in_milvus(tmp_path: Path) -> None:
    _corpus(tmp_path)
    _ok("ingest", "docs", cwd=tmp_path)  # the default SQLite store
    _ok("export", "kb.jsonl.gz", cwd=tmp_path)
    _ok("--data-dir", "copy", "import", "kb.jsonl.gz", cwd=tmp_path, env=MILVUS)
    assert _ok("--data-dir", "copy", "verify", cwd=tmp_path, env=MILVUS).startswith("ok: ")

    queries = [q for q, _ in QUERIES] + ["出差住宿报销", "сколько хранятся копии", "hotel"]
    before = _searches(fast_settings(tmp_path / "data"), queries)
    after = _searches(fast_settings(tmp_path / "copy", **{"store.provider": "milvus"}), queries)
    for query, old, new in zip(queries, before, after, strict=True):
        assert [h["chunk_id"] for h in new] == [h["chunk_id"] for h in old], query
        # Milvus's BM25 has FTS5's k1 and b but Lucene's idf, log(1 + …): raw lexical
        # scores differ, which min-max fusion can show on a larger corpus; not here. (Leg
        # ranks may differ where cosine scores tie.)
        for a, b in zip(old, new, strict=True):
            assert (b["text"], b["source"]) == (a["text"], a["source"])
            assert b["score"] == pytest.approx(a["score"], abs=1e-6)
            assert b["dense_score"] == pytest.approx(a["dense_score"], abs=1e-5)


def _searches(settings: Any, queries: list[str]) -> list[list[dict[str, Any]]]:
    app = build_app(settings)
    try:
        return [[h.to_dict() for h in app.collection().search(q, top_k=8).hits] for q in queries]
    finally:
        app.close()


# -- the README's server configuration -------------------------------------------------------


def test_the_readme_server_configuration_reaches_a_milvus_server(
    tmp_path: Path, milvus_server: MilvusServer
) -> None:
    from pymilvus import MilvusClient

    client = MilvusClient(uri=milvus_server.uri, token=milvus_server.token)
    if "kb" not in client.list_databases():
        client.create_database("kb")  # the README's db_name, which must exist
    config = _blocks("yaml")[1].replace("http://milvus.internal:19530", milvus_server.uri)
    assert milvus_server.uri in config
    write(tmp_path / "knowhub.yaml", config)
    _corpus(tmp_path)
    env, commands = _bash_block(tmp_path)
    if milvus_server.token:  # a real Milvus needs its real token
        env = {name: milvus_server.token for name in env}
    for args in commands:
        output = _ok(*args, cwd=tmp_path, env=env)
    assert "zh/远程办公.md" in output.splitlines()[0], output

    with _catalog(tmp_path / "data") as db:
        (uid,) = db.execute("SELECT value FROM meta WHERE key = 'index_uid'").fetchone()
        (cid,) = db.execute("SELECT id FROM collections WHERE name = 'default'").fetchone()
    client.use_database("kb")
    assert f"knowhub_{uid}_{cid}" in client.list_collections()
    client.close()


def _bash_block(root: Path) -> tuple[dict[str, str], list[list[str]]]:
    """The README's shell lines: the exported variables, then each knowhub command's args."""
    env: dict[str, str] = {}
    commands: list[list[str]] = []
    for line in _blocks("bash")[0].splitlines():
        if line.startswith("export "):
            name, value = line.removeprefix("export ").split("=", 1)
            env[name] = value.strip("'")
        else:
            args = re.findall(r'"[^"]*"|\S+', line)
            assert args[0] == "knowhub", line
            commands.append([a.strip('"') for a in args[1:]])
    assert env and len(commands) == 2
    return env, commands


# -- errors that say what to do ------------------------------------------------------------


def test_a_missing_extra_a_server_down_and_bad_options_are_clear_errors(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def settings(**env: str) -> Any:
        return load_settings(env={"KNOWHUB_STORE__PROVIDER": "milvus", **env}, cwd=tmp_path)

    down = settings(KNOWHUB_STORE__MILVUS__URI="http://kb:s3cret@127.0.0.1:1")
    with pytest.raises(StoreError) as refused:
        milvus.create(down)
    assert "http://127.0.0.1:1" in str(refused.value) and "s3cret" not in str(refused.value)
    assert "store.milvus.uri" in str(refused.value)

    unset = settings(
        KNOWHUB_STORE__MILVUS__URI="http://127.0.0.1:1",
        KNOWHUB_STORE__MILVUS__TOKEN_ENV="KB_MILVUS_TOKEN",
    )
    with pytest.raises(StoreError, match="KB_MILVUS_TOKEN"):
        milvus.create(unset)
    with pytest.raises(StoreError, match=r"store\.milvus\.prefix"):
        milvus.create(settings(KNOWHUB_STORE__MILVUS__PREFIX="knowhub-"))

    monkeypatch.setitem(sys.modules, "milvus_lite.server_manager", None)
    with pytest.raises(ConfigError, match=r"milvus-lite, but it is not installed: pip install"):
        milvus.create(settings())
    monkeypatch.setitem(sys.modules, "pymilvus", None)
    with pytest.raises(ConfigError, match=re.escape("pip install 'knowhub[milvus]'")):
        milvus.create(settings())


def test_odd_filter_values_and_odd_terms_match_in_both_legs(tmp_path: Path) -> None:
    store = milvus.create(fast_settings(tmp_path, **{"store.provider": "milvus"}))
    try:
        cid = new_collection(store)
        odd = ['say "hi"\\n', "line\nbreak\ttab", "x" * 600, "it's ✓ 知识"]
        for i, value in enumerate(odd):
            doc = make_doc(f"d{i}.md", [f"shared text {i}"], metadata={"tag": value}, seed=i)
            # Terms the tokenizer never makes (an imported bundle may hold them): one word each.
            doc.tokens[0] += " snake_case Straße MIXED"
            put(store, cid, doc)
        put(store, cid, make_doc("other.md", ["shared text"], metadata={"tag": "plain"}))
        query = make_doc("q.md", ["shared text 0"], seed=0).vectors[0]
        for i, value in enumerate(odd):
            lexical = store.lexical_search(cid, ["share"], 10, {"tag": value})
            dense = store.dense_search(cid, query, 10, {"tag": value})
            for found in (lexical, dense):
                assert [h.source for h in store.hits([r for r, _ in found]).values()] == [
                    f"d{i}.md"
                ], value
        for term in ("snake_case", "Straße", "MIXED"):
            assert len(store.lexical_search(cid, [term], 10, {})) == len(odd), term
        assert store.lexical_search(cid, ["snake", "case", "straße", "mixed"], 10, {}) == []
    finally:
        store.close()


def test_a_chunk_too_long_for_milvus_is_refused_before_anything_is_written(
    tmp_path: Path,
) -> None:
    store = milvus.create(fast_settings(tmp_path, **{"store.provider": "milvus"}))
    try:
        cid = new_collection(store)
        doc = make_doc("huge.md", ["huge"])
        doc.tokens[0] = " ".join(f"term{i}" for i in range(12_000))
        with pytest.raises(StoreError, match=r"chunking\.size"):
            put(store, cid, doc)
        assert store.record(cid, doc.path) is None
        assert all(count == 0 for count in store.integrity_report().values())
    finally:
        store.close()


def test_large_writes_deletes_and_listings_go_in_batches(tmp_path: Path) -> None:
    store = milvus.create(
        fast_settings(tmp_path, **{"store.provider": "milvus"}),
        batch_bytes=4_000,  # ~25 rows of 16 dims per upsert
        page=7,  # ids per delete, present and listing page
    )
    try:
        cid = new_collection(store)
        texts = [f"passage {i} of a long document" for i in range(300)]
        doc = put(store, cid, make_doc("long.md", texts, seed=3))
        assert all(s.vector is not None for s in store.stored_chunks(cid, doc.path))
        assert all(count == 0 for count in store.integrity_report().values())
        put(store, cid, make_doc("long.md", texts[:10], seed=4, revision=1))
        assert len(store.lexical_search(cid, ["passag"], 1_000, {})) == 10
        assert all(count == 0 for count in store.integrity_report().values())
    finally:
        store.close()
