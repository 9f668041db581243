"""The web console at ``/ui`` of ``knowhub serve http``: server-rendered pages (Jinja2
templates shipped with the package; no script, nothing to build) over the same App, tokens
and collection limits as the API."""

from knowhub.interfaces.http.console.auth import CONSOLE_LOGIN, PUBLIC_PATHS
from knowhub.interfaces.http.console.failure import failure_page
from knowhub.interfaces.http.console.manage import UPLOAD_PATHS, resume_uploads
from knowhub.interfaces.http.console.routes import console_router

__all__ = [
    "CONSOLE_LOGIN",
    "PUBLIC_PATHS",
    "UPLOAD_PATHS",
    "console_router",
    "failure_page",
    "resume_uploads",
]
