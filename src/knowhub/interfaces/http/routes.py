"""The API's endpoints. Each checks the caller's access to every collection it touches and
runs the App off the event loop; errors are raised, and answered as ``{"error", "status"}``
by the app's handlers (:mod:`knowhub.interfaces.http.boundary`)."""

from __future__ import annotations

import dataclasses
import time
from collections.abc import AsyncGenerator, AsyncIterator
from contextlib import aclosing
from typing import Annotated, Any

from fastapi import APIRouter, Depends, Query, Request, WebSocket
from fastapi.security import HTTPBearer
from starlette.responses import JSONResponse, Response

from knowhub.checks import check_filters
from knowhub.errors import QueryError
from knowhub.interfaces.http.deps import DoorDep, PrincipalDep, ServiceDep
from knowhub.interfaces.http.errors import error_body
from knowhub.interfaces.http.schemas import AskBody, ChatBody, DebugBody, SearchBody
from knowhub.interfaces.http.service import Event, note_collection, sse
from knowhub.interfaces.http.streamed import PumpedResponse, Streamed
from knowhub.interfaces.http.ws import answer_socket
from knowhub.interfaces.render import explain_hits
from knowhub.interfaces.security import PRINCIPAL_KEY
from knowhub.providers.images import image_store

__all__ = [
    "ask",
    "chat",
    "chunk_image",
    "collections",
    "documents",
    "health",
    "metrics",
    "ready",
    "retrieval_debug",
    "routers",
    "search",
    "stream",
]

# Documents the bearer scheme in OpenAPI (the Authorize button of /docs); the guard in
# front of the app is what actually checks tokens.
BEARER = HTTPBearer(auto_error=False, description="A token from server.tokens.")

_api = APIRouter(dependencies=[Depends(BEARER)])
_public = APIRouter()


def routers() -> list[APIRouter]:
    """The public routes (/health, the WebSocket, checked by the guard) and the rest."""
    return [_public, _api]


@_api.post("/api/search", summary="Hybrid search with citations")
async def search(body: SearchBody, request: Request, service: ServiceDep, door: DoorDep) -> Any:
    collection = note_collection(request, door.named(body.collection))
    filters = check_filters(body.filters)
    result = await service.run(
        lambda: door.collection(collection).search(body.query, body.top_k, filters, body.min_score)
    )
    service.metrics.searches.labels("search").inc()
    service.metrics.observe_stages(result.timings_ms)
    out = {"query": body.query, "collection": collection, **result.to_dict()}
    if body.explain:
        out["explain"] = explain_hits(result)
    return out


@_api.post("/api/retrieval/debug", summary="Every retrieval stage, without an LLM")
async def retrieval_debug(
    body: DebugBody, request: Request, service: ServiceDep, door: DoorDep
) -> Any:
    collection = note_collection(request, door.named(body.collection))
    filters = check_filters(body.filters)
    report = await service.run(
        lambda: door.collection(collection).debug_search(body.query, body.top_k, filters)
    )
    service.metrics.searches.labels("retrieval_debug").inc()
    service.metrics.observe_stages(report["timings_ms"])
    return report


@_api.post(
    "/api/ask",
    summary="An answer with citations (JSON, or Server-Sent Events with stream: true)",
    response_model=None,
)
async def ask(
    body: AskBody, request: Request, service: ServiceDep, principal: PrincipalDep
) -> Response:
    question = await service.question(principal, body)
    note_collection(request, question.collection)
    return await _respond(service.stream(question, "/api/ask"), body.stream)


@_api.post(
    "/api/chat",
    summary="An LLM that calls tools (knowhub's and MCP servers') to answer, with citations "
    "(JSON, or Server-Sent Events with stream: true)",
    response_model=None,
)
async def chat(
    body: ChatBody, request: Request, service: ServiceDep, principal: PrincipalDep
) -> Response:
    question = await service.chats.question(principal, body)
    note_collection(request, question.collection)
    return await _respond(service.chats.stream(question), body.stream)


