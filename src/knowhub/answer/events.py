"""What an answer streams: typed events, serialised only by the interfaces.

An answer is a stream of :class:`Stage` (a step done: its name, elapsed ms, counts),
:class:`Sources` (the numbered sources), :class:`Token` (a piece of the answer text) and,
last, :class:`End` (the whole :class:`Answer`). :class:`Error` is what an interface sends in
place of ``End`` when the answer failed (the pipeline itself raises).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from knowhub.answer.citations import CitationReport
from knowhub.answer.faq import FaqMatch
from knowhub.answer.router import Route
from knowhub.answer.verify import Verification
from knowhub.answer.warnings import warning_lines
from knowhub.models import Hit

__all__ = [
    "Answer",
    "AnswerEvent",
    "End",
    "Error",
    "Sources",
    "Stage",
    "Token",
    "kind_of",
    "numbered",
    "source_dict",
]


@dataclass
class Answer:
    question: str
    query: str
    text: str
    hit_type: str  # rag | insufficient_context | faq_direct | chat
    sources: list[Hit]
    evidence: float
    confidence: float
    citations: CitationReport = field(default_factory=CitationReport)
    timings_ms: dict[str, float] = field(default_factory=dict)
    intent: str = "search"
    model: str = "extractive"
    notes: list[str] = field(default_factory=list)
    faq: FaqMatch | None = None  # the entry a faq_direct answer is
    route: Route | None = None  # how the question was classified
    routing_ms: float | None = None  # the routing's time, for an answer that searched
    trace_id: str | None = None  # the answer's trace (written before the end is sent)
    # What it read: {"collection", "version", "physical", "revision"} (None: nothing read)
    kb_version: dict[str, Any] | None = None
    # The generated text checked sentence by sentence (None: nothing was generated)
    verification: Verification | None = None
    reasons: list[str] = field(default_factory=list)  # what lowered the confidence
    question_category: str | None = None  # pricing | compliance | troubleshooting | …
    prompt_profile: str | None = None  # the system prompt the LLM got (None: no LLM call)
    # The question's key terms the documents do not mention (coverage; "not_mentioned" is
    # then among the reasons).
    not_mentioned: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        timings = {k: round(v, 2) for k, v in self.timings_ms.items()}
        if self.routing_ms is not None:
            timings["routing"] = round(self.routing_ms, 3)
        check = self.verification
        data = {
            "question": self.question,
            "query": self.query,
            "answer": self.text,
            "hit_type": self.hit_type,
            "intent": self.intent,
            "confidence": round(self.confidence, 3),
            "evidence": round(self.evidence, 3),
            # The trace contract's names for the two numbers above.
            "answer_confidence": round(self.confidence, 3),
            "evidence_confidence": round(self.evidence, 3),
            "reasons": self.reasons,
            "not_mentioned": self.not_mentioned,
            # What every interface shows in its text (knowhub.answer.warnings).
            "warnings": warning_lines(self),
            "generation_verification_status": check.status if check else None,
            "verification": check.to_dict() if check else None,
            "question_category": self.question_category,
            "prompt_profile": self.prompt_profile,
            "model": self.model,
            "sources": numbered(self.sources),
            "sources_count": len(self.sources),
            "top_source_score": round(self.sources[0].score, 4) if self.sources else None,
            "citations": self.citations.to_dict(),
            "timings_ms": timings,
            "notes": self.notes,
            "trace_id": self.trace_id,
            "kb_version": self.kb_version,
        }
        if self.faq is not None:
            data["faq"] = self.faq.to_dict()
        if self.route is not None:
            data["route"] = self.route.to_dict()
        return data


@dataclass(frozen=True)
class Stage:
    """A step of the answer is done (``ms`` None: a step that is not timed on its own)."""

    name: str
    ms: float | None = None
    details: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        timed = {} if self.ms is None else {"ms": self.ms}
        return {"stage": self.name, **timed, **self.details}


@dataclass(frozen=True)
class Sources:
    """The sources the answer may cite, numbered from 1 in this order."""

    hits: list[Hit]

    def to_dict(self) -> dict[str, Any]:
        return {"sources": numbered(self.hits)}


@dataclass(frozen=True)
class Token:
    text: str

    def to_dict(self) -> dict[str, Any]:
        return {"text": self.text}


@dataclass(frozen=True)
class End:
    answer: Answer

    def to_dict(self) -> dict[str, Any]:
        return self.answer.to_dict()


@dataclass(frozen=True)
class Error:
    """The answer failed: what an interface says instead of ``End``."""

    message: str
    status: int = 500

    def to_dict(self) -> dict[str, Any]:
        return {"error": self.message, "status": self.status}


AnswerEvent = Stage | Sources | Token | End | Error

_KINDS: dict[type, str] = {
    Stage: "stage",
    Sources: "sources",
    Token: "token",
    End: "end",
    Error: "error",
}


def kind_of(event: AnswerEvent) -> str:
    """The event's name on the wire (SSE ``event:``, the WebSocket's ``event`` field)."""
    return _KINDS[type(event)]


def numbered(hits: Iterable[Hit]) -> list[dict[str, Any]]:
    return [source_dict(n, hit) for n, hit in enumerate(hits, start=1)]


def source_dict(n: int, hit: Hit) -> dict[str, Any]:
    return {
        "n": n,
        "source": hit.source,
        "url": hit.url,
        "title": hit.title,
        "page": hit.page,
        "section_path": hit.section_path,
        "line_start": hit.line_start,
        "line_end": hit.line_end,
        "char_start": hit.char_start,
        "char_end": hit.char_end,
        "chunk_id": hit.chunk_id,
        "score": round(hit.score, 4),
        "relevance": round(hit.relevance or 0.0, 4),
        "collection": hit.collection,
        "text": hit.text,
    }
