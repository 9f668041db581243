"""The Chroma store end to end: `knowhub ingest`, `search`, `verify`, `export` and `import`
as a user runs them, switched by configuration alone, on Chroma's persistent client and on
a `chroma run` server.

Chroma searches vectors exactly at these sizes (ef_search far above the row count) and the
lexical leg is the same FTS5 as SQLite's, so fused rankings must equal the SQLite store's,
chunk for chunk, in order.
"""

from __future__ import annotations

import json
import re
import shlex
import signal
import subprocess
import sys
import threading
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
import pytest

from knowhub import App, build_app, load_settings
from knowhub.errors import ConfigError, StoreError
from knowhub.providers.stores.indexed import chroma
from knowhub.providers.stores.indexed.catalog import IndexedStore
from knowhub.providers.stores.indexed.index import IndexRow
from knowhub.testing.store_data import make_doc, new_collection, normalised, put
from tests.chroma_server import ChromaServer, unique_prefix, wait_until_up
from tests.helpers import (
    ROOT,
    cli_env,
    die_with,
    fast_settings,
    free_port,
    knowhub,
    spawned,
    write,
)

CORPUS = {
    "ops/backups.md": "# Backups\n\nBackups run every night at 02:30 and are kept for 35 days.\n\n"
    "## Restore\n\nRestoring a backup takes about an hour; ask the on-call engineer.\n",
    "hr/travel.md": "# Travel\n\nHotel costs are refunded up to 150 euros per night.\n\n"
    "Book trains rather than flights for trips under four hours.\n",
    "zh/报销.md": "# 报销\n\n出差住宿每晚最多报销六百元。\n\n火车票凭发票报销。\n",
    "ru/копии.txt": "Резервные копии хранятся тридцать пять дней.\n\n"
    "Восстановление занимает около часа.\n",
}
# Each is a CLI run (~2 s): one per language, and one filtered.
QUERIES = ["when do backups run", "出差住宿报销", "сколько хранятся копии"]
FILTERED = ("backups копии хранятся", "language=ru")


def _ok(cwd: Path, env: dict[str, str], *args: str) -> str:
    result = knowhub(*args, cwd=cwd, env=env)
    assert result.returncode == 0, f"{args}\n{result.stdout}\n{result.stderr}"
    return result.stdout


def _hits(cwd: Path, env: dict[str, str], query: str, *extra: str) -> list[tuple[str, str]]:
    found = json.loads(_ok(cwd, env, "search", query, "-k", "8", "--json", *extra))
    return [(h["chunk_id"], h["source"]) for h in found]


def _app_hits(app: App, query: str, **filters: str) -> list[tuple[str, str]]:
    return [
        (h.chunk_id, h.source)
        for h in app.collection().search(query, top_k=8, filters=filters).hits
    ]


def _overrides(env: dict[str, str]) -> dict[str, object]:
    """``env``'s KNOWHUB_STORE__… variables as fast_settings overrides."""
    return {
        key.removeprefix("KNOWHUB_").lower().replace("__", "."): value
        for key, value in env.items()
        if key.startswith("KNOWHUB_STORE__")
    }


@pytest.fixture(params=["persistent", "server"])
def chroma_env(request: pytest.FixtureRequest) -> dict[str, str]:
    """The CLI environment of one mode: the persistent client, or the session's server
    (under collection names of this test's own)."""
    env = {"KNOWHUB_STORE__PROVIDER": "chroma"}
    if request.param == "server":
        server: ChromaServer = request.getfixturevalue("chroma_server")
        env |= {
            "KNOWHUB_STORE__CHROMA__HOST": server.host,
            "KNOWHUB_STORE__CHROMA__PORT": str(server.port),
            "KNOWHUB_STORE__CHROMA__PREFIX": unique_prefix(),
        }
    return env


@pytest.fixture
def sqlite_app(tmp_path: Path) -> Iterator[App]:
    """The corpus in the embedded SQLite store: the rankings to match."""
    for name, text in CORPUS.items():
        write(tmp_path / "docs" / name, text)
    app = build_app(fast_settings(tmp_path / "sqlite" / "data"))
    app.collection().ingest([tmp_path / "docs"])
    yield app
    app.close()


