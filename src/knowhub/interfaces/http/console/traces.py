"""The console's pages over recorded runs: ingestion, traces, one trace, and saving a trace's
query as a regression case of the golden file."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any
from urllib.parse import quote, urlencode

from starlette.requests import Request
from starlette.responses import RedirectResponse, Response

from knowhub.app import App
from knowhub.caller import Caller
from knowhub.errors import AuthError, QueryError
from knowhub.eval.golden import add_case
from knowhub.interfaces.http.console.auth import check_same_origin, read_form
from knowhub.interfaces.http.console.charts import waterfall_spans
from knowhub.interfaces.http.console.failure import (
    NotFoundError,
    error_page,
    failure_body,
    on_failure,
)
from knowhub.interfaces.http.console.feedback import feedback_store
from knowhub.interfaces.http.console.pages import gathered, pages_router
from knowhub.interfaces.http.console.render import page
from knowhub.interfaces.http.deps import PrincipalDep, ServiceDep, writer
from knowhub.interfaces.http.service import Service
from knowhub.trace.record import Trace
from knowhub.trace.report import select, summarize

__all__ = [
    "find_trace",
    "golden_path",
    "ingestion",
    "router",
    "save_case",
    "trace",
    "trace_context",
    "traces",
]

LIST_LIMIT = 200  # newest traces listed on a page
KINDS = ("search", "answer", "chat", "ingest")  # what a trace records (Trace.kind)

router = pages_router()


def golden_path(service: Service) -> Path:
    """The golden file "Save as regression case" extends: ``<data_dir>/golden.json``."""
    return (Path(service.settings.data_dir) / "golden.json").absolute()


@router.get("/ingestion")
async def ingestion(request: Request, service: ServiceDep, principal: PrincipalDep) -> Response:
    def gather(principal: Caller) -> dict[str, Any]:
        runs = select(list(service.app_for(principal).traces()), kind="ingest")
        return {"runs": runs[-LIST_LIMIT:][::-1], "total": len(runs)}

    return await gathered(request, service, principal, "ingestion.html", gather)


@router.get("/traces")
async def traces(
    request: Request,
    service: ServiceDep,
    principal: PrincipalDep,
    kind: str = "",
    errors: str = "",
    slow: str = "",
) -> Response:
    def gather(principal: Caller) -> dict[str, Any]:
        if kind not in ("", *KINDS):
            raise QueryError(f"kind {kind!r} is not one of {', '.join(KINDS)}")
        traces = list(service.app_for(principal).traces())
        chosen = select(traces, kind or None, _slow_ms(slow), bool(errors))
        return {
            "form": {"kind": kind, "errors": bool(errors), "slow": slow},
            "summary": summarize(chosen),
            "traces": chosen[-LIST_LIMIT:][::-1],
            "limit": LIST_LIMIT,
        }

    return await gathered(request, service, principal, "traces.html", gather)


@router.get("/traces/{trace_id}")
async def trace(
    request: Request,
    service: ServiceDep,
    principal: PrincipalDep,
    trace_id: str,
    saved: str = "",
    new: str = "",
) -> Response:
    def gather(principal: Caller) -> dict[str, Any]:
        context = trace_context(service, principal, trace_id)
        if saved:
            context["saved"] = {"case": saved, "new": new == "1"}
        return context

    return await gathered(request, service, principal, "trace.html", gather)


@router.post("/traces/{trace_id}/save-case")
async def save_case(
    request: Request,
    service: ServiceDep,
    principal: Annotated[Caller, writer("save regression cases")],
    trace_id: str,
) -> Response:
    expected = ""
    # Late-bound: the form is shown again with ``expected`` as read by the time it failed.
    on_failure(
        request, lambda exc: _save_failed(request, service, principal, exc, trace_id, expected)
    )
    check_same_origin(request)
    expected = (await read_form(request)).get("expected", "").strip()
    found = await service.run(lambda: find_trace(service.app_for(principal), trace_id))
    if found.kind == "ingest" or not found.query:
        raise QueryError(f"trace {trace_id} is an ingest run: it has no query to save")
    if not expected or len(expected) > 1000:
        raise QueryError(
            "expected source is empty or too long: give the source that should have "
            "answered, as search results name it (e.g. docs/guide.md)"
        )
    query, collection = found.query, found.collection
    case, new = await service.run(
        lambda: add_case(golden_path(service), query, expected, collection)
    )
    target = f"/ui/traces/{quote(trace_id)}?" + urlencode({"saved": case, "new": int(new)})
    return RedirectResponse(target, 303)


def trace_context(service: Service, principal: Caller, trace_id: str) -> dict[str, Any]:
    """What the trace page shows: the trace, its spans, the sources it cited."""
    trace = find_trace(service.app_for(principal), trace_id)
    cited = []
    for chunk_id in trace.source_ids:
        try:
            hits = service.app_for(principal).chunk(chunk_id)
        except QueryError:  # re-ingested since: the id is all that is left
            hits = []
        cited.append((chunk_id, hits[0].source if hits else None))
    sources = list(dict.fromkeys(source for _, source in cited if source))
    return {
        "trace": trace,
        "spans": waterfall_spans(trace),
        # A chat's tool calls; its model calls are already the waterfall's ``N.model`` spans.
        "tool_steps": [s for s in trace.steps if s.get("kind") == "tool"],
        "cited": cited,
        "sources": sources,
        "can_save": trace.kind != "ingest" and bool(trace.query),
        "golden": golden_path(service),
        "saved": None,
        "save_error": None,
        "expected": sources[0] if sources else "",
        "feedback": feedback_store(service.settings.data_dir).for_trace(trace.trace_id),
    }


def find_trace(app: App, trace_id: str) -> Trace:
    """The trace ``trace_id`` if ``app``'s caller may read it (``App.traces``); missing and
    forbidden look alike."""
    found = [t for t in app.traces() if t.trace_id == trace_id]
    if not found:
        raise NotFoundError(f"no trace {trace_id!r}: pick one from the Traces page")
    return found[0]


async def _save_failed(
    request: Request,
    service: Service,
    principal: Caller,
    exc: Exception,
    trace_id: str,
    expected: str,
) -> Response:
    """The trace page again, the form keeping what was typed and saying what went wrong."""
    if isinstance(exc, AuthError | NotFoundError):  # nothing of the trace may be shown
        return error_page(request, exc)
    context = await service.run(lambda: trace_context(service, principal, trace_id))
    body = failure_body(request, exc)
    context.update(save_error=body["error"], expected=expected)
    return page(request, "trace.html", status=body["status"], **context)


def _slow_ms(text: str) -> float | None:
    if not text.strip():
        return None
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not value >= 0:
        raise QueryError(f"slow {text!r} is not a number of milliseconds (0 or more)")
    return value
