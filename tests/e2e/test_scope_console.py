"""The data-scope matrix through the web console: a real server, each matrix token signed in
(a real session cookie), every page that shows documents or runs — search, the document list
and pages, chunk and source pages, pictures, traces, the overview's counts — shows exactly
what the token's scope sees (knowhub.testing.scope_matrix), and no run of a wider scope."""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from urllib.parse import quote

import httpx2 as httpx
import pytest

from knowhub import build_app
from knowhub.models import Hit
from knowhub.scope import document_scope
from knowhub.testing.scope_matrix import (
    MATRIX,
    SCOPES,
    TOP_K,
    WORD,
    ingest_matrix,
    markers_in,
    secret,
    server_env,
    visible,
)
from knowhub.trace.jsonl import read_traces
from tests.helpers import WAIT_S, fast_settings, tls
from tests.http_helpers import ApiServer, api_server
from tests.pictures_helpers import text_png, word_with_figure

COLLECTION = "scoped"
# Two pictures, each in a .docx of its own scope: (file name, tags).
PICTURES = {
    "pacme.docx": {"tenant": "acme", "visibility": "public"},
    "pglobex.docx": {"tenant": "globex", "visibility": "restricted", "roles": "support"},
}


@dataclass
class Site:
    server: ApiServer
    chunks: dict[str, Hit]  # a chunk of each matrix document, by marker
    doc_hashes: dict[str, str]  # by marker
    pictures: dict[str, Hit]  # the chunk describing each picture, by file name
    runs: dict[str, str]  # the id of the search each token ran, by token name


def _run_mark(name: str) -> str:
    """The word only token ``name``'s own search asks for (to spot its run on a page)."""
    return "run" + name.replace("-", "")


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Site]:
    root = tmp_path_factory.mktemp("scope-console")
    app = build_app(fast_settings(root / "data"))
    try:
        ingest_matrix(app, root / "docs", COLLECTION)
        pictures = {}
        for file, tags in PICTURES.items():
            word_with_figure(root / "pictures" / file, text_png(f"Figure of {file}"))
            assert not app.collection(COLLECTION).ingest([root / "pictures" / file], tags).failed
            [record] = [
                r for r in app.collection(COLLECTION).documents() if r.source.endswith(file)
            ]
            pictures[file] = next(
                h
                for h in app.collection(record.collection).document_chunks(record)
                if h.metadata.get("image")
            )
        records = {
            markers_in([r.source]).pop(): r
            for r in app.collection(COLLECTION).documents()
            if markers_in([r.source])
        }
        chunks = {m: app.collection(r.collection).document_chunks(r)[0] for m, r in records.items()}
    finally:
        app.close()
    with api_server(cwd=root, data_dir=root / "data", env=server_env()) as server:
        for name in SCOPES:  # one search run by each token, recorded under its scope
            body = {"query": f"{WORD} {_run_mark(name)}", "collection": COLLECTION}
            assert server.post("/api/search", secret(name), json=body).status_code == 200
        runs = {
            name: t.trace_id
            for t in read_traces(root / "data" / "traces")
            for name in SCOPES
            if t.query and _run_mark(name) in t.query
        }
        hashes = {m: r.doc_hash for m, r in records.items()}
        yield Site(server, chunks, hashes, pictures, runs)


@pytest.fixture(params=list(SCOPES))
def signed_in(request: pytest.FixtureRequest, site: Site) -> Iterator[tuple[str, httpx.Client]]:
    """A console session of one matrix token, signed in through the login form."""
    name = request.param
    with httpx.Client(base_url=site.server.url, verify=tls(), timeout=WAIT_S) as client:
        login = client.post(
            "/ui/login", data={"token": secret(name)}, headers={"Origin": site.server.url}
        )
        assert login.status_code == 303 and client.cookies, login.text
        yield name, client


def _sees(client: httpx.Client, path: str) -> bool:
    """Whether the page at ``path`` is shown (200), or answered as one that is not there
    (404; 400 for a document page: "no document with hash")."""
    status = client.get(path).status_code
    assert status in (200, 400, 404), (path, status)
    return status == 200


def test_search_documents_and_overview_show_only_the_scope(
    site: Site, signed_in: tuple[str, httpx.Client]
) -> None:
    name, client = signed_in
    scope, expected = SCOPES[name], visible(SCOPES[name])
    found = client.get("/ui/search", params={"q": WORD, "collection": COLLECTION, "k": TOP_K})
    assert markers_in([found.text]) == expected
    listed = client.get("/ui/documents", params={"collection": COLLECTION}).text
    assert markers_in([listed]) == expected
    pictures = {f for f, tags in PICTURES.items() if scope.admits(document_scope(tags, {}))}
    assert {f for f in PICTURES if f in listed} == pictures
    overview = client.get("/ui").text
    row = re.search(r">scoped</a></td>\s*<td class=\"num\">(\d+)</td>", overview)
    assert row is not None and int(row.group(1)) == len(expected) + len(pictures)
    versions = client.get("/ui/versions", params={"collection": COLLECTION})
    assert (versions.status_code == 200) == scope.unrestricted  # whole-collection counts


def test_document_chunk_source_and_picture_pages_open_only_in_the_scope(
    site: Site, signed_in: tuple[str, httpx.Client]
) -> None:
    name, client = signed_in
    scope, expected = SCOPES[name], visible(SCOPES[name])
    for doc in MATRIX:
        chunk_id = quote(site.chunks[doc.marker].chunk_id, safe="")
        shown = {
            _sees(client, f"/ui/documents/{site.doc_hashes[doc.marker]}?collection={COLLECTION}"),
            _sees(client, f"/ui/chunks/{chunk_id}"),
            _sees(client, f"/ui/source/{chunk_id}?collection={COLLECTION}"),
        }
        assert shown == {doc.marker in expected}, doc.marker
    for file, hit in site.pictures.items():
        path = f"/ui/source/{quote(hit.chunk_id, safe='')}/image?collection={COLLECTION}"
        assert _sees(client, path) == scope.admits(document_scope(PICTURES[file], {})), file


def test_traces_show_only_runs_within_the_scope(
    site: Site, signed_in: tuple[str, httpx.Client]
) -> None:
    name, client = signed_in
    scope = SCOPES[name]
    covered = {other for other in SCOPES if scope.covers(SCOPES[other])}
    assert covered >= {name}
    listed = client.get("/ui/traces").text
    assert {o for o in SCOPES if _run_mark(o) in listed} == covered
    assert markers_in([listed, client.get("/ui/ingestion").text]) <= visible(scope)
    for other, trace_id in site.runs.items():
        assert _sees(client, f"/ui/traces/{trace_id}") == (other in covered), other
    recent = re.search(r"<b>(\d+)</b>runs", client.get("/ui").text)  # the overview's count
    assert recent is not None and int(recent.group(1)) == listed.count('href="/ui/traces/')
