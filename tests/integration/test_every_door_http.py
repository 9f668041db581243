"""Every HTTP door of ``knowhub serve http`` refuses a token without rights, and tells it
nothing.

The doors: every HTTP route of ``knowhub serve http`` (the API and the console's pages, read
from the FastAPI app itself), and every tool the chat's model is offered (read from the
requests the model gets). The data dir, the three tokens and what each door must do or not
do: :mod:`tests.door_helpers`.

The tables below say how to knock on each door; which doors there are comes from the
server. A door no table covers fails the coverage tests, named: a new surface cannot slip
in without a probe. A real server (one per module), a real data dir made by ``knowhub``.
"""

from __future__ import annotations

import html
import json
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx2 as httpx
import pytest
from fastapi import FastAPI
from websockets.sync.client import connect

from knowhub.interfaces.http.api import create_app
from knowhub.testing.llm_server import LlmServer, Reply, ToolReply, serve
from tests.door_helpers import (
    FULL,
    KB_ONLY,
    NAMES,
    PRIVATE_NAME,
    PRIVATE_QUERY,
    READ_ONLY,
    READER,
    REFUSED,
    SECRET,
    TOKEN_ENV,
    around,
    build_corpus,
    cli,
    expect,
    gist,
    route_keys,
)
from tests.helpers import WAIT_S, fast_settings, write
from tests.http_helpers import ApiServer, api_server, llm_env
from tests.mcp_helpers import wait_until
from tests.upload_helpers import FROM_PAGE, SCRIPT, content_type, form