@_api.get("/api/collections", summary="Collections this token may read")
async def collections(service: ServiceDep, door: DoorDep) -> Any:
    infos = await service.run(door.collections)
    readable = [dataclasses.asdict(i) for i in infos]
    if not door.scope.unrestricted:
        # The store's write counter moves with every tenant's writes: not a scoped caller's
        # to watch (its counts are of what it sees).
        readable = [{k: v for k, v in info.items() if k != "version"} for info in readable]
    return {"collections": readable}


@_api.get("/api/documents", summary="The documents of a collection")
async def documents(
    request: Request,
    service: ServiceDep,
    door: DoorDep,
    collection: Annotated[str | None, Query(description="Default: the configured one.")] = None,
) -> Any:
    name = note_collection(request, door.named(collection))
    records = await service.run(lambda: door.collection(name).documents())
    return {"collection": name, "documents": [dataclasses.asdict(r) for r in records]}


@_api.get(
    "/api/chunks/{chunk_id}/image",
    summary="The picture a chunk describes (a search hit's metadata.image)",
    response_class=Response,
)
async def chunk_image(chunk_id: str, service: ServiceDep, door: DoorDep) -> Response:
    def read() -> tuple[bytes, str] | None:
        hits = door.chunk(chunk_id)
        sha = hits[0].metadata.get("image") if hits else None
        return image_store(service.settings.data_dir).get(sha) if isinstance(sha, str) else None

    try:
        found = await service.run(read)
    except QueryError:  # no such chunk: answered as one the caller may not read
        found = None
    if found is None:
        message = f"no picture for chunk {chunk_id!r}: give the chunk_id of a hit with an image"
        return JSONResponse(error_body(message, 404), status_code=404)
    data, mime = found
    headers = {"Cache-Control": "private, max-age=3600", "X-Content-Type-Options": "nosniff"}
    return Response(data, media_type=mime, headers=headers)


@_api.get("/metrics", summary="Prometheus metrics", response_class=Response)
async def metrics(service: ServiceDep, principal: PrincipalDep) -> Response:
    body = service.metrics.render(principal)  # index sizes: its collections only
    return Response(body, media_type="text/plain; version=0.0.4")


@_public.get("/health", summary="Liveness; more detail for an authenticated caller")
async def health(request: Request, service: ServiceDep) -> Any:
    # From memory, on the event loop: answers however busy the worker threads are.
    principal = request.scope.get(PRINCIPAL_KEY)
    if principal is None:
        return {"status": "ok"}
    return {
        "status": "ok",
        "ready": service.health.warmed.is_set(),
        "uptime_s": round(time.time() - service.started, 1),
        **service.health.sizes(service.app_for(principal)),
        "embedder": service.settings.embedder.provider,
        "llm": service.settings.llm.provider,
        "reranker": service.settings.reranker.provider,
        "sessions": service.conversations.last_count,
        "workers_busy": service.workers.busy,
        "answers_busy": service.answers.busy,
        "queued": service.workers.waiting + service.answers.waiting,
    }


@_public.get("/ready", summary="Readiness: 503 until models are warm, or while the store is down")
async def ready(service: ServiceDep) -> Response:
    problem = await service.health.problem()
    if problem is None:
        return JSONResponse({"status": "ready"})
    return JSONResponse(error_body(problem, 503), status_code=503, headers={"Retry-After": "5"})


# Not under the bearer dependency (an HTTP-only one): the guard checks the handshake.
@_public.websocket("/api/stream")
async def stream(websocket: WebSocket, service: ServiceDep) -> None:
    await answer_socket(service, websocket)


async def _respond(streamed: Streamed, stream: bool) -> Response:
    """The answer (or chat) whole, as JSON, or with ``stream`` its Server-Sent Events."""
    if not stream:
        return JSONResponse(await streamed.answer())
    first, pump = await streamed.begin()
    return PumpedResponse(_sse_body(streamed.events(first, pump)), pump)


async def _sse_body(events: AsyncGenerator[Event, None]) -> AsyncIterator[str]:
    async with aclosing(events):
        async for kind, payload in events:
            yield sse(kind, payload)
