"""The answering tool: ``ask``, a cited answer from the knowledge base.

An agent delegates a question instead of reading passages itself: the answer is ``knowhub
ask``'s (FAQ, retrieval, the configured LLM or an extractive answer), with its ``[n]``
citations, ``hit_type`` and ``confidence``; when the documents do not cover the question it
says so (``insufficient_context``) rather than inventing an answer.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Annotated, Any

from mcp.server.mcpserver import Context
from mcp_types import CallToolResult
from pydantic import BaseModel, Field

from knowhub.answer.pipeline import collect
from knowhub.checks import MAX_QUERY_BYTES, check_filters
from knowhub.interfaces.drain import Drain
from knowhub.interfaces.mcp.indexing import (
    Indexed,
    indexing_out,
    not_created_yet,
)
from knowhub.interfaces.mcp.tools.base import (
    READ,
    CollectionName,
    DataTools,
    Tool,
    filters_given,
    in_thread,
    this_call,
    tool_result,
)
from knowhub.interfaces.mcp.tools.search import Filters, cite

__all__ = ["AnswerOut", "AnswerTools", "SourceOut"]


class SourceOut(BaseModel):
    n: int = Field(description="Citation number, as [n] in the answer.")
    source: str
    title: str
    page: int | None
    section_path: str
    line_start: int
    line_end: int
    char_start: int = 0
    char_end: int = 0
    chunk_id: str = Field(description="Fetch the whole passage with get_content.")
    relevance: float = Field(description="Absolute, 0-1: how much it is about the question.")
    collection: str


class AnswerOut(Indexed):
    question: str
    answer: str
    hit_type: str = Field(
        description="rag (answered from the sources), insufficient_context (they do not cover "
        "the question: no answer is made up), faq_direct (a curated FAQ answer) or chat."
    )
    confidence: float = Field(description="0-1: the sources' relevance times their support.")
    evidence_confidence: float = Field(0.0, description="0-1: the best source's relevance.")
    generation_verification_status: str | None = Field(
        None,
        description="verified (backed by what it cites and shown to answer the question), "
        "quoted (an extractive answer from the sources, not shown to answer), "
        "partially_supported or unsupported (None: nothing was generated).",
    )
    warnings: list[str] = Field(
        default_factory=list,
        description="What to know before relying on the answer: terms the documents do not "
        "mention, weak evidence, sentences not backed, an answer only quoted.",
    )
    not_mentioned: list[str] = Field(
        default_factory=list, description="The question's key terms the documents do not mention."
    )
    flagged_sentences: list[str] = Field(
        default_factory=list,
        description="Sentences the cited sources do not (fully) support: do not rely on them.",
    )
    reasons: list[str] = Field(
        default_factory=list, description="What lowered the confidence, e.g. uncited_sentence."
    )
    question_category: str | None = Field(
        None, description="pricing, compliance, troubleshooting, how-to or general."
    )
    prompt_profile: str | None = Field(None, description="The LLM's system prompt profile.")
    model: str = Field(description="Who wrote the answer: the LLM's id, extractive, faq, rules.")
    sources: list[SourceOut] = Field(
        description="What [n] cites; for insufficient_context, the nearest misses."
    )
    notes: list[str]
    truncated: bool = Field(description="The answer was cut to fit the result's size budget.")


Question = Annotated[
    str, Field(min_length=1, max_length=MAX_QUERY_BYTES, description="The question to answer.")
]


@dataclass(frozen=True)
class AnswerTools(DataTools):
    drain: Drain  # ends the answers in flight at shutdown

    def tools(self) -> Iterator[Tool]:
        yield Tool(
            self.ask,
            name="ask",
            title="Answer from the knowledge base",
            annotations=READ,
            opening=self.opening("read", waits=True, check=filters_given),
            description=(
                "Answer a question from the knowledge base, citing its sources as [n] (file, "
                "page, section, lines), with hit_type and confidence. When the documents do not "
                "cover it, hit_type is insufficient_context and no answer is made up: search "
                "with query_knowledge_hub instead."
            ),
        )

    async def ask(
        self,
        question: Question,
        ctx: Context,
        collection: CollectionName = None,
        filters: Filters = None,
    ) -> Annotated[CallToolResult, AnswerOut]:
        call = this_call()
        kb, name = call.kb, str(call.collection)
        typed = check_filters(filters)
        end = await in_thread(
            lambda: (
                None
                if not_created_yet(kb, name)
                else collect(self.drain.watch(call.handle().ask(question, typed)))
            )
        )
        out = _answer_out(question, name, end, self.settings.max_result_chars)
        out.indexing = indexing_out(kb)
        return tool_result(_answer_markdown(out), out)


def _answer_out(
    question: str, collection: str, end: dict[str, Any] | None, budget: int
) -> AnswerOut:
    """The answer as the tool returns it, its text cut to ``budget`` characters."""
    if end is None:  # the served folder's first ingest is creating the collection
        note = f"collection {collection!r} has no documents yet: ask again once it is indexed"
        end = {"answer": "", "hit_type": "insufficient_context", "confidence": 0.0}
        end |= {"model": "none", "sources": [], "notes": [note]}
    text: str = end["answer"]
    truncated = len(text) > budget
    sources = [SourceOut.model_validate(s) for s in end["sources"]]
    return AnswerOut(
        question=question,
        answer=text[: budget - 2].rstrip() + " …" if truncated else text,
        hit_type=end["hit_type"],
        confidence=end["confidence"],
        evidence_confidence=end.get("evidence_confidence", 0.0),
        generation_verification_status=end.get("generation_verification_status"),
        flagged_sentences=(end.get("verification") or {}).get("flagged", []),
        warnings=end.get("warnings", []),
        not_mentioned=end.get("not_mentioned", []),
        reasons=end.get("reasons", []),
        question_category=end.get("question_category"),
        prompt_profile=end.get("prompt_profile"),
        model=end["model"],
        sources=sources,
        notes=end["notes"],
        truncated=truncated,
    )


def _answer_markdown(out: AnswerOut) -> str:
    """The answer, what its [n] cite (or the nearest misses), its warnings and a one-line
    verdict."""
    lines = [out.answer] if out.answer else []
    if out.sources and out.hit_type == "rag":
        lines += ["", "Sources:"]
        lines += [f"[{s.n}] {cite(s)} — chunk `{s.chunk_id}`" for s in out.sources]
    elif out.sources and out.hit_type == "insufficient_context":
        lines += ["", "Closest sources (not relevant enough to answer from):"]
        lines += [f"- {cite(s)} — chunk `{s.chunk_id}`" for s in out.sources[:3]]
    if out.flagged_sentences:
        lines += ["", "Not supported by the cited sources:"]
        lines += [f"- {sentence}" for sentence in out.flagged_sentences]
    if out.warnings:
        lines += ["", *(f"Warning: {line}" for line in out.warnings)]
    verdict = [out.hit_type, f"confidence {out.confidence:.2f}"]
    verdict += [out.generation_verification_status] if out.generation_verification_status else []
    lines += ["", f"({', '.join([*verdict, out.model])})"]
    lines += [f"Note: {note}" for note in out.notes]
    return "\n".join(lines)
