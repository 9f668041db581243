"""Every door of the servers refuses a token without rights, and tells it nothing.

The doors: every HTTP route of ``knowhub serve http`` (the API and the console's pages, read
from the FastAPI app itself), every tool the chat's model is offered (read from the requests
the model gets), and every MCP tool (read from ``build_local`` and ``build_shared`` with every
optional tool on). A data dir holds ``kb`` and ``private``; three tokens: ``kbonly`` (reads
and writes ``kb``), ``reader`` (reads ``kb``, read-only) and ``full``.

* Each door that touches a collection, asked for ``private`` by ``kbonly``, is refused
  (HTTP 403 or 404, an MCP tool error) and :data:`SECRET`, the word of the private document
  (and of its file and folder names), never comes back.
* Each door that writes refuses ``reader`` (and ``kbonly`` on ``private``), and the data is
  as it was afterwards.
* The doors that touch no collection are listed as such, and tell ``kbonly`` nothing of
  ``private`` either.

The tables below say how to knock on each door; which doors there are comes from the
servers. A door no table covers fails the coverage tests, named: a new surface cannot slip
in without a probe. Real servers (one per module), real data dirs made by ``knowhub``.

MCP over stdio serves ``build_local``'s tools to the data dir's owner (no tokens there): its
tools are probed over HTTP, where tokens apply. Shared mode's control tools (register,
unregister, list) concern whole sessions, every collection in them: they must refuse a token
limited to some collections as they refuse a read-only one (``list`` may instead count only
what the token may read, as /health does).
"""

from __future__ import annotations

import html
import json
import re
import shutil
from collections.abc import Awaitable, Callable, Iterator
from contextlib import AsyncExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
import httpx2 as httpx
import pytest
from fastapi import FastAPI
from mcp import Client
from mcp.server.mcpserver import MCPServer
from mcp_types import CallToolResult
from starlette.routing import BaseRoute, Mount, WebSocketRoute
from websockets.sync.client import connect

from knowhub.interfaces.http.api import create_app
from knowhub.interfaces.mcp.metrics import Metrics
from knowhub.interfaces.mcp.server import ServeOptions, build_local, build_shared
from knowhub.testing.llm_server import LlmServer, Reply, ToolReply, serve
from tests.helpers import WAIT_S, fast_settings, knowhub, write
from tests.http_helpers import ApiServer, api_server, llm_env
from tests.mcp_helpers import HttpServer, http_server, text_of, wait_until
from tests.pictures_helpers import pdf_with_picture, shapes_png, word_with_figure
from tests.upload_helpers import FROM_PAGE, SCRIPT, content_type, form

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


def _cli(root: Path, *args: str) -> str:
    done = knowhub("--data-dir", "data", *args, cwd=root)
    assert done.returncode == 0, f"knowhub {' '.join(args)}:\n{done.stdout}{done.stderr}"
    return done.stdout


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> Path:
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
        _cli(root, *args)
    shutil.copytree(root / "data", root / "mcp-data")
    return root


def _traces(root: Path) -> dict[str, str]:
    """The id of the newest trace of each kind and collection (``answer_private``)."""
    listed = json.loads(_cli(root, "traces", "--json", "--limit", "100"))["traces"]
    found: dict[str, str] = {}
    for trace in listed:  # newest first
        found.setdefault(f"{trace['kind']}_{trace['collection']}", trace["trace_id"])
    return found


# -- the HTTP server ---------------------------------------------------------------------


@dataclass
class Doors:
    """The running ``serve http`` and the ids its probes fill their paths with."""

    server: ApiServer
    data: Path
    llm: LlmServer
    ids: dict[str, str] = field(default_factory=dict)

    def request(self, method: str, path: str, token: str, **kwargs: Any) -> httpx.Response:
        headers = {"Authorization": f"Bearer {token}", **kwargs.pop("headers", {})}
        return httpx.request(
            method, self.server.url + path, headers=headers, timeout=WAIT_S, **kwargs
        )


CHAT_TOOL_PROBES: dict[str, dict[str, Any]] = {
    "knowhub__search": {"query": PRIVATE_QUERY, "collection": "private"},
    "knowhub__get_chunk": {"chunk_id": "{private_chunk}"},
    "knowhub__list_collections": {},
}
"""How the chat's model knocks on each tool it is offered: asking for ``private``."""


def _model(ids: dict[str, str]) -> Callable[[dict[str, Any]], Reply]:
    """The scripted model: an answer's model answers; a chat's calls every tool it is offered
    as :data:`CHAT_TOOL_PROBES` says, then answers with what the tools said."""

    def script(body: dict[str, Any]) -> Reply:
        offered = [t["function"]["name"] for t in body.get("tools") or []]
        if not offered:
            return "Backups are kept for 35 days [1]."
        said = [str(m["content"]) for m in body["messages"] if m["role"] == "tool"]
        if said:
            return "\n---\n".join(said)
        calls = [
            ToolReply(name, {k: str(v).format(**ids) for k, v in CHAT_TOOL_PROBES[name].items()})
            for name in offered
            if name in CHAT_TOOL_PROBES
        ]
        return calls or "no tool to call"

    return script


@pytest.fixture(scope="module")
def doors(corpus: Path) -> Iterator[Doors]:
    """``serve http`` on the corpus with the three tokens and a scripted model; a job of
    ``full`` uploading a file into ``private`` has ended."""
    ids: dict[str, str] = _traces(corpus)
    with (
        serve(script=_model(ids)) as llm,
        api_server(cwd=corpus, data_dir=corpus / "data", env={**TOKEN_ENV, **llm_env(llm)}) as s,
    ):
        doors = Doors(s, corpus / "data", llm, ids)
        ids.update(_private_chunks(doors))
        kb = doors.request("GET", "/api/documents", FULL, params={"collection": "kb"}).json()
        ids["kb_doc"] = kb["documents"][0]["doc_hash"]
        ids["private_faq"] = str((corpus / f"{SECRET}-faq.csv").resolve())
        ids["kb_faq"] = str((corpus / "kb-faq.csv").resolve())
        ids["job"] = _upload_as_full(doors)
        yield doors


