"""A LangChain retriever over knowhub (extra ``langchain``; docs/integrations.md).

:class:`KnowhubRetriever` is a ``langchain_core`` ``BaseRetriever``: ``invoke``/``ainvoke``
return ``Document``\\ s whose ``page_content`` is a chunk's text and whose metadata says
where it is (source, title, section path, page, a ready-made citation) and how it scored
(:func:`~knowhub.integrations.search.hit_metadata`). It asks a ``knowhub serve http``
server (:meth:`KnowhubRetriever.from_url`, with a token) or an App in this process
(:meth:`KnowhubRetriever.from_app`); either way the token's or the App caller's rights apply.
"""

from __future__ import annotations

from typing import Any, Self

from pydantic import model_validator

from knowhub.integrations.search import Made, SearchArgs, Searcher, hit_metadata, missing
from knowhub.models import Hit

try:
    from langchain_core.callbacks import (
        AsyncCallbackManagerForRetrieverRun,
        CallbackManagerForRetrieverRun,
    )
    from langchain_core.documents import Document
    from langchain_core.retrievers import BaseRetriever
except ImportError as exc:  # the module is useless without it: say which extra installs it
    raise missing("LangChain (langchain-core)", "langchain", exc) from exc

__all__ = ["KnowhubRetriever"]


class KnowhubRetriever(BaseRetriever, Made):
    """knowhub's hybrid search as a LangChain retriever.

    ``collection`` None searches the caller's default collection; ``top_k``, ``filters``
    (``{"team": "ops", "language": {"in": ["en", "ru"]}}``) and ``min_score`` None take the
    server's (or App's) configured defaults. They are checked when the retriever is made.
    """

    searcher: Searcher
    collection: str | None = None
    top_k: int | None = None
    filters: dict[str, Any] | None = None
    min_score: float | None = None

    @model_validator(mode="after")
    def _valid(self) -> Self:
        self._args()  # a bad option fails when the retriever is made, not at its first query
        return self

    def _args(self) -> SearchArgs:
        return SearchArgs.checked(self.collection, self.top_k, self.filters, self.min_score)

    def _get_relevant_documents(
        self, query: str, *, run_manager: CallbackManagerForRetrieverRun
    ) -> list[Document]:
        return [_document(hit) for hit in self.searcher.search(query, self._args())]

    async def _aget_relevant_documents(
        self, query: str, *, run_manager: AsyncCallbackManagerForRetrieverRun
    ) -> list[Document]:
        return [_document(hit) for hit in await self.searcher.asearch(query, self._args())]


def _document(hit: Hit) -> Document:
    return Document(page_content=hit.text, metadata=hit_metadata(hit), id=hit.chunk_id)
