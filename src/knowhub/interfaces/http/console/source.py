"""A citation's source: the chunk inside its document, a PDF page as an image with the
cited lines boxed on it (:mod:`.pdf_marks`), the file.

A chunk or document the caller may not read is answered exactly like one that does not
exist (404), so a collection-limited token cannot probe other collections. The original
file is served only while it still holds the bytes that were indexed: a file changed since
would not be the source that was cited.
"""

from __future__ import annotations

import hashlib
import mimetypes
import re
import unicodedata
from pathlib import Path, PurePosixPath
from typing import Any
from urllib.parse import quote

from starlette.requests import Request
from starlette.responses import Response

from knowhub.caller import Caller
from knowhub.errors import AuthError, KnowhubError, LoaderError, QueryError
from knowhub.ingest.containers import member_bytes
from knowhub.ingest.loaders import ArchiveLimits
from knowhub.ingest.loaders.compressed import decompress, is_compressed
from knowhub.ingest.loaders.reading import open_regular
from knowhub.ingest.members import container_path, is_member_path
from knowhub.interfaces.http.console.failure import NotFoundError
from knowhub.interfaces.http.console.markup import DRAWN_FORMATS, draw
from knowhub.interfaces.http.console.pages import gathered, pages_router
from knowhub.interfaces.http.console.passage import passage
from knowhub.interfaces.http.console.pdf_marks import cited_boxes
from knowhub.interfaces.http.console.pdf_pages import PageImages, render_page
from knowhub.interfaces.http.console.render import page
from knowhub.interfaces.http.deps import PrincipalDep, ServiceDep
from knowhub.interfaces.http.service import Service
from knowhub.models import DocumentRecord, Hit, citation
from knowhub.providers.images import image_store

__all__ = [
    "OriginalUnavailableError",
    "document_file",
    "page_image",
    "picture",
    "picture_url",
    "router",
    "safe_filename",
    "source",
]

AROUND = 2  # neighbouring chunks shown either side of the cited one
MAX_AROUND = 20
# A page image is of one doc hash's bytes: it never changes, but it is the caller's to keep.
_IMAGE_HEADERS = {"Cache-Control": "private, max-age=3600", "X-Content-Type-Options": "nosniff"}
_SCRIPTABLE = ("text/html", "image/svg+xml", "application/xhtml+xml", "text/xml")
_COMPRESSED_TYPES = {
    "gzip": "application/gzip",
    "bzip2": "application/x-bzip2",
    "xz": "application/x-xz",
}

router = pages_router()


class OriginalUnavailableError(KnowhubError):
    """The indexed file is gone, or no longer holds the bytes that were indexed."""

    def __init__(self, message: str, status: int) -> None:
        super().__init__(message)
        self.status = status  # 410 gone, 409 changed


@router.get("/source/{chunk_id}")
async def source(
    request: Request,
    service: ServiceDep,
    principal: PrincipalDep,
    chunk_id: str,
    collection: str = "",
    around: str = "",
) -> Response:
    """The cited chunk highlighted in its document, its neighbours around it."""

    def gather(principal: Caller) -> dict[str, Any]:
        app = service.app_for(principal)
        hit = _cited(service, principal, chunk_id, collection)
        record = _record(service, principal, hit.doc_hash, hit.collection)
        shown = min(int(around), MAX_AROUND) if around.strip().isdigit() else AROUND
        blocks = passage(app.collection(record.collection).document_chunks(record), hit, shown)
        return {
            "hit": hit,
            "cite": citation(hit),
            "record": record,
            "blocks": blocks,
            "drawn": draw(blocks) if record.format in DRAWN_FORMATS else None,
            "around": shown,
            "more": min(shown + 3, MAX_AROUND),
            "max_around": MAX_AROUND,
            "page_image": _page_state(service, record, hit),
            "picture_url": picture_url(hit),
        }

    return await gathered(request, service, principal, "source.html", gather)