def _private_chunks(doors: Doors) -> dict[str, str]:
    """As ``full`` finds them: the minutes' chunk and document, the chunk describing the
    Word file's picture, a chunk of the PDF (a page with an image)."""
    ids: dict[str, str] = {}
    for query in (PRIVATE_QUERY, "merger timeline chart"):
        asked = {"query": query, "collection": "private", "top_k": 10}
        for hit in doors.request("POST", "/api/search", FULL, json=asked).json()["hits"]:
            if hit["source"].endswith("minutes.md"):
                ids.setdefault("private_chunk", hit["chunk_id"])
                ids.setdefault("private_doc", hit["doc_hash"])
            if hit["source"].endswith(".pdf"):
                ids.setdefault("private_pdf_chunk", hit["chunk_id"])
            if hit["metadata"].get("image"):
                ids.setdefault("private_image_chunk", hit["chunk_id"])
    missing = {"private_chunk", "private_pdf_chunk", "private_image_chunk"} - ids.keys()
    assert not missing, f"not found in private: {missing}"
    return ids


def _upload_as_full(doors: Doors) -> str:
    """``full`` uploads a file into ``private``; the job's id, once it has ended."""
    body = form(
        [(f"{SECRET}-upload.md", f"# Upload\n\nThe {SECRET} upload.\n".encode())], "private"
    )
    started = doors.request(
        "POST", "/ui/upload", FULL, content=body, headers={**SCRIPT, **content_type()}
    )
    assert started.status_code == 202, started.text
    job = str(started.json()["job"])

    def ended() -> bool:
        view = doors.request("GET", f"/ui/upload/{job}", FULL).json()
        return bool(view["finished"]) and not view["error"]

    wait_until(ended)
    return job


def _state(doors: Doors) -> dict[str, Any]:
    """What a write would change, read as ``full``: the collections (with the store's write
    counter), their documents and FAQ entries, golden cases, uploads and feedback kept."""
    state: dict[str, Any] = {
        "collections": doors.request("GET", "/api/collections", FULL).json(),
    }
    for name in ("kb", "private"):
        params = {"collection": name}
        state[f"documents {name}"] = doors.request(
            "GET", "/api/documents", FULL, params=params
        ).json()
        page = doors.request("GET", "/ui/faq", FULL, params=params).text
        state[f"faq {name}"] = re.findall(r"<li>(.*?)</li>", page)
    files = [
        *sorted(doors.data.glob("uploads/**/*")),
        doors.data / "golden.json",
        doors.data / "feedback" / "feedback.jsonl",
    ]
    state["files"] = {
        str(p.relative_to(doors.data)): p.read_bytes() if p.is_file() else None for p in files
    }
    return state


# -- how to knock on each route ----------------------------------------------------------


PROBE_FILES = {
    "probe.md": b"# Probe\n\nA probe's upload.\n",
    "probe.csv": b"question,answer\nWhat is a probe?,A test of the doors.\n",
}


@dataclass(frozen=True)
class Ask:
    """One request as ``token``, and the status it must get. ``path``, ``params`` and
    ``form`` values may name the Doors' ids (``{private_chunk}``). A 403 must say why (the
    collection, or read-only); ``quiet``: the body must not even name ``private``."""

    method: str
    path: str
    token: str
    status: int
    params: dict[str, str] | None = None
    json: dict[str, Any] | None = None
    form: dict[str, str] | None = None
    upload: str | None = None  # a multipart upload form into this collection…
    file: str = "probe.md"  # …of this file (PROBE_FILES)
    quiet: bool = False


@dataclass(frozen=True)
class Probe:
    """The requests that show a route refuses; ``writes``: nothing may change meanwhile."""

    asks: tuple[Ask, ...] = ()
    check: Callable[[Doors], None] | None = None
    writes: bool = False


def _knock(doors: Doors, ask: Ask) -> httpx.Response:
    ids = doors.ids
    kwargs: dict[str, Any] = {"params": _filled(ask.params, ids), "json": ask.json}
    headers = dict(FROM_PAGE) if ask.method == "POST" else {}
    if ask.form is not None:
        kwargs["data"] = _filled(ask.form, ids)
    if ask.upload is not None:
        kwargs["content"] = form([(ask.file, PROBE_FILES[ask.file])], ask.upload)
        headers.update(content_type())
    return doors.request(ask.method, ask.path.format(**ids), ask.token, headers=headers, **kwargs)


def _filled(values: dict[str, str] | None, ids: dict[str, str]) -> dict[str, str] | None:
    return None if values is None else {k: v.format(**ids) for k, v in values.items()}


def _check(ask: Ask, response: httpx.Response) -> None:
    """``response`` is what ``ask`` must get, and holds nothing of the private document."""
    who = f"{ask.method} {ask.path} as {NAMES[ask.token]}"
    text = html.unescape(response.text)
    got = f"{response.status_code} {_gist(text)}"
    _expect(response.status_code == ask.status, f"{who}: wanted {ask.status}, got {got}")
    _expect(SECRET not in text, f"{who} shows the private document: {_around(text, SECRET)}")
    if ask.status == 403:
        why = READ_ONLY if ask.token == READER else REFUSED
        _expect(why in text, f"{who}: refused without saying why ({why!r}): {got}")
    if ask.quiet:
        _expect(not PRIVATE_NAME.search(text), f"{who} names it: {_around(text, 'private')}")


