"""Request bodies of the HTTP API (FastAPI validates them and documents them in OpenAPI).

Unknown fields are refused, so a misspelt option is an error rather than silently ignored.
Query text is checked by :func:`knowhub.checks.check_query` (one wording everywhere), and
filters by :func:`knowhub.interfaces.arguments.check_filters`. Every string of a body, keys
and nested ones included, is checked for lone surrogates (JSON's ``"\\ud800"``) before any field.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from knowhub.checks import check_text

__all__ = [
    "AskBody",
    "ChatBody",
    "CompletionBody",
    "CompletionMessage",
    "DebugBody",
    "QuestionBody",
    "SearchBody",
    "Turn",
    "WsQuestion",
]

FILTERS = (
    'Metadata filters: a value to equal, or {"in": [...]} for any of several, e.g. '
    '{"team": "ops", "language": {"in": ["en", "ru"]}}. Keys: language, source, format, and '
    "the documents' metadata (tags, front matter); an unknown key is an error naming them."
)
MAX_HISTORY = 40


class _Body(BaseModel):
    model_config = ConfigDict(extra="forbid")

    @model_validator(mode="before")
    @classmethod
    def _encodable(cls, data: Any) -> Any:
        """Refuse a lone surrogate in any field, named (a 400, not a 500 when the store or
        the reply fails to encode it). Raises QueryError, which pydantic lets through to
        the one KnowhubError handler of each interface, so the wording is validate's."""
        if isinstance(data, dict):
            for key, value in data.items():
                check_text(key, "field name")
                check_text(value, str(key))
        return data


class DebugBody(_Body):
    query: str = Field(description="What to search for (at most 4096 bytes).")
    collection: str | None = Field(None, description="Collection (default: the configured one).")
    top_k: int | None = Field(None, ge=1, le=100, description="Hits to return (default 5).")
    filters: dict[str, Any] | None = Field(None, description=FILTERS)


class SearchBody(DebugBody):
    min_score: float | None = Field(
        None, ge=0.0, le=1.0, description="Drop hits whose relevance (absolute, 0-1) is lower."
    )
    explain: bool = Field(False, description="Add each hit's rank per leg, fused and reranked.")


class Turn(_Body):
    """One earlier turn; system messages are not accepted from clients."""

    role: Literal["user", "assistant"]
    content: str


class _Conversation(_Body):
    question: str = Field(description="The question (at most 4096 bytes).")
    collection: str | None = Field(None, description="Collection (default: the configured one).")
    session_id: str | None = Field(
        None,
        pattern=r"^[A-Za-z0-9_.:-]{1,128}$",
        description="Keep the conversation under this id (per token, in the store: any replica "
        "goes on with it): "
        "each answer is remembered and earlier turns let follow-ups be understood.",
    )
    history: list[Turn] | None = Field(
        None,
        max_length=MAX_HISTORY,
        description="Earlier turns, oldest first; when given, used instead of the session's.",
    )


class QuestionBody(_Conversation):
    filters: dict[str, Any] | None = Field(None, description=FILTERS)


class AskBody(QuestionBody):
    stream: bool = Field(False, description="Server-Sent Events instead of one JSON answer.")


class ChatBody(_Conversation):
    """``collection`` is the one ``knowhub__search`` uses unless the model names another."""

    max_steps: int | None = Field(
        None, ge=1, le=50, description="Model calls that may use tools (default agent.max_steps)."
    )
    stream: bool = Field(
        False,
        description="Server-Sent Events (step, tool_call, tool_result, token, end or error) "
        "instead of one JSON answer.",
    )


class WsQuestion(QuestionBody):
    id: str | int | None = Field(None, description="Echoed in every event of this answer.")


class CompletionMessage(BaseModel):
    """One message of an OpenAI chat-completions request. ``content``: text, or a list of
    parts of which the ``text`` ones are read. Other fields (``name``, ``tool_calls``…) are
    ignored."""

    model_config = ConfigDict(extra="ignore")

    role: Literal["system", "developer", "user", "assistant", "tool", "function"]
    content: str | list[dict[str, Any]] | None = None

    @property
    def text(self) -> str:
        if isinstance(self.content, str):
            return self.content
        parts = self.content or []
        return "\n".join(str(p.get("text", "")) for p in parts if p.get("type") == "text")


class CompletionBody(_Body):
    """``POST /v1/chat/completions`` (OpenAI's shape). Fields OpenAI clients send that do
    not change what knowhub answers (``temperature``, ``max_tokens``, ``user``…) are
    ignored, not refused: front ends send them unasked. Those that would (``n``,
    ``tools``, ``response_format``) are checked by the route."""

    model_config = ConfigDict(extra="ignore")

    model: str = Field(description="A collection (GET /v1/models), or knowhub-agent.")
    messages: list[CompletionMessage] = Field(
        description="The conversation: its last user message is the question."
    )
    stream: bool = Field(False, description="OpenAI's Server-Sent Events (chat.completion.chunk).")
    stream_options: dict[str, Any] | None = Field(
        None, description='{"include_usage": true}: a last chunk with the usage.'
    )
    n: int | None = Field(None, description="Answers to make: 1 only.")
    tools: list[Any] | None = Field(None, description="Not supported (see knowhub-agent).")
    functions: list[Any] | None = Field(None, description="Not supported (see knowhub-agent).")
    response_format: dict[str, Any] | None = Field(None, description='{"type": "text"} only.')
