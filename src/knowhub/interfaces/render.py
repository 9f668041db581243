"""Plain-text rendering of results for the terminal (no colours: pipes stay clean). What the
documents' authors wrote is shown, not obeyed (:mod:`knowhub.interfaces.terminal`): table
cells are made printable before they are measured, the rest where it is printed."""

from __future__ import annotations

import textwrap
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from knowhub.interfaces.terminal import printable
from knowhub.models import DocumentRecord, Hit, citation
from knowhub.query.pipeline import SearchResult
from knowhub.versions.record import CollectionView

if TYPE_CHECKING:  # a search's output must not load ingest (cold start)
    from knowhub.ingest.pipeline import IngestReport

__all__ = [
    "explain_hits",
    "middle_cut",
    "render_chunk",
    "render_collections",
    "render_documents",
    "render_hits",
    "render_report",
    "render_search_trace",
    "render_table",
]

PREVIEW_CHARS = 240
SOURCE_CHARS = 60  # the documents table's source column: a row still fits 132 columns


def render_hits(
    hits: Sequence[Hit], explanations: Sequence[Mapping[str, Any]] | None = None
) -> str:
    """Ranked hits with citation and preview; with ``explanations`` (see
    :func:`explain_hits`) a line per hit says how it got its rank."""
    if not hits:
        return "no results (try other words, a lower --min-score, or check --collection)"
    blocks = []
    for rank, hit in enumerate(hits, start=1):
        preview = " ".join(hit.text.split())
        if len(preview) > PREVIEW_CHARS:
            preview = preview[:PREVIEW_CHARS].rstrip() + "…"
        body = textwrap.indent(textwrap.fill(preview, 96), "    ")
        body += _enrichment(hit)
        why = f"    {_explain_line(explanations[rank - 1])}\n" if explanations else ""
        # The score ranks within this search; relevance is absolute (what --min-score cuts).
        relevance = "" if hit.relevance is None else f" · relevance {hit.relevance:.2f}"
        blocks.append(
            f"[{rank}] {hit.score:.3f}{relevance}  {citation(hit)}\n"
            f"    chunk {hit.chunk_id}\n{why}{body}"
        )
    return "\n\n".join(blocks)


def _enrichment(hit: Hit) -> str:
    """The LLM's title, summary and keywords of an enriched hit, as lines under its text."""
    found = hit.enrichment
    if found is None:
        return ""
    about = f"» {found['title']}: {found.get('summary', '')}"
    if found.get("keywords"):
        about += f" [keywords: {', '.join(found['keywords'])}]"
    return "\n" + textwrap.indent(textwrap.fill(about, 96), "    ")


def explain_hits(result: SearchResult) -> list[dict[str, Any]]:
    """Per hit: its rank in each leg, after fusion and after reranking.

    ``rerank`` is ``"off"``, ``"failed"`` (with ``rerank_error``) or ``"F → R"``,
    the move from fused rank F to final rank R.
    """
    outcome = result.rerank
    explained = []
    for rank, hit in enumerate(result.hits, start=1):
        if outcome.used:
            rerank = f"{hit.fused_rank} → {rank}"
        else:
            rerank = "failed" if outcome.error else "off"
        explained.append(
            {
                "rank": rank,
                "lexical_rank": hit.lexical_rank,
                "dense_rank": hit.dense_rank,
                "dense_used": result.dense_used,
                "fused_score": None if hit.fused_score is None else round(hit.fused_score, 6),
                "fused_rank": hit.fused_rank,
                "rerank": rerank,
                "rerank_score": None if hit.rerank_score is None else round(hit.rerank_score, 6),
                "rerank_error": outcome.error,
            }
        )
    return explained


def render_search_trace(result: SearchResult) -> str:
    """One line on how the search ran: language, legs, rerank, caches and timings."""
    outcome = result.rerank
    if outcome.provider == "none":
        rerank = "rerank off"
    elif outcome.error:
        rerank = f"rerank {outcome.provider} failed, fused order kept: {outcome.error}"
    else:
        rerank = f"rerank {outcome.provider} ({outcome.ms:.0f} ms)"
    dense = f"dense {result.counts.get('dense', 0)}" if result.dense_used else "dense skipped"
    if "cross_lingual" in result.counts:
        dense += (
            " (across languages, as search.cross_lingual_* set it: query debiased, best hits"
            " scored by their sentences too, other languages' lexical hits damped)"
        )
    if promoted := result.counts.get("option_entries"):
        dense += f" · {promoted} entries defining the option asked put first"
    timings = ", ".join(f"{stage} {ms:.1f}" for stage, ms in result.timings_ms.items())
    cache = ", ".join(f"{name} {state}" for name, state in result.cache.items()) or "off"
    return (
        f"language {result.language} · candidates: lexical {result.counts.get('lexical', 0)}, "
        f"{dense} · {rerank} · cache: {cache} · ms: {timings}"
    )