def _expect(holds: bool, message: str) -> None:
    """Fail with ``message`` alone (a probe's failures are gathered, then told together)."""
    if not holds:
        raise AssertionError(message)


def _gist(text: str) -> str:
    """What a response says, short: a page's error (or its main text), else its start."""
    found = re.search(r'class="error"[^>]*>(.*?)</div>', text, re.S) or re.search(
        r"<main[^>]*>(.*?)</main>", text, re.S
    )
    shown = re.sub(r"<[^>]+>", " ", found.group(1)) if found else text
    return " ".join(shown.split())[:300]


def _around(text: str, word: str) -> str:
    """``text`` around the first ``word`` in it (tags left out)."""
    plain = " ".join(re.sub(r"<[^>]+>", " ", text).split())
    at = max(plain.find(word), 0)
    return f"…{plain[max(0, at - 150) : at + 150]}…"


def _run(doors: Doors, probe: Probe) -> None:
    before = _state(doors) if probe.writes else None
    for ask in probe.asks:
        _check(ask, _knock(doors, ask))
    if probe.check is not None:
        probe.check(doors)
    if before is not None:
        after = _state(doors)
        changed = sorted(k for k in before if before[k] != after[k])
        diff = {key: (before[key], after[key]) for key in changed}
        _expect(not changed, f"a refused write changed {changed} (before, after): {diff}"[:1500])


PRIVATE = {"collection": "private"}
QUESTION = {"question": "When does the merger close?", "collection": "private"}
SEARCH = {"query": PRIVATE_QUERY, "collection": "private"}


def _stream(doors: Doors) -> None:
    """The WebSocket: a question on ``private`` ends in a 403 error event."""
    auth = {"Authorization": f"Bearer {KB_ONLY}"}
    with connect(
        doors.server.ws_url, additional_headers=auth, proxy=None, open_timeout=WAIT_S
    ) as ws:
        ws.send(json.dumps(QUESTION))
        events: list[dict[str, Any]] = []
        while not events or events[-1]["event"] not in ("end", "error"):
            events.append(json.loads(ws.recv(timeout=WAIT_S)))
    said = json.dumps(events)
    _expect(events[-1]["event"] == "error" and events[-1].get("status") == 403, said[:400])
    _expect(REFUSED in said, f"refused without saying why: {said[:400]}")
    _expect(SECRET not in said, f"shows the private document: {_around(said, SECRET)}")


def _ask_in_a_session(doors: Doors) -> None:
    """A conversation is its token's: ``kbonly`` naming the session ``full`` asked about
    ``private`` in gets none of its history, in its answer or in what its model is sent."""
    session = {"session_id": "door-session"}
    question = {"question": f"When does the {SECRET} merger close?", "collection": "private"}
    first = doors.request("POST", "/api/ask", FULL, json={**question, **session})
    _expect(first.status_code == 200, f"full's question: {first.status_code} {first.text[:300]}")
    seen = len(doors.llm.requests)
    asked = {"question": "Which database job runs every 6 hours?", **session}
    second = doors.request("POST", "/api/ask", KB_ONLY, json=asked)
    _expect(second.status_code == 200, f"kbonly's: {second.status_code} {second.text[:300]}")
    _expect(SECRET not in second.text, f"kbonly's answer holds full's: {second.text[:400]}")
    sent = json.dumps([r.body for r in doors.llm.requests[seen:]])
    _expect(len(doors.llm.requests) > seen, "kbonly's answer asked no model: nothing shown")
    _expect(
        SECRET not in sent, f"kbonly's model was sent full's conversation: {_around(sent, SECRET)}"
    )


def _chat(doors: Doors) -> None:
    """``/api/chat`` refuses ``private`` up front; a chat on ``kb`` whose model asks every
    tool for ``private`` gets refusals and nothing of it."""
    for stream in (False, True):
        asked = Ask("POST", "/api/chat", KB_ONLY, 403, json={**QUESTION, "stream": stream})
        _check(asked, _knock(doors, asked))
    chat = doors.request("POST", "/api/chat", KB_ONLY, json={"question": "What was approved?"})
    _expect(chat.status_code == 200, f"a chat on kb: {chat.status_code} {chat.text[:400]}")
    answer = str(chat.json()["answer"])
    _expect(SECRET not in chat.text, f"the chat shows the private document: {chat.text[:600]}")
    _expect(REFUSED in answer, f"the chat's search of 'private' was not refused: {answer}")
    _expect("no chunk" in answer, f"the chat read a chunk of 'private': {answer}")
    rest = answer.replace(REFUSED, "")
    _expect(not PRIVATE_NAME.search(rest), f"the chat's tools name 'private': {answer}")


def _signed_in(doors: Doors) -> httpx.Response:
    """A console sign-in as ``kbonly``, and the page it lands on."""
    body = {"token": KB_ONLY, "next": "/ui"}
    signed = httpx.post(
        doors.server.url + "/ui/login", data=body, headers=FROM_PAGE, timeout=WAIT_S
    )
    assert signed.status_code == 303, signed.text
    cookies = {"knowhub_session": signed.cookies["knowhub_session"]}
    return httpx.get(doors.server.url + "/ui", cookies=cookies, timeout=WAIT_S)


def _ask(method: str, path: str, status: int, **kwargs: Any) -> Ask:
    return Ask(method, path, KB_ONLY, status, **kwargs)


def _read_only(method: str, path: str, **kwargs: Any) -> Ask:
    return Ask(method, path, READER, 403, **kwargs)


