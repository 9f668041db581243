"""Retrieve → weigh evidence → generate → check citations: the RAG part of an answer.

:mod:`knowhub.answer.flow` runs it after routing, the FAQ and the follow-up rewrite.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Generator, Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from knowhub.answer import coverage
from knowhub.answer.answers import answer_match
from knowhub.answer.citations import check_citations
from knowhub.answer.events import Answer, AnswerEvent, End, Sources, Stage, Token
from knowhub.answer.extractive import extractive_answer
from knowhub.answer.prompt import SYSTEM_RULES, build_messages
from knowhub.answer.verify import verify_answer
from knowhub.answer.verify_llm import review
from knowhub.config import AnswerSettings
from knowhub.models import Hit
from knowhub.providers.embedders.base import Embedder
from knowhub.providers.embedders.cached import CachedVectors
from knowhub.providers.llms.base import LLM, ChatMessage

__all__ = [
    "COVERAGE_WIDTH",
    "Retrieve",
    "Retrieved",
    "answer_events",
    "collect",
    "mentioned_text",
]

COVERAGE_WIDTH = 2
"""Coverage is judged against the relevant hits of this many times ``answer.max_sources``:
"the documents do not mention X" is a claim about the documents, and a name a relevant hit
just past the sources quoted holds is mentioned. On the real-document sets, 5 → 10 hits
took the answerable questions told "not mentioned" from 4.4 % to 1.5 % and refused every
near miss it refused before (docs/benchmarks.md)."""

Retrieved = tuple[list[Hit], dict[str, float]]
"""Hits best first, and the search's stage timings in ms."""
Retrieve = Callable[[str], Retrieved]
"""Search for a query."""

NOT_FOUND = {
    "en": "The documents do not cover this question.",
    "zh": "文档中没有找到这个问题的答案。",
    "ru": "В документах нет ответа на этот вопрос.",
}
NOT_MENTIONED = {
    "en": "The documents do not mention {}.",
    "zh": "文档中没有提到{}。",
    "ru": "В документах не упоминается: {}.",
}
_JOINED = {"en": (", ", " or "), "zh": ("、", "或"), "ru": (", ", " и ")}


def _relevance(hit: Hit) -> float:
    """A source's relevance (0 for a hit that was not scored by a search)."""
    return hit.relevance or 0.0


def answer_events(
    question: str,
    retrieve: Retrieve,
    llm: LLM | None,
    options: AnswerSettings,
    *,
    query: str | None = None,
    language: str = "en",
    history: Sequence[ChatMessage] = (),
    embedder: Embedder | None = None,
    rules: str = SYSTEM_RULES,
    counts: coverage.Counts | None = None,
    vectors: CachedVectors | None = None,
) -> Iterator[AnswerEvent]:
    """Answer ``question`` (searching for ``query``, its standalone form, when given).

    Only sources whose ``relevance`` reaches ``answer.min_evidence`` are used: quoted by
    the extractive answer, handed to the LLM, listed (the first ``answer.max_sources`` of
    ``retrieve``'s hits; the relevant ones of :data:`COVERAGE_WIDTH` times as many are
    what coverage checks the key terms against). When none does, the answer says
    the documents do not cover the question and lists the nearest misses. ``rules`` is
    the LLM's system prompt (the question's prompt profile); ``embedder`` gives the
    verification its semantic half (:mod:`knowhub.answer.verify`). With ``counts`` (the
    collection's chunks per term) the question's key terms are checked first
    (:mod:`knowhub.answer.coverage`): when the documents do not mention its core, the answer
    says so instead; when they miss only some terms, the answer ends by naming them. The extractive
    answer weighs its sentences' meaning through ``vectors`` (the application's vector
    caches) when given.
    """
    search_for = query or question
    clock = time.perf_counter()
    hits, search_ms = retrieve(search_for)
    timings = {f"search.{k}": v for k, v in search_ms.items()}
    timings["retrieval"] = _ms(clock)
    yield Stage("retrieval", round(timings["retrieval"], 2), {"hits": len(hits)})
    asked = _Asked(question, search_for, timings)

    considered = hits[: options.max_sources]
    best = max((_relevance(h) for h in considered), default=0.0)
    sources = [h for h in considered if _relevance(h) >= options.min_evidence]
    if not sources:
        yield from _not_covered(asked, considered, best, options, language)
        return
    wider = hits[options.max_sources : COVERAGE_WIDTH * options.max_sources]
    held = sources + [h for h in wider if _relevance(h) >= options.min_evidence]
    found = _coverage(search_for, held, counts, embedder, timings)
    if found is not None and found.refused:
        yield from _not_mentioned(asked, sources, best, found, language)
        return
    yield Sources(sources)
    if vectors is None and embedder is not None:
        vectors = CachedVectors(embedder)
    if llm is None:
        text, model = _quoted(asked, sources, options, vectors, language), "extractive"
        yield Token(text)
    else:
        text = yield from _written(asked, sources, llm, options, history, rules)
        model = llm.model_id
    answer = Answer(
        question, search_for, text, "rag", sources, best, 0.0, timings_ms=timings, model=model
    )
    _checked(answer, options, len(considered) - len(sources))
    _verified(answer, options, _Checkers(embedder, llm, language, vectors))
    if found is not None and found.uncovered:  # after the checks: they judge the answer's own
        yield Token(" " + _partly(answer, found.uncovered, language))
    yield End(answer)


