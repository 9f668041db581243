"""Managing documents (tokens that may write): upload with progress, delete, re-ingest.

Every route here wants a token that may write (``deps.writer``: a read-only one
gets 403, and never sees the controls) and may read the collection it changes; every POST
must come from a page of this server (``check_same_origin``). Uploads are kept under
``DATA_DIR/uploads/{collection}/`` and ingested from there like any other file, so
``verify`` and re-ingest find them again.

``POST /ui/upload`` from the page's script (``Accept: application/json``) answers a job id at
once and the script polls ``GET /ui/upload/{job}`` for each file's state; a plain form post
(no script) waits for the ingest and shows the same result as a page.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Annotated, Any

from starlette.requests import HTTPConnection, Request
from starlette.responses import JSONResponse, Response

from knowhub.app import App
from knowhub.caller import Caller
from knowhub.errors import QueryError
from knowhub.ingest.discover import rediscover
from knowhub.ingest.pipeline import IngestReport
from knowhub.ingest.progress import Progress
from knowhub.ingest.uploads import uploads_folder
from knowhub.interfaces.arguments import parse_key_values
from knowhub.interfaces.http.console import faqs
from knowhub.interfaces.http.console.auth import check_same_origin, read_form
from knowhub.interfaces.http.console.failure import NotFoundError, error_page, on_failure
from knowhub.interfaces.http.console.jobs import FileState, Ingest, Job, JobBook
from knowhub.interfaces.http.console.pages import names_of, pages_router
from knowhub.interfaces.http.console.render import page
from knowhub.interfaces.http.console.uploads import Upload, UploadLimits, receive
from knowhub.interfaces.http.deps import ServiceDep, writer
from knowhub.interfaces.http.service import Service

__all__ = [
    "UPLOAD_BODY_BYTES",
    "UPLOAD_PATHS",
    "delete",
    "jobs_of",
    "reingest",
    "resume_uploads",
    "router",
    "upload",
    "upload_form",
    "upload_job",
]

router = pages_router()
# An upload's whole body may pass server.max_body_bytes: receive() holds it to
# server.max_upload_body_bytes (and each file to server.max_upload_bytes) as it streams, naming
# the limit that refused it; the route's own limit only stands above every such setting.
UPLOAD_BODY_BYTES = 1 << 62
UPLOAD_PATHS = frozenset({"/ui/upload", "/ui/faq/import"})
"""The paths whose bodies the guard leaves to their route's own limit."""

router.add_api_route("/faq", faqs.faq_list, methods=["GET"])
router.add_api_route(
    "/faq/import", faqs.faq_import, methods=["POST"], max_body_size=UPLOAD_BODY_BYTES
)
router.add_api_route("/faq/remove", faqs.faq_remove, methods=["POST"])
_FORM_WAIT_S = 600.0


def jobs_of(connection: HTTPConnection) -> JobBook:
    """The upload jobs of the app serving ``connection`` (``create_app`` puts them there)."""
    jobs: JobBook = connection.app.state.jobs
    return jobs


def resume_uploads(service: Service, jobs: JobBook) -> None:
    """Resume the uploads whose ingest a stop cut short (at the server's start)."""
    jobs.resume(
        lambda upload, paths: _ingest(
            service, service.app.scoped(upload.scope), upload.collection, upload.tags, paths
        )
    )


@router.get("/upload")
async def upload_form(
    request: Request, service: ServiceDep, principal: Annotated[Caller, writer("upload documents")]
) -> Response:
    return page(request, "upload.html", **await _form(service, principal))


@router.post("/upload", max_body_size=UPLOAD_BODY_BYTES)
async def upload(
    request: Request, service: ServiceDep, principal: Annotated[Caller, writer("upload documents")]
) -> Response:
    check_same_origin(request)
    shown = await _form(service, principal)

    async def form_again(exc: Exception) -> Response:
        return error_page(request, exc, "upload.html", **shown)

    on_failure(request, form_again)
    chosen: list[str] = []

    def folder(fields: dict[str, str]) -> Path:  # at the first file: the fields sent before it
        if not chosen:
            chosen.append(_collection(service, principal, fields))
        return uploads_folder(service.settings.data_dir, chosen[0])

    sent = await receive(
        request.headers.get("content-type", ""),
        request.stream(),
        folder,
        UploadLimits.of(service.settings.server),
    )
    try:
        name = chosen[0] if chosen else _collection(service, principal, sent.fields)
        # In a thread: the job's record is written to the queue on disk and to the store.
        job = await asyncio.to_thread(_start, service, jobs_of(request), principal, name, sent)
    finally:
        sent.release()  # its record written (or its files deleted): verify may see them
    if "application/json" in request.headers.get("accept", ""):
        return JSONResponse({"job": job.id, "url": f"/ui/upload/{job.id}"}, status_code=202)
    # Without script the page waits for the ingest, though never forever: a job still
    # running then is shown as it stands (its files' states), and goes on.
    await asyncio.to_thread(job.done.wait, _FORM_WAIT_S)
    return page(request, "upload.html", **{**shown, "job": job.view()})