def _explain_line(why: Mapping[str, Any]) -> str:
    lexical = f"#{why['lexical_rank']}" if why["lexical_rank"] else "-"
    dense = f"#{why['dense_rank']}" if why["dense_rank"] else "-"
    if not why["dense_used"]:
        dense = "skipped"
    fused = "-" if why["fused_score"] is None else f"{why['fused_score']:.3f}"
    fused += f" (#{why['fused_rank']})" if why["fused_rank"] else ""
    if why["rerank"] == "off":
        rerank = "rerank: off"
    elif why["rerank"] == "failed":
        rerank = f"rerank failed: {why['rerank_error']}"
    else:
        rerank = f"rerank {why['rerank']} ({why['rerank_score']:.3f})"
    return f"explain: lexical {lexical} · dense {dense} · fused {fused} · {rerank}"


def render_report(report: IngestReport) -> str:
    # Moves and tag changes are named only when there are some: most runs have none.
    moved = f"{len(report.moved)} moved, " if report.moved else ""
    retagged = f"{len(report.retagged)} retagged, " if report.retagged else ""
    lines = [
        f"collection {report.collection}: {len(report.added)} added, "
        f"{len(report.updated)} updated, {moved}{retagged}{len(report.unchanged)} unchanged, "
        f"{len(report.removed)} removed, {len(report.failed)} failed, "
        f"{len(report.skipped)} skipped "
        f"({report.chunks} chunks written, {report.embedded} embedded, "
        f"{report.cached} from cache) in {report.seconds:.1f} s"
    ]
    lines += [f"  moved {old} → {new}" for old, new in report.moved]
    for source, reason in report.failed:
        lines.append(f"  failed {source}: {reason}")
    shown, left = report.skipped_sample()  # --json lists every file
    lines += [f"  skipped {reason}" for _, reason in shown]
    lines += [f"  … and {n} more {kind} (--json lists every file)" for kind, n in left.items()]
    return "\n".join(lines + _not_ingested(report))


def _not_ingested(report: IngestReport) -> list[str]:
    """The skipped files counted by type, what knowhub reads when some were of other types,
    and a run's note when it ingested nothing."""
    from knowhub.ingest.loaders import READ_FORMATS
    from knowhub.ingest.report import types_text

    lines = []
    if report.skipped:
        lines.append(f"  skipped by type: {types_text(report.skipped_by_type())}")
    if report.unsupported:
        lines.append(
            f"  knowhub reads {READ_FORMATS}; convert other files, or leave them out with --exclude"
        )
    if note := report.note():
        lines.append(note)
    return lines


def render_collections(infos: Sequence[CollectionView]) -> str:
    if not infos:
        return "no collections yet: run `knowhub ingest PATH`"
    rows = [("collection", "documents", "chunks", "embedder", "version")]
    rows += [
        (
            i.name,
            str(i.documents),
            str(i.chunks),
            i.embedder,
            f"{i.active_version} of {i.versions}" if i.versions > 1 else "1",
        )
        for i in infos
    ]
    return render_table(rows)


def render_documents(records: Sequence[DocumentRecord]) -> str:
    """The documents as a table whose source column is at most :data:`SOURCE_CHARS` wide
    (one deep path made every row 480 characters); a cut source keeps its start and its
    file name, and a last line says where the whole ones are."""
    if not records:
        return "no documents in this collection"
    rows = [("source", "format", "chunks", "pages", "doc_hash", "ingested_at")]
    sources = [printable(r.source) for r in records]  # measured as shown
    rows += [
        (
            middle_cut(source, SOURCE_CHARS),
            r.format,
            str(r.chunk_count),
            str(r.pages or "-"),
            r.doc_hash[:16],
            r.ingested_at,
        )
        for r, source in zip(records, sources, strict=True)
    ]
    cut = any(len(source) > SOURCE_CHARS for source in sources)
    note = "\n(long sources are cut in the middle: `knowhub docs --json` has them whole)"
    return render_table(rows) + (note if cut else "")


def middle_cut(text: str, limit: int) -> str:
    """``text`` if it fits in ``limit`` characters, else its start, "…" and its end (the
    end of a path, its file name, says the most)."""
    if len(text) <= limit:
        return text
    tail = (limit - 1) * 2 // 3
    return text[: limit - 1 - tail] + "…" + text[-tail:]


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


def render_table(rows: Sequence[Sequence[str]]) -> str:
    """Rows as left-aligned columns (the first row is the header), cells made printable."""
    rows = [[printable(cell) for cell in row] for row in rows]
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    return "\n".join(
        "  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip()
        for row in rows
    )
