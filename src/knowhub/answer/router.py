"""Intent routing: rules first (under a millisecond), then an optional LLM classification.

``chat`` (greetings, questions about the assistant) is answered without searching;
``search`` is the default; ``filter`` searches with metadata filters the model extracted;
``compare`` searches each sub-query and merges. Any failure of the LLM step falls back
to ``search`` and says why in ``note``.
"""

from __future__ import annotations

import json
import re
import time
from dataclasses import dataclass, field
from typing import Any

from knowhub.errors import KnowhubError
from knowhub.lang import query_language
from knowhub.providers.llms.base import LLM, ChatMessage

__all__ = ["Route", "route"]

_GREETING = re.compile(
    r"^\s*(hi|hello|hey|hiya|good (morning|afternoon|evening)|thanks|thank you|thx|bye|goodbye"
    r"|你好|您好|嗨|哈喽|谢谢|多谢|再见|早上好|晚上好"
    r"|привет|здравствуй(те)?|добрый (день|вечер)|доброе утро|спасибо|пока|до свидания)"
    r"[\s!！.。,，~]*(there|everyone|knowhub)?[\s!！.。]*$",
    re.IGNORECASE,
)
_ABOUT = re.compile(
    r"^\s*(who are you|what are you|what can you do|what do you do|how do you work|help"
    r"|你是谁|你是什么|你能做什么|你会什么"
    r"|кто ты|что ты (такое|умеешь)|что ты можешь)[\s?？!.。]*$",
    re.IGNORECASE,
)
_REPLIES = {
    "en": "Hello! I answer questions from your documents, with citations. Ask me anything "
    "they cover.",
    "zh": "你好！我根据你的文档回答问题，并给出引用来源。请提问吧。",
    "ru": "Здравствуйте! Я отвечаю на вопросы по вашим документам и указываю источники. "
    "Спрашивайте.",
}
INTENTS = ("chat", "search", "filter", "compare")


@dataclass
class Route:
    intent: str
    by: str  # rules | llm | fallback
    reply: str | None = None
    filters: dict[str, str] = field(default_factory=dict)
    queries: list[str] = field(default_factory=list)
    note: str | None = None
    ms: float = 0.0

    def to_dict(self) -> dict[str, Any]:
        return {
            "intent": self.intent,
            "by": self.by,
            "filters": self.filters,
            "queries": self.queries,
            "note": self.note,
            "ms": round(self.ms, 3),
        }


def route(question: str, llm: LLM | None = None) -> Route:
    """Classify ``question``; with ``llm``, past the rules, ask the model."""
    started = time.perf_counter()
    language = query_language(question)
    if _GREETING.match(question) or _ABOUT.match(question):
        found = Route("chat", "rules", reply=_REPLIES.get(language, _REPLIES["en"]))
    elif llm is None:
        found = Route("search", "rules")
    else:
        found = _classify(question, llm)
    found.ms = (time.perf_counter() - started) * 1000.0
    return found


_PROMPT = (
    "Classify the user's message for a document search assistant. Reply with JSON only: "
    '{"intent": "chat" | "search" | "filter" | "compare", "filters": {}, "queries": []}. '
    "chat: small talk needing no documents. search: a question to look up. filter: a question "
    "limited to documents with metadata, given as filters {key: value} (keys such as language, "
    "format, source or a tag named in the message). compare: a comparison of two or more "
    "things; give one search query per thing in queries."
)


def _classify(question: str, llm: LLM) -> Route:
    messages = [ChatMessage("system", _PROMPT), ChatMessage("user", question)]
    try:
        raw = llm.complete(messages, json_mode=True, max_tokens=200, temperature=0.0)
        data = json.loads(raw)
        intent = data["intent"]
        if intent not in INTENTS:
            raise ValueError(f"unknown intent {intent!r}")
        filters = {str(k): str(v) for k, v in (data.get("filters") or {}).items()}
        queries = [str(q) for q in (data.get("queries") or []) if str(q).strip()]
    except (KnowhubError, ValueError, KeyError, TypeError, AttributeError) as exc:
        return Route("search", "fallback", note=f"router failed, searching instead: {exc}")
    if intent == "chat":
        language = query_language(question)
        return Route("chat", "llm", reply=_REPLIES.get(language, _REPLIES["en"]))
    if intent == "filter" and not filters:
        return Route("search", "fallback", note="router chose filter but gave no filters")
    if intent == "compare" and len(queries) < 2:
        return Route("search", "fallback", note="router chose compare but gave < 2 queries")
    return Route(intent, "llm", filters=filters, queries=queries)
