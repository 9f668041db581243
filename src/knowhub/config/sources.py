"""``sources:`` in knowhub.yaml: websites and repositories a collection follows, refreshed by
``knowhub sync`` and by the servers on each one's interval (docs/sources.md)."""

from __future__ import annotations

import re
from typing import Any

from pydantic import Field, model_validator

from knowhub.config.base import Section

__all__ = ["KINDS", "SourceEntry", "interval_seconds"]

KINDS = {"url": "a website", "git": "a git repository"}
# The options each kind takes besides its spec and the common keys.
_OPTIONS = {
    "url": ("depth", "max_pages", "include", "exclude"),
    "git": ("ref", "include", "exclude"),
}
_COMMON = ("name", "collection", "refresh")
_INTERVAL = re.compile(r"(\d+(?:\.\d+)?)\s*([smhdw])")
_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}
_USERINFO = re.compile(r"(://)[^/@]*@")


def interval_seconds(text: str) -> float:
    """``6h`` (``90s``, ``30m``, ``1d``, ``1w``, ``1h30m``) in seconds; ``0`` or ``manual``:
    0, refreshed by ``knowhub sync`` only. Raises ValueError naming the value and the form."""
    spoken = text.strip().lower()
    if spoken in {"0", "manual", "never"}:
        return 0.0
    parts = list(_INTERVAL.finditer(spoken))
    if not parts or "".join(p[0] for p in parts) != spoken.replace(" ", ""):
        raise ValueError(
            f"refresh: {text!r} is not an interval: write a number and a unit (90s, 30m, 6h, "
            "1d, 1w), or manual (knowhub sync only)"
        )
    return sum(float(p[1]) * _UNITS[p[2]] for p in parts)


class SourceEntry(Section):
    """One source: ``url:`` (a website) or ``git:`` (a repository), the collection it feeds
    (default: the configured one), its refresh interval and its kind's options."""

    url: str | None = None
    git: str | None = None
    name: str = Field("", description="How `knowhub sync NAME` names it (default: its spec).")
    collection: str | None = None
    refresh: str = Field("1d", description="How often the servers refresh it; manual: never.")
    depth: int | None = Field(None, ge=0)
    max_pages: int | None = Field(None, ge=1)
    include: list[str] = Field(default_factory=list)
    exclude: list[str] = Field(default_factory=list)
    ref: str | None = None

    @model_validator(mode="before")
    @classmethod
    def _one_kind(cls, data: Any) -> Any:
        if not isinstance(data, dict):
            raise ValueError("each source is a mapping: url: https://… or git: …")
        kinds = [key for key in KINDS if data.get(key)]
        known = {*KINDS, *_COMMON, *(key for keys in _OPTIONS.values() for key in keys)}
        if not kinds and set(data) - known:
            raise ValueError(
                f"unknown kind of source {', '.join(sorted(set(data) - known))}: use url: "
                "(a website) or git: (a git repository)"
            )
        if len(kinds) != 1:
            given = ", ".join(kinds) or "neither"
            raise ValueError(
                f"a source names one kind, url: (a website) or git: (a repository); {given} given"
            )
        allowed = {kinds[0], *_COMMON, *_OPTIONS[kinds[0]]}
        unknown = sorted(set(data) - allowed)
        if unknown:
            raise ValueError(
                f"{kinds[0]}: {data[kinds[0]]}: unknown key(s) {', '.join(unknown)}; "
                f"{KINDS[kinds[0]]} takes {', '.join(sorted(allowed - {kinds[0]}))}"
            )
        return data

    @model_validator(mode="after")
    def _interval(self) -> SourceEntry:
        interval_seconds(self.refresh)  # a bad one fails at load, naming the form
        if not self.name:
            self.name = self.shown  # names are printed, logged and kept: no credentials
        return self

    @property
    def kind(self) -> str:
        return "url" if self.url else "git"

    @property
    def spec(self) -> str:
        """What ``knowhub ingest`` is given for it: the URL, or the repository as
        ``git+…`` (a clone URL or path) unless it is already written so."""
        if self.url:
            return self.url
        git = self.git or ""
        if git.startswith("/"):  # a repository on this machine
            return f"git+file://{git}"
        if git.startswith(("git+", "git://")) or "://" not in git:
            return git  # already a spec: git+…, the daemon's git://, or scp-like user@host:path
        return f"git+{git}"

    @property
    def shown(self) -> str:
        """The spec as printed and logged: a URL's credentials (``https://TOKEN@host``) left
        out (they reach git and nothing else)."""
        return _USERINFO.sub(r"\1", self.spec)

    @property
    def refresh_s(self) -> float:
        return interval_seconds(self.refresh)

    def options(self) -> dict[str, Any]:
        """The kind's options that are set, as :func:`remote_source` takes them."""
        values = {key: getattr(self, key) for key in _OPTIONS[self.kind]}
        return {key: value for key, value in values.items() if value not in (None, [])}
