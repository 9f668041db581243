"""Plain data objects passed between the pipeline stages.

They carry no behaviour beyond small derived properties, so every layer can
import them.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NamedTuple, TypeAlias

from knowhub.surrogates import restore_surrogates

__all__ = [
    "Chunk",
    "DocumentImage",
    "DocumentRecord",
    "FilterValue",
    "Filters",
    "Heading",
    "Hit",
    "LineSpan",
    "LoadedDocument",
    "citation",
    "text_place",
]

FilterValue: TypeAlias = str | tuple[str, ...]
"""A metadata filter's value: one value to equal, or a tuple of which any may match."""

Filters: TypeAlias = Mapping[str, FilterValue]


@dataclass(frozen=True)
class Heading:
    """A heading found in a document's extracted text.

    Attributes:
        level: 1 for a top-level heading, 2 for its subsections, and so on.
        title: the heading text, without markup.
        char_start: offset of the heading line in ``LoadedDocument.text``.
        anchor: the fragment that links to it in its page (an HTML heading's ``id``), or
            ``""``: a page's chunks are cited at ``URL#anchor`` (:func:`citation`).
    """

    level: int
    title: str
    char_start: int
    anchor: str = ""


class LineSpan(NamedTuple):
    """Where one piece of a document's extracted text lies in its file (see
    :attr:`LoadedDocument.line_map`).

    Attributes:
        offset: where the piece starts in ``LoadedDocument.text``; it runs to the next
            piece's offset.
        first: the file line (1-based) its first character comes from.
        last: the file line its last character comes from.
    """

    offset: int
    first: int
    last: int


@dataclass(frozen=True)
class DocumentImage:
    """A picture found inside a document (a figure of a PDF page, a Word drawing, a slide's
    picture), kept by content hash (:class:`knowhub.providers.images.ImageStore`).

    Attributes:
        sha256: the kept picture's hash: its name in the image store.
        mime: ``image/png``, ``image/jpeg``, ``image/gif`` or ``image/webp``.
        width: its width in pixels, as kept.
        height: its height in pixels, as kept.
        page: the page or slide it is on (1-based); None for a format without pages.
        description: what the text says of it: a vision model's caption, the text OCR read
            in it, or its alternative text; empty when none of them said anything.
        described_by: ``vision``, ``ocr``, ``alt`` or ``""`` (no description).
        start: where its description block (``[Image: …]``) starts in the document's text;
            None when it has no description (it is then not searchable, only listed).
        end: where that block ends.
    """

    sha256: str
    mime: str
    width: int
    height: int
    page: int | None
    description: str
    described_by: str
    start: int | None = None
    end: int | None = None


@dataclass(frozen=True)
class LoadedDocument:
    """What a loader extracts from one file.

    Attributes:
        text: the extracted text; every span of every chunk points into it.
        title: a human title (document property, first heading or obvious first line,
            else the file stem).
        format: the loader's format name (``markdown``, ``pdf``, ``docx`` …).
        headings: headings in text order, used for each chunk's section path.
        page_starts: for paged formats, the offset in ``text`` where page ``i + 1``
            starts (so ``page_starts[0] == 0``); empty for formats without pages.
            No chunk crosses a page start.
        metadata: format-specific facts worth keeping (author, sheet names …).
        body_start: where the content starts in ``text``: what comes before it (Markdown
            front matter, already in ``metadata``) is never chunked.
        line_map: how offsets in ``text`` map to lines of the file the user opens. ``()``:
            the text's lines are the file's lines; ``None``: the format has no lines a
            reader could go to (PDF, Office files: chunks get line 0, cited by page or
            section instead); otherwise the pieces of the text in order, each with the
            file lines it came from (HTML).
        warnings: problems worth telling the user that did not stop the file loading
            (bytes that were not valid text, replaced), each starting with the path.
        images: the pictures found in it, in text order, each described in ``text`` by a
            block of its own (where it has a description).
        unread_pages: scanned pages left unread (OCR off, unavailable, or refused the page),
            1-based: a later run that can read them reads the file again.
    """

    text: str
    title: str
    format: str
    headings: tuple[Heading, ...] = ()
    page_starts: tuple[int, ...] = ()
    metadata: dict[str, Any] = field(default_factory=dict)
    body_start: int = 0
    line_map: tuple[LineSpan, ...] | None = ()
    warnings: tuple[str, ...] = ()
    images: tuple[DocumentImage, ...] = ()
    unread_pages: tuple[int, ...] = ()