def test_ingest_search_and_verify_match_sqlite(
    tmp_path: Path, chroma_env: dict[str, str], sqlite_app: App
) -> None:
    cwd = tmp_path / "chroma"
    cwd.mkdir()
    summary = _ok(cwd, chroma_env, "ingest", str(tmp_path / "docs"))
    assert "4 added" in summary and "0 failed" in summary
    data = cwd / "data"
    assert (data / chroma.CATALOG_NAME).exists()
    assert not (data / "knowhub.sqlite3").exists(), "the chroma store wrote the SQLite store"
    persistent = "KNOWHUB_STORE__CHROMA__HOST" not in chroma_env
    assert (data / chroma.PERSIST_DIR).is_dir() == persistent

    for query in QUERIES:
        expected = _app_hits(sqlite_app, query)
        assert expected, query
        assert _hits(cwd, chroma_env, query) == expected, query
    query, language = FILTERED
    filtered = _hits(cwd, chroma_env, query, "--filter", language)
    assert filtered == _app_hits(sqlite_app, query, language="ru")
    assert {source for _, source in filtered} == {"ru/копии.txt"}
    assert _ok(cwd, chroma_env, "verify").startswith("ok: 4 documents")


def test_filters_apply_inside_the_dense_leg(tmp_path: Path, chroma_env: dict[str, str]) -> None:
    # 30 "finance" documents outrank the single "legal" one on both legs; with only 5
    # candidates per leg, a filter applied after Chroma's top 5 would find nothing.
    overrides = {**_overrides(chroma_env), "search.candidates": 5}
    app = build_app(fast_settings(tmp_path / "data", **overrides))
    try:
        for i in range(30):
            write(tmp_path / f"fin/{i}.md", f"Travel travel travel expenses report number {i}.\n")
        write(tmp_path / "legal/contract.md", "A contract clause mentions travel once.\n")
        app.collection().ingest([tmp_path / "fin"], tags={"dept": "finance"})
        app.collection().ingest([tmp_path / "legal"], tags={"dept": "legal"})
        unfiltered = app.collection().search("travel expenses", top_k=10).hits
        dense_found = {h.source for h in unfiltered if h.dense_rank is not None}
        assert "contract.md" not in dense_found, "set-up: it must rank below the dense top 5"
        result = app.collection().search("travel expenses", top_k=5, filters={"dept": "legal"})
        assert [h.source for h in result.hits] == ["contract.md"]
        assert result.counts["dense"] == 1 and result.counts["lexical"] == 1
    finally:
        app.close()


def test_export_import_round_trip_from_sqlite_gives_identical_search_results(
    tmp_path: Path, sqlite_app: App
) -> None:
    sqlite_cwd, cwd = tmp_path / "sqlite", tmp_path / "chroma"
    cwd.mkdir()
    _ok(sqlite_cwd, {}, "export", str(tmp_path / "kb.jsonl.gz"))
    env = {"KNOWHUB_STORE__PROVIDER": "chroma"}
    _ok(cwd, env, "import", str(tmp_path / "kb.jsonl.gz"))

    queries = [*QUERIES, FILTERED[0]]
    sqlite_again = build_app(fast_settings(sqlite_cwd / "data"))
    chroma_app = build_app(fast_settings(cwd / "data", **_overrides(env)))
    try:
        for query in queries:
            before = [h.to_dict() for h in sqlite_again.collection().search(query, top_k=8).hits]
            after = [h.to_dict() for h in chroma_app.collection().search(query, top_k=8).hits]
            assert before, query
            assert [h["chunk_id"] for h in after] == [h["chunk_id"] for h in before], query
            for a, b in zip(before, after, strict=True):
                assert abs(a["score"] - b["score"]) < 1e-5  # float32 cosine, two ways
    finally:
        sqlite_again.close()
        chroma_app.close()
    assert _ok(cwd, env, "verify").startswith("ok: 4 documents")