def _listing(path: str) -> Probe:
    """A page that lists what the token may read: ``kbonly`` sees no trace of ``private``."""
    return Probe((_ask("GET", path, 200, quiet=True),))


HTTP_PROBES: dict[str, Probe] = {
    # The API
    "POST /api/search": Probe((_ask("POST", "/api/search", 403, json=SEARCH),)),
    "POST /api/retrieval/debug": Probe((_ask("POST", "/api/retrieval/debug", 403, json=SEARCH),)),
    "POST /api/ask": Probe(
        (
            _ask("POST", "/api/ask", 403, json=QUESTION),
            _ask("POST", "/api/ask", 403, json={**QUESTION, "stream": True}),
        ),
        check=_ask_in_a_session,
    ),
    "POST /api/chat": Probe(check=_chat),
    "GET /api/collections": _listing("/api/collections"),
    "GET /api/documents": Probe((_ask("GET", "/api/documents", 403, params=PRIVATE),)),
    "GET /api/chunks/{chunk_id}/image": Probe(
        (_ask("GET", "/api/chunks/{private_image_chunk}/image", 404),)
    ),
    "WS /api/stream": Probe(check=_stream),
    # The console: reading
    "GET /ui": _listing("/ui"),
    "GET /ui/ask": _listing("/ui/ask"),
    "POST /ui/ask": Probe((_ask("POST", "/ui/ask", 403, form=QUESTION),)),
    "POST /ui/ask/stream": Probe(
        (
            _ask("POST", "/ui/ask/stream", 403, json=QUESTION),
            _ask("POST", "/ui/ask/stream", 403, json={**QUESTION, "tools": True}),
        )
    ),
    "GET /ui/search": Probe(
        (_ask("GET", "/ui/search", 403, params={"q": PRIVATE_QUERY, **PRIVATE}),)
    ),
    "GET /ui/documents": Probe((_ask("GET", "/ui/documents", 403, params=PRIVATE),)),
    "GET /ui/documents/{doc_hash}": Probe(
        (_ask("GET", "/ui/documents/{private_doc}", 403, params=PRIVATE),)
    ),
    "GET /ui/documents/{doc_hash}/file": Probe(
        (
            _ask("GET", "/ui/documents/{private_doc}/file", 404, params=PRIVATE),
            _ask("GET", "/ui/documents/{private_doc}/file", 404),
        )
    ),
    "GET /ui/chunks/{chunk_id}": Probe((_ask("GET", "/ui/chunks/{private_chunk}", 404),)),
    "GET /ui/source/{chunk_id}": Probe(
        (
            _ask("GET", "/ui/source/{private_chunk}", 404),
            _ask("GET", "/ui/source/{private_chunk}", 404, params=PRIVATE),
        )
    ),
    "GET /ui/source/{chunk_id}/page.png": Probe(
        (_ask("GET", "/ui/source/{private_pdf_chunk}/page.png", 404, params=PRIVATE),)
    ),
    "GET /ui/source/{chunk_id}/image": Probe(
        (_ask("GET", "/ui/source/{private_image_chunk}/image", 404, params=PRIVATE),)
    ),
    "GET /ui/faq": Probe((_ask("GET", "/ui/faq", 403, params=PRIVATE),)),
    "GET /ui/ingestion": _listing("/ui/ingestion"),
    "GET /ui/traces": _listing("/ui/traces"),
    "GET /ui/traces/{trace_id}": Probe((_ask("GET", "/ui/traces/{answer_private}", 404),)),
    # Feedback is kept beside a trace, not in the knowledge base: a read-only token may give
    # it, so only the trace's collection is probed (and that nothing is kept).
    "POST /ui/traces/{trace_id}/feedback": Probe(
        (_ask("POST", "/ui/traces/{answer_private}/feedback", 404, form={"helpful": "yes"}),),
        writes=True,
    ),
    "GET /ui/evals": _listing("/ui/evals"),
    "GET /ui/versions": Probe((_ask("GET", "/ui/versions", 403, params=PRIVATE),)),
    # The console: writing
    "GET /ui/upload": Probe(
        (_ask("GET", "/ui/upload", 200, quiet=True), _read_only("GET", "/ui/upload"))
    ),
    "POST /ui/upload": Probe(
        (
            _ask("POST", "/ui/upload", 403, upload="private"),
            _read_only("POST", "/ui/upload", upload="kb"),
        ),
        writes=True,
    ),
    # A job is its uploader's: another token's (full's, into private) is no job at all.
    "GET /ui/upload/{job_id}": Probe(
        (_ask("GET", "/ui/upload/{job}", 404), _read_only("GET", "/ui/upload/{job}"))
    ),
    "POST /ui/faq/import": Probe(
        (
            _ask("POST", "/ui/faq/import", 403, upload="private", file="probe.csv"),
            _read_only("POST", "/ui/faq/import", upload="kb", file="probe.csv"),
        ),
        writes=True,
    ),
    "POST /ui/faq/remove": Probe(
        (
            _ask("POST", "/ui/faq/remove", 403, form={**PRIVATE, "source": "{private_faq}"}),
            _read_only("POST", "/ui/faq/remove", form={"collection": "kb", "source": "{kb_faq}"}),
        ),
        writes=True,
    ),
    "POST /ui/documents/{doc_hash}/delete": Probe(
        (
            _ask(
                "POST",
                "/ui/documents/{private_doc}/delete",
                403,
                form={**PRIVATE, "confirm": "yes"},
            ),
            _read_only(
                "POST", "/ui/documents/{kb_doc}/delete", form={"collection": "kb", "confirm": "yes"}
            ),
        ),
        writes=True,
    ),
    "POST /ui/documents/{doc_hash}/reingest": Probe(
        (
            _ask("POST", "/ui/documents/{private_doc}/reingest", 403, form=PRIVATE),
            _read_only("POST", "/ui/documents/{kb_doc}/reingest", form={"collection": "kb"}),
        ),
        writes=True,
    ),
    "POST /ui/traces/{trace_id}/save-case": Probe(
        (
            _ask(
                "POST",
                "/ui/traces/{answer_private}/save-case",
                404,
                form={"expected": "minutes.md"},
            ),
            _read_only("POST", "/ui/traces/{search_kb}/save-case", form={"expected": "notes.md"}),
        ),
        writes=True,
    ),
    "POST /ui/versions/switch": Probe(
        (
            _ask(
                "POST",
                "/ui/versions/switch",
                403,
                form={**PRIVATE, "version": "2", "confirm": "yes"},
            ),
            _read_only(
                "POST",
                "/ui/versions/switch",
                form={"collection": "kb", "version": "2", "confirm": "yes"},
            ),
        ),
        writes=True,
    ),
}
"""How ``kbonly`` asks each route for ``private`` (and ``reader`` each writing one to write)."""

