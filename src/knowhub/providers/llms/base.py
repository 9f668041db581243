"""The chat-model contract: validation and error wrapping live here, once.

Providers implement :meth:`LLM._complete` and :meth:`LLM._stream` (and, for native tool
calling, :meth:`LLM._tool_turn`); callers use :meth:`LLM.complete`, :meth:`LLM.stream` and
:meth:`LLM.tool_turn`, which check the messages, fill in the configured sampling defaults,
and guarantee that every failure is a :class:`~knowhub.errors.ProviderError` (never a raw
exception) and that an answer is never empty. ``llm.provider: none`` builds no model at
all (:func:`disabled`): the answer layer then answers extractively.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterator, Sequence
from urllib.parse import urlsplit

from knowhub.config import Settings
from knowhub.errors import ConfigError, KnowhubError, ProviderError, QueryError
from knowhub.providers.llms.messages import ChatMessage
from knowhub.providers.llms.tools import (
    ModelTurn,
    ToolChoice,
    ToolSpec,
    TurnMessage,
    checked_turn,
)

__all__ = ["LLM", "ChatMessage", "disabled", "require_setting", "require_url"]


class LLM(ABC):
    """A chat model. ``model_id`` (``provider:model``) names it in messages and answers.

    Subclasses set ``model_id``, ``temperature`` and ``max_tokens`` (the defaults a call
    without its own values gets) and implement :meth:`_complete` and :meth:`_stream`.
    """

    model_id: str
    temperature: float = 0.1
    max_tokens: int = 800

    @abstractmethod
    def _complete(
        self, messages: list[ChatMessage], *, max_tokens: int, temperature: float, json_mode: bool
    ) -> str:
        """The whole answer text."""

    @abstractmethod
    def _stream(
        self, messages: list[ChatMessage], *, max_tokens: int, temperature: float
    ) -> Iterator[str]:
        """The answer's text deltas, each as soon as it arrives."""

    def complete(
        self,
        messages: Sequence[ChatMessage],
        *,
        max_tokens: int | None = None,
        temperature: float | None = None,
        json_mode: bool = False,
    ) -> str:
        """The model's whole answer to ``messages``.

        Args:
            messages: the conversation, usually a system message then user/assistant turns.
            max_tokens: answer length limit (the configured ``llm.max_tokens`` when None).
            temperature: sampling temperature (the configured ``llm.temperature`` when None).
            json_mode: ask the server for a JSON object. OpenAI rejects this unless a
                message mentions "JSON"; the caller's prompt must also describe the shape.

        Raises:
            QueryError: no messages, or a bad ``max_tokens``/``temperature``.
            ProviderError: the server failed, answered malformed data or nothing.
        """
        checked = _checked(messages)
        tokens, temp = self._sampling(max_tokens, temperature)
        try:
            text = self._complete(checked, max_tokens=tokens, temperature=temp, json_mode=json_mode)
        except KnowhubError:
            raise
        except Exception as exc:  # a provider bug must still read as this model failing
            raise ProviderError(f"llm {self.model_id} failed: {exc!r}") from exc
        if not isinstance(text, str) or not text.strip():
            raise ProviderError(f"llm {self.model_id} returned an empty answer")
        return text

    def stream(
        self,
        messages: Sequence[ChatMessage],
        *,
        max_tokens: int | None = None,
        temperature: float | None = None,
    ) -> Iterator[str]:
        """The answer as text deltas, yielded as they arrive; joined they are the answer.

        Arguments are checked now (a ``QueryError`` is raised by this call, not by the
        first ``next``); the request is sent on the first ``next``. Failures before the
        first delta are retried like :meth:`complete`'s; after it, a ``ProviderError``
        ends the stream (closing the iterator early closes the connection).
        """
        checked = _checked(messages)
        tokens, temp = self._sampling(max_tokens, temperature)
        return self._guarded(checked, tokens, temp)

    def _guarded(
        self, messages: list[ChatMessage], max_tokens: int, temperature: float
    ) -> Iterator[str]:
        text_seen = False
        try:
            for delta in self._stream(messages, max_tokens=max_tokens, temperature=temperature):
                if not isinstance(delta, str):
                    raise ProviderError(f"llm {self.model_id} streamed {delta!r}, not text")
                if delta:
                    text_seen = text_seen or bool(delta.strip())
                    yield delta
        except KnowhubError:
            raise
        except Exception as exc:  # as in complete(): never a raw exception to the caller
            raise ProviderError(f"llm {self.model_id} failed: {exc!r}") from exc
        if not text_seen:
            raise ProviderError(f"llm {self.model_id} returned an empty answer")

    def tool_turn(
        self,
        messages: Sequence[TurnMessage],
        tools: Sequence[ToolSpec],
        *,
        stream: bool = False,
        tool_choice: ToolChoice = "auto",
        max_tokens: int | None = None,
        temperature: float | None = None,
    ) -> Iterator[str | ModelTurn]:
        """One model turn of a tool-calling conversation: text, tool calls, or both.

        Yields the text deltas as they arrive (only with ``stream``), then exactly one
        :class:`~knowhub.providers.llms.tools.ModelTurn`, the last item: the whole text
        and the tool calls in the model's order. Arguments are checked now (a
        ``QueryError``); the request is sent on the first ``next`` and retried like
        :meth:`stream`'s.

        Args:
            messages: the conversation so far, with the tool calls asked for and their
                results (:data:`~knowhub.providers.llms.tools.TurnMessage`).
            tools: what the model may call (none: a plain turn).
            stream: yield text deltas before the turn.
            tool_choice: ``"none"`` keeps the model from calling tools this turn.
            max_tokens: as in :meth:`complete`.
            temperature: as in :meth:`complete`.

        Raises:
            QueryError: no messages, a message that is not a TurnMessage, a tool that is
                not a ToolSpec, a bad ``tool_choice``, ``max_tokens`` or ``temperature``.
            ProviderError: the model cannot call tools, the server failed, answered
                malformed data or nothing.
        """
        checked, offered = checked_turn(messages, tools, tool_choice)
        tokens, temp = self._sampling(max_tokens, temperature)
        return self._guarded_turn(checked, offered, bool(stream), tool_choice, tokens, temp)

    def _tool_turn(
        self,
        messages: list[TurnMessage],
        tools: list[ToolSpec],
        *,
        stream: bool,
        tool_choice: ToolChoice,
        max_tokens: int,
        temperature: float,
    ) -> Iterator[str | ModelTurn]:
        """The text deltas (when ``stream``), then the :class:`ModelTurn`.

        Not abstract: a plugin's model written before tool calling still works for
        everything else, and says so when a chat needs tools.
        """
        raise ProviderError(
            f"llm {self.model_id} does not support tool calling, which `knowhub chat` needs; "
            "use llm.provider openai, azure or ollama (with a model that supports tools)"
        )

    def _guarded_turn(
        self,
        messages: list[TurnMessage],
        tools: list[ToolSpec],
        stream: bool,
        tool_choice: ToolChoice,
        max_tokens: int,
        temperature: float,
    ) -> Iterator[str | ModelTurn]:
        turn: ModelTurn | None = None
        try:
            items = self._tool_turn(
                messages,
                tools,
                stream=stream,
                tool_choice=tool_choice,
                max_tokens=max_tokens,
                temperature=temperature,
            )
            for item in items:
                if not isinstance(item, str | ModelTurn):
                    raise ProviderError(f"llm {self.model_id} gave {item!r}, not text or a turn")
                if turn is not None:
                    raise ProviderError(f"llm {self.model_id} gave {item!r} after its turn")
                if isinstance(item, ModelTurn):
                    turn = item
                elif not stream:
                    raise ProviderError(f"llm {self.model_id} streamed {item!r} unasked")
                elif item:
                    yield item
        except KnowhubError:
            raise
        except Exception as exc:  # as in complete(): never a raw exception to the caller
            raise ProviderError(f"llm {self.model_id} failed: {exc!r}") from exc
        if turn is None:
            raise ProviderError(f"llm {self.model_id} ended its turn without an answer")
        if not turn.text.strip() and not turn.tool_calls:
            reason = f" (finish_reason {turn.finish_reason!r})" if turn.finish_reason else ""
            raise ProviderError(f"llm {self.model_id} returned an empty answer{reason}")
        yield turn

    def _sampling(self, max_tokens: int | None, temperature: float | None) -> tuple[int, float]:
        tokens = self.max_tokens if max_tokens is None else max_tokens
        temp = self.temperature if temperature is None else temperature
        if isinstance(tokens, bool) or not isinstance(tokens, int) or tokens < 1:
            raise QueryError(f"max_tokens must be a positive integer, got {tokens!r}")
        if isinstance(temp, bool) or not isinstance(temp, int | float) or not 0 <= temp <= 2:
            raise QueryError(f"temperature must be a number from 0 to 2, got {temp!r}")
        return tokens, float(temp)


def _checked(messages: Sequence[ChatMessage]) -> list[ChatMessage]:
    checked = list(messages)
    if not checked:
        raise QueryError("an LLM call needs at least one message")
    for message in checked:
        if not isinstance(message, ChatMessage):
            raise QueryError(f"messages must be ChatMessage objects, got {type(message)}")
    return checked


def disabled(settings: Settings) -> None:
    """Factory of the provider ``none``: no model; the answer layer answers extractively."""
    return None


def require_setting(provider: str, setting: str, value: str, example: str) -> str:
    """``value`` of ``setting`` stripped, or a ConfigError naming it and an ``example``."""
    if not value.strip():
        raise ConfigError(
            f"llm provider {provider!r} needs {setting}, e.g. {example} "
            f"(in knowhub.yaml, or KNOWHUB_{setting.upper().replace('.', '__')})"
        )
    return value.strip()


def require_url(provider: str, setting: str, value: str, example: str) -> str:
    """Like :func:`require_setting`, and the value must be an http(s) URL (no trailing /)."""
    url = require_setting(provider, setting, value, example)
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise ConfigError(f"{setting} {url!r} is not an http(s) URL; e.g. {example}")
    return url.rstrip("/")
