"""The search tools: ``query_knowledge_hub``, and ``search_docs`` under its other name.

Hits are cut to the result's size budget, later hits giving way first, and answered as
numbered passages (cite them as [n]) plus the same hits structured.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from typing import Annotated, Any, Protocol

import anyio.from_thread
from mcp.server.mcpserver import Context
from mcp_types import CallToolResult
from pydantic import BaseModel, Field

from knowhub.checks import MAX_QUERY_BYTES, check_filters
from knowhub.interfaces.mcp.indexing import (
    Indexed,
    indexing_out,
    not_created_yet,
)
from knowhub.interfaces.mcp.metrics import Metrics
from knowhub.interfaces.mcp.tools.base import (
    READ,
    CollectionName,
    DataTools,
    Tool,
    filters_given,
    in_thread,
    this_call,
    tool_result,
)
from knowhub.interfaces.mcp.tools.pictures import image_contents
from knowhub.models import Hit, text_place

__all__ = ["Cited", "Filters", "HitOut", "SearchOut", "SearchTools", "cite"]


class HitOut(BaseModel):
    n: int = Field(description="Citation number, as [n] in the Markdown.")
    chunk_id: str
    score: float = Field(description="Ranks the hits of this search (the best is often 1.0).")
    relevance: float | None = Field(
        None, description="Absolute, 0-1: how much the hit is about the query (ask uses 0.4+)."
    )
    text: str
    source: str
    url: str = Field(
        description="Where a reader opens it: a web page's URL with its section's anchor "
        "(#…); else the source."
    )
    title: str
    page: int | None
    section_path: str
    line_start: int
    line_end: int
    char_start: int
    char_end: int
    source_hash: str = Field(description="The document's content hash (get_document_summary).")
    collection: str
    truncated: bool = Field(description="The text was cut to fit max_chars.")
    image: str | None = Field(
        None,
        description="The picture this passage describes (sha256); the first pictures come "
        "as image content after the text.",
    )
    enrichment: dict[str, Any] | None = Field(
        None,
        description="Title, summary, keywords and question the LLM wrote for the chunk at "
        "ingest (ingest.transforms.enrich); keywords can be filtered on.",
    )


class SearchOut(Indexed):
    query: str
    collection: str
    hits: list[HitOut]
    truncated: bool = Field(description="Hits were cut or dropped to fit max_chars.")
    timings_ms: dict[str, float]


Query = Annotated[
    str, Field(min_length=1, max_length=MAX_QUERY_BYTES, description="What to search for.")
]
MinScore = Annotated[
    float,
    Field(
        ge=0.0,
        le=1.0,
        description=(
            "Drop hits whose relevance (absolute, 0-1: 0 unrelated, 1 clearly about the query) "
            "is lower."
        ),
    ),
]
Filters = Annotated[
    dict[str, Any] | None,
    Field(
        description='Metadata filters: {"team": "ops", "language": {"in": ["en", "ru"]}}; '
        "keys: language, source, format, plus the documents' tags and front matter "
        "(an unknown key is an error naming the known ones)."
    ),
]
MaxChars = Annotated[
    int | None, Field(ge=200, description="Size budget of the whole result, in chars.")
]


class SearchTools(DataTools):
    def tools(self) -> Iterator[Tool]:
        yield Tool(
            self.query_knowledge_hub,
            name="query_knowledge_hub",
            title="Search the knowledge base",
            annotations=READ,
            opening=self.opening("read", waits=True, check=filters_given),
            description=(
                "Hybrid (semantic + keyword) search over the knowledge base. Returns the best "
                "passages with numbered citations: source file, page, section and line span. "
                "Cite [n] when you use a passage; fetch more of it with get_content."
            ),
        )
        if self.settings.search_docs_tool:
            yield Tool(
                self.search_docs,
                name="search_docs",
                title="Search the documents",
                annotations=READ,
                opening=self.opening("read", waits=True, check=filters_given),
                description="Search the indexed documents (the default collection); same "
                "results as query_knowledge_hub, under the name mcp-doc-indexer clients use.",
            )

    async def query_knowledge_hub(
        self,
        query: Query,
        ctx: Context,
        top_k: Annotated[int, Field(ge=1, le=20, description="Passages to return.")] = 5,
        collection: CollectionName = None,
        filters: Filters = None,
        min_score: MinScore = 0.0,
        max_chars: MaxChars = None,
    ) -> Annotated[CallToolResult, SearchOut]:
        return await self._search(
            ctx, "query_knowledge_hub", query, top_k, filters, min_score, max_chars
        )

    async def search_docs(
        self,
        query: Query,
        ctx: Context,
        limit: Annotated[int, Field(ge=1, le=20, description="Passages to return.")] = 5,
        min_score: MinScore = 0.0,
    ) -> Annotated[CallToolResult, SearchOut]:
        return await self._search(ctx, "search_docs", query, limit, None, min_score, None)

    async def _search(
        self,
        ctx: Context,
        tool: str,
        query: str,
        top_k: int,
        filters: dict[str, Any] | None,
        min_score: float,
        max_chars: int | None,
    ) -> CallToolResult:
        metrics, settings, call = self.metrics, self.settings, this_call()
        started, kb, name = time.perf_counter(), call.kb, str(call.collection)
        typed = check_filters(filters)
        hook = _stage_progress(ctx, metrics)
        result = await in_thread(
            lambda: (
                None
                if not_created_yet(kb, name)
                else call.handle().search(query, top_k, typed, min_score, hook)
            )
        )
        metrics.searches.labels("mcp", tool).inc()
        metrics.search_seconds.labels("mcp").observe(time.perf_counter() - started)
        budget = min(max_chars or settings.max_result_chars, settings.max_result_chars)
        hits, timings = (result.hits, result.timings_ms) if result else ([], {})
        out = _search_out(query, name, hits, budget, timings)
        out.indexing = indexing_out(kb)
        shas = [hit.image for hit in out.hits if hit.image]
        images = await in_thread(lambda: image_contents(shas, kb.settings.data_dir))
        return tool_result(_search_markdown(out), out, images)


def _stage_progress(ctx: Context, metrics: Metrics) -> Callable[[str, int, float], None]:
    """A stage hook that sends each finished stage to the client as a progress note."""
    step = 0

    def hook(stage: str, hits: int, elapsed_ms: float) -> None:
        nonlocal step
        step += 1
        metrics.stage_seconds.labels(stage).observe(elapsed_ms / 1000.0)
        message = f"{stage}: {hits} hits in {elapsed_ms:.1f} ms"
        anyio.from_thread.run(ctx.report_progress, step, None, message)

    return hook


_CUT_NOTE = "(Cut to fit max_chars: fetch a whole passage with get_content.)"


def _search_out(
    query: str, collection: str, hits: list[Hit], budget: int, timings: dict[str, float]
) -> SearchOut:
    """Hits cut so that the whole Markdown answer fits ``budget``; later hits give way first."""
    out: list[HitOut] = []
    left = budget - len(_heading(query, collection, len(hits))) - len(_CUT_NOTE) - 4
    truncated = False
    for n, hit in enumerate(hits, start=1):
        # The heading, the enrichment line and the blank lines around them.
        overhead = len(_hit_heading(n, hit, hit.score)) + len(_about(hit.enrichment)) + 4
        room = left - overhead
        if room < 80:  # less than a phrase: leave the rest out
            truncated = True
            break
        cut = len(hit.text) > room
        text = hit.text[: room - 2].rstrip() + " …" if cut else hit.text
        truncated = truncated or cut
        left -= overhead + len(text)
        out.append(_hit_out(n, hit, text, cut))
    timings_ms = {k: round(v, 2) for k, v in timings.items()}
    return SearchOut(
        query=query, collection=collection, hits=out, truncated=truncated, timings_ms=timings_ms
    )


def _hit_out(n: int, hit: Hit, text: str, cut: bool) -> HitOut:
    return HitOut(
        n=n,
        chunk_id=hit.chunk_id,
        score=round(hit.score, 4),
        relevance=None if hit.relevance is None else round(hit.relevance, 4),
        text=text,
        source=hit.source,
        url=hit.url,
        title=hit.title,
        page=hit.page,
        section_path=hit.section_path,
        line_start=hit.line_start,
        line_end=hit.line_end,
        char_start=hit.char_start,
        char_end=hit.char_end,
        source_hash=hit.doc_hash,
        collection=hit.collection,
        truncated=cut,
        image=image if isinstance(image := hit.metadata.get("image"), str) else None,
        enrichment=hit.enrichment,
    )


class Cited(Protocol):
    """Anything that says where a passage is (a hit, a tool's hit or source)."""

    @property
    def source(self) -> str: ...
    @property
    def page(self) -> int | None: ...
    @property
    def section_path(self) -> str: ...
    @property
    def line_start(self) -> int: ...
    @property
    def line_end(self) -> int: ...
    @property
    def char_start(self) -> int: ...
    @property
    def char_end(self) -> int: ...


def cite(hit: Cited) -> str:
    """Where a passage is: its file (a web page's URL with its section's anchor), then page,
    section and lines where it has them."""
    parts = [getattr(hit, "url", None) or hit.source]
    if hit.page:
        parts.append(f"p. {hit.page}")
    if hit.section_path:
        parts.append(hit.section_path)
    if place := text_place(hit.line_start, hit.line_end, hit.char_start, hit.char_end):
        parts.append(place)
    return ", ".join(parts)


def _heading(query: str, collection: str, count: int) -> str:
    return f"{count} results for {query!r} in {collection!r}:"


def _hit_heading(n: int, hit: Hit | HitOut, score: float) -> str:
    relevance = "" if hit.relevance is None else f", relevance {hit.relevance:.2f}"
    return f"**[{n}]** {cite(hit)} — chunk `{hit.chunk_id}` (score {score:.3f}{relevance})"


def _about(enrichment: dict[str, Any] | None) -> str:
    """An enriched hit's line under its heading: the LLM's title, summary and keywords."""
    if enrichment is None:
        return ""
    keywords = ", ".join(enrichment.get("keywords", ()))
    return f"\n*{enrichment['title']}*: {enrichment.get('summary', '')} (keywords: {keywords})"


def _search_markdown(out: SearchOut) -> str:
    """Numbered passages, each headed by its citation and chunk id (for get_content)."""
    if not out.hits:
        return f"No results for {out.query!r} in collection {out.collection!r}."
    blocks = [_heading(out.query, out.collection, len(out.hits))]
    blocks += [
        f"{_hit_heading(h.n, h, h.score)}{_about(h.enrichment)}\n\n{h.text}" for h in out.hits
    ]
    if out.truncated:
        blocks.append(_CUT_NOTE)
    return "\n\n".join(blocks)