NO_COLLECTION: dict[str, Callable[[Doors], httpx.Response]] = {
    "GET /health": lambda d: d.request("GET", "/health", KB_ONLY),
    "GET /ready": lambda d: d.request("GET", "/ready", KB_ONLY),
    "GET /metrics": lambda d: d.request("GET", "/metrics", KB_ONLY),
    "GET /openapi.json": lambda d: d.request("GET", "/openapi.json", KB_ONLY),
    "GET /docs": lambda d: d.request("GET", "/docs", KB_ONLY),
    "GET /docs/oauth2-redirect": lambda d: d.request("GET", "/docs/oauth2-redirect", KB_ONLY),
    "GET /redoc": lambda d: d.request("GET", "/redoc", KB_ONLY),
    "GET /ui/login": lambda d: d.request("GET", "/ui/login", KB_ONLY),
    "POST /ui/login": _signed_in,
    "POST /ui/logout": lambda d: d.request("POST", "/ui/logout", KB_ONLY, headers=FROM_PAGE),
    "GET /ui/static/{name}": lambda d: d.request("GET", "/ui/static/ask.js", KB_ONLY),
}
"""The routes that touch no collection, and how ``kbonly`` calls each (it must still learn
nothing of ``private`` there)."""


# -- the routes, from the app ------------------------------------------------------------


def _route_keys(routes: list[BaseRoute]) -> Iterator[str]:
    """``METHOD /path`` of every route, included routers walked into (``WS`` for a
    WebSocket; HEAD left out where GET answers it)."""
    for route in routes:
        inner = getattr(route, "original_router", None)
        if inner is not None:
            yield from _route_keys(inner.routes)
        elif isinstance(route, WebSocketRoute):
            yield f"WS {route.path}"
        elif isinstance(route, Mount):
            yield f"MOUNT {route.path}"
        else:
            methods = set(getattr(route, "methods", None) or {"ANY"})
            if "GET" in methods:
                methods.discard("HEAD")
            yield from (f"{m} {getattr(route, 'path', route)}" for m in sorted(methods))


@pytest.fixture(scope="module")
def http_routes(tmp_path_factory: pytest.TempPathFactory) -> set[str]:
    """Every route of the app ``serve http`` serves, built here as it builds it."""
    asgi: Any = create_app(fast_settings(tmp_path_factory.mktemp("routes") / "data"))
    api = asgi
    while not isinstance(api, FastAPI):
        api = api.app
    try:
        return set(_route_keys(api.routes))
    finally:
        api.state.service.app.close()


def test_every_http_route_has_a_probe(http_routes: set[str]) -> None:
    """Each route of the app is in :data:`HTTP_PROBES` or :data:`NO_COLLECTION`, and each
    entry there is a route: a route added without a probe fails here, by name."""
    covered = HTTP_PROBES.keys() | NO_COLLECTION.keys()
    missing = [
        f"route {key} has no probe: add one that shows it refuses a token without rights "
        "(HTTP_PROBES), or list it in NO_COLLECTION if it touches no collection"
        for key in sorted(http_routes - covered)
    ]
    stale = [f"probe {key} matches no route of the app" for key in sorted(covered - http_routes)]
    assert not missing + stale, "\n".join(missing + stale)
    assert HTTP_PROBES.keys().isdisjoint(NO_COLLECTION), "a route is in both tables"


def test_every_http_route_refuses_a_token_without_rights(
    http_routes: set[str], doors: Doors
) -> None:
    """``kbonly`` asking any route for ``private`` is refused and shown nothing of it;
    ``reader`` is refused every write; a refused write changes nothing."""
    failures = {}
    for key in sorted(http_routes & HTTP_PROBES.keys()):
        try:
            _run(doors, HTTP_PROBES[key])
        except AssertionError as exc:
            failures[key] = str(exc)
    assert not failures, "\n\n".join(f"{key}: {why}" for key, why in failures.items())


def test_routes_touching_no_collection_tell_nothing_of_private(
    http_routes: set[str], doors: Doors
) -> None:
    """``kbonly`` on the routes of :data:`NO_COLLECTION` (health, metrics, docs, sign-in,
    static files) gets no word of the private document, nor the name ``private``."""
    failures = {}
    for key in sorted(http_routes & NO_COLLECTION.keys()):
        response = NO_COLLECTION[key](doors)
        text = html.unescape(response.text)
        if response.status_code >= 500:
            failures[key] = f"{response.status_code}: {_gist(text)}"
        elif SECRET in text:
            failures[key] = f"shows kbonly the private document: {_around(text, SECRET)}"
        elif PRIVATE_NAME.search(text):
            failures[key] = f"names 'private' to kbonly: {_around(text, 'private')}"
    assert not failures, "\n\n".join(f"{key}: {why}" for key, why in failures.items())