# -- the data dir ------------------------------------------------------------------------


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The doors' corpus (:func:`tests.door_helpers.build_corpus`), built once here, with
    a source of ``private`` in its knowhub.yaml (never fetched: refreshed by hand only)."""
    root = build_corpus(tmp_path_factory)
    source = "  - git: file:///nonexistent/archive.git\n    name: archive\n"
    write(
        root / "knowhub.yaml", f"sources:\n{source}    collection: private\n    refresh: manual\n"
    )
    return root


def _traces(root: Path) -> dict[str, str]:
    """The id of the newest trace of each kind and collection (``answer_private``)."""
    listed = json.loads(cli(root, "traces", "--json", "--limit", "100"))["traces"]
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
    got = f"{response.status_code} {gist(text)}"
    expect(response.status_code == ask.status, f"{who}: wanted {ask.status}, got {got}")
    expect(SECRET not in text, f"{who} shows the private document: {around(text, SECRET)}")
    if ask.status == 403:
        why = READ_ONLY if ask.token == READER else REFUSED
        expect(why in text, f"{who}: refused without saying why ({why!r}): {got}")
    if ask.quiet:
        expect(not PRIVATE_NAME.search(text), f"{who} names it: {around(text, 'private')}")


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
        expect(not changed, f"a refused write changed {changed} (before, after): {diff}"[:1500])


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
    expect(events[-1]["event"] == "error" and events[-1].get("status") == 403, said[:400])
    expect(REFUSED in said, f"refused without saying why: {said[:400]}")
    expect(SECRET not in said, f"shows the private document: {around(said, SECRET)}")


def _ask_in_a_session(doors: Doors) -> None:
    """A conversation is its token's: ``kbonly`` naming the session ``full`` asked about
    ``private`` in gets none of its history, in its answer or in what its model is sent."""
    session = {"session_id": "door-session"}
    question = {"question": f"When does the {SECRET} merger close?", "collection": "private"}
    first = doors.request("POST", "/api/ask", FULL, json={**question, **session})
    expect(first.status_code == 200, f"full's question: {first.status_code} {first.text[:300]}")
    seen = len(doors.llm.requests)
    asked = {"question": "Which database job runs every 6 hours?", **session}
    second = doors.request("POST", "/api/ask", KB_ONLY, json=asked)
    expect(second.status_code == 200, f"kbonly's: {second.status_code} {second.text[:300]}")
    expect(SECRET not in second.text, f"kbonly's answer holds full's: {second.text[:400]}")
    sent = json.dumps([r.body for r in doors.llm.requests[seen:]])
    expect(len(doors.llm.requests) > seen, "kbonly's answer asked no model: nothing shown")
    expect(
        SECRET not in sent, f"kbonly's model was sent full's conversation: {around(sent, SECRET)}"
    )


def _chat(doors: Doors) -> None:
    """``/api/chat`` refuses ``private`` up front; a chat on ``kb`` whose model asks every
    tool for ``private`` gets refusals and nothing of it."""
    for stream in (False, True):
        asked = Ask("POST", "/api/chat", KB_ONLY, 403, json={**QUESTION, "stream": stream})
        _check(asked, _knock(doors, asked))
    chat = doors.request("POST", "/api/chat", KB_ONLY, json={"question": "What was approved?"})
    expect(chat.status_code == 200, f"a chat on kb: {chat.status_code} {chat.text[:400]}")
    answer = str(chat.json()["answer"])
    expect(SECRET not in chat.text, f"the chat shows the private document: {chat.text[:600]}")
    expect(REFUSED in answer, f"the chat's search of 'private' was not refused: {answer}")
    expect("no chunk" in answer, f"the chat read a chunk of 'private': {answer}")
    rest = answer.replace(REFUSED, "")
    expect(not PRIVATE_NAME.search(rest), f"the chat's tools name 'private': {answer}")


def _completion(model: str, stream: bool = False) -> dict[str, Any]:
    """An OpenAI chat-completions body asking ``model`` (a collection) the question."""
    question = [{"role": "user", "content": QUESTION["question"]}]
    return {"model": model, "messages": question, "stream": stream}


def _completions(doors: Doors) -> None:
    """``/v1/chat/completions`` answers ``kbonly`` asking for ``private`` as it answers a
    model that does not exist (404, the same words), plain and streamed; through
    ``knowhub-agent``, whose model asks every tool for ``private``, it gets refusals."""
    said: dict[str, str] = {}
    for model in ("private", "nosuch"):
        for stream in (False, True):
            asked = _ask("POST", "/v1/chat/completions", 404, json=_completion(model, stream))
            response = _knock(doors, asked)
            _check(asked, response)
            said[model] = str(response.json()["error"]["message"]).replace(model, "NAME")
    expect(said["private"] == said["nosuch"], f"private is not refused as unknown: {said}")
    agent = doors.request(
        "POST", "/v1/chat/completions", KB_ONLY, json=_completion("knowhub-agent")
    )
    expect(agent.status_code == 200, f"knowhub-agent: {agent.status_code} {agent.text[:400]}")
    answer = str(agent.json()["choices"][0]["message"]["content"])
    expect(SECRET not in agent.text, f"knowhub-agent shows the private document: {answer}")
    expect(REFUSED in answer, f"knowhub-agent's search of 'private' was not refused: {answer}")


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


def _form_write(
    path: str, status: int, form: dict[str, str], kb_form: dict[str, str], kb_path: str = ""
) -> Probe:
    """A route writing what a form says: ``kbonly`` posting ``form`` to ``path`` (on
    ``private``) gets ``status``, ``reader`` posting ``kb_form`` to ``kb_path`` (on ``kb``;
    ``path`` when not given) a 403; nothing changes meanwhile."""
    asks = (
        _ask("POST", path, status, form=form),
        _read_only("POST", kb_path or path, form=kb_form),
    )
    return Probe(asks, writes=True)


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
    "GET /v1/models": _listing("/v1/models"),
    "POST /v1/chat/completions": Probe(check=_completions),
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
    # A source of private is no source at all to kbonly; an add into private is refused
    # before its spec is read (the spec would be a valid one).
    "GET /ui/sources": Probe(
        (_ask("GET", "/ui/sources", 200, quiet=True), _read_only("GET", "/ui/sources"))
    ),
    "POST /ui/sources/refresh": _form_write("/ui/sources/refresh", 404, {"name": "archive"}, {}),
    "POST /ui/sources/add": _form_write(
        "/ui/sources/add",
        403,
        {**PRIVATE, "spec": "git+file:///nonexistent/archive.git"},
        {"collection": "kb", "spec": "git+file:///nonexistent/archive.git"},
    ),
    "POST /ui/faq/import": Probe(
        (
            _ask("POST", "/ui/faq/import", 403, upload="private", file="probe.csv"),
            _read_only("POST", "/ui/faq/import", upload="kb", file="probe.csv"),
        ),
        writes=True,
    ),
    "POST /ui/faq/remove": _form_write(
        "/ui/faq/remove",
        403,
        {**PRIVATE, "source": "{private_faq}"},
        {"collection": "kb", "source": "{kb_faq}"},
    ),
    "POST /ui/documents/{doc_hash}/delete": _form_write(
        "/ui/documents/{private_doc}/delete",
        403,
        {**PRIVATE, "confirm": "yes"},
        {"collection": "kb", "confirm": "yes"},
        kb_path="/ui/documents/{kb_doc}/delete",
    ),
    "POST /ui/documents/{doc_hash}/reingest": _form_write(
        "/ui/documents/{private_doc}/reingest",
        403,
        PRIVATE,
        {"collection": "kb"},
        kb_path="/ui/documents/{kb_doc}/reingest",
    ),
    "POST /ui/traces/{trace_id}/save-case": _form_write(
        "/ui/traces/{answer_private}/save-case",
        404,
        {"expected": "minutes.md"},
        {"expected": "notes.md"},
        kb_path="/ui/traces/{search_kb}/save-case",
    ),
    "POST /ui/versions/switch": _form_write(
        "/ui/versions/switch",
        403,
        {**PRIVATE, "version": "2", "confirm": "yes"},
        {"collection": "kb", "version": "2", "confirm": "yes"},
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


@pytest.fixture(scope="module")
def http_routes(tmp_path_factory: pytest.TempPathFactory) -> set[str]:
    """Every route of the app ``serve http`` serves, built here as it builds it."""
    asgi: Any = create_app(fast_settings(tmp_path_factory.mktemp("routes") / "data"))
    api = asgi
    while not isinstance(api, FastAPI):
        api = api.app
    try:
        return set(route_keys(api.routes))
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
            failures[key] = f"{response.status_code}: {gist(text)}"
        elif SECRET in text:
            failures[key] = f"shows kbonly the private document: {around(text, SECRET)}"
        elif PRIVATE_NAME.search(text):
            failures[key] = f"names 'private' to kbonly: {around(text, 'private')}"
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
