"""The read-around tool, ``read_document``: a hit's neighbours, or a document page by page.

Named for what the agent wants (to read on in a document), not for the two ways it is
asked: a ``chunk_id`` from a search hit brings that chunk with ``before`` and ``after``
neighbouring chunks; a ``document`` (source hash, path, or a resource URI's id) brings its
text from ``offset``, at most ``max_chars`` of it, with the ``next_offset`` to read on
from. Either way the result fits the server's size budget (``server.max_result_chars``),
as a search's does. Neighbours overlap: each passage shows only what lies past the one
before it, so nothing is read twice (:mod:`knowhub.interfaces.mcp.doctext`).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Annotated, Any

from mcp.server.mcpserver import Context
from mcp_types import CallToolResult
from pydantic import BaseModel, Field

from knowhub.errors import QueryError
from knowhub.interfaces.mcp.doctext import Piece, find_document, of_chunk, pieces, stitched
from knowhub.interfaces.mcp.indexing import Indexed, indexing_out
from knowhub.interfaces.mcp.resources import uri_of
from knowhub.interfaces.mcp.tools.base import (
    READ,
    CollectionName,
    DataTools,
    Tool,
    in_thread,
    this_call,
    tool_result,
)
from knowhub.interfaces.mcp.tools.search import MaxChars, cite
from knowhub.models import DocumentRecord, Hit

__all__ = ["PassageOut", "ReadOut", "ReadTools"]

Around = Annotated[int, Field(ge=0, le=10, description="Neighbouring chunks to add.")]


class PassageOut(BaseModel):
    n: int = Field(description="Citation number, as [n] in the Markdown.")
    chunk_id: str
    text: str = Field(description="The chunk's text past the passage before (no overlap).")
    hit: bool = Field(description="The chunk the call asked for.")
    page: int | None
    section_path: str
    line_start: int
    line_end: int
    char_start: int = Field(description="Where ``text`` starts in the document.")
    char_end: int
    truncated: bool = Field(description="The text was cut to fit the size budget.")


class ReadOut(Indexed):
    uri: str = Field(description="The document as an MCP resource.")
    source_hash: str
    source: str
    title: str
    collection: str
    total_chars: int = Field(description="Length of the document's text.")
    passages: list[PassageOut] = Field(
        default_factory=list, description="With chunk_id: the chunk and its neighbours."
    )
    offset: int | None = Field(None, description="With document: where text starts.")
    text: str | None = Field(None, description="With document: its text from offset.")
    next_offset: int | None = Field(
        None, description="Where to read on (call again with offset=next_offset); None: the end."
    )
    truncated: bool = Field(description="Passages were cut or left out to fit the budget.")


def _one_way(arguments: Mapping[str, Any]) -> None:
    """Exactly one of ``chunk_id`` and ``document`` (an :class:`Opening` check)."""
    given = [k for k in ("chunk_id", "document") if arguments.get(k) is not None]
    if len(given) != 1:
        raise QueryError(
            "read_document: give chunk_id (a search hit's, to read around it) or document "
            "(a source_hash or path, to read it page by page)" + (", not both" if given else "")
        )


class ReadTools(DataTools):
    def tools(self) -> Iterator[Tool]:
        yield Tool(
            self.read_document,
            name="read_document",
            title="Read around a hit",
            annotations=READ,
            opening=self.opening(check=_one_way),
            description="Read on from a search hit: chunk_id brings that chunk with `before` "
            "and `after` neighbouring chunks; document (a hit's source_hash, or a path) "
            "brings the document's text from `offset`, with next_offset to read on. Cite "
            "passages as [n].",
        )

    async def read_document(
        self,
        ctx: Context,
        chunk_id: Annotated[str | None, Field(min_length=1, max_length=200)] = None,
        before: Around = 1,
        after: Around = 1,
        document: Annotated[str | None, Field(min_length=1, max_length=4096)] = None,
        collection: CollectionName = None,
        offset: Annotated[int, Field(ge=0, description="With document: first char.")] = 0,
        max_chars: MaxChars = None,
    ) -> Annotated[CallToolResult, ReadOut]:
        budget = min(max_chars or self.settings.max_result_chars, self.settings.max_result_chars)
        if chunk_id is not None:
            out = await in_thread(lambda: _around(chunk_id, before, after, budget))
            return tool_result(_around_markdown(out), out)
        key = str(document)
        out = await in_thread(lambda: _page(key, collection, offset, budget))
        return tool_result(_page_markdown(out), out)


def _around(chunk_id: str, before: int, after: int, budget: int) -> ReadOut:
    """The chunk and its neighbours, nearest first as the budget allows."""
    call = this_call()
    hit = call.reader.chunk(chunk_id)[0]  # missing and forbidden alike: "no chunk"
    handle = call.reader.collection(hit.collection)
    record = of_chunk(handle, hit)
    ordered = sorted(handle.document_chunks(record), key=lambda h: (h.char_start, h.char_end))
    at = next((i for i, h in enumerate(ordered) if h.chunk_id == hit.chunk_id), None)
    if at is None:  # re-ingested between the two look-ups: the chunk alone
        ordered, at = [hit], 0
    # Stitched from the window's first chunk: with before=0 the hit shows whole.
    window = pieces(ordered[max(0, at - before) : at + after + 1])
    asked = next((i for i, p in enumerate(window) if p.hit.chunk_id == hit.chunk_id), None)
    if asked is None:  # wholly inside the chunk before it: the hit alone
        window, asked = [Piece(hit, hit.text, hit.char_start)], 0
    fixed = len(_around_head(len(window), record.source, record.title)) + len(_CUT) + 4
    kept, truncated = _fitted(window, asked, budget - fixed, record.source)
    passages = [
        _passage_out(n, part, part is window[asked], text)
        for n, (part, text) in enumerate(kept, start=1)
    ]
    whole = pieces(ordered)
    return _read_out(record, whole, passages=passages, truncated=truncated)


def _fitted(
    window: list[Piece], asked: int, room: int, source: str
) -> tuple[list[tuple[Piece, str]], bool]:
    """The asked piece (cut to ``room`` if need be), then its neighbours nearest first while
    they fit whole; in document order. The text keeps to ``room`` however small it is."""
    order = sorted(range(len(window)), key=lambda i: (abs(i - asked), i))
    chosen: dict[int, str] = {}
    for i in order:
        text = window[i].text
        overhead = len(_heading(source, _passage_out(99, window[i], True, text))) + 4
        if i == asked:
            text = text[: max(room - overhead, 0)]  # nothing, if even its heading fills it
        elif len(text) + overhead > room:
            break
        chosen[i] = text
        room -= len(text) + overhead
    truncated = len(chosen) < len(window) or chosen[asked] != window[asked].text
    return [(window[i], chosen[i]) for i in sorted(chosen)], truncated


def _page(key: str, collection: str | None, offset: int, budget: int) -> ReadOut:
    call = this_call()
    handle = call.reader.collection(call.target.collection(collection))
    record = find_document(handle, key)
    parts = pieces(handle.document_chunks(record))
    whole = stitched(parts)
    if offset > len(whole):
        raise QueryError(
            f"offset {offset} is past the end of {record.source} ({len(whole)} chars): "
            "give an offset below it (0 reads from the start)"
        )
    size = len(whole)  # the longest numbers the Markdown can hold
    fixed = len(_page_head(record.source, record.title, size, size, size)) + len(_more(size))
    room = max(budget - fixed - 2, 1)  # a character at least: each call reads on
    text = whole[offset : offset + room]
    end = offset + len(text)
    return _read_out(
        record,
        parts,
        offset=offset,
        text=text,
        next_offset=end if end < len(whole) else None,
        truncated=end < len(whole),
    )


def _read_out(record: DocumentRecord, parts: list[Piece], **fields: Any) -> ReadOut:
    return ReadOut(
        uri=uri_of(record),
        source_hash=record.doc_hash,
        source=record.source,
        title=record.title,
        collection=record.collection,
        total_chars=parts[-1].end if parts else 0,
        indexing=indexing_out(this_call().kb),
        **fields,
    )


def _passage_out(n: int, part: Piece, asked: bool, text: str) -> PassageOut:
    hit: Hit = part.hit
    return PassageOut(
        n=n,
        chunk_id=hit.chunk_id,
        text=text,
        hit=asked,
        page=hit.page,
        section_path=hit.section_path,
        line_start=hit.line_start,
        line_end=hit.line_end,
        char_start=part.start,
        char_end=part.start + len(text),
        truncated=text != part.text,
    )


def _around_markdown(out: ReadOut) -> str:
    blocks = [_around_head(len(out.passages), out.source, out.title)]
    blocks += [f"{_heading(out.source, p)}\n\n{p.text}" for p in out.passages]
    if out.truncated:
        blocks.append(_CUT)
    return "\n\n".join(blocks)


_CUT = "(Cut to fit max_chars: ask for fewer neighbours.)"


def _around_head(count: int, source: str, title: str) -> str:
    return f"{count} passages of {source} ({title!r}) in order:"


def _heading(source: str, p: PassageOut) -> str:
    mark = " ← the hit" if p.hit else ""
    return f"**[{p.n}]** {cite(_Cited(source, p))} — chunk `{p.chunk_id}`{mark}"


def _page_markdown(out: ReadOut) -> str:
    start = out.offset or 0
    end = start + len(out.text or "")
    head = _page_head(out.source, out.title, start, end, out.total_chars)
    more = _more(out.next_offset) if out.next_offset is not None else ""
    return f"{head}\n\n{out.text}{more}"


def _page_head(source: str, title: str, start: int, end: int, total: int) -> str:
    return f"**[1]** {source} ({title!r}), chars {start}–{end} of {total}"


def _more(next_offset: int) -> str:
    return f"\n\n(More: call read_document with offset={next_offset}.)"


class _Cited:
    """A passage as :func:`cite` reads it: its document's source, its own place."""

    def __init__(self, source: str, passage: PassageOut) -> None:
        self.source = source
        self.page = passage.page
        self.section_path = passage.section_path
        self.line_start = passage.line_start
        self.line_end = passage.line_end
        self.char_start = passage.char_start
        self.char_end = passage.char_end
