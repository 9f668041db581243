"""Data scope through the App, on SQLite and PostgreSQL: the scope matrix ingested with
tags, then each caller's searches, answers, listings, counts, chunks and caches."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from mcp import MCPError

from knowhub import App, build_app
from knowhub.answer.events import End
from knowhub.errors import AuthError, IngestError
from knowhub.interfaces.mcp import resources
from knowhub.scope import record_scope
from knowhub.testing.scope_matrix import (
    MATRIX,
    SCOPES,
    TOP_K,
    WORD,
    ingest_matrix,
    markers_in,
    visible,
)
from tests.helpers import fast_settings, write
from tests.pg_server import shared_server

COLLECTION = "scoped"


@pytest.fixture(scope="module", params=["sqlite", "postgres"])
def matrix_app(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[App]:
    root = tmp_path_factory.mktemp(request.param)
    extra: dict[str, object] = {}
    if request.param == "postgres":
        extra = {
            "store.provider": "postgres",
            "store.postgres.url": shared_server().create_database(),
        }
    app = build_app(fast_settings(root / "data", **extra))
    ingest_matrix(app, root / "docs", COLLECTION)
    yield app
    app.close()


@pytest.mark.parametrize("name", SCOPES)
def test_searches_return_exactly_what_the_scope_sees(matrix_app: App, name: str) -> None:
    found = matrix_app.scoped(SCOPES[name]).collection(COLLECTION).search(WORD, top_k=TOP_K)
    assert markers_in(h.text for h in found.hits) == visible(SCOPES[name])


@pytest.mark.parametrize("name", SCOPES)
def test_listings_counts_and_chunks_show_only_what_the_scope_sees(
    matrix_app: App, name: str
) -> None:
    scoped = matrix_app.scoped(SCOPES[name])
    expected = visible(SCOPES[name])
    records = scoped.collection(COLLECTION).documents()
    assert markers_in(r.source for r in records) == expected
    [view] = [v for v in scoped.collections() if v.name == COLLECTION]
    assert (view.documents, view.chunks) == (len(expected), sum(r.chunk_count for r in records))
    for doc in MATRIX:
        chunk_id = matrix_app.collection(COLLECTION).search(doc.marker, top_k=1).hits[0].chunk_id
        if doc.marker in expected:
            assert scoped.chunk(chunk_id), doc.marker
        else:
            with pytest.raises(Exception, match="no chunk with id"):
                scoped.chunk(chunk_id)


@pytest.mark.parametrize("name", SCOPES)
def test_answers_cite_only_what_the_scope_sees(matrix_app: App, name: str) -> None:
    events = list(
        matrix_app.scoped(SCOPES[name])
        .collection(COLLECTION)
        .ask(f"what does the {WORD} handbook say")
    )
    end = next(e for e in events if isinstance(e, End))
    cited = markers_in(s.text for s in end.answer.sources)
    assert cited <= visible(SCOPES[name])
    assert markers_in([end.answer.text]) <= visible(SCOPES[name])


def test_the_result_cache_never_serves_across_scopes(matrix_app: App) -> None:
    query = f"{WORD} page for this scope"  # asked by no other test of the module's App
    narrow = matrix_app.scoped(SCOPES["acme-public-sales"])
    assert matrix_app.collection(COLLECTION).search(query, top_k=TOP_K).cache["result"] == "miss"
    first = narrow.collection(COLLECTION).search(query, top_k=TOP_K)
    assert first.cache["result"] == "miss"
    assert markers_in(h.text for h in first.hits) == visible(SCOPES["acme-public-sales"])
    assert narrow.collection(COLLECTION).search(query, top_k=TOP_K).cache["result"] == "hit"


def test_a_scoped_caller_may_not_export_the_whole_collection(
    matrix_app: App, tmp_path: Path
) -> None:
    with pytest.raises(AuthError, match="needs an unrestricted data scope"):
        matrix_app.scoped(SCOPES["acme-internal"]).collection(COLLECTION).export(
            tmp_path / "out.jsonl"
        )


def test_a_search_trace_records_the_scope(matrix_app: App) -> None:
    matrix_app.scoped(SCOPES["acme-internal"]).collection(COLLECTION).search(WORD)
    last = list(matrix_app.traces())[-1]
    assert last.scope == SCOPES["acme-internal"].to_dict()
    assert last.scope["tenants"] == ["acme"]


def test_a_bad_visibility_tag_fails_the_ingest_naming_it(app: App, tmp_path: Path) -> None:
    doc = write(tmp_path / "docs" / "a.md", "# a\n\nwords\n")
    with pytest.raises(IngestError, match="tag visibility='secret'"):
        app.collection("c").ingest([doc], {"visibility": "secret"})


def test_a_changed_default_scope_rewrites_unchanged_documents(tmp_path: Path) -> None:
    doc = write(tmp_path / "docs" / "a.md", "# a\n\nwords about things\n")
    first = build_app(fast_settings(tmp_path / "data"))
    first.collection("c").ingest([doc])
    first.close()
    second = build_app(fast_settings(tmp_path / "data", **{"ingest.scope": {"tenant": "acme"}}))
    report = second.collection("c").ingest([doc])
    assert len(report.updated) == 1, report
    [record] = second.collection("c").documents()
    scope = record_scope(record.metadata)
    assert scope is not None and scope.tenant == "acme"
    second.close()


def test_front_matter_never_sets_a_scope(app: App, tmp_path: Path) -> None:
    doc = write(
        tmp_path / "docs" / "a.md", "---\nvisibility: public\ntenant: '*'\n---\n# a\n\nwords\n"
    )
    app.collection("c").ingest([doc])
    [hit] = app.collection("c").search("words").hits
    assert (hit.metadata["visibility"], "tenant" in hit.metadata) == ("internal", False)


@pytest.mark.parametrize("name", SCOPES)
def test_mcp_resources_list_and_read_only_what_the_scope_sees(matrix_app: App, name: str) -> None:
    """Documents as MCP resources: listed exactly as the scope sees them, read alike; a
    hidden one's URI reads as one that does not exist (whole, or a chunk)."""
    scoped = matrix_app.scoped(SCOPES[name])
    listed = resources.listed(scoped, None).resources
    assert markers_in(r.name for r in listed) == visible(SCOPES[name])
    for resource in listed:
        (text, *_) = resources.read(scoped, str(resource.uri))
        assert markers_in([text.text]) <= visible(SCOPES[name])  # type: ignore[union-attr]
    hidden = [
        str(r.uri)
        for r in resources.listed(matrix_app, None).resources
        if not markers_in([r.name]) <= visible(SCOPES[name])
    ]
    assert hidden or SCOPES[name].unrestricted
    for uri in hidden:
        with pytest.raises(MCPError, match="no document with id"):
            resources.read(scoped, uri)
        with pytest.raises(MCPError, match="no document with id"):
            resources.read(scoped, f"{uri}/chunks/0")