def test_the_chat_model_is_offered_only_probed_tools(doors: Doors) -> None:
    """Every tool a chat's model is offered (as the model saw the offer) is knocked on by
    :data:`CHAT_TOOL_PROBES` in the chat probe: a new chat tool without one fails here."""
    chat = doors.request("POST", "/api/chat", FULL, json={"question": "What is kept?"})
    assert chat.status_code == 200, chat.text
    offered = {
        t["function"]["name"]
        for r in doors.llm.requests
        if isinstance(r.body, dict)
        for t in r.body.get("tools") or []
    }
    assert offered, "no request offered the model a tool"
    missing = [
        f"chat tool {name} has no probe: add one to CHAT_TOOL_PROBES that asks it for 'private'"
        for name in sorted(offered - CHAT_TOOL_PROBES.keys())
    ]
    assert not missing, "\n".join(missing)


# -- the MCP tools -----------------------------------------------------------------------


async def _names(server: MCPServer) -> set[str]:
    return {tool.name for tool in await server.list_tools()}


@pytest.fixture(scope="module")
def mcp_tools(tmp_path_factory: pytest.TempPathFactory) -> dict[str, set[str]]:
    """The tools each build registers, every optional one on (``search_docs``, and the
    writing tools of a server that is not read-only): ``local`` (stdio and HTTP serve the
    same build), ``shared`` (a session's data tools) and ``control`` (shared mode's /mcp)."""
    root = tmp_path_factory.mktemp("tools")
    (root / "docs").mkdir()
    settings = fast_settings(root / "data", **{"server.search_docs_tool": True})
    server, service = build_local(settings, ServeOptions(docs=root / "docs"), Metrics())
    try:
        local = anyio.run(_names, server)
    finally:
        service.close()
    options = ServeOptions(transport="http", mode="shared", path_root=root, read_only=False)
    data, control, registry = build_shared(settings, options, Metrics())
    try:
        return {
            "local": local,
            "shared": anyio.run(_names, data),
            "control": anyio.run(_names, control),
        }
    finally:
        registry.close()


@dataclass
class McpDoor:
    """A running MCP server, where its tools are, and the ids their probes use."""

    server: HttpServer
    path: str  # /mcp, or a session's /mcp/<id>
    ids: dict[str, str]
    clients: dict[str, Client] = field(default_factory=dict)  # by token, while probing

    async def call(self, token: str, tool: str, **arguments: Any) -> CallToolResult:
        return await self.clients[token].call_tool(tool, arguments)


McpProbe = Callable[[McpDoor], Awaitable[None]]


async def _refused(door: McpDoor, token: str, tool: str, why: str, **arguments: Any) -> None:
    """``tool`` called as ``token`` is a tool error saying ``why``, with nothing private."""
    result = await door.call(token, tool, **arguments)
    text = text_of(result) + json.dumps(result.structured_content)
    who = f"{tool}({arguments}) as {NAMES[token]}"
    _expect(result.is_error, f"{who} was not refused: {text[:400]}")
    _expect(why in text, f"{who}: refused without saying why ({why!r}): {text[:400]}")
    _expect(SECRET not in text, f"{who} shows the private document: {_around(text, SECRET)}")


async def _quiet(door: McpDoor, tool: str, **arguments: Any) -> CallToolResult:
    """``tool`` called as ``kbonly`` shows nothing of ``private``, not even its name."""
    result = await door.call(KB_ONLY, tool, **arguments)
    text = text_of(result) + json.dumps(result.structured_content)
    who = f"{tool}({arguments}) as kbonly"
    _expect(SECRET not in text, f"{who} shows the private document: {_around(text, SECRET)}")
    _expect(not PRIVATE_NAME.search(text), f"{who} names it: {_around(text, 'private')}")
    return result


async def _search_docs(door: McpDoor) -> None:
    """``search_docs`` names no collection: ``kbonly``'s default is ``kb``, nothing else."""
    result = await _quiet(door, "search_docs", query=PRIVATE_QUERY)
    hits = (result.structured_content or {}).get("hits", [])
    _expect(not result.is_error and all(h["collection"] == "kb" for h in hits), text_of(result))


async def _list_collections(door: McpDoor) -> None:
    result = await _quiet(door, "list_collections")
    names = [c["name"] for c in (result.structured_content or {}).get("collections", [])]
    _expect(names == ["kb"], f"list_collections as kbonly lists {names}")


async def _get_content(door: McpDoor) -> None:
    """A chunk of ``private`` reads as no chunk at all (nothing to probe)."""
    result = await _quiet(door, "get_content", chunk_id=door.ids["private_chunk"])
    _expect(result.is_error and "no chunk" in text_of(result), text_of(result)[:400])


async def _summary(door: McpDoor) -> None:
    source_hash = door.ids["private_doc"]
    await _refused(
        door,
        KB_ONLY,
        "get_document_summary",
        REFUSED,
        source_hash=source_hash,
        collection="private",
    )
    result = await _quiet(door, "get_document_summary", source_hash=source_hash)  # kb's
    _expect(result.is_error, f"kb holds no such document: {text_of(result)[:400]}")


