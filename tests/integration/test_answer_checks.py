"""Auditable answers end to end: the question's category picks the prompt the model gets,
and what the model says is verified sentence by sentence against its citations.

The model is the fake OpenAI-compatible server of knowhub.testing.llm_server, over real
HTTP; the App is built from settings as the CLI builds it.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest

from knowhub import App, build_app
from knowhub.answer.pipeline import collect
from knowhub.answer.verify_llm import PROMPT as VERIFIER_PROMPT
from knowhub.config.answer import DEFAULT_PROFILES
from knowhub.providers.llms.base import ChatMessage
from knowhub.testing.llm_server import LlmServer, serve
from tests.helpers import fast_settings, write

PRICING = "# Pricing\n\nThe Team plan costs $12 per user per month, billed annually.\n"
AGENT = (
    "# Agent\n\nIf the agent shows connection refused, check that port 8443 is open on the "
    "firewall and restart the fleetdeck-agent service.\n"
)
Reply = Callable[[dict[str, Any]], str]


def system_of(body: dict[str, Any]) -> str:
    content: str = body["messages"][0]["content"]
    return content


def wants_json(body: dict[str, Any]) -> bool:
    return body.get("response_format") == {"type": "json_object"}


@pytest.fixture
def ask(tmp_path: Path) -> Iterator[Callable[..., tuple[dict[str, Any], LlmServer]]]:
    """``ask(reply, question, history, **settings)``: the answer's end, and the server's record."""
    write(tmp_path / "docs/pricing.md", PRICING)
    write(tmp_path / "docs/agent.md", AGENT)
    apps: list[App] = []
    with serve(script=lambda body: replies[-1](body)) as server:
        replies: list[Reply] = []

        def run(
            reply: Reply,
            question: str,
            history: Sequence[ChatMessage] = (),
            **overrides: object,
        ) -> tuple[dict[str, Any], LlmServer]:
            replies.append(reply)
            settings = fast_settings(
                tmp_path / f"data{len(apps)}",
                **{
                    "llm.provider": "openai",
                    "llm.base_url": server.openai_base,
                    "llm.model": "test-model",
                    "llm.backoff_s": 0,
                    **overrides,
                },
            )
            app = build_app(settings)
            apps.append(app)
            app.collection().ingest([tmp_path / "docs"])
            return collect(app.collection().ask(question, history=history)), server

        yield run
    for app in apps:
        app.close()


def test_an_unsupported_sentence_is_flagged_and_lowers_confidence(ask: Any) -> None:
    def reply(body: dict[str, Any]) -> str:
        return "The Team plan costs $12 per user per month [1]. It costs $9 for students [1]."

    end, _ = ask(reply, "How much does the Team plan cost?")
    verification = end["verification"]
    assert [s["status"] for s in verification["sentences"]] == ["supported", "unsupported"]
    assert verification["flagged"] == ["It costs $9 for students."]
    assert end["generation_verification_status"] == "partially_supported"
    assert end["reasons"] == ["number_not_in_source", "unsupported_sentence"]
    assert end["answer_confidence"] == pytest.approx(end["evidence_confidence"] * 0.5, abs=1e-3)
    assert end["answer_confidence"] == end["confidence"] and "verification" in end["timings_ms"]
    assert any("1 sentence(s) not fully supported" in n for n in end["notes"])


def test_a_pricing_question_gets_the_protective_profile(ask: Any) -> None:
    end, server = ask(
        lambda body: "It costs $12 per user per month [1].", "What is the price of the Team plan?"
    )
    assert end["question_category"] == "pricing" and end["prompt_profile"] == "pricing"
    system = system_of(server.last.body)
    assert system.startswith(DEFAULT_PROFILES["pricing"])
    assert "say that the documents do not give it" in system and "Sources:" in system
    assert end["generation_verification_status"] == "verified" and end["reasons"] == []


def test_a_troubleshooting_question_gets_its_profile(ask: Any) -> None:
    end, server = ask(
        lambda body: "Open port 8443 and restart the fleetdeck-agent service [1].",
        "The agent shows connection refused, how do I fix it?",
    )
    assert end["question_category"] == "troubleshooting"
    assert system_of(server.last.body).startswith(DEFAULT_PROFILES["troubleshooting"])


def test_profiles_are_configurable_by_category(ask: Any) -> None:
    end, server = ask(
        lambda body: "It costs $12 per user per month [1].",
        "How much is the Team plan?",
        **{
            "answer.profiles.templates": {"strict": "STRICT RULES: figures from the sources only."},
            "answer.profiles.categories": {"pricing": "strict"},
        },
    )
    assert end["question_category"] == "pricing" and end["prompt_profile"] == "strict"
    assert system_of(server.last.body).startswith("STRICT RULES: figures from the sources only.")


def test_the_llm_classifier_picks_a_category_the_rules_do_not(ask: Any) -> None:
    def reply(body: dict[str, Any]) -> str:
        if wants_json(body):
            return json.dumps({"category": "compliance"})
        return "The Team plan is billed annually [1]."

    end, server = ask(
        reply, "Tell me about the Team plan", **{"answer.profiles.llm_classifier": True}
    )
    assert end["question_category"] == "compliance" and end["prompt_profile"] == "compliance"
    assert system_of(server.last.body).startswith(DEFAULT_PROFILES["compliance"])


def test_the_llm_verifier_reads_what_words_cannot(ask: Any) -> None:
    def reply(body: dict[str, Any]) -> str:
        if wants_json(body):
            assert system_of(body) == VERIFIER_PROMPT
            assert "1. The Team plan is not billed annually. [1]" in body["messages"][1]["content"]
            return json.dumps({"verdicts": ["unsupported"]})
        return "The Team plan is not billed annually [1]."

    end, _ = ask(reply, "How is the Team plan billed?", **{"answer.verification.llm": True})
    verification = end["verification"]
    assert verification["method"] == "lexical+llm" and verification["status"] == "unsupported"
    assert end["reasons"] == ["unsupported_sentence"] and end["answer_confidence"] == 0.0


def test_a_failing_llm_verifier_keeps_the_measured_verdicts(ask: Any) -> None:
    def reply(body: dict[str, Any]) -> str:
        return "not json" if wants_json(body) else "The Team plan is billed annually [1]."

    end, _ = ask(reply, "How is the Team plan billed?", **{"answer.verification.llm": True})
    assert end["generation_verification_status"] == "verified"
    assert end["reasons"] == ["llm_verifier_failed"]
    assert any(n.startswith("LLM verifier failed, measured verdicts kept") for n in end["notes"])


def test_a_rewritten_follow_up_is_a_reason(ask: Any) -> None:
    def reply(body: dict[str, Any]) -> str:
        if "standalone search query" in system_of(body):
            return "How much does the Team plan cost?"
        return "The Team plan costs $12 per user per month [1]."

    history = [ChatMessage("user", "Tell me about plans."), ChatMessage("assistant", "Which one?")]
    end, _ = ask(reply, "And the Team one?", history=history)
    assert end["query"] == "How much does the Team plan cost?"
    assert end["reasons"][0] == "history_rewrite_used"


def test_verification_can_be_turned_off(ask: Any) -> None:
    end, _ = ask(
        lambda body: "It costs $9 for students [1].",
        "How much does the Team plan cost?",
        **{"answer.verification.enabled": False},
    )
    assert end["verification"] is None and end["generation_verification_status"] is None
    assert end["confidence"] == pytest.approx(end["evidence"] * end["citations"]["score"], abs=1e-3)
