"""Rendering a console page: Jinja2 templates shipped with the package, autoescaped.

Every value a page shows — a document title, a query, a file name — may come from a user or
a document, so autoescaping is on for every template and no template marks anything safe.
The Content-Security-Policy header is a second wall: scripts load only from ``/ui/static``
(never inline), so markup that slipped through could still not run.
"""

from __future__ import annotations

from importlib.metadata import version
from typing import Any

from jinja2 import Environment, PackageLoader, StrictUndefined
from starlette.requests import Request
from starlette.responses import HTMLResponse

from knowhub.caller import Caller
from knowhub.interfaces.http.console.auth import CONSOLE_LOGIN
from knowhub.interfaces.security import PRINCIPAL_KEY

__all__ = ["HEADERS", "NAV", "page"]

NAV = (  # (href, label, shown only to a token that may write)
    ("/ui/ask", "Ask", False),
    ("/ui/search", "Search", False),
    ("/ui/documents", "Documents", False),
    ("/ui/upload", "Upload", True),
    ("/ui/sources", "Sources", True),
    ("/ui", "Overview", False),
    ("/ui/ingestion", "Ingestion", False),
    ("/ui/versions", "Versions", False),
    ("/ui/traces", "Traces", False),
    ("/ui/evals", "Evals", False),
)
HEADERS = {
    # Scripts only from /ui/static (no inline script, so markup that slipped through cannot
    # run), requests back to this server only, no frame; forms post back here only.
    "Content-Security-Policy": "default-src 'none'; script-src 'self'; connect-src 'self'; "
    "style-src 'self' 'unsafe-inline'; img-src 'self' data:; form-action 'self'; "
    "frame-ancestors 'none'; base-uri 'none'",
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
    principal: Caller | None = request.scope.get(PRINCIPAL_KEY)
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
