"""LLM-judged answer metrics as Ragas defines them (Es et al. 2023, "RAGAS: Automated
Evaluation of Retrieval Augmented Generation"; the ragas library's metrics):

- ``llm_faithfulness``: the LLM breaks the answer into standalone statements, then judges
  each against the retrieved contexts (1: it can be inferred from them); the share judged 1.
- ``answer_relevancy``: the LLM writes three questions the answer answers; the mean cosine of
  their embeddings with the question's (the collection's embedder), 0 when the LLM calls the
  answer noncommittal.
- ``context_precision`` (Ragas's variant without a reference answer): the LLM says which
  retrieved contexts were useful for the answer; the mean of precision@k over the ranks k of
  the useful ones (0 when none is).

Prompts are in :mod:`knowhub.eval.judge_prompts`. Every call's parsed reply is cached by the
hash of its model, prompt (and prompt version) and input under ``cache_dir``, so a run again
on the same answers asks the LLM nothing.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from knowhub.errors import ProviderError
from knowhub.eval import judge_prompts as prompts
from knowhub.providers.embedders.base import Embedder
from knowhub.providers.llms.base import LLM, ChatMessage

__all__ = ["RagasJudge", "context_precision"]


def context_precision(useful: Sequence[bool]) -> float:
    """Ragas's context precision of contexts in rank order: Σ_k precision@k · v_k / Σ v_k."""
    hits, total = 0, 0.0
    for rank, verdict in enumerate(useful, start=1):
        if verdict:
            hits += 1
            total += hits / rank
    return total / hits if hits else 0.0


@dataclass
class RagasJudge:
    """The three metrics of one answer, asked of ``llm`` and cached under ``cache_dir``."""

    llm: LLM
    embedder: Embedder
    cache_dir: Path
    calls: int = 0  # LLM calls made (cache misses)
    cached: int = 0  # replies read from the cache

    def score(self, question: str, answer: str, contexts: Sequence[str]) -> dict[str, float]:
        out = {"answer_relevancy": self._relevancy(question, answer)}
        if contexts:
            out["context_precision"] = self._precision(question, answer, contexts)
            faithful = self._faithfulness(question, answer, contexts)
            out |= {} if faithful is None else {"llm_faithfulness": faithful}
        return out

    def _faithfulness(self, question: str, answer: str, contexts: Sequence[str]) -> float | None:
        """None when the answer makes no statement: nothing to be faithful about."""
        reply = self._ask(
            "statements", prompts.STATEMENTS, f"Question: {question}\nAnswer: {answer}"
        )
        statements = _strings(reply, "statements", "statements")
        if not statements:
            return None
        listed = "\n".join(f"{n}. {s}" for n, s in enumerate(statements, start=1))
        text = f"Context:\n{_joined(contexts)}\n\nStatements:\n{listed}"
        verdicts = _list(self._ask("verdicts", prompts.VERDICTS, text), "verdicts", "verdicts")
        if len(verdicts) != len(statements):
            raise self._error("verdicts", f"{len(verdicts)} verdicts for {len(statements)}")
        return sum(_verdict(v) for v in verdicts) / len(statements)

    def _relevancy(self, question: str, answer: str) -> float:
        reply = self._ask("questions", prompts.QUESTIONS, f"Answer: {answer}")
        asked = _strings(reply, "questions", "questions")
        if not asked or reply.get("noncommittal") in (1, True, "1"):
            return 0.0
        vectors = self.embedder.embed_queries([question, *asked])
        unit = vectors / np.linalg.norm(vectors, axis=1, keepdims=True).clip(min=1e-12)
        return float(np.mean(unit[1:] @ unit[0]))

    def _precision(self, question: str, answer: str, contexts: Sequence[str]) -> float:
        text = f"Question: {question}\nAnswer: {answer}\n\nContexts:\n{_joined(contexts)}"
        verdicts = _list(self._ask("useful", prompts.CONTEXT_USEFUL, text), "verdicts", "useful")
        if len(verdicts) != len(contexts):
            raise self._error("useful", f"{len(verdicts)} verdicts for {len(contexts)} contexts")
        return context_precision([_verdict(v) == 1 for v in verdicts])

    def _ask(self, name: str, system: str, text: str) -> dict[str, Any]:
        """The LLM's JSON reply to one prompt, from the cache when it was asked before."""
        key = json.dumps([prompts.VERSION, name, self.llm.model_id, text], ensure_ascii=False)
        path = self.cache_dir / f"{hashlib.sha256(key.encode()).hexdigest()}.json"
        if path.is_file():
            self.cached += 1
            cached: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
            return cached
        messages = [ChatMessage("system", system), ChatMessage("user", text)]
        raw = self.llm.complete(messages, json_mode=True, temperature=0.0)
        self.calls += 1
        try:
            reply = json.loads(raw)
        except json.JSONDecodeError as exc:
            raise self._error(name, f"not JSON: {raw[:200]!r}") from exc
        if not isinstance(reply, dict):
            raise self._error(name, f"not a JSON object: {raw[:200]!r}")
        self.cache_dir.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(reply, ensure_ascii=False), encoding="utf-8")
        return reply

    def _error(self, name: str, what: str) -> ProviderError:
        return ProviderError(
            f"LLM judge {self.llm.model_id}, prompt {name!r}: {what}; the judge needs a model "
            "that follows JSON instructions (llm.model)"
        )


def _joined(contexts: Sequence[str]) -> str:
    return "\n\n".join(f"[{n}] {text}" for n, text in enumerate(contexts, start=1))


def _list(reply: dict[str, Any], key: str, name: str) -> list[Any]:
    value = reply.get(key)
    if not isinstance(value, list):
        raise ProviderError(f"LLM judge, prompt {name!r}: no {key!r} list in {reply!r:.200}")
    return value


def _strings(reply: dict[str, Any], key: str, name: str) -> list[str]:
    return [str(item) for item in _list(reply, key, name) if str(item).strip()]


def _verdict(value: Any) -> int:
    """A verdict as the prompts ask for it: an object with ``verdict``, or the number."""
    verdict = value.get("verdict") if isinstance(value, dict) else value
    return 1 if verdict in (1, True, "1", "yes") else 0