def test_dropping_a_collection_drops_its_chroma_collection(
    tmp_path: Path, chroma_env: dict[str, str]
) -> None:
    store = chroma.create(fast_settings(tmp_path / "data", **_overrides(chroma_env)))
    try:
        assert isinstance(store, IndexedStore)
        keep, gone = new_collection(store, "keep"), new_collection(store, "gone")
        put(store, keep, make_doc("k.md", ["kept"], collection="keep"))
        put(store, gone, make_doc("g.md", ["dropped", "words"], collection="gone"))
        assert len(store.index.ids(store.space(gone))) == 2

        store.drop_collection(gone)  # what `knowhub versions drop` does
        assert store.index.ids(store.space(gone)) == set(), "Chroma still holds its vectors"
        assert len(store.index.ids(store.space(keep))) == 1
        assert all(count == 0 for count in store.integrity_report().values())
    finally:
        store.close()


def test_the_index_pages_through_chroma_in_batches_and_reads_a_missing_space_as_empty(
    tmp_path: Path,
) -> None:
    index = chroma.persistent_index(tmp_path / "chroma")
    try:
        index._batch = 7  # chromadb allows 5,461 rows a call: a small limit makes pages here
        rows = [IndexRow(i, (f"team\x1f{i % 3}", "作者\x1f李华"), "") for i in range(1, 31)]
        vectors = normalised(np.random.default_rng(0).standard_normal((30, 8)))
        index.create("space_a", 8)
        index.upsert("space_a", rows, vectors)
        assert index.ids("space_a") == set(range(1, 31))
        assert index.present("space_a", list(range(25, 41))) == set(range(25, 31))
        index.delete("space_a", list(range(1, 21)))
        assert index.ids("space_a") == set(range(21, 31))
        found = index.dense_search("space_a", vectors[25], 5, [["team\x1f2", "team\x1f0"]])
        assert found[0] == (26, pytest.approx(1.0, abs=1e-5))
        assert {row_id % 3 for row_id, _ in found} <= {0, 2}

        for space in ("space_a", "never_made"):
            index.drop(space)  # dropping a missing space is no error either
            assert index.ids(space) == set() and index.present(space, [21]) == set()
            assert index.dense_search(space, vectors[0], 5, []) == []
            index.delete(space, [21])
    finally:
        index.close()
    with pytest.raises(StoreError, match="closed"):
        index.ids("space_a")


# -- a process killed in the middle of a write -----------------------------------------

# `knowhub ARGS`, SIGKILLed at its first write's OP: right after the new rows reached the
# index ("upsert": the catalog not committed yet), or right before the replaced rows leave it
# ("delete": the catalog committed).
KILLED_CLI = """
import os, signal
from knowhub.interfaces.cli import main
from knowhub.providers.stores.indexed.chroma import ChromaIndex

op = os.environ["KNOWHUB_TEST_KILL_AT"]
real = getattr(ChromaIndex, op)

def dying(self, *args):
    if op == "upsert":
        real(self, *args)
    os.kill(os.getpid(), signal.SIGKILL)

setattr(ChromaIndex, op, dying)
main()
"""


def _index_and_catalog(app: App) -> tuple[set[int], set[int], int]:
    """The default collection's row ids in Chroma and in the catalog, and the rows the
    journal says an interrupted write left behind."""
    store = app.store
    assert isinstance(store, IndexedStore)
    cid = store.collection_id("default")
    assert cid is not None
    held = store.index.ids(store.space(cid))
    return held, set(store.chunk_sources(cid)), store._in_flight(cid)