def _quoted(
    asked: _Asked,
    sources: list[Hit],
    options: AnswerSettings,
    vectors: CachedVectors | None,
    language: str,
) -> str:
    """The extractive answer: the sources' sentences that answer best, quoted."""
    clock = time.perf_counter()
    text = extractive_answer(
        asked.search_for, sources, options.extractive_sentences, vectors, language
    )
    asked.timings["extractive"] = _ms(clock)
    return text


def _written(
    asked: _Asked,
    sources: list[Hit],
    llm: LLM,
    options: AnswerSettings,
    history: Sequence[ChatMessage],
    rules: str,
) -> Generator[AnswerEvent, None, str]:
    """The LLM's answer from the numbered sources, streamed as tokens; returns its text."""
    clock = time.perf_counter()
    messages = build_messages(asked.question, sources, history, options.max_source_chars, rules)
    asked.timings["prompt_build"] = _ms(clock)
    yield Stage("prompt_build", round(asked.timings["prompt_build"], 2))
    return (yield from _generate(llm, messages, asked.timings))


def _generate(
    llm: LLM, messages: list[ChatMessage], timings: dict[str, float]
) -> Generator[AnswerEvent, None, str]:
    """Stream the model's answer as tokens; returns the whole text."""
    clock = time.perf_counter()
    pieces: list[str] = []
    for delta in llm.stream(messages):
        if not pieces:
            timings["llm_first_token"] = _ms(clock)
            yield Stage("llm_first_token", round(timings["llm_first_token"], 2))
        pieces.append(delta)
        yield Token(delta)
    timings["llm_total"] = _ms(clock)
    return "".join(pieces).strip()


def _checked(answer: Answer, options: AnswerSettings, dropped: int) -> None:
    """Check ``answer``'s citations against its sources; its confidence (until verified):
    how relevant the sources are, discounted by how much of the answer they back."""
    report = check_citations(answer.text, answer.sources, options.support_threshold)
    answer.citations, answer.confidence = report, answer.evidence * report.score
    if dropped:
        answer.notes.append(
            f"{dropped} source(s) below answer.min_evidence {options.min_evidence:.2f} left out"
        )
    if report.invalid:
        answer.notes.append(f"cited sources that do not exist: {report.invalid}")
    if report.unsupported:
        answer.notes.append(f"{len(report.unsupported)} citation(s) not backed by their source")


@dataclass(frozen=True)
class _Checkers:
    """What verification may use: the embedder (semantic support), the LLM (verifier) and
    the cached vectors (whether an extractive answer answers)."""

    embedder: Embedder | None
    llm: LLM | None
    language: str
    vectors: CachedVectors | None = None