@router.get("/upload/{job_id}")
async def upload_job(
    request: Request, job_id: str, principal: Annotated[Caller, writer("upload documents")]
) -> Response:
    """A job's files and their states (JSON, polled by static/upload.js)."""
    view = await asyncio.to_thread(jobs_of(request).view, job_id, principal)  # reads the store
    if view is None:
        raise NotFoundError(f"no upload job {job_id!r}: it ended long ago, or is not yours")
    return JSONResponse(view, headers={"Cache-Control": "no-store"})


@router.post("/documents/{doc_hash}/delete")
async def delete(
    request: Request,
    service: ServiceDep,
    principal: Annotated[Caller, writer("delete documents")],
    doc_hash: str,
) -> Response:
    """Remove a document from its collection, after a confirmation step (``confirm=yes``)."""
    check_same_origin(request)
    form = await read_form(request)
    name = service.collection(principal, form.get("collection") or None)
    record = await service.run(
        lambda: service.app_for(principal).collection(name).document(doc_hash)
    )
    if form.get("confirm") != "yes":
        return page(request, "confirm_delete.html", collection=name, record=record)

    def remove() -> list[str]:
        removed = service.app_for(principal).collection(name).remove(record.doc_hash)
        _forget_upload(service, name, Path(record.disk_path))
        return [r.source for r in removed]

    sources = await service.change(remove)
    done = f"Removed {', '.join(sources)} from {name}."
    return page(request, "managed.html", collection=name, message=done)


@router.post("/documents/{doc_hash}/reingest")
async def reingest(
    request: Request,
    service: ServiceDep,
    principal: Annotated[Caller, writer("re-ingest documents")],
    doc_hash: str,
) -> Response:
    """Read the document's file again (under its old source and tags)."""
    check_same_origin(request)
    form = await read_form(request)
    name = service.collection(principal, form.get("collection") or None)

    def again() -> str:
        record = service.app_for(principal).collection(name).document(doc_hash)
        outcome: list[str] = []
        for group in rediscover([record]):
            report = _counted(
                service,
                service.app_for(principal)
                .collection(name)
                .ingest(group.paths, group.tags, group.include),
            )
            failed = report.not_ingested()
            if record.source in failed:
                raise QueryError(f"re-ingest of {record.source} failed: {failed[record.source]}")
            state = "unchanged" if record.source in report.unchanged else "re-ingested"
            outcome.append(f"{record.source}: {state} ({report.chunks} chunks)")
        return "; ".join(outcome) or f"{record.source}: nothing to read again"

    done = await service.change(again)
    return page(request, "managed.html", collection=name, message=done)


async def _form(service: Service, principal: Caller) -> dict[str, Any]:
    names, default = await service.run(
        lambda: (
            names_of(service.app_for(principal)),
            # What the read pages use (the only collection there is, say): the form names
            # it, so the upload goes where the user has been reading.
            service.default_name(principal),
        )
    )
    opts = service.settings.server
    return {
        "names": names,
        "default": default,
        "extensions": opts.upload_extensions,
        "max_bytes": opts.max_upload_bytes,
        "job": None,
    }


def _collection(service: Service, principal: Caller, fields: dict[str, str]) -> str:
    """The collection the form names (a new one typed in wins), if the caller may read it."""
    typed = fields.get("new_collection", "").strip() or fields.get("collection", "").strip()
    return service.collection(principal, typed or None, writing=True)


def _tags(text: str) -> dict[str, str]:
    """``team=ops, lang=en`` or one pair a line."""
    items = [t for t in re.split(r"[,\n]", text) if t.strip()]
    return parse_key_values(items, "tag")


def _start(service: Service, jobs: JobBook, principal: Caller, name: str, sent: Upload) -> Job:
    """The ingest of what was received, as a job; bad tags refuse the whole upload."""
    try:
        tags = _tags(sent.fields.get("tags", ""))
    except QueryError:
        for kept in sent.received:
            kept.path.unlink(missing_ok=True)
        raise
    files = [FileState(r.sent_as, r.path.name) for r in sent.received]
    refused = [FileState(r.sent_as, "", "failed", r.reason, 1.0) for r in sent.rejected]
    paths = [r.path for r in sent.received]
    return jobs.start(
        principal,
        name,
        files,
        refused,
        _ingest(service, service.app_for(principal), name, tags, paths),
        {r.path.name: r.path for r in sent.received},
        tags,
        principal.scope,
    )


def _ingest(
    service: Service, app: App, name: str, tags: Mapping[str, str], paths: list[Path]
) -> Ingest:
    def ingest(progress: Progress) -> IngestReport:
        return _counted(service, app.collection(name).ingest(paths, tags, progress=progress))

    return ingest


def _counted(service: Service, report: IngestReport) -> IngestReport:
    """``report``, counted in ``/metrics`` (what operators alert on)."""
    service.metrics.ingest.record(report)
    return report


def _forget_upload(service: Service, collection: str, path: Path) -> None:
    """A removed document's file goes too if it was an upload (only there for the index)."""
    folder = uploads_folder(service.settings.data_dir, collection)
    if path.parent == folder and path.is_file():
        path.unlink()
