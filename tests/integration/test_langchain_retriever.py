"""knowhub.integrations.langchain against langchain-core itself: a real ``serve http`` and
an App over the same data dir, compared with ``/api/search``'s own answer."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path

import pytest
from langchain_core.documents import Document
from langchain_core.runnables import RunnableLambda

from knowhub import App, build_app
from knowhub.caller import Caller
from knowhub.errors import AuthError, CollectionNotFound, KnowhubError, QueryError
from knowhub.integrations.langchain import KnowhubRetriever
from tests.helpers import fast_settings, finishes, free_port
from tests.http_helpers import ApiServer
from tests.retriever_helpers import HANDBOOK_ONLY, MINUTES, api_hits, handbook_server

QUERY = "how long are backups kept?"


@pytest.fixture(scope="module")
def root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("langchain")


@pytest.fixture(scope="module")
def server(root: Path) -> Iterator[ApiServer]:
    with handbook_server(root) as running:
        yield running


@pytest.fixture(scope="module")
def app(server: ApiServer, root: Path) -> Iterator[App]:
    built = build_app(fast_settings(root / "data"))
    yield built
    built.close()


def _over_http(server: ApiServer, **options: object) -> KnowhubRetriever:
    return KnowhubRetriever.from_url(server.url, token=server.token, **options)


def _as_api(docs: list[Document]) -> list[tuple[str | None, str, float]]:
    return [(d.id, d.page_content, round(d.metadata["score"], 6)) for d in docs]


def test_documents_over_http_are_the_api_search_hits(server: ApiServer) -> None:
    docs = _over_http(server, collection="handbook", top_k=3).invoke(QUERY)
    hits = api_hits(server, query=QUERY, collection="handbook", top_k=3)
    assert _as_api(docs) == [(h["chunk_id"], h["text"], h["score"]) for h in hits]
    first = docs[0].metadata
    assert first["chunk_id"] == hits[0]["chunk_id"] and first["collection"] == "handbook"
    assert (first["source"], first["section_path"]) == ("ops.md", "Operations > Backups")
    assert first["citation"] == "ops.md, § Operations > Backups, lines 1-6"
    assert (first["title"], first["page"], first["relevance"]) == (
        "Operations",
        None,
        hits[0]["relevance"],
    )


def test_an_app_in_process_finds_what_the_server_finds(server: ApiServer, app: App) -> None:
    local = KnowhubRetriever.from_app(app, collection="handbook", top_k=3).invoke(QUERY)
    remote = _over_http(server, collection="handbook", top_k=3).invoke(QUERY)
    assert _as_api(local) == _as_api(remote)
    assert [d.metadata["citation"] for d in local] == [d.metadata["citation"] for d in remote]


def test_ainvoke_over_http_and_app_matches_invoke(server: ApiServer, app: App) -> None:
    for retriever in (
        _over_http(server, collection="handbook"),
        KnowhubRetriever.from_app(app, collection="handbook"),
    ):
        awaited = asyncio.run(retriever.ainvoke(QUERY))
        assert awaited and _as_api(awaited) == _as_api(retriever.invoke(QUERY))


@pytest.mark.parametrize("way", ["http", "app"])
def test_filters_and_top_k_reach_the_search(server: ApiServer, app: App, way: str) -> None:
    def made(**options: object) -> KnowhubRetriever:
        if way == "http":
            return _over_http(server, collection="handbook", **options)
        return KnowhubRetriever.from_app(app, collection="handbook", **options)

    unfiltered = {d.metadata["source"] for d in made(top_k=5).invoke("backups")}
    assert unfiltered == {"ops.md", "hr.md"}
    filtered = made(top_k=5, filters={"team": "hr"}).invoke("backups")
    assert filtered and {d.metadata["source"] for d in filtered} == {"hr.md"}
    assert len(made(top_k=1).invoke("backups")) == 1


def test_a_token_limited_to_the_handbook_is_refused_private(server: ApiServer) -> None:
    retriever = KnowhubRetriever.from_url(server.url, token=HANDBOOK_ONLY, collection="private")
    with pytest.raises(AuthError, match="403") as refused:
        retriever.invoke("orchid merger")
    assert "orchid" not in str(refused.value)
    with pytest.raises(AuthError):
        asyncio.run(retriever.ainvoke("orchid merger"))
    allowed = KnowhubRetriever.from_url(server.url, token=HANDBOOK_ONLY, collection="handbook")
    assert allowed.invoke("orchid merger")  # the handbook, never the minutes
    assert all(MINUTES not in d.page_content for d in allowed.invoke("orchid merger"))


def test_an_app_for_a_limited_caller_is_refused_private(app: App) -> None:
    limited = app.for_caller(Caller("handbook", frozenset({"handbook"})))
    with pytest.raises(AuthError, match="private"):
        KnowhubRetriever.from_app(limited, collection="private").invoke("orchid merger")


def test_an_unknown_collection_is_a_404_naming_it(server: ApiServer) -> None:
    with pytest.raises(CollectionNotFound, match="nosuch"):
        _over_http(server, collection="nosuch").invoke(QUERY)


def test_a_chain_formats_the_retrieved_documents(server: ApiServer) -> None:
    def format_docs(docs: list[Document]) -> str:
        return "\n\n".join(
            f"[{n}] {d.metadata['citation']}\n{d.page_content}" for n, d in enumerate(docs, 1)
        )

    chain = _over_http(server, collection="handbook", top_k=2) | RunnableLambda(format_docs)
    context = chain.invoke(QUERY)
    assert context.startswith("[1] ops.md, § Operations > Backups, lines 1-6\n# Operations")
    assert "kept for 35 days" in context and "\n\n[2] " in context
    assert asyncio.run(chain.ainvoke(QUERY)) == context


def test_bad_arguments_fail_when_the_retriever_is_made(server: ApiServer, app: App) -> None:
    with pytest.raises(QueryError, match="top_k must be between 1 and 100, got 0"):
        _over_http(server, top_k=0)
    with pytest.raises(QueryError, match=r"filters.team: an object must be \{\"in\""):
        KnowhubRetriever.from_app(app, filters={"team": {"gt": 3}})
    with pytest.raises(QueryError, match="min_score must be"):
        KnowhubRetriever.from_app(app, min_score=2.0)
    with pytest.raises(QueryError, match="url must start with http"):
        KnowhubRetriever.from_url("127.0.0.1:8000")


def test_an_empty_query_is_the_servers_clear_error(server: ApiServer) -> None:
    with pytest.raises(QueryError, match="query is empty"):
        _over_http(server).invoke("   ")


def test_a_server_that_does_not_answer_is_named() -> None:
    url = f"http://127.0.0.1:{free_port()}"
    with pytest.raises(KnowhubError, match=f"knowhub at {url} did not answer"):
        KnowhubRetriever.from_url(url, token="t").invoke(QUERY)


def test_the_token_stays_out_of_the_retrievers_repr(server: ApiServer) -> None:
    retriever = _over_http(server)
    assert server.token and server.token not in repr(retriever) + str(retriever)


def test_without_langchain_the_error_names_the_extra() -> None:
    done = finishes(
        "import sys; sys.modules['langchain_core'] = None\nimport knowhub.integrations.langchain"
    )
    assert done.returncode != 0
    assert "LangChain (langchain-core) is not installed" in done.stderr, done.stderr
    assert "pip install 'knowhub[langchain]'" in done.stderr
