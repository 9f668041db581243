"""The console's pages over the collections: the overview, search, documents and chunks."""

from __future__ import annotations

import time
from datetime import UTC, datetime, timedelta
from typing import Any

from starlette.requests import Request
from starlette.responses import Response

from knowhub.caller import Caller
from knowhub.errors import QueryError
from knowhub.interfaces.http.console.charts import stage_bars
from knowhub.interfaces.http.console.failure import NotFoundError, error_page, on_failure
from knowhub.interfaces.http.console.pages import (
    gathered,
    names_of,
    pages_router,
)
from knowhub.interfaces.http.console.render import page
from knowhub.interfaces.http.console.source import picture_url
from knowhub.interfaces.http.deps import PrincipalDep, ServiceDep
from knowhub.interfaces.http.service import Service
from knowhub.interfaces.render import explain_hits
from knowhub.models import citation
from knowhub.query.pipeline import SearchResult
from knowhub.trace.report import select, summarize

__all__ = ["chunk", "document", "documents", "overview", "router", "search"]

RECENT = timedelta(hours=24)  # the overview's "recent traces"
MAX_K = 100

router = pages_router()


@router.get("")
async def overview(request: Request, service: ServiceDep, principal: PrincipalDep) -> Response:
    def gather(principal: Caller) -> dict[str, Any]:
        app, opts = service.app_for(principal), service.settings
        recent = select(list(app.traces()), since=datetime.now(UTC) - RECENT)
        return {
            "collections": app.collections(),
            "uptime_s": round(time.time() - service.started),
            "providers": {
                "embedder": opts.embedder.provider,
                "reranker": opts.reranker.provider,
                "llm": opts.llm.provider,
            },
            "sessions": len(service.conversations),
            "recent": summarize(recent),
            "recent_hours": int(RECENT.total_seconds() // 3600),
        }

    return await gathered(request, service, principal, "overview.html", gather)


@router.get("/search")
async def search(
    request: Request,
    service: ServiceDep,
    principal: PrincipalDep,
    q: str = "",
    collection: str = "",
    k: str = "",
) -> Response:
    shown: dict[str, Any] = {
        "form": {"q": q, "collection": collection, "k": k},
        "names": [],
        "result": None,
        "default": "",
    }

    async def form_again(exc: Exception) -> Response:  # the search box, as it was typed
        return error_page(request, exc, "search.html", **shown)

    on_failure(request, form_again)
    shown["names"], shown["default"] = await service.run(
        lambda: (
            names_of(service.app_for(principal)),
            service.default_name(principal),
        )
    )
    if not q.strip():
        return page(request, "search.html", **shown)
    name = service.collection(principal, collection or None)
    top_k = _top_k(k, service.settings.search.top_k)
    result = await service.run(lambda: service.app_for(principal).collection(name).search(q, top_k))
    return page(request, "search.html", **{**shown, **_results(service, name, result)})


@router.get("/documents")
async def documents(
    request: Request, service: ServiceDep, principal: PrincipalDep, collection: str = ""
) -> Response:
    def gather(principal: Caller) -> dict[str, Any]:
        name = service.collection(principal, collection or None)
        return {
            "collection": name,
            "names": names_of(service.app_for(principal)),
            "records": service.app_for(principal).collection(name).documents(),
        }

    return await gathered(request, service, principal, "documents.html", gather)


@router.get("/documents/{doc_hash}")
async def document(
    request: Request,
    service: ServiceDep,
    principal: PrincipalDep,
    doc_hash: str,
    collection: str = "",
) -> Response:
    def gather(principal: Caller) -> dict[str, Any]:
        app = service.app_for(principal)
        name = service.collection(principal, collection or None)
        handle = app.collection(name)
        record = handle.document(doc_hash)
        return {"collection": name, "record": record, "chunks": handle.document_chunks(record)}

    return await gathered(request, service, principal, "document.html", gather)


@router.get("/chunks/{chunk_id}")
async def chunk(
    request: Request, service: ServiceDep, principal: PrincipalDep, chunk_id: str
) -> Response:
    def gather(principal: Caller) -> dict[str, Any]:
        try:
            found = service.app_for(principal).chunk(chunk_id)
        except QueryError:  # no such chunk: answered like one the caller may not read
            found = []
        if not found:  # one answer for missing and forbidden: nothing to probe
            raise NotFoundError(f"no chunk with id {chunk_id!r}: copy a chunk id from a search")
        return {"chunks": [(h, citation(h)) for h in found]}

    return await gathered(request, service, principal, "chunk.html", gather)


def _results(service: Service, collection: str, result: SearchResult) -> dict[str, Any]:
    """What the search page shows of ``result`` (and the metrics it counts)."""
    service.metrics.searches.labels("console").inc()
    service.metrics.observe_stages(result.timings_ms)
    rows = [
        {"hit": hit, "citation": citation(hit), "why": why, "picture": picture_url(hit)}
        for hit, why in zip(result.hits, explain_hits(result), strict=True)
    ]
    return {
        "result": result,
        "rows": rows,
        "collection": collection,
        "bars": stage_bars(result.timings_ms),
    }


def _top_k(text: str, default: int) -> int:
    if not text.strip():
        return default
    if not text.strip().isdigit() or not 1 <= int(text) <= MAX_K:
        raise QueryError(f"k {text!r} is not a whole number from 1 to {MAX_K}: give how many hits")
    return int(text)