def _verified(answer: Answer, options: AnswerSettings, checkers: _Checkers) -> None:
    """Verify ``answer`` sentence by sentence (``answer.verification``); its confidence is
    then the evidence times the verification score, and ``reasons`` say what lowered it."""
    settings = options.verification
    if answer.evidence < settings.low_evidence:
        answer.reasons.append("low_top_score")
    if not settings.enabled:
        return
    clock = time.perf_counter()
    found = verify_answer(
        answer.text, answer.sources, settings, checkers.embedder, checkers.language
    )
    if settings.llm and checkers.llm is not None:
        review(checkers.llm, found, answer.sources, options.max_source_chars)
    if answer.model == "extractive":  # quoted word for word: is it what was asked?
        found.answers = answer_match(
            answer.query, answer.text, settings, checkers.vectors, checkers.language
        )
    answer.timings_ms["verification"] = _ms(clock)
    answer.verification, answer.confidence = found, answer.evidence * found.score
    answer.reasons += found.reasons()
    if found.flagged:
        answer.notes.append(
            f"{len(found.flagged)} sentence(s) not fully supported by their sources "
            f"(verification: {found.status})"
        )
    if found.note:
        answer.notes.append(found.note)


@dataclass(frozen=True)
class _Asked:
    """The question, what was searched for, and the timings so far."""

    question: str
    search_for: str
    timings: dict[str, float]


def _refused(
    asked: _Asked, listed: list[Hit], best: float, text: str, reason: str, note: str
) -> Iterator[AnswerEvent]:
    """An ``insufficient_context`` answer saying ``text``, listing ``listed`` as the
    nearest sources."""
    yield Sources(listed)
    yield Token(text)
    result = Answer(
        asked.question,
        asked.search_for,
        text,
        "insufficient_context",
        listed,
        best,
        confidence=round(best * 0.5, 3),
        timings_ms=asked.timings,
    )
    result.reasons.append(reason)
    result.notes.append(note)
    yield End(result)


def _not_covered(
    asked: _Asked, considered: list[Hit], best: float, options: AnswerSettings, language: str
) -> Iterator[AnswerEvent]:
    """The answer when no source is relevant enough: say so, list the nearest misses."""
    note = (
        f"best source's relevance {best:.2f} is below answer.min_evidence "
        f"{options.min_evidence:.2f}: no answer generated"
    )
    text = NOT_FOUND.get(language, NOT_FOUND["en"])
    yield from _refused(asked, considered, best, text, "no_relevant_source", note)


def _coverage(
    query: str,
    sources: list[Hit],
    counts: coverage.Counts | None,
    embedder: Embedder | None,
    timings: dict[str, float],
) -> coverage.Coverage | None:
    """The question's key terms checked against the collection and ``sources``."""
    if counts is None:
        return None
    clock = time.perf_counter()
    found = coverage.check(query, sources, counts)
    timings["coverage"] = _ms(clock)
    return found


def mentioned_text(words: Sequence[str], language: str) -> str:
    """ "The documents do not mention A, B or C." in ``language`` (English when unknown)."""
    comma, last = _JOINED.get(language, _JOINED["en"])
    listed = comma.join(words[:-1]) + last + words[-1] if len(words) > 1 else words[0]
    return NOT_MENTIONED.get(language, NOT_MENTIONED["en"]).format(listed)


def _partly(answer: Answer, words: list[str], language: str) -> str:
    """Record on ``answer`` what the documents do not mention; the sentence that says it,
    now the end of the answer's text."""
    said = mentioned_text(words, language)
    answer.text = f"{answer.text} {said}"
    answer.not_mentioned = list(words)
    answer.reasons.append("not_mentioned")
    answer.notes.append(f"the documents do not mention: {', '.join(words)}")
    return said


def _not_mentioned(
    asked: _Asked, sources: list[Hit], best: float, found: coverage.Coverage, language: str
) -> Iterator[AnswerEvent]:
    """The answer when the documents do not mention the question's core: say what they lack."""
    note = (
        f"key terms {[k.word for k in found.terms]}: the documents do not mention "
        f"{found.uncovered}; no answer generated"
    )
    text = mentioned_text(found.uncovered, language)
    for event in _refused(asked, sources, best, text, "not_mentioned", note):
        if isinstance(event, End):
            event.answer.not_mentioned = list(found.uncovered)
        yield event


def collect(events: Iterable[AnswerEvent]) -> dict[str, Any]:
    """Run an event stream to its end and return the answer (as its ``end`` event reads)."""
    for event in events:
        if isinstance(event, End):
            return event.to_dict()
    raise RuntimeError("answer stream ended without an 'end' event")


def _ms(start: float) -> float:
    return (time.perf_counter() - start) * 1000.0