async def _mcp_state(door: McpDoor) -> list[Any]:
    """What an ingest would change, read as ``full``: the collections' sizes, and whether
    the reader's probe tag (``probe=reader``) got onto ``kb``'s documents."""
    listed = await door.call(FULL, "list_collections")
    tagged = await door.call(
        FULL, "query_knowledge_hub", query="backups", collection="kb", filters={"probe": "reader"}
    )
    hits = None if tagged.is_error else len((tagged.structured_content or {})["hits"])
    return [(listed.structured_content or {}).get("collections"), hits]


async def _ingest(door: McpDoor) -> None:
    """``kbonly`` may not ingest into ``private``, ``reader`` not at all; nothing changes."""
    before = await _mcp_state(door)
    path = door.ids["ingest_path"]
    await _refused(door, KB_ONLY, "ingest", REFUSED, path=path, collection="private")
    await _refused(
        door, READER, "ingest", READ_ONLY, path=path, collection="kb", tags={"probe": "reader"}
    )
    after = await _mcp_state(door)
    _expect(before == after, f"a refused ingest changed the data: {before} → {after}")


DATA_TOOL_PROBES: dict[str, McpProbe] = {
    "query_knowledge_hub": lambda d: _refused(
        d, KB_ONLY, "query_knowledge_hub", REFUSED, query=PRIVATE_QUERY, collection="private"
    ),
    "search_docs": _search_docs,
    "list_collections": _list_collections,
    "get_document_summary": _summary,
    "get_content": _get_content,
    "ask": lambda d: _refused(
        d, KB_ONLY, "ask", REFUSED, question="When does the merger close?", collection="private"
    ),
    "ingest": _ingest,
}
"""How ``kbonly`` asks each data tool (local mode's, a shared session's) for ``private``."""


async def _sessions(door: McpDoor) -> list[tuple[str, str]]:
    listed = (await door.call(FULL, "list")).structured_content or {}
    return sorted((s["session_id"], s["path"]) for s in listed["sessions"])


async def _register(door: McpDoor) -> None:
    """A session indexes its folder into the configured collection (``private`` here): not
    for ``reader``, nor for ``kbonly``, which may not read it."""
    before = await _sessions(door)
    await _refused(door, READER, "register", "'reader'", path="board3")
    await _refused(door, KB_ONLY, "register", "'kbonly'", path="board3")
    after = await _sessions(door)
    _expect(before == after, f"a refused register changed the sessions: {before} → {after}")


async def _unregister(door: McpDoor) -> None:
    """Unregistering deletes a session's index (``private`` in it): not for ``reader``, nor
    for ``kbonly``."""
    before = await _sessions(door)
    await _refused(door, READER, "unregister", "'reader'", session_id=door.ids["board2"])
    await _refused(door, KB_ONLY, "unregister", "'kbonly'", session_id=door.ids["board2"])
    after = await _sessions(door)
    _expect(before == after, f"a refused unregister changed the sessions: {before} → {after}")


async def _list(door: McpDoor) -> None:
    """``list`` as ``kbonly``: refused, or each session's size as far as it may read it (as
    /health counts a limited token's collections only), never the whole index's."""
    result = await _quiet(door, "list")
    if result.is_error:
        return
    readable = json.loads(door.ids["kb_chunks"])
    for session in (result.structured_content or {})["sessions"]:
        sid, shown = session["session_id"], session["chunks_count"]
        _expect(
            shown in (None, readable[sid]),
            f"list as kbonly counts {shown} chunks in session {sid} ({session['path']}), "
            f"of which it may read {readable[sid]}: the rest are private's",
        )


CONTROL_TOOL_PROBES: dict[str, McpProbe] = {
    "register": _register,
    "unregister": _unregister,
    "list": _list,
}
"""How ``kbonly`` and ``reader`` knock on shared mode's control tools (on /mcp)."""
BUILD_PROBES = {
    "local": DATA_TOOL_PROBES,
    "shared": DATA_TOOL_PROBES,
    "control": CONTROL_TOOL_PROBES,
}


async def _private_ids(door: McpDoor) -> None:
    """The chunk and document of the private minutes, as ``full`` finds them."""
    async with door.server.client(door.path, FULL) as client:
        found = await client.call_tool(
            "query_knowledge_hub", {"query": PRIVATE_QUERY, "collection": "private", "top_k": 10}
        )
    hits = (found.structured_content or {}).get("hits", [])
    (hit,) = [h for h in hits if h["source"].endswith("minutes.md")] or [None]
    assert hit is not None, text_of(found)
    door.ids.update(private_chunk=hit["chunk_id"], private_doc=hit["source_hash"])


@pytest.fixture(scope="module")
def mcp_local(corpus: Path) -> Iterator[McpDoor]:
    """``serve mcp --transport http`` in local mode serving ``kbdocs`` (indexed as ``kb``)
    on a copy of the corpus' data dir, the three tokens."""
    env = {**TOKEN_ENV, "KNOWHUB_SERVER__SEARCH_DOCS_TOOL": "true"}
    data = corpus / "mcp-data"
    with http_server("--docs", "kbdocs", cwd=corpus, data_dir=data, env=env) as server:
        wait_until(lambda: server.get("/health", FULL).json().get("indexing") is False)
        door = McpDoor(server, "/mcp", {"ingest_path": "notes.md"})
        anyio.run(_private_ids, door)
        yield door


