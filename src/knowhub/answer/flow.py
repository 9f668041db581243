"""One answer, start to end: route → FAQ → rewrite → retrieve → generate → cite.

The collection (:meth:`knowhub.collection.Collection.ask`) hands in how to search it and
how to match its FAQ; everything else an answer does is here, as typed events
(:mod:`knowhub.answer.events`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from pathlib import Path

from knowhub.answer.category import Category, classify
from knowhub.answer.events import Answer, AnswerEvent, End, Stage, Token
from knowhub.answer.faq import FaqMatch
from knowhub.answer.pipeline import COVERAGE_WIDTH, Retrieved, answer_events
from knowhub.answer.prompt import rewrite_messages
from knowhub.answer.router import Route, route
from knowhub.checks import check_query
from knowhub.config import AnswerSettings
from knowhub.errors import KnowhubError
from knowhub.lang import query_language
from knowhub.models import Filters, Hit
from knowhub.providers.embedders.base import Embedder
from knowhub.providers.embedders.cached import CachedVectors
from knowhub.providers.llms.base import LLM, ChatMessage

__all__ = ["Retrieved", "answer"]


def answer(
    question: str,
    *,
    retrieve: Callable[[str, int, Filters], Retrieved],
    faq: Callable[[str], FaqMatch | None],
    llm: Callable[[], LLM | None],
    counts: Callable[[Sequence[str], int, Filters], dict[str, int]] | None = None,
    options: AnswerSettings,
    filters: Filters | None = None,
    history: Sequence[ChatMessage] = (),
    embedder: Callable[[], Embedder] | None = None,
    vectors: Callable[[], CachedVectors] | None = None,
) -> Iterator[AnswerEvent]:
    """Answer ``question``. A greeting is answered without searching; an FAQ entry close
    enough is the answer; with history and an LLM, a follow-up is rewritten into a
    standalone query; a comparison searches each of its parts. ``llm`` gives the model
    (None: extractive answers), built only once a step needs it: a greeting or an FAQ
    answer never loads it. The question's category picks the LLM's prompt profile;
    ``embedder`` (already loaded for the search) lets verification compare meanings;
    ``counts`` (chunks holding each term, within the filters) lets the answer check that
    the documents mention the question's key terms (:mod:`knowhub.answer.coverage`);
    ``vectors``, its vectors kept in the application's caches, the extractive answer too."""
    check_query(question, "question")
    found = route(question, llm() if options.llm_router else None)
    yield Stage("routing", round(found.ms, 3), found.to_dict())
    if found.intent == "chat":
        yield from _chat(question, found)
        return
    match = faq(question)
    if match is not None:
        yield from _faq_direct(question, match, found)
        return
    query, notes = question, [found.note] if found.note else []
    model = llm() if history else None
    if model is not None and options.rewrite_followups:
        query, note = _standalone(model, question, history)
        notes += [note] if note else []
    scope = {**dict(filters or {}), **found.filters}
    queries = found.queries if found.intent == "compare" else [query]
    search = _searcher(retrieve, queries, scope, COVERAGE_WIDTH * options.max_sources)
    language = query_language(question)
    category = classify(
        question, options.profiles, llm() if options.profiles.llm_classifier else None
    )
    notes += [category.note] if category.note else []
    events = answer_events(
        question,
        search,
        llm(),
        options,
        query=query,
        language=language,
        history=history,
        embedder=embedder() if embedder is not None else None,
        rules=options.profiles.profiles[category.profile],
        counts=(lambda terms, limit: counts(terms, limit, scope)) if counts else None,
        vectors=vectors() if vectors is not None else None,
    )
    for event in events:
        if isinstance(event, End):
            end = event.answer
            end.intent, end.route, end.notes = found.intent, found, notes + end.notes
            end.routing_ms = found.ms
            _label(end, category, rewritten=query != question)
        yield event


def _searcher(
    retrieve: Callable[[str, int, Filters], Retrieved],
    queries: list[str],
    scope: Filters,
    wanted: int,
) -> Callable[[str], Retrieved]:
    """The search an answer makes: ``wanted`` hits (its sources, then coverage's) for the
    query, or for each part of a comparison, interleaved."""

    def search(_text: str) -> Retrieved:
        results = [retrieve(q, wanted, scope) for q in queries]
        if len(results) == 1:
            return results[0]
        return _interleave([hits for hits, _ in results], wanted), {}

    return search


def _label(end: Answer, category: Category, rewritten: bool) -> None:
    """Record the category and profile on the answer, and a rewrite among its reasons."""
    end.question_category = category.name
    if "prompt_build" in end.timings_ms:  # only an LLM answer was written with the profile
        end.prompt_profile = category.profile
    if rewritten:
        end.reasons.insert(0, "history_rewrite_used")


def _chat(question: str, found: Route) -> Iterator[AnswerEvent]:
    yield Token(found.reply or "")
    reply = Answer(question, question, found.reply or "", "chat", [], 0.0, 1.0, intent="chat")
    reply.model, reply.route = "rules", found
    yield End(reply)


def _faq_direct(question: str, match: FaqMatch, found: Route) -> Iterator[AnswerEvent]:
    entry = match.entry
    yield Stage("faq", details={"hits": 1, **match.to_dict()})
    yield Token(entry.answer)
    direct = Answer(
        question, question, entry.answer, "faq_direct", [], match.similarity, match.similarity
    )
    direct.model, direct.faq, direct.route = "faq", match, found
    direct.notes.append(
        f"FAQ match ({match.by}, {match.similarity:.2f}) on {entry.question!r} from "
        f"{Path(entry.source).name}:{entry.line}"
    )
    yield End(direct)


def _standalone(llm: LLM, question: str, history: Sequence[ChatMessage]) -> tuple[str, str | None]:
    """The follow-up as a standalone query (the question itself if rewriting fails)."""
    try:
        messages = rewrite_messages(question, history)
        rewritten = llm.complete(messages, max_tokens=100, temperature=0.0).strip()
    except KnowhubError as exc:
        return question, f"follow-up rewrite failed, searching the question as asked: {exc}"
    if not rewritten or len(rewritten.encode()) > 4096:
        return question, "follow-up rewrite gave nothing usable; searching the question"
    return rewritten, None


def _interleave(rankings: list[list[Hit]], limit: int) -> list[Hit]:
    """Merge sub-query results turn by turn (each sub-query's best first), without repeats."""
    merged: dict[str, Hit] = {}
    for rank in range(max((len(r) for r in rankings), default=0)):
        for ranking in rankings:
            if rank < len(ranking):
                merged.setdefault(ranking[rank].chunk_id, ranking[rank])
    return list(merged.values())[:limit]
