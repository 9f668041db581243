"""The console's own static files (scripts, styles, images), shipped inside the package:
nothing comes from a CDN, so the console works offline. Only files of ``static/`` with a
known type are served; a name with a path in it is not a name there."""

from __future__ import annotations

from importlib.resources import files

from starlette.responses import Response

from knowhub.interfaces.http.console.failure import NotFoundError
from knowhub.interfaces.http.console.pages import pages_router

__all__ = ["router", "static"]

router = pages_router()

_TYPES = {
    ".js": "text/javascript; charset=utf-8",
    ".css": "text/css; charset=utf-8",
    ".svg": "image/svg+xml",
    ".png": "image/png",
}
_CACHE = "private, max-age=3600"  # an upgrade changes them: an hour at most


@router.get("/static/{name}")
async def static(name: str) -> Response:
    """One file of ``static/`` (404 for anything else)."""
    suffix = name[name.rfind(".") :] if "." in name else ""
    kind = _TYPES.get(suffix)
    found = files("knowhub.interfaces.http.console").joinpath("static", name)
    if kind is None or "/" in name or "\\" in name or name.startswith(".") or not found.is_file():
        raise NotFoundError(f"no console file {name!r}")
    return Response(
        found.read_bytes(),
        media_type=kind,
        headers={"Cache-Control": _CACHE, "X-Content-Type-Options": "nosniff"},
    )
