"""The API's endpoints. Each checks the caller's access to every collection it touches,
runs the App off the event loop, and answers errors as ``{"error", "status"}``."""

from __future__ import annotations

import dataclasses
import time
from collections.abc import AsyncGenerator, AsyncIterator
from contextlib import aclosing
from typing import Annotated, Any

from fastapi import APIRouter, Depends, Query, Request, WebSocket
from fastapi.security import HTTPBearer
from starlette.responses import JSONResponse, Response, StreamingResponse

from knowhub.interfaces.http.errors import error_body
from knowhub.interfaces.http.schemas import AskBody, DebugBody, SearchBody
from knowhub.interfaces.http.service import Event, Service, principal_of, sse
from knowhub.interfaces.http.ws import answer_socket
from knowhub.interfaces.render import explain_hits
from knowhub.interfaces.security import PRINCIPAL_KEY
from knowhub.validate import check_filters

__all__ = ["routers"]

# Documents the bearer scheme in OpenAPI (the Authorize button of /docs); the guard in
# front of the app is what actually checks tokens.
BEARER = HTTPBearer(auto_error=False, description="A token from server.tokens.")
SSE_HEADERS = {"Cache-Control": "no-cache", "X-Accel-Buffering": "no"}


def routers(service: Service) -> list[APIRouter]:
    """The public routes (/health, the WebSocket, checked by the guard) and the rest."""
    api = APIRouter(dependencies=[Depends(BEARER)])
    public = APIRouter()

    @api.post("/api/search", summary="Hybrid search with citations")
    async def search(body: SearchBody, request: Request) -> Any:
        collection = None
        try:
            collection = service.collection(principal_of(request), body.collection)
            filters = check_filters(body.filters)
            result = await service.run(
                lambda: service.app.search(
                    body.query, collection, body.top_k, filters, body.min_score
                )
            )
        except Exception as exc:
            return await service.fail(request, exc, collection)
        service.metrics.searches.labels("search").inc()
        service.metrics.observe_stages(result.timings_ms)
        out = {"query": body.query, "collection": collection, **result.to_dict()}
        if body.explain:
            out["explain"] = explain_hits(result)
        return out

    @api.post("/api/retrieval/debug", summary="Every retrieval stage, without an LLM")
    async def retrieval_debug(body: DebugBody, request: Request) -> Any:
        collection = None
        try:
            collection = service.collection(principal_of(request), body.collection)
            filters = check_filters(body.filters)
            report = await service.run(
                lambda: service.app.debug_search(body.query, collection, body.top_k, filters)
            )
        except Exception as exc:
            return await service.fail(request, exc, collection)
        service.metrics.searches.labels("retrieval_debug").inc()
        service.metrics.observe_stages(report["timings_ms"])
        return report

    @api.post(
        "/api/ask",
        summary="An answer with citations (JSON, or Server-Sent Events with stream: true)",
        response_model=None,
    )
    async def ask(body: AskBody, request: Request) -> Response:
        collection = None
        try:
            question = service.question(principal_of(request), body)
            collection = question.collection
            if not body.stream:
                return JSONResponse(await service.answer(question))
            pump = await service.pump(question)
            try:
                # Held back until the answer starts, so a bad request still gets its status.
                first = await pump.until_content()
            except BaseException:
                pump.close()
                raise
        except Exception as exc:
            return await service.fail(request, exc, collection)
        events = service.events(question, first, pump, "/api/ask")
        return StreamingResponse(
            _sse_body(events), media_type="text/event-stream", headers=SSE_HEADERS
        )

    @api.get("/api/collections", summary="Collections this token may read")
    async def collections(request: Request) -> Any:
        try:
            principal = principal_of(request)
            infos = await service.run(service.app.collections)
        except Exception as exc:
            return await service.fail(request, exc)
        readable = [dataclasses.asdict(i) for i in infos if principal.may_read(i.name)]
        return {"collections": readable}

    @api.get("/api/documents", summary="The documents of a collection")
    async def documents(
        request: Request,
        collection: Annotated[str | None, Query(description="Default: the configured one.")] = None,
    ) -> Any:
        name = None
        try:
            name = service.collection(principal_of(request), collection)
            records = await service.run(lambda: service.app.documents(name))
        except Exception as exc:
            return await service.fail(request, exc, name)
        return {"collection": name, "documents": [dataclasses.asdict(r) for r in records]}

    @api.get("/metrics", summary="Prometheus metrics", response_class=Response)
    async def metrics(request: Request) -> Response:
        body = service.metrics.render(principal_of(request))  # index sizes: its collections
        return Response(body, media_type="text/plain; version=0.0.4")

    @public.get("/health", summary="Liveness; more detail for an authenticated caller")
    async def health(request: Request) -> Any:
        # From memory, on the event loop: answers however busy the worker threads are.
        principal = request.scope.get(PRINCIPAL_KEY)
        if principal is None:
            return {"status": "ok"}
        return {
            "status": "ok",
            "ready": service.health.warmed.is_set(),
            "uptime_s": round(time.time() - service.started, 1),
            **service.health.sizes(principal),
            "embedder": service.settings.embedder.provider,
            "llm": service.settings.llm.provider,
            "reranker": service.settings.reranker.provider,
            "sessions": len(service.conversations),
            "workers_busy": service.workers.busy,
            "answers_busy": service.answers.busy,
            "queued": service.workers.waiting + service.answers.waiting,
        }

    @public.get(
        "/ready", summary="Readiness: 503 until models are warm, or while the store is down"
    )
    async def ready() -> Response:
        problem = await service.health.problem()
        if problem is None:
            return JSONResponse({"status": "ready"})
        return JSONResponse(error_body(problem, 503), status_code=503, headers={"Retry-After": "5"})

    # Not under the bearer dependency (an HTTP-only one): the guard checks the handshake.
    @public.websocket("/api/stream")
    async def stream(websocket: WebSocket) -> None:
        await answer_socket(service, websocket)

    return [public, api]


async def _sse_body(events: AsyncGenerator[Event, None]) -> AsyncIterator[str]:
    async with aclosing(events):
        async for kind, payload in events:
            yield sse(kind, payload)
