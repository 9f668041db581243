"""A collection's FAQ entries in the console: listed for anyone who may read the collection;
imported (an uploaded FAQ file) and removed by tokens that may write.

An imported file is kept under ``DATA_DIR/uploads/{collection}/faq/`` (its entries are named
by that path, as ``knowhub faq import`` names them by theirs); one that does not load is not
kept. An import that fails part-way may have stored some files' entries already (each file's
entries are stored in turn): those files stay, since their entries name them, and only this
request's files that no entry names are deleted. Removing a file's entries deletes that kept
file too. The routes are registered by :mod:`.manage` (``/ui/faq``, ``/ui/faq/import``,
``/ui/faq/remove``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

from starlette.requests import Request
from starlette.responses import Response

from knowhub.caller import Caller
from knowhub.errors import IngestError, QueryError
from knowhub.ingest.faq import FAQ_SUFFIXES
from knowhub.ingest.uploads import uploads_folder
from knowhub.interfaces.http.console.auth import check_same_origin, read_form
from knowhub.interfaces.http.console.failure import error_page, on_failure
from knowhub.interfaces.http.console.pages import names_of
from knowhub.interfaces.http.console.render import page
from knowhub.interfaces.http.console.uploads import UploadLimits, as_sent, receive
from knowhub.interfaces.http.deps import PrincipalDep, ServiceDep, writer
from knowhub.interfaces.http.service import Service

__all__ = [
    "faq_dir",
    "faq_import",
    "faq_list",
    "faq_remove",
]


def faq_dir(service: Service, collection: str) -> Path:
    return uploads_folder(service.settings.data_dir, collection) / "faq"


async def faq_list(
    request: Request, service: ServiceDep, principal: PrincipalDep, collection: str = ""
) -> Response:
    name = service.collection(principal, collection or None)
    return page(request, "faq.html", **await _shown(service, principal, name))


async def faq_import(
    request: Request,
    service: ServiceDep,
    principal: Annotated[Caller, writer("import FAQ entries")],
) -> Response:
    check_same_origin(request)
    chosen: list[str] = []

    def folder(fields: dict[str, str]) -> Path:
        if not chosen:
            chosen.append(service.collection(principal, fields.get("collection") or None))
        return faq_dir(service, chosen[0])

    sent = await receive(
        request.headers.get("content-type", ""),
        request.stream(),
        folder,
        UploadLimits.of(service.settings.server, list(FAQ_SUFFIXES)),
    )
    sent.release()  # verify does not look in faq/: no job record to wait for
    name = chosen[0] if chosen else service.collection(principal, sent.fields.get("collection"))

    async def form_again(exc: Exception) -> Response:  # the list as it stands, and why not
        # Read first: should the store be unreadable, a stray file beats entries without one.
        shown = await _shown(service, principal, name)
        _discard_unused([r.path for r in sent.received], shown["groups"])
        return error_page(request, exc, "faq.html", **shown)

    on_failure(request, form_again)
    paths = [r.path for r in sent.received]
    try:
        loaded = (
            await service.change(
                lambda: service.app_for(principal).collection(name).faq_import(paths)
            )
            if paths
            else []
        )
    except IngestError as exc:  # a file's content: the uploader's to fix (400, not 500)
        raise QueryError(as_sent(str(exc), sent.received)) from exc
    notes = [f"{Path(source).name}: {count} entries imported" for source, count in loaded]
    notes += [f"{r.sent_as}: not imported: {r.reason}" for r in sent.rejected]
    shown = await _shown(service, principal, name)
    return page(request, "faq.html", **{**shown, "notes": notes or ["no file was sent"]})


async def faq_remove(
    request: Request,
    service: ServiceDep,
    principal: Annotated[Caller, writer("remove FAQ entries")],
) -> Response:
    check_same_origin(request)
    form = await read_form(request)
    name = service.collection(principal, form.get("collection") or None)
    source = form.get("source", "")
    if "\x00" in source:  # no file's path holds one (and Path() raises on it)
        raise QueryError(
            f"source {source!r} holds a NUL character, so it is no FAQ file: pick one from "
            "the FAQ list"
        )
    removed = await service.change(
        lambda: service.app_for(principal).collection(name).faq_remove(source)
    )
    kept = Path(source)
    if kept.parent == faq_dir(service, name) and kept.is_file():
        kept.unlink()
    shown = await _shown(service, principal, name)
    return page(request, "faq.html", **{**shown, "notes": [f"{removed} entries removed"]})


def _discard_unused(paths: list[Path], groups: dict[str, list[str]]) -> None:
    """Delete the ``paths`` (this request's files) that no FAQ entry names: those did not
    load or were not stored; the others' entries are in use (their source is the resolved
    path, as :meth:`~knowhub.collection.Collection.faq_import` stores it)."""
    for path in paths:
        if str(path.resolve()) not in groups:
            path.unlink(missing_ok=True)


async def _shown(service: Service, principal: Caller, name: str) -> dict[str, Any]:
    def gather() -> dict[str, Any]:
        groups: dict[str, list[str]] = {}
        for entry in service.app_for(principal).collection(name).faq():
            groups.setdefault(entry.source, []).append(entry.question)
        return {"names": names_of(service.app_for(principal)), "groups": groups}

    return {
        **await service.run(gather),
        "collection": name,
        "suffixes": FAQ_SUFFIXES,
        "notes": [],
    }
