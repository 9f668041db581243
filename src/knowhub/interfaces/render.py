"""Plain-text rendering of results for the terminal (no colours: pipes stay clean)."""

from __future__ import annotations

import textwrap
from collections.abc import Sequence

from knowhub.ingest.pipeline import IngestReport
from knowhub.models import DocumentRecord, Hit
from knowhub.providers.stores.sqlite import CollectionInfo

__all__ = [
    "citation",
    "render_chunk",
    "render_collections",
    "render_documents",
    "render_hits",
    "render_report",
]

PREVIEW_CHARS = 240


def citation(hit: Hit) -> str:
    """``source, p. 3, § A > B, lines 10-24`` — every part that is known."""
    parts = [hit.source]
    if hit.page is not None:
        parts.append(f"p. {hit.page}")
    if hit.section_path:
        parts.append(f"§ {hit.section_path}")
    parts.append(f"lines {hit.line_start}-{hit.line_end}")
    return ", ".join(parts)


def render_hits(hits: Sequence[Hit]) -> str:
    if not hits:
        return "no results (try other words, a lower --min-score, or check --collection)"
    blocks = []
    for rank, hit in enumerate(hits, start=1):
        preview = " ".join(hit.text.split())
        if len(preview) > PREVIEW_CHARS:
            preview = preview[:PREVIEW_CHARS].rstrip() + "…"
        body = textwrap.indent(textwrap.fill(preview, 96), "    ")
        blocks.append(
            f"[{rank}] {hit.score:.3f}  {citation(hit)}\n    chunk {hit.chunk_id}\n{body}"
        )
    return "\n\n".join(blocks)


def render_report(report: IngestReport) -> str:
    lines = [
        f"collection {report.collection}: {len(report.added)} added, "
        f"{len(report.updated)} updated, {len(report.unchanged)} unchanged, "
        f"{len(report.removed)} removed, {len(report.failed)} failed "
        f"({report.chunks} chunks written, {report.embedded} embedded, "
        f"{report.cached} from cache) in {report.seconds:.1f} s"
    ]
    for source, reason in report.failed:
        lines.append(f"  failed {source}: {reason}")
    return "\n".join(lines)


def render_collections(infos: Sequence[CollectionInfo]) -> str:
    if not infos:
        return "no collections yet: run `knowhub ingest PATH`"
    rows = [("collection", "documents", "chunks", "embedder", "version")]
    rows += [(i.name, str(i.documents), str(i.chunks), i.embedder, str(i.version)) for i in infos]
    return _table(rows)


def render_documents(records: Sequence[DocumentRecord]) -> str:
    if not records:
        return "no documents in this collection"
    rows = [("source", "format", "chunks", "pages", "doc_hash", "ingested_at")]
    rows += [
        (r.source, r.format, str(r.chunk_count), str(r.pages or "-"), r.doc_hash[:16],
         r.ingested_at)
        for r in records
    ]  # fmt: skip
    return _table(rows)


def render_chunk(hits: Sequence[Hit]) -> str:
    blocks = []
    for hit in hits:
        blocks.append(
            f"chunk {hit.chunk_id}\n"
            f"source {citation(hit)}\n"
            f"chars {hit.char_start}-{hit.char_end}  language {hit.language}  "
            f"collection {hit.collection}\n"
            f"metadata {hit.metadata}\n\n{hit.text}"
        )
    return "\n\n---\n\n".join(blocks)


def _table(rows: Sequence[Sequence[str]]) -> str:
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    return "\n".join(
        "  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip()
        for row in rows
    )
