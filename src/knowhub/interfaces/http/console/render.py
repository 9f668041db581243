"""Rendering a console page: Jinja2 templates shipped with the package, autoescaped.

Every value a page shows — a document title, a query, a file name — may come from a user or
a document, so autoescaping is on for every template and no template marks anything safe.
The Content-Security-Policy header is a second wall: pages load no script at all, so markup
that slipped through could still not run.
"""

from __future__ import annotations

from importlib.metadata import version
from typing import Any

from jinja2 import Environment, PackageLoader, StrictUndefined
from starlette.requests import Request
from starlette.responses import HTMLResponse

from knowhub.interfaces.http.console.auth import CONSOLE_LOGIN
from knowhub.interfaces.security import PRINCIPAL_KEY, Principal

__all__ = ["HEADERS", "NAV", "page"]

NAV = (
    ("/ui", "Overview"),
    ("/ui/search", "Search"),
    ("/ui/documents", "Documents"),
    ("/ui/ingestion", "Ingestion"),
    ("/ui/traces", "Traces"),
    ("/ui/evals", "Evals"),
)
HEADERS = {
    # Inline styles and SVG only; no script, no frame, forms post back here only.
    "Content-Security-Policy": "default-src 'none'; style-src 'unsafe-inline'; img-src 'self' "
    "data:; form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "same-origin",
    # Pages hold document text and queries: not for shared caches or the back-forward cache.
    "Cache-Control": "no-store",
}

_ENV = Environment(
    loader=PackageLoader("knowhub.interfaces.http.console", "templates"),
    autoescape=True,
    undefined=StrictUndefined,  # a misspelt variable is an error, not an empty cell
    trim_blocks=True,
    lstrip_blocks=True,
)
_VERSION = version("knowhub")


def page(request: Request, template: str, status: int = 200, **context: Any) -> HTMLResponse:
    """``template`` filled with ``context``, plus what the layout needs (nav, who is in)."""
    principal: Principal | None = request.scope.get(PRINCIPAL_KEY)
    signed_in = CONSOLE_LOGIN.cookie in request.cookies and principal is not None
    html = _ENV.get_template(template).render(
        nav=NAV,
        path=request.url.path,
        principal=principal,
        signed_in=signed_in,
        version=_VERSION,
        **context,
    )
    return HTMLResponse(html, status_code=status, headers=HEADERS)
