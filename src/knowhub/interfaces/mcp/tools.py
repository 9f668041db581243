"""The data tools: search, list, inspect and ingest one knowledge base.

Each tool resolves its :class:`Target` (which knowledge base, who is asking) from the
request, runs the blocking App call in a worker thread, and answers with structured
content plus readable Markdown. Every failure becomes a tool error that says what went
wrong (:func:`tool_errors`); the server keeps serving.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterator
from contextlib import AbstractAsyncContextManager, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, TypeVar

import anyio.from_thread
import anyio.to_thread
from mcp import MCPError
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp_types import CallToolResult, TextContent, ToolAnnotations
from pydantic import BaseModel, Field

from knowhub.config import IngestSettings, ServerSettings
from knowhub.errors import KnowhubError
from knowhub.ingest.progress import Progress
from knowhub.interfaces.mcp.indexing import (
    Indexed,
    indexing_note,
    indexing_out,
    not_created_yet,
    noting_indexing,
    wait_for_first_sync,
)
from knowhub.interfaces.mcp.kb import KnowledgeBase
from knowhub.interfaces.mcp.metrics import Metrics
from knowhub.interfaces.progress import Notifier, ProgressView
from knowhub.interfaces.security import Principal
from knowhub.models import Hit
from knowhub.validate import MAX_QUERY_BYTES, check_filters, parse_key_values

__all__ = [
    "CollectionOut",
    "CollectionsOut",
    "ContentOut",
    "DocumentOut",
    "HitOut",
    "IngestOut",
    "Resolve",
    "SearchOut",
    "Target",
    "add_data_tools",
    "inside_root",
    "progress_reporter",
    "tool_errors",
    "tool_result",
]

log = logging.getLogger("knowhub.mcp")

T = TypeVar("T")


@dataclass(frozen=True)
class Target:
    """What a data-tool call works on."""

    kb: KnowledgeBase
    principal: Principal
    root: Path  # ingest paths must resolve inside it
    label: str  # "local" or the session id, for logs


# Holds the target for the whole tool call (shared mode never unloads a session in use).
Resolve = Callable[[Context], AbstractAsyncContextManager[Target]]


class HitOut(BaseModel):
    n: int = Field(description="Citation number, as [n] in the Markdown.")
    chunk_id: str
    score: float = Field(description="Ranks the hits of this search (the best is often 1.0).")
    relevance: float | None = Field(
        None, description="Absolute, 0-1: how much the hit is about the query (ask uses 0.4+)."
    )
    text: str
    source: str
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


class SearchOut(Indexed):
    query: str
    collection: str
    hits: list[HitOut]
    truncated: bool = Field(description="Hits were cut or dropped to fit max_chars.")
    timings_ms: dict[str, float]


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


class IngestOut(Indexed):
    collection: str
    added: list[str]
    updated: list[str]
    moved: list[dict[str, str]] = Field(
        default_factory=list, description="Files found at a new path: {from, to} sources."
    )
    retagged: list[str] = Field(default_factory=list, description="Same bytes, tags changed.")
    unchanged: int
    removed: list[str]
    failed: list[dict[str, str]]
    skipped: list[dict[str, str]] = Field(
        description="Passed over: not a regular file, or a symlink leading out of the root."
    )
    chunks: int
    seconds: float


READ = ToolAnnotations(
    read_only_hint=True, destructive_hint=False, idempotent_hint=True, open_world_hint=False
)
# Ingest adds or replaces documents but never deletes one; running it twice changes nothing.
WRITE = ToolAnnotations(
    read_only_hint=False, destructive_hint=False, idempotent_hint=True, open_world_hint=False
)

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


def add_data_tools(
    server: MCPServer,
    resolve: Resolve,
    settings: ServerSettings,
    metrics: Metrics,
    read_only: bool,
) -> None:
    """Register the data tools on ``server`` (``ingest`` only when not ``read_only``)."""

    async def run_search(
        ctx: Context,
        tool: str,
        query: str,
        top_k: int,
        collection: str,
        filters: dict[str, Any] | None,
        min_score: float,
        max_chars: int | None,
    ) -> CallToolResult:
        async with resolve(ctx) as target:
            started = time.perf_counter()
            kb = target.kb
            with (
                tool_errors(metrics, tool, query=query, collection=collection),
                noting_indexing(kb),
            ):
                target.principal.check_read(collection)
                typed = check_filters(filters)
                await wait_for_first_sync(kb, settings.first_sync_wait_s, tool)
                hook = _stage_progress(ctx, metrics)
                result = await _in_thread(
                    lambda: (
                        None
                        if not_created_yet(kb, collection)
                        else kb.reader.search(
                            query, collection, top_k, typed, min_score, on_stage=hook
                        )
                    )
                )
            metrics.searches.labels("mcp", tool).inc()
            metrics.search_seconds.labels("mcp").observe(time.perf_counter() - started)
            budget = min(max_chars or settings.max_result_chars, settings.max_result_chars)
            hits, timings = (result.hits, result.timings_ms) if result else ([], {})
            out = _search_out(query, collection, hits, budget, timings)
            out.indexing = indexing_out(kb)
            return tool_result(_search_markdown(out), out)

    @server.tool(
        name="query_knowledge_hub",
        title="Search the knowledge base",
        annotations=READ,
        description=(
            "Hybrid (semantic + keyword) search over the knowledge base. Returns the best "
            "passages with numbered citations: source file, page, section and line span. "
            "Cite [n] when you use a passage; fetch more of it with get_content."
        ),
    )
    async def query_knowledge_hub(
        query: Query,
        ctx: Context,
        top_k: Annotated[int, Field(ge=1, le=20, description="Passages to return.")] = 5,
        collection: Annotated[str, Field(description="Collection to search.")] = "default",
        filters: Annotated[
            dict[str, Any] | None,
            Field(
                description='Metadata filters: {"team": "ops", "language": {"in": ["en", "ru"]}}; '
                "keys: language, source, format, plus the documents' tags and front matter "
                "(an unknown key is an error naming the known ones)."
            ),
        ] = None,
        min_score: MinScore = 0.0,
        max_chars: Annotated[
            int | None, Field(ge=200, description="Size budget of the whole result, in chars.")
        ] = None,
    ) -> Annotated[CallToolResult, SearchOut]:
        return await run_search(
            ctx, "query_knowledge_hub", query, top_k, collection, filters, min_score, max_chars
        )

    if settings.search_docs_tool:

        @server.tool(
            name="search_docs",
            title="Search the documents",
            annotations=READ,
            description="Search the indexed documents (default collection); same results "
            "as query_knowledge_hub, under the name mcp-doc-indexer clients use.",
        )
        async def search_docs(
            query: Query,
            ctx: Context,
            limit: Annotated[int, Field(ge=1, le=20, description="Passages to return.")] = 5,
            min_score: MinScore = 0.0,
        ) -> Annotated[CallToolResult, SearchOut]:
            return await run_search(
                ctx, "search_docs", query, limit, "default", None, min_score, None
            )

    @server.tool(
        name="list_collections",
        title="List collections",
        annotations=READ,
        description="The collections of the knowledge base with document and chunk counts.",
    )
    async def list_collections(ctx: Context) -> Annotated[CallToolResult, CollectionsOut]:
        async with resolve(ctx) as target:
            with tool_errors(metrics, "list_collections"):
                infos = await _in_thread(target.kb.reader.collections)
            out = CollectionsOut(
                indexing=indexing_out(target.kb),
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
                    if target.principal.may_read(i.name)
                ],
            )
            lines = [
                f"- **{c.name}**: {c.documents} documents, {c.chunks} chunks, "
                f"embedder {c.embedder}, version {c.active_version}"
                f"{'' if c.lexical_index else ' (lexical index incomplete)'}"
                for c in out.collections
            ]
            return tool_result("\n".join(lines) or "No collections yet.", out)

    @server.tool(
        name="get_document_summary",
        title="Describe a document",
        annotations=READ,
        description="A document's source, status, chunk count and sizes, from the "
        "source_hash of a search hit (8 or more leading characters are enough).",
    )
    async def get_document_summary(
        source_hash: Annotated[str, Field(min_length=1, max_length=128)],
        ctx: Context,
        collection: str = "default",
    ) -> Annotated[CallToolResult, DocumentOut]:
        async with resolve(ctx) as target:
            with (
                tool_errors(
                    metrics, "get_document_summary", source_hash=source_hash, collection=collection
                ),
                noting_indexing(target.kb),
            ):
                target.principal.check_read(collection)
                record = await _in_thread(
                    lambda: target.kb.reader.document(source_hash, collection)
                )
            out = DocumentOut(
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
                indexing=indexing_out(target.kb),
            )
            text = (
                f"**{out.source}** ({out.format}, {out.title!r}): {out.chunk_count} chunks, "
                f"{out.total_chars} chars (average {out.average_chunk_chars})"
                + (f", {out.pages} pages" if out.pages else "")
                + f"; ingested {out.ingested_at}; hash {out.source_hash}"
            )
            return tool_result(text, out)

    @server.tool(
        name="get_content",
        title="Read a passage",
        annotations=READ,
        description="The full text of one chunk (chunk_id from a search hit) with its "
        "line and character span in the source.",
    )
    async def get_content(
        chunk_id: Annotated[str, Field(min_length=1, max_length=200)], ctx: Context
    ) -> Annotated[CallToolResult, ContentOut]:
        async with resolve(ctx) as target:
            with tool_errors(metrics, "get_content", chunk_id=chunk_id), noting_indexing(target.kb):
                found = await _in_thread(lambda: target.kb.reader.chunk(chunk_id))
                readable = [h for h in found if target.principal.may_read(h.collection)]
                if not readable:
                    raise KnowhubError(
                        f"no chunk with id {chunk_id!r}: copy an id from a search result"
                    )
            hit = readable[0]
            out = ContentOut(
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
                indexing=indexing_out(target.kb),
            )
            return tool_result(f"{_cite(hit)}\n\n{hit.text}", out)

    if read_only:
        return

    @server.tool(
        name="ingest",
        title="Index files",
        annotations=WRITE,
        description="Index a file or folder under the server's document root into a "
        "collection; unchanged files are skipped. Reports progress.",
    )
    async def ingest(
        path: Annotated[str, Field(min_length=1, description="Relative to the document root.")],
        ctx: Context,
        collection: str = "default",
        tags: Annotated[
            dict[str, str] | None,
            Field(
                description="Metadata on every chunk, for filters; kept by later ingests "
                'until changed; "" removes one.'
            ),
        ] = None,
    ) -> Annotated[CallToolResult, IngestOut]:
        async with resolve(ctx) as target:
            with tool_errors(metrics, "ingest", path=path, collection=collection):
                target.principal.check_write("ingest")
                target.principal.check_read(collection)
                where = inside_root(target.root, path)
                if not where.exists():
                    raise KnowhubError(f"path {path!r} does not exist under the document root")
                tag_map = parse_key_values(
                    [f"{k}={v}" for k, v in (tags or {}).items()], "tags", empty=True
                )
                progress = progress_reporter(ctx, target.kb.settings.ingest)
                report = await _in_thread(
                    lambda: target.kb.ingest([where], collection, tag_map, progress=progress)
                )
            metrics.record_ingest(report)
            out = IngestOut(
                collection=report.collection,
                added=report.added,
                updated=report.updated,
                moved=[{"from": old, "to": new} for old, new in report.moved],
                retagged=report.retagged,
                unchanged=len(report.unchanged),
                removed=report.removed,
                failed=[{"source": s, "reason": r} for s, r in report.failed],
                skipped=[{"source": s, "reason": r} for s, r in report.skipped],
                chunks=report.chunks,
                seconds=round(report.seconds, 3),
                indexing=indexing_out(target.kb),
            )
            changes = (("moved", out.moved), ("retagged", out.retagged))
            changed = "".join(f"{len(items)} {what}, " for what, items in changes if items)
            text = (
                f"{len(out.added)} added, {len(out.updated)} updated, {changed}"
                f"{out.unchanged} unchanged, "
                f"{len(out.failed)} failed, {len(out.skipped)} skipped ({out.chunks} chunks "
                f"written) into {out.collection!r}"
            )
            text += "".join(f"\n- moved {m['from']} → {m['to']}" for m in out.moved)
            text += "".join(f"\n- failed {f['source']}: {f['reason']}" for f in out.failed)
            text += "".join(f"\n- skipped {f['reason']}" for f in out.skipped)
            return tool_result(text, out)


def inside_root(root: Path, path: str) -> Path:
    """``path`` (relative, or absolute inside ``root``) resolved; refuse any escape."""
    if "\x00" in path:  # the OS cannot take it: os.stat would raise ValueError
        raise KnowhubError(f"path {path!r} contains a NUL character: give a plain path")
    candidate = Path(path)
    if ".." in candidate.parts:
        raise KnowhubError(f"path {path!r} contains '..': give a path inside the document root")
    base = root.resolve()
    try:
        full = (candidate if candidate.is_absolute() else base / candidate).resolve()
        full.stat()  # a symlink loop: RuntimeError from resolve() before 3.13, ELOOP after
    except FileNotFoundError:
        pass  # not there (yet): register creates it, ingest says it does not exist
    except (OSError, RuntimeError) as exc:
        raise KnowhubError(
            f"path {path!r} cannot be resolved ({_os_reason(exc)}): fix or remove the "
            "symlink on the way, or give another path"
        ) from exc
    if not full.is_relative_to(base):
        raise KnowhubError(
            f"path {path!r} resolves outside the document root {base} (absolute path or a "
            "symlink leading out): give a path inside it"
        )
    return full


# -- helpers -------------------------------------------------------------------------


async def _in_thread(fn: Callable[[], T]) -> T:
    return await anyio.to_thread.run_sync(fn)


@contextmanager
def tool_errors(metrics: Metrics, tool: str, **arguments: object) -> Iterator[None]:
    """Turn every failure inside the block into a tool error that says what went wrong.

    A :class:`KnowhubError` already names the value and the fix. Anything else (say a
    ``ValueError`` or an ``OSError`` from the file system) would reach the client as a bare
    "Error executing tool X", so it is named with the call's ``arguments`` and logged with
    its traceback.
    """
    try:
        yield
    except (ToolError, MCPError):
        metrics.tool_calls.labels(tool, "error").inc()
        raise
    except KnowhubError as exc:
        metrics.tool_calls.labels(tool, "error").inc()
        raise ToolError(str(exc)) from exc
    except Exception as exc:
        metrics.tool_calls.labels(tool, "error").inc()
        log.error("tool %s failed unexpectedly", tool, exc_info=exc)
        given = ", ".join(f"{name}={_shorten(value)}" for name, value in arguments.items())
        raise ToolError(
            f"{tool}({given}) failed: {type(exc).__name__}: {_os_reason(exc)}; check these "
            "arguments, and if they are right, report this (the server log has the details)"
        ) from exc
    metrics.tool_calls.labels(tool, "ok").inc()


def _shorten(value: object, limit: int = 80) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _os_reason(exc: BaseException) -> str:
    """An OSError as 'its reason: its file'; anything else as its message."""
    if isinstance(exc, OSError) and exc.strerror:
        return f"{exc.strerror}: {exc.filename}" if exc.filename else exc.strerror
    return str(exc)


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


def progress_reporter(ctx: Context, settings: IngestSettings) -> Progress:
    """An ingest progress callback (called from a worker thread) that notifies the client
    in chunks embedded, as the CLI shows them (:class:`~knowhub.interfaces.progress.Notifier`)."""

    def send(done: float, total: float | None, message: str) -> None:
        anyio.from_thread.run(ctx.report_progress, done, total, message)

    return Notifier(ProgressView("ingesting", settings.long_file_warning_s), send)


_CUT_NOTE = "(Cut to fit max_chars: fetch a whole passage with get_content.)"


def _search_out(
    query: str, collection: str, hits: list[Hit], budget: int, timings: dict[str, float]
) -> SearchOut:
    """Hits cut so that the whole Markdown answer fits ``budget``; later hits give way first."""
    out: list[HitOut] = []
    left = budget - len(_heading(query, collection, len(hits))) - len(_CUT_NOTE) - 4
    truncated = False
    for n, hit in enumerate(hits, start=1):
        overhead = len(_hit_heading(n, hit, hit.score)) + 4  # + the blank lines around it
        room = left - overhead
        if room < 80:  # less than a phrase: leave the rest out
            truncated = True
            break
        cut = len(hit.text) > room
        text = hit.text[: room - 2].rstrip() + " …" if cut else hit.text
        truncated = truncated or cut
        left -= overhead + len(text)
        out.append(
            HitOut(
                n=n,
                chunk_id=hit.chunk_id,
                score=round(hit.score, 4),
                relevance=None if hit.relevance is None else round(hit.relevance, 4),
                text=text,
                source=hit.source,
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
            )
        )
    timings_ms = {k: round(v, 2) for k, v in timings.items()}
    return SearchOut(
        query=query, collection=collection, hits=out, truncated=truncated, timings_ms=timings_ms
    )


def _cite(hit: Hit | HitOut) -> str:
    parts = [hit.source]
    if hit.page:
        parts.append(f"p. {hit.page}")
    if hit.section_path:
        parts.append(hit.section_path)
    if hit.line_start:  # 0: a format without lines (PDF, Office), cited by page/section
        parts.append(f"lines {hit.line_start}-{hit.line_end}")
    return ", ".join(parts)


def _heading(query: str, collection: str, count: int) -> str:
    return f"{count} results for {query!r} in {collection!r}:"


def _hit_heading(n: int, hit: Hit | HitOut, score: float) -> str:
    relevance = "" if hit.relevance is None else f", relevance {hit.relevance:.2f}"
    return f"**[{n}]** {_cite(hit)} — chunk `{hit.chunk_id}` (score {score:.3f}{relevance})"


def _search_markdown(out: SearchOut) -> str:
    """Numbered passages, each headed by its citation and chunk id (for get_content)."""
    if not out.hits:
        return f"No results for {out.query!r} in collection {out.collection!r}."
    blocks = [_heading(out.query, out.collection, len(out.hits))]
    blocks += [f"{_hit_heading(h.n, h, h.score)}\n\n{h.text}" for h in out.hits]
    if out.truncated:
        blocks.append(_CUT_NOTE)
    return "\n\n".join(blocks)


def tool_result(text: str, out: BaseModel) -> CallToolResult:
    """Markdown plus structured content; a data tool's opens with any indexing note."""
    if isinstance(out, Indexed) and out.indexing is not None:
        text = f"{indexing_note(out.indexing)}\n\n{text}"
    return CallToolResult(
        content=[TextContent(type="text", text=text)],
        structured_content=out.model_dump(mode="json"),
    )
