"""The console's pages under ``/ui``: each checks the caller's collections, gathers its data
off the event loop, and renders a template; a failure is a page that says what went wrong.

Traces, documents and evaluation reports of collections the caller may not read are never
shown, so a collection-limited token sees the same console as it sees API.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any
from urllib.parse import quote, urlencode

from fastapi import APIRouter, Request
from starlette.responses import RedirectResponse, Response

from knowhub.errors import AuthError, ConfigError, KnowhubError, QueryError
from knowhub.eval.golden import add_case
from knowhub.eval.report import load_report
from knowhub.interfaces.http.console.auth import (
    CONSOLE_LOGIN,
    check_same_origin,
    clear_login,
    read_form,
    remember_login,
    safe_next,
)
from knowhub.interfaces.http.console.charts import (
    metric_groups,
    run_label,
    stage_bars,
    waterfall_spans,
)
from knowhub.interfaces.http.console.render import page
from knowhub.interfaces.http.errors import error_body
from knowhub.interfaces.http.metrics import ERROR_KEY
from knowhub.interfaces.http.service import Service, principal_of
from knowhub.interfaces.render import citation, explain_hits
from knowhub.interfaces.security import (
    PRINCIPAL_KEY,
    Principal,
    ThrottledError,
    TokenBook,
    client_address,
)
from knowhub.trace.record import Trace
from knowhub.trace.report import select, summarize

__all__ = ["console_router", "golden_path"]

log = logging.getLogger("knowhub.http")

LIST_LIMIT = 200  # newest traces listed on a page
RECENT = timedelta(hours=24)  # the overview's "recent traces"
MAX_K = 100
WRONG_TOKEN = "wrong token: give one of the tokens configured in server.tokens"


class _NotFoundError(QueryError):
    """A page's object (trace, chunk) does not exist, or the caller may not read it."""


def golden_path(service: Service) -> Path:
    """The golden file "Save as regression case" extends: ``<data_dir>/golden.json``."""
    return (Path(service.settings.data_dir) / "golden.json").absolute()


