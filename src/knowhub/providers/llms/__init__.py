"""Chat models for answers: OpenAI-compatible, Azure OpenAI and Ollama, behind one contract."""

from knowhub.providers.llms.base import LLM, ChatMessage

__all__ = ["LLM", "ChatMessage"]