async def _register_sessions(server: HttpServer, ids: dict[str, str]) -> None:
    """``full`` registers board and board2 (indexed into ``private``), and ingests board's
    kbnote.md into ``kb`` too; how many chunks of ``kb`` each session holds."""
    async with server.client("/mcp", FULL) as control:
        for name in ("board", "board2"):
            made = await control.call_tool("register", {"path": name})
            assert not made.is_error, text_of(made)
            ids[name] = (made.structured_content or {})["session_id"]
    kb_chunks = {}
    for name in ("board", "board2"):
        async with server.client(f"/mcp/{ids[name]}", FULL) as data:
            if name == "board":
                added = await data.call_tool("ingest", {"path": "kbnote.md", "collection": "kb"})
                assert not added.is_error, text_of(added)
            listed = (await data.call_tool("list_collections", {})).structured_content or {}
            kb_chunks[ids[name]] = sum(
                c["chunks"] for c in listed["collections"] if c["name"] == "kb"
            )
    ids["kb_chunks"] = json.dumps(kb_chunks)


@pytest.fixture(scope="module")
def mcp_shared(corpus: Path) -> Iterator[tuple[McpDoor, McpDoor]]:
    """``serve mcp --mode shared`` with ``collection: private`` and the three tokens:
    session board (``private``, and ``kb`` holding kbnote.md) and board2 (``private``);
    its control door (/mcp) and board's data door."""
    shared = corpus / "shared"
    write(shared / "board" / f"{SECRET}-minutes.md", BOARD_TEXT)
    write(shared / "board" / "kbnote.md", KB_TEXT)
    write(shared / "board2" / f"{SECRET}-notes.md", BOARD_TEXT)
    write(shared / "board3" / f"{SECRET}-more.md", BOARD_TEXT)
    env = {**TOKEN_ENV, "KNOWHUB_COLLECTION": "private", "KNOWHUB_SERVER__SEARCH_DOCS_TOOL": "true"}
    args = ("--mode", "shared", "--path-root", str(shared))
    with http_server(*args, cwd=corpus, data_dir=corpus / "shared-data", env=env) as server:
        ids: dict[str, str] = {}
        anyio.run(_register_sessions, server, ids)
        session = McpDoor(server, f"/mcp/{ids['board']}", {**ids, "ingest_path": "kbnote.md"})
        anyio.run(_private_ids, session)
        yield McpDoor(server, "/mcp", ids), session


async def _probe_all(door: McpDoor, tools: set[str], probes: dict[str, McpProbe]) -> dict[str, str]:
    """Each of ``tools`` knocked on by its probe, with a client per token; what failed. The
    server must offer ``full`` the very tools the build registers."""
    failures = {}
    async with AsyncExitStack() as stack:
        for token in NAMES:
            client = door.server.client(door.path, token)
            door.clients[token] = await stack.enter_async_context(client)
        offered = {t.name for t in (await door.clients[FULL].list_tools()).tools}
        if offered != tools:
            failures["tools/list"] = f"{door.path} offers {sorted(offered)}, not {sorted(tools)}"
        for name in sorted(tools & probes.keys()):
            try:
                await probes[name](door)
            except AssertionError as exc:
                failures[name] = str(exc)
    door.clients.clear()
    return failures


def test_every_mcp_tool_has_a_probe(mcp_tools: dict[str, set[str]]) -> None:
    """Each tool every build registers has a probe, and each probe a tool: a tool added
    without one fails here, by name."""
    problems = [
        f"tool {name} of the {build} build has no probe: add one that shows it refuses a "
        "token without rights"
        for build, names in mcp_tools.items()
        for name in sorted(names - BUILD_PROBES[build].keys())
    ]
    probed = DATA_TOOL_PROBES.keys() - mcp_tools["local"] - mcp_tools["shared"]
    probed |= CONTROL_TOOL_PROBES.keys() - mcp_tools["control"]
    problems += [f"probe {name} matches no tool of any build" for name in sorted(probed)]
    assert not problems, "\n".join(problems)


def test_every_local_mcp_tool_refuses_a_token_without_rights(
    mcp_tools: dict[str, set[str]], mcp_local: McpDoor
) -> None:
    """Local mode over HTTP: ``kbonly`` asking each tool for ``private`` is a tool error
    naming the refusal, with nothing of it; ``reader`` may not ingest; nothing changes."""
    failures = anyio.run(_probe_all, mcp_local, mcp_tools["local"], DATA_TOOL_PROBES)
    assert not failures, "\n\n".join(f"{name}: {why}" for name, why in failures.items())


def test_every_shared_mcp_tool_refuses_a_token_without_rights(
    mcp_tools: dict[str, set[str]], mcp_shared: tuple[McpDoor, McpDoor]
) -> None:
    """Shared mode: a session's data tools as in local mode; the control tools, which
    concern whole sessions (``private`` in them), refuse ``reader`` and ``kbonly``."""
    control, session = mcp_shared
    failures = anyio.run(_probe_all, session, mcp_tools["shared"], DATA_TOOL_PROBES)
    failures |= {
        f"control {name}": why
        for name, why in anyio.run(
            _probe_all, control, mcp_tools["control"], CONTROL_TOOL_PROBES
        ).items()
    }
    assert not failures, "\n\n".join(f"{name}: {why}" for name, why in failures.items())


def test_mcp_health_and_metrics_tell_nothing_of_private(
    mcp_local: McpDoor, mcp_shared: tuple[McpDoor, McpDoor]
) -> None:
    """The MCP servers' own routes besides the tools (/health, /metrics) tell ``kbonly``
    nothing of ``private``."""
    failures = {}
    for door in (mcp_local, mcp_shared[0]):
        for path in ("/health", "/metrics"):
            response = door.server.get(path, KB_ONLY)
            where = f"{door.server.url}{path}"
            if response.status_code != 200:
                failures[where] = f"{response.status_code}: {response.text[:300]}"
            elif SECRET in response.text or PRIVATE_NAME.search(response.text):
                failures[where] = f"names 'private': {_around(response.text, 'private')}"
    assert not failures, "\n".join(f"{where}: {why}" for where, why in failures.items())
