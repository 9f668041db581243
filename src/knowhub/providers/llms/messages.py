"""A chat turn as every chat API takes it: its own module, since both the model contract
(:mod:`~knowhub.providers.llms.base`) and the tool-calling turns
(:mod:`~knowhub.providers.llms.tools`) are built on it."""

from __future__ import annotations

import base64
from dataclasses import dataclass
from typing import Any, Literal

from knowhub.errors import QueryError

__all__ = ["ChatMessage", "ImageInput", "Role"]

Role = Literal["system", "user", "assistant"]
_ROLES = ("system", "user", "assistant")


@dataclass(frozen=True)
class ImageInput:
    """A picture given to a vision model with a turn's text."""

    data: bytes
    mime: str  # image/png, image/jpeg, image/gif or image/webp: what the chat APIs take

    def base64(self) -> str:
        return base64.b64encode(self.data).decode("ascii")


@dataclass(frozen=True)
class ChatMessage:
    """One turn of a conversation, as every chat API takes it; ``images`` go to a vision
    model with a user turn (each provider's wire form differs: see its ``_wire_message``)."""

    role: Role
    content: str
    images: tuple[ImageInput, ...] = ()

    def __post_init__(self) -> None:
        # Roles may come from an HTTP client's history: reject them here, not at the provider.
        if self.role not in _ROLES:
            raise QueryError(f"chat message role {self.role!r} is not one of {', '.join(_ROLES)}")
        if not isinstance(self.content, str):
            raise QueryError(f"chat message content must be text, got {type(self.content)}")

    def to_dict(self) -> dict[str, Any]:
        """The ``{"role", "content"}`` object of the OpenAI and Ollama chat APIs (a turn
        without images)."""
        return {"role": self.role, "content": self.content}
