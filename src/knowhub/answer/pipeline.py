"""One answer as a stream of events: retrieve → weigh evidence → generate → check citations.

Events are ``(kind, payload)`` pairs, the same for the CLI, Server-Sent Events and
WebSockets: ``stage`` (name, elapsed ms, counts), ``token`` (a piece of the answer),
``sources`` (the numbered sources), ``end`` (the whole :class:`Answer`), ``error``.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from knowhub.answer.citations import CitationReport, check_citations
from knowhub.answer.extractive import extractive_answer
from knowhub.answer.prompt import build_messages
from knowhub.config import AnswerSettings
from knowhub.models import Hit
from knowhub.providers.llms.base import LLM, ChatMessage

__all__ = ["Answer", "Event", "answer_events", "collect", "source_dict"]

Event = tuple[str, dict[str, Any]]
Retrieve = Callable[[str], tuple[list[Hit], dict[str, float]]]
"""Search for a query: (hits best first, stage timings in ms)."""

NOT_FOUND = {
    "en": "The documents do not cover this question.",
    "zh": "文档中没有找到这个问题的答案。",
    "ru": "В документах нет ответа на этот вопрос.",
}


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

    def to_dict(self) -> dict[str, Any]:
        return {
            "question": self.question,
            "query": self.query,
            "answer": self.text,
            "hit_type": self.hit_type,
            "intent": self.intent,
            "confidence": round(self.confidence, 3),
            "evidence": round(self.evidence, 3),
            "model": self.model,
            "sources": [source_dict(n, h) for n, h in enumerate(self.sources, start=1)],
            "sources_count": len(self.sources),
            "top_source_score": round(self.sources[0].score, 4) if self.sources else None,
            "citations": self.citations.to_dict(),
            "timings_ms": {k: round(v, 2) for k, v in self.timings_ms.items()},
            "notes": self.notes,
        }


def _relevance(hit: Hit) -> float:
    """A source's relevance (0 for a hit that was not scored by a search)."""
    return hit.relevance or 0.0


def source_dict(n: int, hit: Hit) -> dict[str, Any]:
    return {
        "n": n,
        "source": hit.source,
        "title": hit.title,
        "page": hit.page,
        "section_path": hit.section_path,
        "line_start": hit.line_start,
        "line_end": hit.line_end,
        "chunk_id": hit.chunk_id,
        "score": round(hit.score, 4),
        "relevance": round(_relevance(hit), 4),
        "collection": hit.collection,
        "text": hit.text,
    }


def answer_events(
    question: str,
    retrieve: Retrieve,
    llm: LLM | None,
    options: AnswerSettings,
    *,
    query: str | None = None,
    language: str = "en",
    history: Sequence[ChatMessage] = (),
) -> Iterator[Event]:
    """Answer ``question`` (searching for ``query``, its standalone form, when given).

    Only sources whose ``relevance`` reaches ``answer.min_evidence`` are used: quoted by
    the extractive answer, handed to the LLM, listed. When none does, the answer says
    the documents do not cover the question and lists the nearest misses.
    """
    search_for = query or question
    clock = time.perf_counter()
    hits, search_ms = retrieve(search_for)
    timings = {f"search.{k}": v for k, v in search_ms.items()}
    timings["retrieval"] = _ms(clock)
    yield "stage", {"stage": "retrieval", "ms": round(timings["retrieval"], 2), "hits": len(hits)}

    considered = hits[: options.max_sources]
    best = max((_relevance(h) for h in considered), default=0.0)
    sources = [h for h in considered if _relevance(h) >= options.min_evidence]
    if not sources:
        yield from _not_covered(question, search_for, considered, best, options, language, timings)
        return
    yield "sources", {"sources": [source_dict(n, h) for n, h in enumerate(sources, start=1)]}
    dropped = len(considered) - len(sources)

    clock = time.perf_counter()
    if llm is None:
        text = extractive_answer(search_for, sources, options.extractive_sentences)
        timings["extractive"] = _ms(clock)
        yield "token", {"text": text}
        model = "extractive"
    else:
        messages = build_messages(question, sources, history, options.max_source_chars)
        timings["prompt_build"] = _ms(clock)
        yield "stage", {"stage": "prompt_build", "ms": round(timings["prompt_build"], 2)}
        clock = time.perf_counter()
        pieces: list[str] = []
        for delta in llm.stream(messages):
            if not pieces:
                timings["llm_first_token"] = _ms(clock)
                yield (
                    "stage",
                    {"stage": "llm_first_token", "ms": round(timings["llm_first_token"], 2)},
                )
            pieces.append(delta)
            yield "token", {"text": delta}
        timings["llm_total"] = _ms(clock)
        text = "".join(pieces).strip()
        model = llm.model_id

    report = check_citations(text, sources, options.support_threshold)
    # How relevant the sources are, discounted by how much of the answer they back.
    confidence = best * report.score
    result = Answer(
        question, search_for, text, "rag", sources, best, confidence, report, timings, model=model
    )
    if dropped:
        result.notes.append(
            f"{dropped} source(s) below answer.min_evidence {options.min_evidence:.2f} left out"
        )
    if report.invalid:
        result.notes.append(f"cited sources that do not exist: {report.invalid}")
    if report.unsupported:
        result.notes.append(f"{len(report.unsupported)} citation(s) not backed by their source")
    yield "end", result.to_dict()


def _not_covered(
    question: str,
    search_for: str,
    considered: list[Hit],
    best: float,
    options: AnswerSettings,
    language: str,
    timings: dict[str, float],
) -> Iterator[Event]:
    """The answer when no source is relevant enough: say so, list the nearest misses."""
    yield "sources", {"sources": [source_dict(n, h) for n, h in enumerate(considered, start=1)]}
    text = NOT_FOUND.get(language, NOT_FOUND["en"])
    yield "token", {"text": text}
    result = Answer(
        question,
        search_for,
        text,
        "insufficient_context",
        considered,
        best,
        confidence=round(best * 0.5, 3),
        timings_ms=timings,
    )
    result.notes.append(
        f"best source's relevance {best:.2f} is below answer.min_evidence "
        f"{options.min_evidence:.2f}: no answer generated"
    )
    yield "end", result.to_dict()


def collect(events: Iterator[Event]) -> dict[str, Any]:
    """Run an event stream to its end and return the ``end`` payload."""
    for kind, payload in events:
        if kind == "end":
            return payload
    raise RuntimeError("answer stream ended without an 'end' event")


def _ms(start: float) -> float:
    return (time.perf_counter() - start) * 1000.0
