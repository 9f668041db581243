"""A chat turn as every chat API takes it: its own module, since both the model contract
(:mod:`~knowhub.providers.llms.base`) and the tool-calling turns
(:mod:`~knowhub.providers.llms.tools`) are built on it."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from knowhub.errors import QueryError

__all__ = ["ChatMessage", "Role"]

Role = Literal["system", "user", "assistant"]
_ROLES = ("system", "user", "assistant")


@dataclass(frozen=True)
class ChatMessage:
    """One turn of a conversation, as every chat API takes it."""

    role: Role
    content: str

    def __post_init__(self) -> None:
        # Roles may come from an HTTP client's history: reject them here, not at the provider.
        if self.role not in _ROLES:
            raise QueryError(f"chat message role {self.role!r} is not one of {', '.join(_ROLES)}")
        if not isinstance(self.content, str):
            raise QueryError(f"chat message content must be text, got {type(self.content)}")

    def to_dict(self) -> dict[str, str]:
        """The ``{"role", "content"}`` object of the OpenAI and Ollama chat APIs."""
        return {"role": self.role, "content": self.content}
