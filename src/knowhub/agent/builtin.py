"""knowhub's own tools in a chat, called in-process (no MCP round trip): search the
knowledge base, read a chunk whole, list the collections.

Every chunk a result shows gets the chat's citation number for it (:class:`SourceBook`), so
the model cites ``[n]`` as ``knowhub ask`` does. Search results show each chunk's start only
(the budget of a tool result is shared by everything the model reads); ``get_chunk`` gives
one whole. Collections the caller may not read are neither listed nor searched.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from knowhub.agent.mcp_pool import ToolOutcome
from knowhub.agent.sources import SourceBook
from knowhub.agent.toolbox import Tool
from knowhub.checks import check_collection_name, check_filters, check_query
from knowhub.errors import QueryError
from knowhub.models import Hit, citation

if TYPE_CHECKING:
    from knowhub.app import App

__all__ = ["SERVER", "knowledge_tools"]

SERVER = "knowhub"
_PREVIEW_CHARS = 700
_MAX_TOP_K = 20


def knowledge_tools(app: App, sources: SourceBook, collection: str) -> list[Tool]:
    """The three tools, searching ``collection`` unless the model names another; ``app`` is
    the App as the chat's caller may use it (a collection it may not read is refused)."""

    def search(args: dict[str, Any]) -> ToolOutcome:
        query = check_query(_text(args, "query"))
        name = check_collection_name(args.get("collection") or collection)
        top_k = _top_k(args.get("top_k", 5))
        hits = app.collection(name).retrieve(query, top_k, check_filters(args.get("filters"))).hits
        if not hits:
            return ToolOutcome(f"no results in collection {name!r} for {query!r}")
        return ToolOutcome(
            "\n\n".join(_passage(sources.number(h), h, _PREVIEW_CHARS) for h in hits)
        )

    def get_chunk(args: dict[str, Any]) -> ToolOutcome:
        hit = app.chunk(_text(args, "chunk_id"))[0]
        return ToolOutcome(_passage(sources.number(hit), hit, None))

    def list_collections(args: dict[str, Any]) -> ToolOutcome:
        rows = [
            f"{c.name}: {c.documents} documents, {c.chunks} chunks"
            + (" (searched by default)" if c.name == collection else "")
            for c in app.collections()
        ]
        return ToolOutcome("\n".join(rows) or "no collections yet: ingest documents first")

    search_doc = _SEARCH_DOC.format(collection=collection)
    empty: dict[str, Any] = {"type": "object", "properties": {}}
    return [
        Tool(SERVER, "search", search_doc, _SEARCH_SCHEMA, search, read_only=True),
        Tool(SERVER, "get_chunk", _CHUNK_DOC, _CHUNK_SCHEMA, get_chunk, read_only=True),
        Tool(SERVER, "list_collections", _LIST_DOC, empty, list_collections, read_only=True),
    ]


def _passage(n: int, hit: Hit, limit: int | None) -> str:
    text = hit.text.strip()
    if limit is not None and len(text) > limit:
        text = text[:limit].rstrip() + " … (get_chunk gives the whole chunk)"
    where = f"collection {hit.collection}, chunk_id {hit.chunk_id}"
    return f"[{n}] {hit.title} — {citation(hit)} ({where})\n{text}"


def _text(args: dict[str, Any], key: str) -> str:
    value = args.get(key)
    if not isinstance(value, str) or not value.strip():
        raise QueryError(f"{key} is required: a non-empty string")
    return value


def _top_k(value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= _MAX_TOP_K:
        raise QueryError(f"top_k must be an integer from 1 to {_MAX_TOP_K}, got {value!r}")
    return value


_SEARCH_DOC = (
    "Search the knowledge base (hybrid keyword and meaning search, any language). Each "
    "result starts with its citation number [n]: cite facts from it as [n] in the answer. "
    "Searches collection {collection!r} unless another is named (list_collections lists them)."
)
_SEARCH_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "query": {"type": "string", "description": "What to look for, in natural language."},
        "collection": {"type": "string", "description": "The collection to search."},
        "filters": {
            "type": "object",
            "description": 'Metadata to match: {"team": "ops"}, {"language": {"in": ["en"]}}.',
        },
        "top_k": {"type": "integer", "minimum": 1, "maximum": _MAX_TOP_K, "default": 5},
    },
    "required": ["query"],
}
_CHUNK_DOC = "The whole text of one search result, by the chunk_id the result showed."
_CHUNK_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"chunk_id": {"type": "string"}},
    "required": ["chunk_id"],
}
_LIST_DOC = "The collections of the knowledge base, with their sizes."
