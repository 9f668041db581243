"""Documents as MCP resources: ``resources/list``, the templates, ``resources/read``.

A document is ``knowhub://{collection}/{doc_id}`` and its n-th chunk (0-based, in
document order) ``knowhub://{collection}/{doc_id}/chunks/{n}``. ``doc_id`` is the
document's id (:attr:`knowhub.models.DocumentRecord.doc_id`), not its source hash: the id
is kept when the file is edited or moved, so a URI a client holds (or was told changed)
still names the document after an edit, and every chunk id of a search hit starts with it.
A source hash changes with every edit.

Everything goes through the caller's reader (``App.for_caller``): a listing holds only the
documents of the collections it may read, as its data scope sees them; a URI of a
collection it may not read reads exactly as one of a collection that does not exist, so
nothing can be probed. Reading a document gives its text (rebuilt from its chunks,
:mod:`knowhub.interfaces.mcp.doctext`) and its first pictures as image blobs.
"""

from __future__ import annotations

import base64
import binascii
import re
from urllib.parse import quote, unquote

from mcp import MCPError
from mcp_types import (
    INVALID_PARAMS,
    BlobResourceContents,
    ListResourcesResult,
    Resource,
    ResourceTemplate,
    TextResourceContents,
)

from knowhub.app import App
from knowhub.collection import Collection
from knowhub.interfaces.mcp.doctext import pieces, stitched
from knowhub.interfaces.mcp.tools.pictures import document_images, image_contents
from knowhub.interfaces.mcp.tools.search import cite
from knowhub.models import DocumentRecord

__all__ = ["PAGE_SIZE", "TEMPLATES", "Contents", "listed", "read", "uri_of"]

PAGE_SIZE = 100  # resources per resources/list page
MIME = "text/plain"

TEMPLATES = [
    ResourceTemplate(
        name="document",
        title="A document of the knowledge base",
        uri_template="knowhub://{collection}/{doc_id}",
        description="The document's text (and its first pictures); doc_id: the document id "
        "resources/list shows (a search hit's chunk_id starts with it).",
        mime_type=MIME,
    ),
    ResourceTemplate(
        name="chunk",
        title="One chunk of a document",
        uri_template="knowhub://{collection}/{doc_id}/chunks/{n}",
        description="The document's n-th chunk (0-based, in document order).",
        mime_type=MIME,
    ),
]

_URI = re.compile(r"knowhub://(?P<collection>[^/]+)/(?P<doc_id>[^/]+)(?:/chunks/(?P<n>\d+))?")
Contents = list[TextResourceContents | BlobResourceContents]


def uri_of(record: DocumentRecord) -> str:
    """The URI of ``record``'s document (its collection as the caller names it)."""
    return f"knowhub://{quote(record.collection, safe='')}/{record.doc_id}"


def listed(reader: App, cursor: str | None) -> ListResourcesResult:
    """One page of the documents ``reader``'s caller may read, by collection and source."""
    start = _offset(cursor)
    records = [
        record
        for view in reader.collections()
        for record in sorted(reader.collection(view.name).documents(), key=lambda r: r.source)
    ]
    page = records[start : start + PAGE_SIZE]
    more = start + PAGE_SIZE < len(records)
    return ListResourcesResult(
        resources=[_resource(r) for r in page],
        next_cursor=_cursor(start + PAGE_SIZE) if more else None,
    )


def _resource(record: DocumentRecord) -> Resource:
    return Resource(
        uri=uri_of(record),
        name=record.source,
        title=record.title or record.source,
        description=f"{record.format}, {record.chunk_count} chunks, {record.char_count} chars"
        f"{f', {record.pages} pages' if record.pages else ''}; source_hash {record.doc_hash}",
        mime_type=MIME,
        size=record.char_count,
    )


def _cursor(offset: int) -> str:
    return base64.urlsafe_b64encode(f"documents:{offset}".encode()).decode()


def _offset(cursor: str | None) -> int:
    if cursor is None:
        return 0
    try:
        kind, _, number = base64.urlsafe_b64decode(cursor.encode()).decode().partition(":")
        if kind == "documents" and number.isdigit():
            return int(number)
    except (binascii.Error, UnicodeError, ValueError):
        pass
    raise MCPError(
        code=INVALID_PARAMS,
        message=f"cursor {cursor[:40]!r} is not one this server gave: pass the nextCursor of "
        "the page before, or none for the first page",
    )


def read(reader: App, uri: str) -> Contents:
    """The contents of ``uri``: a document's text and pictures, or one chunk's text.

    Raises:
        MCPError: the URI is malformed, or names nothing the caller may read.
    """
    match = _URI.fullmatch(uri)
    if match is None:
        raise _unknown(
            f"resource {uri[:200]!r} is not a knowhub URI: use knowhub://COLLECTION/DOC_ID "
            "or knowhub://COLLECTION/DOC_ID/chunks/N, as resources/list shows them"
        )
    handle = _readable(reader, unquote(match["collection"]))
    record = next((r for r in handle.documents() if r.doc_id == match["doc_id"]), None)
    if record is None:
        raise _unknown(
            f"collection {handle.name!r} holds no document with id {match['doc_id']!r} "
            "(removed, or a URI of another server): list resources/list again"
        )
    if match["n"] is not None:
        return _chunk(handle, record, uri, int(match["n"]))
    text = stitched(pieces(handle.document_chunks(record)))
    contents: Contents = [TextResourceContents(uri=uri, text=text, mime_type=MIME)]
    shas = [image.sha256 for image in document_images(record)]
    for image in image_contents(shas, reader.settings.data_dir):
        contents.append(BlobResourceContents(uri=uri, blob=image.data, mime_type=image.mime_type))
    return contents


def _readable(reader: App, name: str) -> Collection:
    """The handle of ``name``; one the caller may not read is told as one that is not."""
    if name not in {view.name for view in reader.collections()}:
        raise _unknown(
            "no such resource (or not one this token may read): list resources/list for the "
            "documents you may read"
        )
    return reader.collection(name)


def _chunk(handle: Collection, record: DocumentRecord, uri: str, n: int) -> Contents:
    chunks = sorted(handle.document_chunks(record), key=lambda h: (h.char_start, h.char_end))
    if n >= len(chunks):
        raise _unknown(
            f"chunk {n} of {record.source}: it has {len(chunks)} chunks, 0 to {len(chunks) - 1}"
        )
    hit = chunks[n]
    meta = {"chunk_id": hit.chunk_id, "citation": cite(hit), "source_hash": hit.doc_hash}
    return [TextResourceContents(uri=uri, text=hit.text, mime_type=MIME, _meta=meta)]


def _unknown(message: str) -> MCPError:
    return MCPError(code=INVALID_PARAMS, message=message)