@router.get("/source/{chunk_id}/page.png")
async def page_image(
    request: Request,
    service: ServiceDep,
    principal: PrincipalDep,
    chunk_id: str,
    collection: str = "",
) -> Response:
    """The PDF page the chunk is on, as PNG (rendered once, then from the cache)."""

    def png() -> bytes:
        hit = _cited(service, principal, chunk_id, collection)
        record = _record(service, principal, hit.doc_hash, hit.collection)
        if record.format != "pdf" or hit.page is None:
            raise NotFoundError(f"{record.source} is not a PDF: it has no page images")
        cache = _pages(service)
        found = cache.cached(record.doc_hash, hit.page)
        if found is None:
            limit = service.settings.ingest.max_file_bytes
            found = render_page(
                _unpacked(record, _original(record, limit), limit), hit.page, record.source
            )
            cache.store(record.doc_hash, hit.page, found)
        return found

    try:
        body = await service.run(png)
    except OriginalUnavailableError as exc:  # the <img> shows its alt text; a visit, why
        return page(request, "error.html", status=exc.status, error=str(exc))
    return Response(body, media_type="image/png", headers=_IMAGE_HEADERS)


@router.get("/source/{chunk_id}/image")
async def picture(
    service: ServiceDep, principal: PrincipalDep, chunk_id: str, collection: str = ""
) -> Response:
    """The picture the chunk describes, as ingest kept it."""

    def read() -> tuple[bytes, str]:
        hit = _cited(service, principal, chunk_id, collection)
        sha = hit.metadata.get("image")
        found = image_store(service.settings.data_dir).get(sha) if isinstance(sha, str) else None
        if found is None:
            raise NotFoundError(f"chunk {chunk_id!r} describes no picture kept here")
        return found

    data, mime = await service.run(read)
    return Response(data, media_type=mime, headers=_IMAGE_HEADERS)


def picture_url(hit: Hit) -> str | None:
    """Where the console shows the picture a hit describes; None: it describes none."""
    if not isinstance(hit.metadata.get("image"), str):
        return None
    return f"/ui/source/{quote(hit.chunk_id, safe='')}/image?collection={quote(hit.collection)}"


@router.get("/documents/{doc_hash}/file")
async def document_file(
    request: Request,
    service: ServiceDep,
    principal: PrincipalDep,
    doc_hash: str,
    collection: str = "",
) -> Response:
    """The original file, downloaded, if it still holds the bytes that were indexed."""

    def read() -> tuple[DocumentRecord, bytes]:
        name = collection or service.default_name(principal)
        try:
            record = _record(service, principal, doc_hash, name)
        except AuthError as exc:  # answered like a missing document
            raise NotFoundError(f"no document {doc_hash!r} in collection {name!r}") from exc
        return record, _original(record, service.settings.ingest.max_file_bytes)

    try:
        record, data = await service.run(read)
    except OriginalUnavailableError as exc:
        return page(request, "error.html", status=exc.status, error=str(exc))
    return Response(data, media_type=_download_type(record.source), headers=_attachment(record))


def _cited(service: Service, principal: Caller, chunk_id: str, collection: str) -> Hit:
    """The chunk in the active version of a collection the caller may read (``collection``
    picks one when the same chunk is in several)."""
    try:
        found = service.app_for(principal).chunk(chunk_id)
    except QueryError:  # no such chunk: answered like one the caller may not read
        found = []
    found = [h for h in found if not collection or h.collection == collection]
    if not found:  # one answer for missing and forbidden: nothing to probe
        raise NotFoundError(f"no chunk with id {chunk_id!r}: open a citation or a search hit")
    return found[0]


def _record(service: Service, principal: Caller, doc_hash: str, collection: str) -> DocumentRecord:
    try:
        return service.app_for(principal).collection(collection).document(doc_hash)
    except QueryError as exc:
        raise NotFoundError(f"{exc}; it may have been removed or re-ingested") from exc


def _pages(service: Service) -> PageImages:
    return PageImages(Path(service.settings.data_dir) / "cache" / "pages")


def _page_state(service: Service, record: DocumentRecord, hit: Hit) -> dict[str, Any] | None:
    """For a PDF: ``{"url", "boxes"}`` of its page image and the cited lines on it, or
    ``{"missing"}`` saying why there is none."""
    if record.format != "pdf" or hit.page is None:
        return None
    cached = _pages(service).path(record.doc_hash, hit.page).is_file()
    limit = service.settings.ingest.max_file_bytes
    try:
        data = _unpacked(record, _unchanged_bytes(record, limit), limit)
    except OriginalUnavailableError as exc:
        if not cached:
            return {"missing": str(exc)}
        return {"url": _page_url(hit), "boxes": []}  # the image, not where the lines were
    return {"url": _page_url(hit), "boxes": cited_boxes(data, hit.page, hit.text)}


