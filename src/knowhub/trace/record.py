"""The trace record and how each kind of run becomes one."""

from __future__ import annotations

import time
import uuid
from dataclasses import asdict, dataclass, field, fields
from datetime import UTC, datetime
from typing import Any

from knowhub.surrogates import escape_surrogates_deep

__all__ = ["PREVIEW_CHARS", "RENAMED", "Trace", "new_trace", "preview"]

PREVIEW_CHARS = 160


@dataclass
class Trace:
    """What one run did and where its time went."""

    trace_id: str
    kind: str  # search | answer | ingest | chat
    interface: str  # cli | mcp | http | python
    collection: str
    started_at: str  # ISO 8601, UTC
    duration_ms: float = 0.0
    # What the run read: {"collection", "version", "physical" (its store collection),
    # "revision" (the store's write counter of it)}; None when no collection was read.
    kb_version: dict[str, Any] | None = None
    stages_ms: dict[str, float] = field(default_factory=dict)
    stage_hits: dict[str, int] = field(default_factory=dict)
    query: str | None = None  # a preview, never more than PREVIEW_CHARS
    session_id: str | None = None  # the conversation an answer belongs to
    # The filters the caller gave, and what the search ran with: {"filters" (the caller's
    # and the router's), "scope"}; None: nothing was searched.
    source_filter: dict[str, Any] | None = None
    effective_source: dict[str, Any] | None = None
    intent: str | None = None
    intent_reason: str | None = None  # rules | llm | fallback: <why>
    hit_type: str | None = None
    confidence: float | None = None
    # An answer's checks (docs/ask.md): its category and the prompt profile the LLM got, the
    # verification of its sentences, and what lowered its confidence. Never prompt text.
    question_category: str | None = None
    prompt_profile: str | None = None
    generation_verification_status: str | None = None
    verification_score: float | None = None
    answer_confidence: float | None = None
    evidence_confidence: float | None = None
    reasons: list[str] | None = None
    sources_count: int | None = None
    top_source_score: float | None = None
    source_ids: list[str] = field(default_factory=list)  # chunk ids, best first
    cache: dict[str, str] = field(default_factory=dict)  # {cache: hit | miss | …}
    first_token_ms: float | None = None  # an answer's first text, from the question
    model: str | None = None
    answer: str | None = None  # a preview
    ingest: dict[str, Any] | None = None
    error: str | None = None
    notes: list[str] = field(default_factory=list)
    # A chat's steps in order: {"kind": "model", "step", "ms", "tool_calls", "finish_reason"}
    # or {"kind": "tool", "step", "server", "tool", "arguments" (a preview), "ms", "error",
    # "result_chars", "truncated"}; the same spans' times are in ``stages_ms``.
    steps: list[dict[str, Any]] = field(default_factory=list)
    # What a chat reached besides ``collection``: the collections its results came from and
    # the MCP servers it called; who may see the trace must be allowed them all.
    reads: list[str] = field(default_factory=list)
    servers: list[str] = field(default_factory=list)
    # The caller's effective data scope (knowhub.scope.Scope.to_dict: tenants, datasets,
    # max_visibility, roles; "*" unrestricted), never its token; None: nothing was read.
    scope: dict[str, Any] | None = None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def encodable(self) -> Trace:
        """This trace with every string UTF-8 can encode: a lone surrogate (an undecodable
        file-name byte, a ``"\\ud800"`` in a JSON query) is written as ``\\xNN`` or
        ``\\uNNNN``. Every sink writes this form, so no string can make it lose a run."""
        return Trace.from_dict(escape_surrogates_deep(self.to_dict()))

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Trace:
        known = {f.name for f in fields(cls)}
        renamed = {RENAMED.get(k, k): v for k, v in data.items()}
        values = {k: v for k, v in renamed.items() if k in known}
        if isinstance(values.get("kb_version"), int):
            # Written before versions existed: every collection was its own version 1, and
            # the number recorded was its revision.
            name = values["collection"]
            values["kb_version"] = {
                "collection": name,
                "version": 1,
                "physical": name,
                "revision": values["kb_version"],
            }
        return cls(**values)

    @property
    def kb_version_label(self) -> str:
        """``version 2 (handbook@v2, revision 7)`` for people; ``version ?`` when unknown."""
        kb = self.kb_version
        if not kb:
            return "version ?"
        where = [kb["physical"]] if kb["physical"] != self.collection else []
        where += [f"revision {kb['revision']}"] if kb.get("revision") is not None else []
        return f"version {kb['version']}" + (f" ({', '.join(where)})" if where else "")

    @property
    def slowest_stage(self) -> str | None:
        return max(self.stages_ms, key=lambda s: self.stages_ms[s]) if self.stages_ms else None

    @property
    def cache_stage(self) -> str | None:
        """The cache that answered: the FAQ, else the result cache, else the query vector."""
        hits = (c for c in ("faq", "result", "query_embedding") if self.cache.get(c) == "hit")
        return next(hits, None)


# The trace contract's names (knowhub.trace.fields) for fields the record spells otherwise:
# JSON lines are written with them.
RENAMED = {"stage_timings_ms": "stages_ms", "elapsed_ms": "duration_ms"}


def new_trace(kind: str, interface: str, collection: str) -> tuple[Trace, float]:
    """A fresh trace and the clock reading its duration is measured from."""
    started = datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")
    return Trace(uuid.uuid4().hex[:16], kind, interface, collection, started), time.perf_counter()


def preview(text: str | None) -> str | None:
    """At most PREVIEW_CHARS of ``text`` on one line."""
    if text is None:
        return None
    flat = " ".join(text.split())
    return flat if len(flat) <= PREVIEW_CHARS else flat[: PREVIEW_CHARS - 1] + "…"
