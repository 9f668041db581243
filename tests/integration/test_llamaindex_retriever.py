"""knowhub.integrations.llamaindex against llama-index-core itself: a real ``serve http`` and
an App over the same data dir, compared with ``/api/search``'s own answer, and a query
engine with llama-index-core's own deterministic ``MockLLM``."""

from __future__ import annotations

import asyncio

import pytest
from llama_index.core.llms import MockLLM
from llama_index.core.query_engine import RetrieverQueryEngine
from llama_index.core.schema import MetadataMode, NodeWithScore, TextNode

from knowhub.caller import Caller
from knowhub.errors import AuthError, QueryError
from knowhub.integrations.llamaindex import KnowhubRetriever
from tests.retriever_helpers import HANDBOOK_ONLY, Served, api_hits, import_without, served_fixture

QUERY = "how long are backups kept?"


served = served_fixture("llamaindex")


def made(served: Served, way: str = "http", **options: object) -> KnowhubRetriever:
    retriever: KnowhubRetriever = served.retriever(KnowhubRetriever, way, **options)
    return retriever


def _as_api(found: list[NodeWithScore]) -> list[tuple[str, str, float]]:
    return [(n.node.node_id, n.node.get_content(), round(n.score or 0.0, 6)) for n in found]


def test_nodes_over_http_are_the_api_search_hits(served: Served) -> None:
    found = made(served, collection="handbook", top_k=3).retrieve(QUERY)
    hits = api_hits(served.server, query=QUERY, collection="handbook", top_k=3)
    assert _as_api(found) == [(h["chunk_id"], h["text"], h["score"]) for h in hits]
    node = found[0].node
    assert isinstance(node, TextNode)
    assert node.metadata["citation"] == "ops.md, § Operations > Backups, lines 1-6"
    assert node.metadata["relevance"] == hits[0]["relevance"]
    # The model is shown the title and the citation with the text, nothing else.
    assert node.get_content(MetadataMode.LLM) == (
        "title: Operations\ncitation: ops.md, § Operations > Backups, lines 1-6\n\n" + node.text
    )


def test_an_app_in_process_finds_what_the_server_finds(served: Served) -> None:
    local = made(served, "app", collection="handbook", top_k=3).retrieve(QUERY)
    remote = made(served, "http", collection="handbook", top_k=3).retrieve(QUERY)
    assert local and _as_api(local) == _as_api(remote)


@pytest.mark.parametrize("way", ["http", "app"])
def test_aretrieve_matches_retrieve(served: Served, way: str) -> None:
    retriever = made(served, way, collection="handbook")
    awaited = asyncio.run(retriever.aretrieve(QUERY))
    assert awaited and _as_api(awaited) == _as_api(retriever.retrieve(QUERY))


@pytest.mark.parametrize("way", ["http", "app"])
def test_filters_and_top_k_reach_the_search(served: Served, way: str) -> None:
    def sources(**options: object) -> list[str]:
        found = made(served, way, collection="handbook", **options).retrieve("backups")
        return [n.node.metadata["source"] for n in found]

    assert set(sources(top_k=5)) == {"ops.md", "hr.md"}
    assert sources(top_k=5, filters={"team": "hr"}) == ["hr.md"]
    assert len(sources(top_k=1)) == 1


def test_a_limited_token_or_caller_is_refused_private(served: Served) -> None:
    url = served.server.url
    over_http = KnowhubRetriever.from_url(url, token=HANDBOOK_ONLY, collection="private")
    with pytest.raises(AuthError, match="403"):
        over_http.retrieve("orchid merger")
    limited = served.app.for_caller(Caller("handbook", frozenset({"handbook"})))
    with pytest.raises(AuthError, match="private"):
        KnowhubRetriever.from_app(limited, collection="private").retrieve("orchid merger")


def test_a_query_engine_answers_from_the_retrieved_passages(served: Served) -> None:
    retriever = made(served, collection="handbook", top_k=2)
    # MockLLM answers with its prompt: what the engine gave the model is what it says.
    engine = RetrieverQueryEngine.from_args(retriever, llm=MockLLM())
    response = engine.query(QUERY)
    prompt = str(response)
    assert "citation: ops.md, § Operations > Backups, lines 1-6" in prompt
    assert "They are kept for 35 days." in prompt and prompt.rstrip().endswith("Answer:")
    assert [n.node.node_id for n in response.source_nodes] == [
        n.node.node_id for n in retriever.retrieve(QUERY)
    ]
    assert str(asyncio.run(engine.aquery(QUERY))) == prompt


def test_bad_arguments_fail_when_the_retriever_is_made(served: Served) -> None:
    with pytest.raises(QueryError, match="top_k must be between 1 and 100, got 101"):
        made(served, "app", top_k=101)
    with pytest.raises(QueryError, match="filters must be an object"):
        made(served, "app", filters=["team", "ops"])


def test_without_llama_index_the_error_names_the_extra() -> None:
    said = import_without("llama_index", "knowhub.integrations.llamaindex")
    assert "LlamaIndex (llama-index-core) is not installed" in said, said
    assert "pip install 'knowhub[llamaindex]'" in said
