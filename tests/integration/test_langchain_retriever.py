"""knowhub.integrations.langchain against langchain-core itself: a real ``serve http`` and
an App over the same data dir, compared with ``/api/search``'s own answer."""

from __future__ import annotations

import asyncio

import pytest
from langchain_core.documents import Document
from langchain_core.runnables import RunnableLambda

from knowhub.caller import Caller
from knowhub.errors import AuthError, CollectionNotFound, KnowhubError, QueryError
from knowhub.integrations.langchain import KnowhubRetriever
from tests.helpers import finishes, free_port
from tests.retriever_helpers import (
    HANDBOOK_ONLY,
    MINUTES,
    Served,
    api_hits,
    import_without,
    served_fixture,
)

QUERY = "how long are backups kept?"
WAYS = ["http", "app"]


served = served_fixture("langchain")


def made(served: Served, way: str = "http", **options: object) -> KnowhubRetriever:
    retriever: KnowhubRetriever = served.retriever(KnowhubRetriever, way, **options)
    return retriever


def _as_api(docs: list[Document]) -> list[tuple[str | None, str, float]]:
    return [(d.id, d.page_content, round(d.metadata["score"], 6)) for d in docs]


def test_documents_over_http_are_the_api_search_hits(served: Served) -> None:
    docs = made(served, collection="handbook", top_k=3).invoke(QUERY)
    hits = api_hits(served.server, query=QUERY, collection="handbook", top_k=3)
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


def test_an_app_in_process_finds_what_the_server_finds(served: Served) -> None:
    local = made(served, "app", collection="handbook", top_k=3).invoke(QUERY)
    remote = made(served, "http", collection="handbook", top_k=3).invoke(QUERY)
    assert _as_api(local) == _as_api(remote)
    assert [d.metadata["citation"] for d in local] == [d.metadata["citation"] for d in remote]


@pytest.mark.parametrize("way", WAYS)
def test_ainvoke_matches_invoke(served: Served, way: str) -> None:
    retriever = made(served, way, collection="handbook")
    awaited = asyncio.run(retriever.ainvoke(QUERY))
    assert awaited and _as_api(awaited) == _as_api(retriever.invoke(QUERY))


@pytest.mark.parametrize("way", WAYS)
def test_filters_and_top_k_reach_the_search(served: Served, way: str) -> None:
    unfiltered = made(served, way, collection="handbook", top_k=5).invoke("backups")
    assert {d.metadata["source"] for d in unfiltered} == {"ops.md", "hr.md"}
    filtered = made(served, way, collection="handbook", filters={"team": "hr"}).invoke("backups")
    assert filtered and {d.metadata["source"] for d in filtered} == {"hr.md"}
    assert len(made(served, way, collection="handbook", top_k=1).invoke("backups")) == 1


def test_a_token_limited_to_the_handbook_is_refused_private(served: Served) -> None:
    url = served.server.url
    retriever = KnowhubRetriever.from_url(url, token=HANDBOOK_ONLY, collection="private")
    with pytest.raises(AuthError, match="403") as refused:
        retriever.invoke("orchid merger")
    assert "orchid" not in str(refused.value)
    with pytest.raises(AuthError):
        asyncio.run(retriever.ainvoke("orchid merger"))
    allowed = KnowhubRetriever.from_url(url, token=HANDBOOK_ONLY, collection="handbook")
    found = allowed.invoke("orchid merger")  # the handbook's best, never the minutes
    assert found and all(MINUTES not in d.page_content for d in found)


def test_a_wrong_token_is_an_auth_error_that_does_not_repeat_it(served: Served) -> None:
    wrong = "not-a-token-Vb8sE3rT"
    with pytest.raises(AuthError, match="401") as refused:
        KnowhubRetriever.from_url(served.server.url, token=wrong).invoke(QUERY)
    assert wrong not in str(refused.value)


def test_an_app_for_a_limited_caller_is_refused_private(served: Served) -> None:
    limited = served.app.for_caller(Caller("handbook", frozenset({"handbook"})))
    with pytest.raises(AuthError, match="private"):
        KnowhubRetriever.from_app(limited, collection="private").invoke("orchid merger")


def test_an_unknown_collection_is_a_404_naming_it(served: Served) -> None:
    with pytest.raises(CollectionNotFound, match="nosuch"):
        made(served, collection="nosuch").invoke(QUERY)


def test_a_chain_formats_the_retrieved_documents(served: Served) -> None:
    def format_docs(docs: list[Document]) -> str:
        return "\n\n".join(
            f"[{n}] {d.metadata['citation']}\n{d.page_content}" for n, d in enumerate(docs, 1)
        )

    chain = made(served, collection="handbook", top_k=2) | RunnableLambda(format_docs)
    context = chain.invoke(QUERY)
    assert context.startswith("[1] ops.md, § Operations > Backups, lines 1-6\n# Operations")
    assert "kept for 35 days" in context and "\n\n[2] " in context
    assert asyncio.run(chain.ainvoke(QUERY)) == context


@pytest.mark.parametrize("way", WAYS)
def test_bad_arguments_fail_when_the_retriever_is_made(served: Served, way: str) -> None:
    with pytest.raises(QueryError, match="top_k must be between 1 and 100, got 0"):
        made(served, way, top_k=0)
    with pytest.raises(QueryError, match=r"filters.team: an object must be \{\"in\""):
        made(served, way, filters={"team": {"gt": 3}})
    with pytest.raises(QueryError, match="min_score must be"):
        made(served, way, min_score=2.0)


def test_a_url_without_its_scheme_is_refused_naming_the_fix() -> None:
    with pytest.raises(QueryError, match="url must start with http:// or https://"):
        KnowhubRetriever.from_url("127.0.0.1:8000")


def test_an_empty_query_is_the_servers_clear_error(served: Served) -> None:
    with pytest.raises(QueryError, match="query is empty"):
        made(served).invoke("   ")


def test_a_server_that_does_not_answer_is_named() -> None:
    url = f"http://127.0.0.1:{free_port()}"
    with pytest.raises(KnowhubError, match=f"knowhub at {url} did not answer"):
        KnowhubRetriever.from_url(url, token="t").invoke(QUERY)


def test_the_token_stays_out_of_the_retrievers_repr(served: Served) -> None:
    token = served.server.token
    assert token and token not in repr(made(served)) + str(made(served))


def test_without_langchain_the_error_names_the_extra() -> None:
    said = import_without("langchain_core", "knowhub.integrations.langchain")
    assert "LangChain (langchain-core) is not installed" in said, said
    assert "pip install 'knowhub[langchain]'" in said


def test_a_retriever_over_http_never_loads_the_runtime() -> None:
    done = finishes(
        "import sys\n"
        "from knowhub.integrations.langchain import KnowhubRetriever\n"
        "KnowhubRetriever.from_url('http://127.0.0.1:9', token='t', filters={'team': 'ops'})\n"
        "print(sorted(m for m in ('knowhub.app', 'knowhub.runtime', 'numpy') if m in sys.modules))"
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout == "[]\n"