@pytest.mark.parametrize("kill_at", ["upsert", "delete"])
def test_a_process_killed_mid_write_leaves_search_consistent_and_the_next_write_cleans_up(
    tmp_path: Path, kill_at: str
) -> None:
    env = {"KNOWHUB_STORE__PROVIDER": "chroma"}
    for name, text in CORPUS.items():
        write(tmp_path / "docs" / name, text)
    _ok(tmp_path, env, "ingest", "docs")
    for name, text in CORPUS.items():  # a new version of every file
        write(tmp_path / "docs" / name, text.replace("\n\n", "\n\nRevised: zebra crossing.\n\n", 1))

    killed = subprocess.run(
        [sys.executable, "-c", KILLED_CLI, "ingest", "docs"],
        cwd=tmp_path,
        env=cli_env({**env, "KNOWHUB_TEST_KILL_AT": kill_at}),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert killed.returncode == -signal.SIGKILL, killed.stderr

    # The kernel released the dead process's lock: this process opens the store.
    app = build_app(fast_settings(tmp_path / "data", **_overrides(env)))
    try:
        held, catalog, journaled = _index_and_catalog(app)
        assert held - catalog and journaled, "set-up: the kill left rows in Chroma"
        assert app.store.integrity_report()["index_mismatch"] == 0, "journaled rows count"
        cid = app.store.collection_id("default")
        assert cid is not None
        records = {r.source: r.doc_hash for r in app.store.records(cid)}
        for query in ["zebra crossing", *QUERIES]:
            for hit in app.collection().search(query, top_k=20).hits:
                assert hit.doc_hash == records[hit.source], f"{query}: a stale row showed"
    finally:
        app.close()

    _ok(tmp_path, env, "ingest", "docs")  # the next write replays the journal
    assert _ok(tmp_path, env, "verify").startswith("ok: 4 documents")
    app = build_app(fast_settings(tmp_path / "data", **_overrides(env)))
    try:
        held, catalog, journaled = _index_and_catalog(app)
        assert held == catalog and journaled == 0
    finally:
        app.close()


# -- one process per persistent directory ----------------------------------------------


def test_a_second_process_on_the_persistent_directory_is_told_to_use_a_server(
    tmp_path: Path,
) -> None:
    env = {"KNOWHUB_STORE__PROVIDER": "chroma"}
    write(tmp_path / "docs" / "a.md", "Backups run every night.\n")
    app = build_app(fast_settings(tmp_path / "data", **_overrides(env)))
    try:
        app.collection().ingest([tmp_path / "docs"])
        refused = knowhub("search", "backups", cwd=tmp_path, env=env)
        assert refused.returncode == 1
        assert "chroma run --path" in refused.stderr and "store.chroma.host" in refused.stderr
        # Another store in this process shares the directory's client, and its lock.
        second = build_app(fast_settings(tmp_path / "data", **_overrides(env)))
        assert [h.source for h in second.collection().search("backups").hits] == ["a.md"]
        second.close()
    finally:
        app.close()
    assert "Backups run" in _ok(tmp_path, env, "search", "backups")


# -- configuration errors ------------------------------------------------------------------


def test_an_unreachable_server_an_unset_token_or_a_missing_extra_is_a_clear_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    port = free_port()  # nothing listens there
    down = fast_settings(
        tmp_path / "data",
        **{"store.provider": "chroma", "store.chroma.host": "127.0.0.1", "store.chroma.port": port},
    )
    with pytest.raises(StoreError) as refused:
        chroma.create(down)
    assert f"http://127.0.0.1:{port}" in str(refused.value)
    assert "chroma run" in str(refused.value)

    unset = fast_settings(
        tmp_path / "data",
        **{
            "store.provider": "chroma",
            "store.chroma.host": "127.0.0.1",
            "store.chroma.token_env": "KNOWHUB_TEST_CHROMA_TOKEN",
        },
    )
    with pytest.raises(StoreError, match="KNOWHUB_TEST_CHROMA_TOKEN"):
        chroma.create(unset)

    bad_prefix = fast_settings(
        tmp_path / "data", **{"store.provider": "chroma", "store.chroma.prefix": "kb/"}
    )
    with pytest.raises(ConfigError, match=re.escape("store.chroma.prefix")):
        chroma.create(bad_prefix)

    monkeypatch.setitem(sys.modules, "chromadb", None)  # as if the extra were not installed
    with pytest.raises(ConfigError, match=re.escape("pip install 'knowhub[chroma]'")):
        chroma.create(fast_settings(tmp_path / "data", **{"store.provider": "chroma"}))


class _Refusing(BaseHTTPRequestHandler):
    """Records each request's Authorization header and refuses it, as a guarded server does."""

    seen: ClassVar[list[str | None]] = []

    def do_GET(self) -> None:
        self.seen.append(self.headers.get("Authorization"))
        body = json.dumps({"error": "AuthError", "message": "bad token"}).encode()
        self.send_response(401)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: Any) -> None:  # keep the test output clean
        pass