def _page_url(hit: Hit) -> str:
    return f"/ui/source/{quote(hit.chunk_id, safe='')}/page.png?collection={quote(hit.collection)}"


def _unchanged_bytes(record: DocumentRecord, max_bytes: int) -> bytes:
    """The file's bytes, checked cheaply: the size and mtime as indexed mean unchanged (as
    ingest trusts them); any other stat and the sha256 decides."""
    try:
        info = Path(container_path(record.disk_path)).stat()  # a member's: its archive's
    except OSError:
        info = None
    if info is None or info.st_size != record.size or info.st_mtime_ns != record.mtime_ns:
        return _original(record, max_bytes)
    try:
        return _file_bytes(record, max_bytes)
    except (OSError, KnowhubError):
        return _original(record, max_bytes)  # gone in between: the same error as ever


def _file_bytes(record: DocumentRecord, max_bytes: int) -> bytes:
    """The document's file's bytes: a member's read from its archive (within the default
    archive limits and ``max_bytes``: what serving one citation may cost)."""
    if is_member_path(record.disk_path):
        return member_bytes(record.disk_path, ArchiveLimits(max_member_bytes=max_bytes))
    with open_regular(Path(record.disk_path)) as file:
        return file.read(max_bytes)


def _original(record: DocumentRecord, max_bytes: int) -> bytes:
    """The file's bytes, if they are still the ones indexed (sha256 = ``doc_hash``)."""
    try:
        data = _file_bytes(record, max_bytes)
    except (OSError, KnowhubError) as exc:
        raise OriginalUnavailableError(
            f"{record.source} is gone from {record.path} (or cannot be read: {exc}): "
            "restore the file, or re-ingest where it is now",
            410,
        ) from exc
    if hashlib.sha256(data).hexdigest() != record.doc_hash:
        raise OriginalUnavailableError(
            f"{record.source} at {record.path} has changed since it was indexed, so it is "
            "not the file that was cited: re-ingest it to index and serve the new version",
            409,
        )
    return data


def _unpacked(record: DocumentRecord, data: bytes, max_bytes: int) -> bytes:
    """The file's bytes as its loader read them: a compressed one's (``manual.pdf.gz``)
    unpacked, within the limit ingest unpacked it within."""
    if not is_compressed(record.source):
        return data
    try:
        return decompress(Path(record.source), data, max_bytes)  # named as cited: no server path
    except LoaderError as exc:  # the limit was lowered since it was indexed
        raise OriginalUnavailableError(str(exc), 409) from exc


def _download_type(source: str) -> str:
    """The file's type, except types a browser would run script in: those download as
    bytes (the response is an attachment anyway; this is the second wall). A compressed
    file is the compression's (``guide.pdf.gz`` is gzip, not a PDF)."""
    kind, encoding = mimetypes.guess_type(source)
    if encoding is not None:
        return _COMPRESSED_TYPES.get(encoding, "application/octet-stream")
    kind = kind or "application/octet-stream"
    return "application/octet-stream" if kind in _SCRIPTABLE else kind


def _attachment(record: DocumentRecord) -> dict[str, str]:
    name = safe_filename(record.source)
    fallback = name.encode("ascii", "replace").decode().replace("?", "_")
    return {
        "Content-Disposition": f"attachment; filename=\"{fallback}\"; filename*=UTF-8''"
        + quote(name, safe=""),
        "Content-Security-Policy": "default-src 'none'; sandbox",
        "X-Content-Type-Options": "nosniff",
        "Cache-Control": "no-store",
    }


def safe_filename(source: str) -> str:
    """The last part of ``source`` with only letters, digits, space and ``.-_()``: no path,
    no quote or control character that could break out of the header."""
    name = unicodedata.normalize("NFC", PurePosixPath(source.replace("\\", "/")).name)
    name = re.sub(r"[^\w .()\-]", "_", name).strip(" .")
    return name or "document"
