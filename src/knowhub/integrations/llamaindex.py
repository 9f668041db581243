"""A LlamaIndex retriever over knowhub (extra ``llamaindex``; docs/integrations.md).

:class:`KnowhubRetriever` is a ``llama_index.core`` ``BaseRetriever``: ``retrieve`` and
``aretrieve`` return ``NodeWithScore``\\ s of ``TextNode``\\ s (a chunk's text; its id; the
metadata of :func:`~knowhub.integrations.search.hit_metadata`), so it serves a
``RetrieverQueryEngine`` or an agent's tool. Of the metadata only the title and the citation
reach the LLM's prompt: a model cites what it is shown, and scores or hashes are noise to it.
It asks a ``knowhub serve http`` server (:meth:`KnowhubRetriever.from_url`, with a token) or
an App in this process (:meth:`KnowhubRetriever.from_app`).
"""

from __future__ import annotations

from typing import Any

from knowhub.integrations.search import Made, SearchArgs, Searcher, hit_metadata, missing
from knowhub.models import Hit

try:
    from llama_index.core.callbacks import CallbackManager
    from llama_index.core.retrievers import BaseRetriever
    from llama_index.core.schema import NodeWithScore, QueryBundle, TextNode
except ImportError as exc:  # the module is useless without it: say which extra installs it
    raise missing("LlamaIndex (llama-index-core)", "llamaindex", exc) from exc

__all__ = ["KnowhubRetriever"]

_SHOWN_TO_LLM = ("title", "citation")


class KnowhubRetriever(BaseRetriever, Made):
    """knowhub's hybrid search as a LlamaIndex retriever.

    ``collection`` None searches the caller's default collection; ``top_k``, ``filters``
    (``{"team": "ops", "language": {"in": ["en", "ru"]}}``) and ``min_score`` None take the
    server's (or App's) configured defaults. They are checked here, not at the first query.
    """

    def __init__(
        self,
        searcher: Searcher,
        *,
        collection: str | None = None,
        top_k: int | None = None,
        filters: dict[str, Any] | None = None,
        min_score: float | None = None,
        callback_manager: CallbackManager | None = None,
        verbose: bool = False,
    ) -> None:
        self.searcher = searcher
        self.args = SearchArgs.checked(collection, top_k, filters, min_score)
        super().__init__(callback_manager=callback_manager, verbose=verbose)

    def _retrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        return [_node(hit) for hit in self.searcher.search(query_bundle.query_str, self.args)]

    async def _aretrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        hits = await self.searcher.asearch(query_bundle.query_str, self.args)
        return [_node(hit) for hit in hits]


def _node(hit: Hit) -> NodeWithScore:
    metadata = hit_metadata(hit)
    node = TextNode(
        id_=hit.chunk_id,
        text=hit.text,
        metadata=metadata,
        excluded_llm_metadata_keys=[k for k in metadata if k not in _SHOWN_TO_LLM],
        excluded_embed_metadata_keys=list(metadata),
    )
    return NodeWithScore(node=node, score=hit.score)
