"""Is a response whole? Pure checks of each endpoint's answer, shared by the load driver.

A torn result is one that parses but is not what the endpoint promises: a missing field, a
stream whose events are out of order or whose tokens do not add up to its answer, a
citation of a source the answer does not list. Each check returns the problems it found
(empty: whole), the document sources the response names (checked after the run against
the collection's documents) and the response's per-stage times.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

__all__ = [
    "Checked",
    "check_answer",
    "check_debug",
    "check_health",
    "check_mcp_search",
    "check_search",
    "check_stream",
]

HIT_FIELDS = ("chunk_id", "source", "text", "score")
MCP_HIT_FIELDS = ("n", "chunk_id", "source", "text", "line_start", "line_end", "source_hash")
ANSWER_FIELDS = ("answer", "hit_type", "sources", "citations", "timings_ms")
DEBUG_FIELDS = ("routing", "lexical", "dense", "fusion", "rerank", "hits", "timings_ms")


@dataclass
class Checked:
    problems: list[str] = field(default_factory=list)
    sources: frozenset[str] = frozenset()
    stages: dict[str, float] = field(default_factory=dict)


def check_health(body: Any) -> Checked:
    if not isinstance(body, dict) or body.get("status") != "ok":
        return Checked([f"health answered {_short(body)}, not status ok"])
    return Checked()


def check_search(body: Any) -> Checked:
    """``/api/search``: a list of hits, each with its citation fields, and timings."""
    if not isinstance(body, dict):
        return Checked([f"not a JSON object: {_short(body)}"])
    problems, sources = _hits(body.get("hits"), HIT_FIELDS)
    return Checked(problems, sources, _stages(body.get("timings_ms"), problems))


def check_debug(body: Any) -> Checked:
    """``/api/retrieval/debug``: every stage's section, the hits and the timings."""
    if not isinstance(body, dict):
        return Checked([f"not a JSON object: {_short(body)}"])
    problems = [f"no {key!r}" for key in DEBUG_FIELDS if key not in body]
    hit_problems, sources = _hits(body.get("hits"), HIT_FIELDS)
    problems += hit_problems
    return Checked(problems, sources, _stages(body.get("timings_ms"), problems))


def check_answer(end: Any) -> Checked:
    """An answer (``/api/ask`` JSON, or a stream's ``end``): its sources and citations agree."""
    if not isinstance(end, dict):
        return Checked([f"not a JSON object: {_short(end)}"])
    problems = [f"no {key!r}" for key in ANSWER_FIELDS if key not in end]
    raw = end.get("sources")
    listed: list[Any] = raw if isinstance(raw, list) else []
    numbers = [s.get("n") for s in listed if isinstance(s, dict)]
    if numbers != list(range(1, len(listed) + 1)):
        problems.append(f"sources are not numbered 1..{len(listed)}: {numbers}")
    sources = frozenset(str(s.get("source")) for s in listed if isinstance(s, dict))
    citations = end.get("citations")
    cited = citations.get("cited", []) if isinstance(citations, dict) else []
    # An LLM may cite a number that does not exist (reported in notes); extractive never does.
    if end.get("model") == "extractive" and any(n not in numbers for n in cited):
        problems.append(f"cites {cited} but lists sources {numbers}")
    if not isinstance(end.get("answer"), str):
        problems.append("'answer' is not text")
    return Checked(problems, sources, _stages(end.get("timings_ms"), problems))


def check_stream(events: Sequence[tuple[str, Any]]) -> Checked:
    """An answer's events (SSE or WebSocket): stages and sources first, then tokens, then
    exactly one ``end`` whose answer is the tokens put together."""
    kinds = [kind for kind, _ in events]
    if "error" in kinds:
        error = next(p for k, p in events if k == "error")
        return Checked([f"error event: {_short(error)}"])
    if kinds.count("end") != 1 or kinds[-1] != "end":
        return Checked([f"stream does not end with one 'end' event: {kinds[-5:]}"])
    checked = check_answer(events[-1][1])
    first_token = kinds.index("token") if "token" in kinds else len(kinds) - 1
    end = events[-1][1] if isinstance(events[-1][1], dict) else {}
    # Searched answers announce their sources first; chat and FAQ answers search nothing.
    searched = end.get("hit_type") in ("rag", "insufficient_context")
    if searched and "sources" not in kinds[:first_token]:
        checked.problems.append("no 'sources' event before the first token")
    if any(kind not in ("stage", "sources") for kind in kinds[:first_token]):
        checked.problems.append(f"unexpected events before the first token: {kinds[:first_token]}")
    tokens = "".join(str(p.get("text", "")) for k, p in events if k == "token")
    answer = end.get("answer")
    if isinstance(answer, str) and tokens.strip() != answer.strip():
        checked.problems.append(
            f"tokens ({len(tokens)} chars) do not add up to the answer ({len(answer)} chars)"
        )
    return checked


def check_mcp_search(structured: Any) -> Checked:
    """``query_knowledge_hub``'s structured content: numbered hits with their spans."""
    if not isinstance(structured, dict):
        return Checked([f"no structured content: {_short(structured)}"])
    problems, sources = _hits(structured.get("hits"), MCP_HIT_FIELDS)
    numbers = [h.get("n") for h in structured.get("hits") or [] if isinstance(h, dict)]
    if numbers != list(range(1, len(numbers) + 1)):
        problems.append(f"hits are not numbered 1..{len(numbers)}: {numbers}")
    return Checked(problems, sources, _stages(structured.get("timings_ms"), problems))


def _hits(hits: Any, fields: Sequence[str]) -> tuple[list[str], frozenset[str]]:
    if not isinstance(hits, list):
        return [f"'hits' is not a list: {_short(hits)}"], frozenset()
    problems: list[str] = []
    for i, hit in enumerate(hits):
        missing = [f for f in fields if not isinstance(hit, dict) or hit.get(f) is None]
        if missing:
            problems.append(f"hit {i + 1} lacks {missing}")
    sources = frozenset(str(h["source"]) for h in hits if isinstance(h, dict) and "source" in h)
    return problems, sources


def _stages(timings: Any, problems: list[str]) -> dict[str, float]:
    if not isinstance(timings, dict) or not all(
        isinstance(v, int | float) for v in timings.values()
    ):
        problems.append(f"'timings_ms' is not a map of numbers: {_short(timings)}")
        return {}
    return {str(k): float(v) for k, v in timings.items()}


def _short(value: Any, limit: int = 120) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 1] + "…"