def test_the_token_reaches_the_server_as_a_bearer_header(tmp_path: Path) -> None:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Refusing)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        settings = load_settings(
            env={"KNOWHUB_TEST_CHROMA_TOKEN": "s3cret-token"},
            cwd=tmp_path,
            overrides={
                "data_dir": tmp_path / "data",
                "store.provider": "chroma",
                "store.chroma.host": "127.0.0.1",
                "store.chroma.port": server.server_address[1],
                "store.chroma.token_env": "KNOWHUB_TEST_CHROMA_TOKEN",
            },
        )
        with pytest.raises(StoreError) as refused:
            chroma.create(settings)
    finally:
        server.shutdown()
        server.server_close()
        thread.join()
    assert _Refusing.seen and set(_Refusing.seen) == {"Bearer s3cret-token"}
    assert "s3cret-token" not in str(refused.value)


# -- the README --------------------------------------------------------------------------


def test_the_readme_chroma_commands_work_as_written(tmp_path: Path) -> None:
    configuration = (ROOT / "docs" / "configuration.md").read_text(encoding="utf-8")
    section = configuration.split("### Chroma\n", 1)[1]
    section = section.split("\n## ", 1)[0].split("\n### ", 1)[0]
    [script] = re.findall(r"```bash\n(.*?)```", section, flags=re.DOTALL)
    for name, text in CORPUS.items():
        write(tmp_path / "docs" / name, text)
    # First the one-line configuration: the persistent client in ./data/chroma.
    write(tmp_path / "knowhub.yaml", "store: {provider: chroma}\n")
    _ok(tmp_path, {}, "ingest", "docs")
    (tmp_path / "knowhub.yaml").unlink()
    port = str(free_port())  # the README's 8000 may be taken here
    env: dict[str, str] = {}
    outputs: dict[str, str] = {}  # each knowhub command's stdout
    servers = 0
    with ExitStack() as running:  # the server stopped however the test ends
        for line in script.replace("8000", port).splitlines():
            words = shlex.split(line.split(" #")[0])
            if words[:2] == ["chroma", "run"]:
                running.enter_context(_chroma_run([w for w in words if w != "&"], tmp_path, port))
                servers += 1
            elif words[:1] == ["export"]:
                env |= dict(word.split("=", 1) for word in words[1:])
            else:
                assert words[0] == "knowhub", line
                outputs[words[1]] = _ok(tmp_path, env, *words[1:])
        # Every vector the persistent client wrote is there, served now by the server.
        assert _ok(tmp_path, env, "verify").startswith("ok: 4 documents")
    assert servers == 1, "the README shows no `chroma run`"
    assert env["KNOWHUB_STORE__CHROMA__HOST"] == "localhost"
    assert "4 unchanged" in outputs["ingest"], "the server lost the persistent client's index"
    assert "Backups run every night" in outputs["search"]


@contextmanager
def _chroma_run(words: list[str], cwd: Path, port: str) -> Iterator[subprocess.Popen[bytes]]:
    """``chroma run …`` as the README writes it (the venv's `chroma` script), once it
    answers, until the block ends."""
    script = Path(sys.executable).with_name("chroma")
    log = cwd / "chroma.log"
    with (
        log.open("ab") as out,
        spawned(
            [str(script), *words[1:]],
            cwd=cwd,
            stdout=out,
            stderr=out,
            preexec_fn=die_with(signal.SIGTERM),
        ) as process,
    ):
        wait_until_up(process, f"http://localhost:{port}", log)
        yield process