@dataclass(frozen=True)
class Chunk:
    """A retrievable piece of one document.

    ``text == document.text[char_start:char_end]``; lines are the file's, 1-based and
    inclusive (both 0 for a format without lines: PDF, Office), chars 0-based with an
    exclusive end.
    """

    chunk_id: str
    doc_hash: str
    index: int
    text: str
    section_path: str
    page: int | None
    line_start: int
    line_end: int
    char_start: int
    char_end: int
    language: str
    metadata: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class DocumentRecord:
    """One indexed file as the store knows it."""

    collection: str
    source: str
    path: str
    doc_hash: str
    size: int
    mtime_ns: int
    title: str
    format: str
    chunk_count: int
    char_count: int
    pages: int | None
    ingested_at: str
    metadata: dict[str, Any] = field(default_factory=dict)

    @property
    def doc_id(self) -> str:
        """The document's id, unique in its collection and kept across moves: its chunk ids
        start with it. Records written before ids existed use their doc hash's first 16
        hex digits, which their chunk ids start with."""
        return self.own_doc_id or self.doc_hash[:16]

    @property
    def own_doc_id(self) -> str | None:
        """The id ingest gave the document, None for a record from before ids existed.
        Kept as ``metadata["knowhub"]["doc_id"]``: a mapping is never a filter key, and the
        ``knowhub`` key is ingest's own (as ``tags`` is)."""
        own = self.metadata.get("knowhub")
        found = own.get("doc_id") if isinstance(own, Mapping) else None
        return str(found) if found else None

    @property
    def disk_path(self) -> str:
        """``path`` as the file system spells it: a stored path has undecodable name bytes
        escaped (see :mod:`knowhub.surrogates`), this one opens the file."""
        return restore_surrogates(self.path)

    @property
    def folder(self) -> str:
        """The folder the document was ingested from: its path less its source (which is
        the path relative to that folder)."""
        path, source = self.disk_path, self.source.replace("/", os.sep)
        return path[: -len(source)] if path.endswith(source) else str(Path(path).parent)


@dataclass(frozen=True)
class Hit:
    """One search result with everything needed to cite it.

    ``score`` is what ordered the results: the reranker's score when reranking ran,
    otherwise the fused score. ``fused_score``/``fused_rank`` are the hit's place after
    fusion; ``lexical_rank``/``dense_rank`` its rank in each leg (None: not found there).
    Both scores are relative to the query's other hits; ``relevance`` is absolute, 0-1 and
    comparable across queries (see :mod:`knowhub.query.relevance`; None outside a search).
    """

    chunk_id: str
    score: float
    source: str
    title: str
    text: str
    page: int | None
    section_path: str
    line_start: int
    line_end: int
    char_start: int
    char_end: int
    doc_hash: str
    collection: str
    language: str
    metadata: dict[str, Any] = field(default_factory=dict)
    lexical_rank: int | None = None
    dense_rank: int | None = None
    fused_score: float | None = None
    fused_rank: int | None = None
    rerank_score: float | None = None
    dense_score: float | None = None  # cosine similarity to the query (None: not in dense leg)
    relevance: float | None = None

    @property
    def url(self) -> str:
        """Where a reader opens the hit: a web page's source with its section's anchor
        (``https://…/guide.html#install``), else the source as it is."""
        anchor = self.metadata.get("anchor")
        if isinstance(anchor, str) and anchor and "://" in self.source and "#" not in self.source:
            return f"{self.source}#{anchor}"
        return self.source

    @property
    def enrichment(self) -> dict[str, Any] | None:
        """What the LLM wrote about the chunk at ingest (``ingest.transforms.enrich``): its
        title, summary, keywords and a question it answers; None when not enriched."""
        found = self.metadata.get("llm")
        if not isinstance(found, Mapping) or "title" not in found:
            return None
        return {k: found[k] for k in ("title", "summary", "keywords", "question") if k in found}

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form used by ``--json`` and the API layers."""
        return {
            "chunk_id": self.chunk_id,
            "score": round(self.score, 6),
            "relevance": _rounded(self.relevance),
            "source": self.source,
            "url": self.url,
            "title": self.title,
            "text": self.text,
            "page": self.page,
            "section_path": self.section_path,
            "line_start": self.line_start,
            "line_end": self.line_end,
            "char_start": self.char_start,
            "char_end": self.char_end,
            "doc_hash": self.doc_hash,
            "collection": self.collection,
            "language": self.language,
            "metadata": self.metadata,
            "lexical_rank": self.lexical_rank,
            "dense_rank": self.dense_rank,
            "fused_score": _rounded(self.fused_score),
            "fused_rank": self.fused_rank,
            "rerank_score": _rounded(self.rerank_score),
            "dense_score": _rounded(self.dense_score),
        }


def _rounded(value: float | None) -> float | None:
    return None if value is None else round(value, 6)


def citation(hit: Hit) -> str:
    """``source, p. 3, § A > B, lines 10-24`` — every part that is known (lines are the
    file's; a PDF or Office file has none, line 0, and is cited by page and section)."""
    parts = [hit.url]
    if hit.page is not None:
        parts.append(f"p. {hit.page}")
    if hit.section_path:
        parts.append(f"§ {hit.section_path}")
    if place := text_place(hit.line_start, hit.line_end, hit.char_start, hit.char_end):
        parts.append(place)
    return ", ".join(parts)


# More characters than two 80-column lines hold: a chunk this long on one line of its file
# lies on a long line (a DocBook or minified HTML page is one line), where a line number
# says nothing.
_ONE_LINE_CHARS = 160


def text_place(line_start: int, line_end: int, char_start: int, char_end: int) -> str:
    """Where a passage lies in its file: ``lines 10-24``; ``chars 318-1018`` (offsets in
    the extracted text) for a passage of over 160 characters on one line; ``""`` for a
    format without lines (PDF, Office), cited by page and section."""
    if not line_start:
        return ""
    if line_start == line_end and char_end - char_start > _ONE_LINE_CHARS:
        return f"chars {char_start}-{char_end}"
    return f"lines {line_start}-{line_end}"
