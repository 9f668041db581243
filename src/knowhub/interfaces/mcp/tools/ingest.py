"""The ``ingest`` tool: index a file or folder under the document root, with progress."""

from __future__ import annotations

from collections.abc import Iterator
from functools import partial
from typing import TYPE_CHECKING, Annotated, Any

from mcp.server.mcpserver import Context
from mcp_types import CallToolResult
from pydantic import Field

from knowhub.errors import KnowhubError
from knowhub.interfaces.arguments import parse_key_values
from knowhub.interfaces.mcp.indexing import Indexed, indexing_note, indexing_out
from knowhub.interfaces.mcp.kb import KnowledgeBase
from knowhub.interfaces.mcp.tools.base import (
    WRITE,
    CollectionName,
    DataTools,
    Tool,
    in_thread,
    inside_root,
    progress_reporter,
    this_call,
    tool_result,
    writers,
)

if TYPE_CHECKING:  # the pipeline and its loaders are not loaded by building the tools: a
    # read-only or shared server may never ingest (a served folder's first sync loads them)
    from knowhub.ingest.pipeline import IngestReport
    from knowhub.ingest.sources import RemoteSource

__all__ = ["IngestOut", "IngestTools"]


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
        description="Not ingested, each with its reason: a type knowhub does not read, not a "
        "regular file, a symlink leading out of the root. The first five of each type: "
        "skipped_by_type counts them all."
    )
    skipped_by_type: dict[str, int] = Field(
        default_factory=dict, description="How many were skipped of each type ('.gif': 3)."
    )
    note: str = Field("", description="Set when files were found and none was ingested.")
    chunks: int
    seconds: float
    counts: dict[str, int] = Field(
        default_factory=dict,
        description="How many files each list holds, whole when the lists are cut.",
    )
    truncated: bool = Field(
        False, description="Lists cut to fit server.max_result_chars (counts has them whole)."
    )
    fetched: dict[str, int] = Field(
        default_factory=dict,
        description="A website's pages: fetched, not_modified (304), removed, not_found …",
    )


Tags = Annotated[
    dict[str, str] | None,
    Field(
        description="Metadata on every chunk, for filters; kept by later ingests "
        'until changed; "" removes one.'
    ),
]


class IngestTools(DataTools):
    """Registered unless the server is read-only."""

    def tools(self) -> Iterator[Tool]:
        yield Tool(
            self.ingest,
            name="ingest",
            title="Index files",
            annotations=WRITE,
            opening=self.opening("write", notes_indexing=False),
            description="Index a file or folder under the server's document root, or a "
            "website by URL, into a collection; unchanged files (and pages) are skipped. "
            "Reports progress.",
            refuses=writers("ingest"),
        )

    async def ingest(
        self,
        path: Annotated[
            str,
            Field(
                min_length=1,
                description="Relative to the document root; or an http(s) URL: the page, and "
                "the pages under its folder it links to, crawled (docs/sources.md).",
            ),
        ],
        ctx: Context,
        collection: CollectionName = None,
        tags: Tags = None,
    ) -> Annotated[CallToolResult, IngestOut]:
        call = this_call()
        target, name = call.target, str(call.collection)
        kb = target.kb
        tag_map = parse_key_values(
            [f"{k}={v}" for k, v in (tags or {}).items()], "tags", empty=True
        )
        progress = progress_reporter(ctx, kb.settings.ingest)
        # Through the caller's handle either way: read-only refused, its scope kept.
        if (source := _remote(path, kb)) is not None:  # fetched only once the handle allows
            run = partial(kb.ingest_source, source, name, tag_map, progress, target.principal)
        else:
            where = inside_root(target.root, path)
            if not where.exists():
                raise KnowhubError(f"path {path!r} does not exist under the document root")
            run = partial(
                kb.ingest, [where], name, tag_map, progress=progress, caller=target.principal
            )
        report = await in_thread(run)
        self.metrics.record_ingest(report)
        budget = target.kb.settings.server.max_result_chars
        out = _ingest_out(report, target.kb, budget)
        note = indexing_note(out.indexing) if out.indexing else ""  # tool_result adds it
        return tool_result(_cut(_ingest_text(report), budget - len(note) - 2), out)


def _remote(path: str, kb: KnowledgeBase) -> RemoteSource | None:
    """The website or repository ``path`` names, or None for a path (a repository only for
    a caller limited in nothing: ``Collection.ingest_source`` refuses it to the others)."""
    from knowhub.ingest.remote import remote_source

    return remote_source(path, kb.settings)


_LISTS = ("added", "updated", "moved", "retagged", "removed", "failed", "skipped")
_CUT_NOTE = "\n… (cut to fit server.max_result_chars: the counts are whole)"


def _ingest_out(report: IngestReport, kb: KnowledgeBase, budget: int) -> IngestOut:
    """The report as the tool returns it, its lists cut (longest first) to fit ``budget``."""
    shown, _ = report.skipped_sample()
    out = IngestOut(
        collection=report.collection,
        added=report.added,
        updated=report.updated,
        moved=[{"from": old, "to": new} for old, new in report.moved],
        retagged=report.retagged,
        unchanged=len(report.unchanged),
        removed=report.removed,
        failed=[{"source": s, "reason": r} for s, r in report.failed],
        skipped=[{"source": s, "reason": r} for s, r in shown],
        skipped_by_type=report.skipped_by_type(),
        note=report.note(),
        chunks=report.chunks,
        seconds=round(report.seconds, 3),
        counts={name: len(getattr(report, name)) for name in _LISTS},
        indexing=indexing_out(kb),
        fetched=report.fetched,
    )
    while len(out.model_dump_json()) > budget:
        longest: list[Any] = max((getattr(out, name) for name in _LISTS), key=len)
        if not longest:
            break
        del longest[len(longest) // 2 :]
        out.truncated = True
    return out


def _ingest_text(report: IngestReport) -> str:
    """Counts, then a line per file moved, failed or skipped (five of a type), the skipped
    by type and the note."""
    from knowhub.ingest.remote import fetched_text  # here for the reason above
    from knowhub.ingest.report import types_text

    changes = (("moved", report.moved), ("retagged", report.retagged))
    changed = "".join(f"{len(items)} {what}, " for what, items in changes if items)
    text = (
        f"{len(report.added)} added, {len(report.updated)} updated, {changed}"
        f"{len(report.unchanged)} unchanged, {len(report.failed)} failed, "
        f"{len(report.skipped)} skipped ({report.chunks} chunks written) into "
        f"{report.collection!r}"
    )
    if report.fetched:
        text += f"\n{fetched_text(report.fetched)}"
    text += "".join(f"\n- moved {old} → {new}" for old, new in report.moved)
    text += "".join(f"\n- failed {source}: {reason}" for source, reason in report.failed)
    shown, left = report.skipped_sample()
    text += "".join(f"\n- skipped {reason}" for _, reason in shown)
    text += "".join(f"\n- … and {count} more {kind}" for kind, count in left.items())
    if report.skipped:
        text += f"\nskipped by type: {types_text(report.skipped_by_type())}"
    return f"{text}\n{note}" if (note := report.note()) else text


def _cut(text: str, budget: int) -> str:
    """``text``, or as many of its lines as fit ``budget`` characters with a note saying so."""
    if len(text) <= budget:
        return text
    kept = text[: max(0, budget - len(_CUT_NOTE))]
    return kept[: kept.rfind("\n") + 1].rstrip("\n") + _CUT_NOTE
