"""The browsing tools: ``list_collections``, ``get_document_summary`` and ``get_content``."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Annotated

from mcp.server.mcpserver import Context
from mcp_types import CallToolResult
from pydantic import BaseModel, Field

from knowhub.interfaces.mcp.indexing import Indexed, indexing_out
from knowhub.interfaces.mcp.kb import KnowledgeBase
from knowhub.interfaces.mcp.tools.base import (
    READ,
    CollectionName,
    DataTools,
    Tool,
    in_thread,
    this_call,
    tool_result,
)
from knowhub.interfaces.mcp.tools.pictures import (
    ImageOut,
    document_images,
    images_count,
    images_line,
)
from knowhub.interfaces.mcp.tools.search import cite
from knowhub.models import DocumentRecord, Hit

__all__ = ["CollectionOut", "CollectionsOut", "ContentOut", "DocumentOut", "DocumentTools"]


class CollectionOut(BaseModel):
    name: str
    documents: int
    chunks: int
    lexical_index: bool = Field(description="Every chunk is in the BM25 (FTS5) index.")
    embedder: str
    active_version: int = Field(description="The knowledge-base version answering queries.")


class CollectionsOut(Indexed):
    collections: list[CollectionOut]


class DocumentOut(Indexed):
    source_hash: str
    source: str
    path: str
    title: str
    format: str
    collection: str
    ingested_at: str
    status: str
    chunk_count: int
    total_chars: int
    average_chunk_chars: float
    pages: int | None
    images: list[ImageOut] = Field(
        default_factory=list,
        description="The first 20 pictures kept of it (query hits bring them).",
    )
    images_total: int = Field(0, description="How many pictures were kept of it.")


class ContentOut(Indexed):
    chunk_id: str
    text: str
    source: str
    title: str
    collection: str
    source_hash: str
    page: int | None
    section_path: str
    line_start: int
    line_end: int
    char_start: int
    char_end: int


class DocumentTools(DataTools):
    def tools(self) -> Iterator[Tool]:
        yield Tool(
            self.list_collections,
            name="list_collections",
            title="List collections",
            annotations=READ,
            opening=self.opening(notes_indexing=False),
            description="The collections of the knowledge base with document and chunk counts.",
        )
        yield Tool(
            self.get_document_summary,
            name="get_document_summary",
            title="Describe a document",
            annotations=READ,
            opening=self.opening("read"),
            description="A document's source, status, chunk count and sizes, from the "
            "source_hash of a search hit (8 or more leading characters are enough).",
        )
        yield Tool(
            self.get_content,
            name="get_content",
            title="Read a passage",
            annotations=READ,
            opening=self.opening(),
            description="The full text of one chunk (chunk_id from a search hit) with its "
            "line and character span in the source.",
        )

    async def list_collections(self, ctx: Context) -> Annotated[CallToolResult, CollectionsOut]:
        call = this_call()
        infos = await in_thread(call.reader.collections)
        out = CollectionsOut(
            indexing=indexing_out(call.kb),
            collections=[
                CollectionOut(
                    name=i.name,
                    documents=i.documents,
                    chunks=i.chunks,
                    lexical_index=i.lexical_chunks == i.chunks,
                    embedder=i.embedder,
                    active_version=i.active_version,
                )
                for i in infos
            ],
        )
        lines = [
            f"- **{c.name}**: {c.documents} documents, {c.chunks} chunks, "
            f"embedder {c.embedder}, version {c.active_version}"
            f"{'' if c.lexical_index else ' (lexical index incomplete)'}"
            for c in out.collections
        ]
        return tool_result("\n".join(lines) or "No collections yet.", out)

    async def get_document_summary(
        self,
        source_hash: Annotated[str, Field(min_length=1, max_length=128)],
        ctx: Context,
        collection: CollectionName = None,
    ) -> Annotated[CallToolResult, DocumentOut]:
        call = this_call()
        record = await in_thread(lambda: call.handle().document(source_hash))
        out = _document_out(record, call.kb)
        text = (
            f"**{out.source}** ({out.format}, {out.title!r}): {out.chunk_count} chunks, "
            f"{out.total_chars} chars (average {out.average_chunk_chars})"
            + (f", {out.pages} pages" if out.pages else "")
            + f"; ingested {out.ingested_at}; hash {out.source_hash}"
            + images_line(out.images, out.images_total)
        )
        return tool_result(text, out)

    async def get_content(
        self, chunk_id: Annotated[str, Field(min_length=1, max_length=200)], ctx: Context
    ) -> Annotated[CallToolResult, ContentOut]:
        call = this_call()
        # One answer for missing and forbidden (the reader leaves out what the caller may
        # not read): nothing to probe.
        hit = (await in_thread(lambda: call.reader.chunk(chunk_id)))[0]
        return tool_result(f"{cite(hit)}\n\n{hit.text}", _content_out(hit, call.kb))


def _document_out(record: DocumentRecord, kb: KnowledgeBase) -> DocumentOut:
    return DocumentOut(
        source_hash=record.doc_hash,
        source=record.source,
        path=record.path,
        title=record.title,
        format=record.format,
        collection=record.collection,
        ingested_at=record.ingested_at,
        status="indexed",
        chunk_count=record.chunk_count,
        total_chars=record.char_count,
        average_chunk_chars=round(record.char_count / max(record.chunk_count, 1), 1),
        pages=record.pages,
        images=document_images(record),
        images_total=images_count(record),
        indexing=indexing_out(kb),
    )


def _content_out(hit: Hit, kb: KnowledgeBase) -> ContentOut:
    return ContentOut(
        chunk_id=hit.chunk_id,
        text=hit.text,
        source=hit.source,
        title=hit.title,
        collection=hit.collection,
        source_hash=hit.doc_hash,
        page=hit.page,
        section_path=hit.section_path,
        line_start=hit.line_start,
        line_end=hit.line_end,
        char_start=hit.char_start,
        char_end=hit.char_end,
        indexing=indexing_out(kb),
    )
