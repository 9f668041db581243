"""Collection.ask end to end on a real store, with a scripted chat model standing in for an LLM.

The model is registered as a provider, so the App builds it from configuration exactly
as it builds the real ones (whose wire protocols are tested in test_llm_providers.py).
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable, Iterator
from contextlib import ExitStack
from pathlib import Path

import pytest

from knowhub import App, build_app, registry
from knowhub.answer.pipeline import collect
from knowhub.config import Settings
from knowhub.errors import ProviderError
from knowhub.interfaces.wire import wire
from knowhub.providers.llms.base import LLM, ChatMessage
from tests.helpers import fast_settings, write

Script = Callable[[list[ChatMessage], bool], str]


class ScriptedLLM(LLM):
    """Answers with ``script(messages, json_mode)``; records every call."""

    model_id = "scripted:test"

    def __init__(self, script: Script) -> None:
        self.script = script
        self.calls: list[list[ChatMessage]] = []

    def _complete(
        self, messages: list[ChatMessage], *, max_tokens: int, temperature: float, json_mode: bool
    ) -> str:
        self.calls.append(messages)
        return self.script(messages, json_mode)

    def _stream(
        self, messages: list[ChatMessage], *, max_tokens: int, temperature: float
    ) -> Iterator[str]:
        self.calls.append(messages)
        text = self.script(messages, False)
        if text == "FAIL-MIDWAY":
            yield "Partial "
            raise ProviderError("llm scripted:test: connection dropped mid-answer")
        yield from (word + " " for word in text.split(" "))


@pytest.fixture
def providers() -> Iterator[ExitStack]:
    """Whatever a test registers in it is gone afterwards (other tests list the providers)."""
    with ExitStack() as stack:
        yield stack


def _app(
    providers: ExitStack, tmp_path: Path, script: Script, **overrides: object
) -> tuple[App, ScriptedLLM]:
    llm = ScriptedLLM(script)
    providers.enter_context(registry.override("llm", "scripted", lambda settings: llm))
    settings: Settings = fast_settings(
        tmp_path / "data", **{"llm.provider": "scripted", **overrides}
    )
    app = build_app(settings)
    write(tmp_path / "d/kestrel.md", "# Kestrel\n\nThe Kestrel AMR battery lasts 10 hours.\n")
    write(tmp_path / "d/osprey.md", "# Osprey\n\nThe Osprey Lift battery lasts 8 hours.\n")
    write(tmp_path / "d/vpn.md", "# VPN\n\nThe VPN is required for the admin console.\n")
    app.collection().ingest([tmp_path / "d"], tags={"team": "ops"})
    write(tmp_path / "e/dev.md", "# Dev\n\nThe dev battery lab tests batteries for 10 hours.\n")
    app.collection().ingest([tmp_path / "e"], tags={"team": "dev"})
    return app, llm


def _answer_citing_first(messages: list[ChatMessage], json_mode: bool) -> str:
    return "The battery lasts 10 hours [1]."


def test_follow_ups_are_rewritten_into_standalone_queries(
    tmp_path: Path, providers: ExitStack
) -> None:
    def script(messages: list[ChatMessage], json_mode: bool) -> str:
        if "standalone search query" in messages[0].content:
            return "How long does the Osprey Lift battery last?"
        return "It lasts 8 hours [1]."

    app, llm = _app(providers, tmp_path, script)
    history = [
        ChatMessage("user", "Tell me about the Osprey Lift."),
        ChatMessage("assistant", "It is a pallet robot [1]."),
    ]
    end = collect(app.collection().ask("And its battery?", history=history))
    assert end["query"] == "How long does the Osprey Lift battery last?"
    assert end["sources"][0]["source"] == "osprey.md" and end["hit_type"] == "rag"
    answer_call = llm.calls[-1]
    assert [m.role for m in answer_call] == ["system", "user", "assistant", "user"]
    assert answer_call[-1].content == "And its battery?"  # the model sees the real question


def test_sources_below_the_relevance_floor_never_reach_the_model(
    tmp_path: Path, providers: ExitStack
) -> None:
    app, llm = _app(providers, tmp_path, _answer_citing_first)
    floor = app.settings.answer.min_evidence
    end = collect(app.collection().ask("How long does the Kestrel battery last?"))
    assert end["hit_type"] == "rag" and end["sources"][0]["source"] == "kestrel.md"
    assert all(s["relevance"] >= floor for s in end["sources"])
    prompt = llm.calls[-1][0].content
    assert "kestrel.md" in prompt and "vpn.md" not in prompt  # shares no word, below the floor
    assert "source(s) below answer.min_evidence" in " ".join(end["notes"])
    score = end["verification"]["score"]
    assert end["confidence"] == pytest.approx(end["evidence"] * score, abs=1e-3)


def test_a_failed_rewrite_searches_the_question_and_says_so(
    tmp_path: Path, providers: ExitStack
) -> None:
    def script(messages: list[ChatMessage], json_mode: bool) -> str:
        if "standalone search query" in messages[0].content:
            raise ProviderError("llm scripted:test: timed out after 1 s")
        return "The Kestrel battery lasts 10 hours [1]."

    app, _ = _app(providers, tmp_path, script)
    end = collect(
        app.collection().ask("Kestrel battery hours?", history=[ChatMessage("user", "hi")])
    )
    assert end["query"] == "Kestrel battery hours?" and end["hit_type"] == "rag"
    assert any("rewrite failed" in note for note in end["notes"])


def test_the_llm_router_applies_filters_and_splits_comparisons(
    tmp_path: Path, providers: ExitStack
) -> None:
    routes = iter(
        [
            json.dumps({"intent": "filter", "filters": {"team": "dev"}, "queries": []}),
            json.dumps(
                {
                    "intent": "compare",
                    "filters": {},
                    "queries": ["Kestrel battery", "Osprey battery"],
                }
            ),
            "this is not JSON",
        ]
    )

    def script(messages: list[ChatMessage], json_mode: bool) -> str:
        return next(routes) if json_mode else "Batteries last 10 hours [1]."

    app, _ = _app(providers, tmp_path, script, **{"answer.llm_router": True})
    filtered = collect(app.collection().ask("battery hours for the dev team?"))
    assert filtered["intent"] == "filter" and filtered["route"]["filters"] == {"team": "dev"}
    assert {s["source"] for s in filtered["sources"]} == {"dev.md"}
    compared = collect(app.collection().ask("Compare the Kestrel and Osprey batteries"))
    assert compared["intent"] == "compare"
    assert [s["source"] for s in compared["sources"][:2]] == ["kestrel.md", "osprey.md"]
    fallback = collect(app.collection().ask("battery hours?"))
    assert fallback["intent"] == "search" and fallback["route"]["by"] == "fallback"
    assert any("router failed" in note for note in fallback["notes"])


def test_a_model_failing_midway_ends_the_stream_with_its_error(
    tmp_path: Path, providers: ExitStack
) -> None:
    app, _ = _app(providers, tmp_path, lambda messages, json_mode: "FAIL-MIDWAY")
    events = app.collection().ask("Kestrel battery hours?")
    seen = []
    with pytest.raises(ProviderError, match="connection dropped mid-answer"):
        for kind, payload in wire(events):
            seen.append((kind, payload.get("text")))
    assert ("token", "Partial ") in seen


def test_without_an_llm_nothing_is_rewritten_and_answers_are_extractive(
    tmp_path: Path, providers: ExitStack
) -> None:
    app, llm = _app(providers, tmp_path, _answer_citing_first, **{"llm.provider": "none"})
    end = collect(
        app.collection().ask("Kestrel battery hours?", history=[ChatMessage("user", "hi")])
    )
    assert end["model"] == "extractive" and end["query"] == "Kestrel battery hours?"
    assert llm.calls == []


def test_a_store_from_before_the_faq_table_gains_it_on_open(tmp_path: Path) -> None:
    app = build_app(fast_settings(tmp_path / "data"))
    write(tmp_path / "d/a.md", "Alpha text.\n")
    app.collection().ingest([tmp_path / "d"])
    app.close()
    db = sqlite3.connect(tmp_path / "data" / "knowhub.sqlite3")
    db.execute("DROP TABLE faq")  # as a store written by the previous release
    db.commit()
    db.close()
    reopened = build_app(fast_settings(tmp_path / "data"))
    assert reopened.collection().faq() == [] and reopened.collection().search("alpha").hits
    reopened.close()