def console_router(service: Service, tokens: TokenBook) -> APIRouter:
    """The pages; ``tokens`` is the guard's own, so wrong logins and wrong bearer tokens
    count against one limit per client address."""
    router = APIRouter(prefix="/ui", include_in_schema=False)
    app = service.app

    async def render(
        request: Request, template: str, gather: Callable[[Principal], dict[str, Any]]
    ) -> Response:
        try:
            principal = principal_of(request)
            context = await service.run(lambda: gather(principal))
        except Exception as exc:
            return _failure(request, exc)
        return page(request, template, **context)

    @router.get("")
    async def overview(request: Request) -> Response:
        def gather(principal: Principal) -> dict[str, Any]:
            infos = [i for i in app.collections() if principal.may_read(i.name)]
            since = datetime.now(UTC) - RECENT
            recent = select(_readable(app.traces(), principal), since=since)
            opts = service.settings
            return {
                "collections": infos,
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

        return await render(request, "overview.html", gather)

    @router.get("/search")
    async def search(request: Request, q: str = "", collection: str = "", k: str = "") -> Response:
        form = {"q": q, "collection": collection, "k": k}
        names: list[str] = []
        try:
            principal = principal_of(request)
            names = await service.run(
                lambda: [i.name for i in app.collections() if principal.may_read(i.name)]
            )
            if not q.strip():
                return page(
                    request,
                    "search.html",
                    form=form,
                    names=names,
                    result=None,
                    default=service.settings.collection,
                )
            name = service.collection(principal, collection or None)
            top_k = _top_k(k, service.settings.search.top_k)
            result = await service.run(lambda: app.search(q, name, top_k))
        except Exception as exc:
            return _failure(
                request,
                exc,
                "search.html",
                form=form,
                names=names,
                result=None,
                default=service.settings.collection,
            )
        service.metrics.searches.labels("console").inc()
        service.metrics.observe_stages(result.timings_ms)
        rows = [
            {"hit": hit, "citation": citation(hit), "why": why}
            for hit, why in zip(result.hits, explain_hits(result), strict=True)
        ]
        return page(
            request,
            "search.html",
            form=form,
            names=names,
            result=result,
            rows=rows,
            collection=name,
            bars=stage_bars(result.timings_ms),
            default=service.settings.collection,
        )

    @router.get("/documents")
    async def documents(request: Request, collection: str = "") -> Response:
        def gather(principal: Principal) -> dict[str, Any]:
            name = service.collection(principal, collection or None)
            names = [i.name for i in app.collections() if principal.may_read(i.name)]
            return {"collection": name, "names": names, "records": app.documents(name)}

        return await render(request, "documents.html", gather)

    @router.get("/documents/{doc_hash}")
    async def document(request: Request, doc_hash: str, collection: str = "") -> Response:
        def gather(principal: Principal) -> dict[str, Any]:
            name = service.collection(principal, collection or None)
            record = app.document(doc_hash, name)
            return {"collection": name, "record": record, "chunks": app.document_chunks(record)}

        return await render(request, "document.html", gather)

    @router.get("/chunks/{chunk_id}")
    async def chunk(request: Request, chunk_id: str) -> Response:
        def gather(principal: Principal) -> dict[str, Any]:
            try:
                found = [h for h in app.chunk(chunk_id) if principal.may_read(h.collection)]
            except QueryError:
                found = []
            if not found:  # one answer for missing and forbidden: nothing to probe
                raise _NotFoundError(
                    f"no chunk with id {chunk_id!r}: copy a chunk id from a search"
                )
            return {"chunks": [(h, citation(h)) for h in found]}

        return await render(request, "chunk.html", gather)

    @router.get("/ingestion")
    async def ingestion(request: Request) -> Response:
        def gather(principal: Principal) -> dict[str, Any]:
            runs = select(_readable(app.traces(), principal), kind="ingest")
            return {"runs": runs[-LIST_LIMIT:][::-1], "total": len(runs)}

        return await render(request, "ingestion.html", gather)

    @router.get("/traces")
    async def traces(
        request: Request, kind: str = "", errors: str = "", slow: str = ""
    ) -> Response:
        form = {"kind": kind, "errors": bool(errors), "slow": slow}

        def gather(principal: Principal) -> dict[str, Any]:
            if kind not in ("", "search", "answer", "ingest"):
                raise QueryError(f"kind {kind!r} is not one of search, answer, ingest")
            chosen = select(
                _readable(app.traces(), principal), kind or None, _slow_ms(slow), bool(errors)
            )
            return {
                "form": form,
                "summary": summarize(chosen),
                "traces": chosen[-LIST_LIMIT:][::-1],
                "limit": LIST_LIMIT,
            }

        return await render(request, "traces.html", gather)

    def trace_context(principal: Principal, trace_id: str) -> dict[str, Any]:
        trace = _find_trace(app.traces(), principal, trace_id)
        cited = []
        for chunk_id in trace.source_ids:
            try:
                hits = [h for h in app.chunk(chunk_id) if principal.may_read(h.collection)]
            except QueryError:  # re-ingested since: the id is all that is left
                hits = []
            cited.append((chunk_id, hits[0].source if hits else None))
        sources = list(dict.fromkeys(source for _, source in cited if source))
        return {
            "trace": trace,
            "spans": waterfall_spans(trace),
            "cited": cited,
            "sources": sources,
            "can_save": trace.kind != "ingest" and bool(trace.query),
            "golden": golden_path(service),
            "saved": None,
            "save_error": None,
            "expected": sources[0] if sources else "",
        }

    @router.get("/traces/{trace_id}")
    async def trace(request: Request, trace_id: str, saved: str = "", new: str = "") -> Response:
        def gather(principal: Principal) -> dict[str, Any]:
            context = trace_context(principal, trace_id)
            if saved:
                context["saved"] = {"case": saved, "new": new == "1"}
            return context

        return await render(request, "trace.html", gather)

    @router.post("/traces/{trace_id}/save-case")
    async def save_case(request: Request, trace_id: str) -> Response:
        expected = ""
        try:
            check_same_origin(request)
            principal = principal_of(request)
            principal.check_write("save regression cases")
            expected = (await read_form(request)).get("expected", "").strip()
            found = await service.run(lambda: _find_trace(app.traces(), principal, trace_id))
            if found.kind == "ingest" or not found.query:
                raise QueryError(f"trace {trace_id} is an ingest run: it has no query to save")
            if not expected or len(expected) > 1000:
                raise QueryError(
                    "expected source is empty or too long: give the source that should have "
                    "answered, as search results name it (e.g. docs/guide.md)"
                )
            query = found.query
            case, new = await service.run(lambda: add_case(golden_path(service), query, expected))
        except Exception as exc:
            return await _save_failed(request, exc, trace_id, expected)
        target = f"/ui/traces/{quote(trace_id)}?" + urlencode({"saved": case, "new": int(new)})
        return RedirectResponse(target, 303)

    async def _save_failed(
        request: Request, exc: Exception, trace_id: str, expected: str
    ) -> Response:
        """The trace page again, the form keeping what was typed and saying what went wrong."""
        principal = request.scope.get(PRINCIPAL_KEY)
        if isinstance(exc, AuthError | _NotFoundError) or principal is None:
            return _failure(request, exc)
        try:
            context = await service.run(lambda: trace_context(principal, trace_id))
        except Exception as again:
            return _failure(request, again)
        body = _body(request, exc)
        context.update(save_error=body["error"], expected=expected)
        return page(request, "trace.html", status=body["status"], **context)

    @router.get("/evals")
    async def evals(request: Request) -> Response:
        folder = Path(service.settings.data_dir) / "eval" / "reports"

        def gather(principal: Principal) -> dict[str, Any]:
            runs, problems = [], []
            for path in sorted(folder.glob("*/report.json")):
                try:
                    report = load_report(path)
                except ConfigError as exc:
                    problems.append(str(exc))
                    continue
                if principal.may_read(str(report.get("collection", ""))):
                    runs.append({**report, "folder": path.parent.name, "label": run_label(report)})
            runs.sort(key=lambda r: str(r.get("created", "")))
            return {
                "runs": runs,
                "groups": metric_groups(runs),
                "problems": problems,
                "folder": folder.absolute(),
            }

        return await render(request, "evals.html", gather)

    @router.get("/login")
    async def login_form(request: Request, next: str = "") -> Response:
        return page(
            request, "login.html", next=safe_next(next), error=None, open_console=not tokens
        )

    @router.post("/login")
    async def login(request: Request) -> Response:
        try:
            check_same_origin(request)
            form = await read_form(request)
        except Exception as exc:
            return _failure(request, exc)
        target = safe_next(form.get("next"))
        token = form.get("token", "").strip()
        if not tokens:
            return RedirectResponse(target, 303)
        try:
            found = tokens.authenticate(
                f"Bearer {token}", client_address(request.scope), request.url.path
            )
        except ThrottledError as exc:
            request.scope[ERROR_KEY] = "429"
            refused = page(
                request, "login.html", status=429, next=target, open_console=False, error=str(exc)
            )
            refused.headers["Retry-After"] = str(exc.retry_after)
            return refused
        if found is None:
            request.scope[ERROR_KEY] = "401"
            return page(
                request,
                "login.html",
                status=401,
                next=target,
                open_console=False,
                error=WRONG_TOKEN,
            )
        response = RedirectResponse(target, 303)
        remember_login(response, tokens.sessions.open(found), request)
        return response

    @router.post("/logout")
    async def logout(request: Request) -> Response:
        try:
            check_same_origin(request)
        except Exception as exc:
            return _failure(request, exc)
        tokens.sessions.close(request.cookies.get(CONSOLE_LOGIN.cookie))
        response = RedirectResponse("/ui/login", 303)
        clear_login(response)
        return response

    return router


def _readable(traces: Iterable[Trace], principal: Principal) -> Iterable[Trace]:
    return (t for t in traces if principal.may_read(t.collection))


def _find_trace(traces: Iterable[Trace], principal: Principal, trace_id: str) -> Trace:
    for found in _readable(traces, principal):
        if found.trace_id == trace_id:
            return found
    raise _NotFoundError(f"no trace {trace_id!r}: pick one from the Traces page")


def _top_k(text: str, default: int) -> int:
    if not text.strip():
        return default
    if not text.strip().isdigit() or not 1 <= int(text) <= MAX_K:
        raise QueryError(f"k {text!r} is not a whole number from 1 to {MAX_K}: give how many hits")
    return int(text)


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


def _body(request: Request, exc: BaseException) -> dict[str, Any]:
    status = 404 if isinstance(exc, _NotFoundError) else None
    if not isinstance(exc, KnowhubError):
        log.error("console page failed", exc_info=exc)
    request.scope[ERROR_KEY] = type(exc).__name__
    return error_body(exc, status)


def _failure(
    request: Request, exc: BaseException, template: str = "error.html", **context: Any
) -> Response:
    body = _body(request, exc)
    return page(request, template, status=body["status"], error=body["error"], **context)
