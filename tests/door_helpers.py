"""What the door tests share: the corpus they knock with, the tokens, and how a failure reads.

The door tests (``tests/integration/test_every_door_http.py`` and
``tests/integration/test_every_door_mcp.py``) check that every door of the servers refuses a
token without rights, and tells it nothing. A data dir holds ``kb`` and ``private``; three
tokens: ``kbonly`` (reads and writes ``kb``), ``reader`` (reads ``kb``, read-only) and
``full``.

* Each door that touches a collection, asked for ``private`` by ``kbonly``, is refused
  (HTTP 403 or 404, an MCP tool error) and :data:`SECRET`, the word of the private document
  (and of its file and folder names), never comes back.
* Each door that writes refuses ``reader`` (and ``kbonly`` on ``private``), and the data is
  as it was afterwards.
* The doors that touch no collection are listed as such, and tell ``kbonly`` nothing of
  ``private`` either.

Which doors there are comes from the servers; each test module's tables say how to knock on
each. A door no table covers fails the coverage tests, named: a new surface cannot slip in
without a probe. Real servers (one per module), real data dirs made by ``knowhub``.
"""

from __future__ import annotations

import json
import re
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
from starlette.routing import BaseRoute, Mount, WebSocketRoute

from tests.helpers import knowhub, write
from tests.pictures_helpers import pdf_with_picture, shapes_png, word_with_figure

SECRET = "vexhollow"  # in the private document, its file and folder names: never shown to kbonly
KB_TEXT = "# Backups\n\nDatabase backups run every 6 hours and are kept for 35 days.\n"
BOARD_TEXT = f"# Board minutes\n\nThe {SECRET} merger closes in spring; the board approved it.\n"
PRIVATE_QUERY = "board merger spring"
BOARD = f"{SECRET}-board"  # the private document's folder

KB_ONLY = "kbonly-Qm4T8zLw2Rx6Vn1c"
READER = "reader-Hs7Yb3Kd9Pf5Wg0e"
FULL = "full-Uj2Nc6Ap8Ez4Tq9r"
NAMES = {KB_ONLY: "kbonly", READER: "reader", FULL: "full"}
TOKENS = [
    {"name": "kbonly", "token_env": "KH_DOOR_KBONLY", "collections": ["kb"]},
    {"name": "reader", "token_env": "KH_DOOR_READER", "collections": ["kb"], "read_only": True},
    {"name": "full", "token_env": "KH_DOOR_FULL"},
]
TOKEN_ENV = {
    "KNOWHUB_SERVER__TOKENS": json.dumps(TOKENS),
    "KH_DOOR_KBONLY": KB_ONLY,
    "KH_DOOR_READER": READER,
    "KH_DOOR_FULL": FULL,
    "KNOWHUB_SERVER__AUTH_MAX_FAILURES": "1000",
}
REFUSED = "token 'kbonly' may not read collection 'private'"
READ_ONLY = "token 'reader' is read-only"
PRIVATE_NAME = re.compile(r"\bprivate\b")


# -- the data dir ------------------------------------------------------------------------


def cli(root: Path, *args: str) -> str:
    """``knowhub --data-dir data ARGS`` run in ``root``, which must succeed; its output."""
    done = knowhub("--data-dir", "data", *args, cwd=root)
    assert done.returncode == 0, f"knowhub {' '.join(args)}:\n{done.stdout}{done.stderr}"
    return done.stdout


def build_corpus(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder whose ``data`` holds ``kb`` (one note) and ``private`` (minutes, a Word file
    with a picture, a PDF), each with a FAQ file's entries and a second version; an eval
    report of ``private``; an answer trace on ``private`` and a search trace on ``kb``.
    ``mcp-data`` is a copy, for the MCP servers."""
    root = tmp_path_factory.mktemp("doors")
    write(root / "kbdocs/notes.md", KB_TEXT)
    write(root / BOARD / f"{SECRET}-minutes.md", BOARD_TEXT)
    alt = f"A {SECRET} chart of the merger timeline"
    word_with_figure(root / BOARD / f"{SECRET}-chart.docx", shapes_png(1), icon=False, alt=alt)
    pdf_with_picture(root / BOARD / f"{SECRET}-log.pdf", shapes_png(3))
    write(root / "kb-faq.csv", "question,answer\nHow long are backups kept?,35 days.\n")
    faq = f"question,answer\nWho approved the merger?,The board approved the {SECRET} merger.\n"
    write(root / f"{SECRET}-faq.csv", faq)
    golden = [{"query": PRIVATE_QUERY, "expected_sources": [f"{SECRET}-minutes.md"]}]
    write(root / f"{SECRET}-golden.json", json.dumps(golden))
    for args in (
        ("ingest", "kbdocs", "-c", "kb"),
        ("ingest", BOARD, "-c", "private"),
        ("faq", "import", "kb-faq.csv", "-c", "kb"),
        ("faq", "import", f"{SECRET}-faq.csv", "-c", "private"),
        ("versions", "build", "-c", "kb"),
        ("versions", "build", "-c", "private"),
        ("eval", f"{SECRET}-golden.json", "-c", "private", "--top-k", "10"),
        ("ask", "When does the merger close?", "-c", "private"),
        ("search", "backups", "-c", "kb"),
    ):
        cli(root, *args)
    shutil.copytree(root / "data", root / "mcp-data")
    return root


# -- how a failure reads -----------------------------------------------------------------


def expect(holds: bool, message: str) -> None:
    """Fail with ``message`` alone (a probe's failures are gathered, then told together)."""
    if not holds:
        raise AssertionError(message)


def gist(text: str) -> str:
    """What a response says, short: a page's error (or its main text), else its start."""
    found = re.search(r'class="error"[^>]*>(.*?)</div>', text, re.S) or re.search(
        r"<main[^>]*>(.*?)</main>", text, re.S
    )
    shown = re.sub(r"<[^>]+>", " ", found.group(1)) if found else text
    return " ".join(shown.split())[:300]


def around(text: str, word: str) -> str:
    """``text`` around the first ``word`` in it (tags left out)."""
    plain = " ".join(re.sub(r"<[^>]+>", " ", text).split())
    at = max(plain.find(word), 0)
    return f"…{plain[max(0, at - 150) : at + 150]}…"


# -- the routes of an app ----------------------------------------------------------------


def route_keys(routes: list[BaseRoute]) -> Iterator[str]:
    """``METHOD /path`` of every route, included routers walked into (``WS`` for a
    WebSocket; HEAD left out where GET answers it)."""
    for route in routes:
        inner = getattr(route, "original_router", None)
        if inner is not None:
            yield from route_keys(inner.routes)
        elif isinstance(route, WebSocketRoute):
            yield f"WS {route.path}"
        elif isinstance(route, Mount):
            yield f"MOUNT {route.path}"
        else:
            methods = set(getattr(route, "methods", None) or {"ANY"})
            if "GET" in methods:
                methods.discard("HEAD")
            yield from (f"{m} {getattr(route, 'path', route)}" for m in sorted(methods))
