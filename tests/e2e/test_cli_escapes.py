"""Terminal escape sequences in file names and document text are shown, never obeyed, by
every `knowhub` text output; `--json` keeps them exact. Real files, a real CLI subprocess.

A name holding ESC [ 2 J clears the reader's screen, OSC 8 makes a link that says one thing
and opens another, OSC 0 retitles the window, CR and backspace overwrite what was printed,
a right-to-left override shows ``evil\u202etxt.md`` as ``evildm.txt``.
"""

from __future__ import annotations

import json
import re
import socket
from pathlib import Path

import pytest

from tests.helpers import knowhub, knowhub_on_terminal, write
from tests.http_helpers import TOKEN_ENV
from tests.mcp_helpers import running, wait_until

NAMES = [
    "red\x1b[31mname.md",
    "link\x1b]8;;https:evil.example\x07here\x1b]8;;\x07.md",
    "title\x1b]0;pwned\x07.md",
    "over\rwrite.md",
    "back\x08space.md",
    "evil\u202etxt.md",
    "csi\x9b2J.md",
]
FAILING = "bad\x1b]0;pwned\x07\u202eblink.pdf"  # not a PDF: named in ingest's failures
# What must never reach a terminal: C0 controls but tab and newline, DEL, C1 controls, and
# the bidirectional overrides and isolates.
RAW = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


def _visible(text: str) -> str:
    """``text`` as the CLI shows it: each such character as its Python escape."""
    return RAW.sub(lambda m: repr(m.group())[1:-1], text)


@pytest.fixture(scope="module")
def kb(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("escapes")
    for n, name in enumerate(NAMES):
        try:
            write(
                root / "docs" / name,
                f"# Backups {n}\x1b[2J\n\nBackups run every night \x1b]0;owned\x07 at {n} am.\n",
            )
        except OSError as exc:  # a file system that refuses control characters in names
            pytest.skip(f"cannot create {name!r} here: {exc}")
    (root / "docs" / FAILING).write_bytes(b"not a pdf at all")
    return root


def _clean(output: str) -> str:
    assert not RAW.search(output), f"raw control characters in: {output!r}"
    return output


def _on_terminal(kb: Path, *args: str) -> str:
    """``knowhub ARGS`` on a pseudo-terminal (where click strips nothing), its output with
    the terminal's own line ends made plain."""
    status, output = knowhub_on_terminal(*args, cwd=kb)
    assert status == 0, output
    return _clean(output.replace("\r\n", "\n"))


def test_every_text_output_shows_escape_sequences_instead_of_obeying_them(kb: Path) -> None:
    ingested = knowhub("ingest", "docs", cwd=kb)
    assert ingested.returncode == 1, ingested.stderr  # the one bad PDF
    assert f"failed {_visible(FAILING)}" in _clean(ingested.stdout + ingested.stderr)
    piped = knowhub("docs", cwd=kb)
    for listed in (_clean(piped.stdout + piped.stderr), _on_terminal(kb, "docs")):
        for name in NAMES:
            assert _visible(name) in listed, (name, listed)
    found = _on_terminal(kb, "search", "backups every night", "-k", "10")
    assert _visible(NAMES[0]) in found and "\\x1b]0;owned\\x07" in found
    hits = json.loads(knowhub("search", "backups every night", "--json", cwd=kb).stdout)
    assert "\\x1b[2J" in _on_terminal(kb, "show", hits[0]["chunk_id"])
    _on_terminal(kb, "ask", "When do backups run?")
    _on_terminal(kb, "search", "backups\x1b[2J")  # a query that is itself one
    _on_terminal(kb, "traces")


def test_json_output_keeps_names_and_text_exact_and_obeys_nothing(kb: Path) -> None:
    knowhub("ingest", "docs", cwd=kb)
    listed = _clean(knowhub("docs", "--json", cwd=kb).stdout)
    assert {Path(r["source"]).name for r in json.loads(listed)} == set(NAMES)
    found = knowhub("search", "backups every night", "-k", "10", "--json", cwd=kb).stdout
    hits = json.loads(_clean(found))
    assert any("\x1b]0;owned\x07" in hit["text"] for hit in hits)
    assert "\\u009b" in listed and "\\u202e" in listed  # C1 and bidi: JSON escapes
    streamed = knowhub("ask", "When do backups run?", "--stream", "--json", cwd=kb).stdout
    events = [json.loads(line) for line in _clean(streamed).splitlines()]
    [sources] = [e["sources"] for e in events if e["event"] == "sources"]
    assert {Path(s["source"]).name for s in sources} <= set(NAMES)


@pytest.mark.parametrize("serve", [["http"], ["mcp", "--transport", "http"]], ids=["http", "mcp"])
def test_the_web_servers_own_log_lines_are_knowhubs(tmp_path: Path, serve: list[str]) -> None:
    """uvicorn's warnings (a malformed request here) go through knowhub's log handler: its
    format, its --log-file, control characters shown; not uvicorn's handler on stderr."""
    log = tmp_path / "knowhub.log"
    (tmp_path / "docs").mkdir()  # what `serve mcp` serves by default
    argv = ["--data-dir", str(tmp_path / "data"), "serve", *serve, "--log-file", str(log)]
    with running(argv, tmp_path, TOKEN_ENV) as (url, _, output):
        host, port = url.removeprefix("http://").split(":")
        with socket.create_connection((host, int(port)), timeout=60) as client:
            client.sendall(b"GET /\x1b[2J HTTP/1.1\r\nHost\x9b: x\r\n\r\n")  # not HTTP
            assert client.recv(1024).startswith(b"HTTP/1.1 400")
        logged = wait_until(
            lambda: [
                line
                for text in (log.read_text(), output.read_text())  # the log file, stderr
                for line in text.splitlines()
                if "Invalid HTTP request" in line
            ],
            timeout=60,
        )
    assert "Invalid HTTP request" not in output.read_text(), logged
    pattern = r"\S+ \S+ WARNING uvicorn.error: Invalid HTTP request received."
    assert [re.fullmatch(pattern, line) is not None for line in logged] == [True], logged
