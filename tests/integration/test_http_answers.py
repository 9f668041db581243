"""Answers from a model over the HTTP API: streaming as generated (Server-Sent Events and
WebSocket), follow-ups with conversation history, and every way a provider can fail.

The model is the fake OpenAI-compatible server of knowhub.testing.llm_server, over real HTTP.
Streaming and follow-ups run against a real ``knowhub serve http`` process; the failure
modes run in-process (one app per mode) so each can have its own misbehaving model.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx2 as httpx
import pytest
from fastapi.testclient import TestClient
from websockets.sync.client import connect

from knowhub import load_settings
from knowhub.interfaces.http import create_app
from knowhub.testing.llm_server import ANSWER, LlmServer, closed_url, serve
from knowhub.trace.jsonl import read_traces
from tests.gated_model import gated_model
from tests.helpers import FAST_ENV, WAIT_S
from tests.http_helpers import (
    FULL,
    TOKEN_ENV,
    ApiServer,
    SseEvent,
    api_server,
    build_corpus,
    llm_env,
    read_sse,
    sse_events,
)

REWRITTEN = "How long are database backups kept?"
FOLLOW_UP = "And the retention?"  # no word of it is in the documents: alone, it finds nothing


def answer_for(message: str) -> str:
    """The fake model: a standalone query for the rewrite prompt, else the usual answer."""
    return REWRITTEN if message.startswith("Conversation:") else ANSWER


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_corpus(tmp_path_factory.mktemp("http-answers"))


@pytest.fixture(scope="module")
def llm() -> Iterator[LlmServer]:
    with serve(answer_for, token_delay_s=0.05) as running:
        yield running


@pytest.fixture(scope="module")
def server(corpus: Path, llm: LlmServer) -> Iterator[ApiServer]:
    env = {**TOKEN_ENV, **llm_env(llm)}
    with api_server(cwd=corpus.parent, data_dir=corpus, env=env, token=FULL) as running:
        yield running


def _ask(server: ApiServer, **body: Any) -> dict[str, Any]:
    response = server.post("/api/ask", json=body)
    assert response.status_code == 200, response.text
    answer: dict[str, Any] = response.json()
    return answer


# -- streaming -------------------------------------------------------------------------------


def test_sse_tokens_arrive_as_the_model_generates_them(corpus: Path) -> None:
    body = {"question": "How often do database backups run?", "stream": True}
    events: list[SseEvent] = []
    with (
        gated_model() as model,
        api_server(
            cwd=corpus.parent, data_dir=corpus, env={**TOKEN_ENV, **llm_env(model)}, token=FULL
        ) as server,
        httpx.stream(
            "POST", server.url + "/api/ask", json=body, headers=server.headers(), timeout=WAIT_S
        ) as response,
    ):
        assert response.status_code == 200
        for event in sse_events(response.iter_lines()):
            events.append(event)
            if event.event == "token":
                model.go_on.set()  # the model holds the rest of its answer until now
    assert not model.waited_out, "no token reached the client before the model finished"
    kinds = [e.event for e in events]
    assert kinds[-1] == "end" and "error" not in kinds
    tokens = [e for e in events if e.event == "token"]
    assert len(tokens) >= 3
    end = events[-1]
    assert "".join(e.data["text"] for e in tokens).strip() == ANSWER == end.data["answer"]
    stages = [e.data["stage"] for e in events if e.event == "stage"]
    assert stages == ["routing", "retrieval", "prompt_build", "llm_first_token"]
    timings = end.data["timings_ms"]
    assert timings["llm_first_token"] <= timings["llm_total"]
    assert end.data["model"] == "openai:test-model" and end.data["hit_type"] == "rag"


def test_a_json_answer_from_the_model(server: ApiServer) -> None:
    answer = _ask(server, question="How often do database backups run?")
    assert answer["answer"] == ANSWER and answer["hit_type"] == "rag"
    assert answer["citations"]["supported"] == 1 and answer["sources"][0]["source"] == "ops.md"


def test_websocket_streams_the_model_token_by_token(server: ApiServer) -> None:
    with connect(f"{server.ws_url}?token={FULL}", proxy=None, open_timeout=WAIT_S) as ws:
        for n in (1, 2):
            ws.send(json.dumps({"question": "How often do database backups run?", "id": n}))
            events = []
            while not events or events[-1]["event"] not in ("end", "error"):
                events.append(json.loads(ws.recv(timeout=WAIT_S)))
            tokens = [e["text"] for e in events if e["event"] == "token"]
            assert len(tokens) >= 3 and "".join(tokens).strip() == ANSWER
            assert events[-1]["event"] == "end" and {e["id"] for e in events} == {n}


# -- follow-ups ------------------------------------------------------------------------------


def test_a_follow_up_is_rewritten_from_the_session(server: ApiServer, llm: LlmServer) -> None:
    alone = _ask(server, question=FOLLOW_UP)
    assert alone["query"] == FOLLOW_UP and alone["hit_type"] == "insufficient_context"

    first = _ask(server, question="How often do database backups run?", session_id="chat-1")
    assert first["hit_type"] == "rag"
    follow = _ask(server, question=FOLLOW_UP, session_id="chat-1")
    assert follow["query"] == REWRITTEN and follow["hit_type"] == "rag"
    assert follow["sources"][0]["source"] == "ops.md" and "35 days" in follow["sources"][0]["text"]
    rewrite, generate = llm.requests[-2].body["messages"], llm.requests[-1].body["messages"]
    assert "user: How often do database backups run?" in rewrite[-1]["content"]
    assert f"assistant: {ANSWER}" in rewrite[-1]["content"]
    assert rewrite[-1]["content"].endswith(f"Last question: {FOLLOW_UP}")
    # The answer is generated with the conversation before the question.
    assert [m["role"] for m in generate] == ["system", "user", "assistant", "user"]
    assert generate[-1]["content"] == FOLLOW_UP

    # Another session, or the same id with another token, starts with no history.
    other = _ask(server, question=FOLLOW_UP, session_id="chat-2")
    assert other["query"] == FOLLOW_UP
    reader = server.post(
        "/api/ask",
        token=TOKEN_ENV["KH_TEST_API_READER"],
        json={"question": FOLLOW_UP, "session_id": "chat-1"},
    ).json()
    assert reader["query"] == FOLLOW_UP


def test_an_answer_s_trace_names_its_session(server: ApiServer, corpus: Path) -> None:
    end = _ask(server, question="How often do database backups run?", session_id="traced-1")
    [trace] = [t for t in read_traces(corpus / "traces") if t.trace_id == end["trace_id"]]
    assert trace.session_id == "traced-1" and trace.interface == "http"
    assert trace.first_token_ms is not None and trace.first_token_ms <= trace.duration_ms


def test_history_given_by_the_client_is_used(server: ApiServer) -> None:
    history = [
        {"role": "user", "content": "How often do database backups run?"},
        {"role": "assistant", "content": ANSWER},
    ]
    follow = _ask(server, question=FOLLOW_UP, history=history)
    assert follow["query"] == REWRITTEN and follow["sources"][0]["source"] == "ops.md"


def test_sessions_work_over_the_websocket_too(server: ApiServer) -> None:
    with connect(f"{server.ws_url}?token={FULL}", proxy=None, open_timeout=WAIT_S) as ws:
        ends = []
        for question in ("How often do database backups run?", FOLLOW_UP):
            ws.send(json.dumps({"question": question, "session_id": "ws-chat"}))
            while (event := json.loads(ws.recv(timeout=WAIT_S)))["event"] not in ("end", "error"):
                pass
            ends.append(event)
    assert ends[1]["event"] == "end" and ends[1]["query"] == REWRITTEN


# -- provider failures -----------------------------------------------------------------------


def test_a_model_that_cannot_be_reached_is_a_502_and_the_server_keeps_serving(
    corpus: Path,
) -> None:
    env = {
        **TOKEN_ENV,
        "KNOWHUB_LLM__PROVIDER": "openai",
        "KNOWHUB_LLM__MODEL": "test-model",
        "KNOWHUB_LLM__BASE_URL": f"{closed_url()}/v1",
        "KNOWHUB_LLM__MAX_RETRIES": "0",
    }
    with api_server(cwd=corpus.parent, data_dir=corpus, env=env, token=FULL) as server:
        failed = server.post("/api/ask", json={"question": "How often do database backups run?"})
        assert failed.status_code == 502, failed.text
        assert failed.json()["status"] == 502 and "cannot reach" in failed.json()["error"]
        body = {"question": "How often do database backups run?", "stream": True}
        with httpx.stream(
            "POST", server.url + "/api/ask", json=body, headers=server.headers(), timeout=WAIT_S
        ) as response:
            assert response.status_code == 200  # the stream had started: sources were sent
            events = read_sse(response.iter_lines())
        kinds = [e.event for e in events]
        assert "sources" in kinds and "token" not in kinds and kinds[-1] == "error"
        assert events[-1].data["status"] == 502 and "cannot reach" in events[-1].data["error"]
        assert server.post("/api/search", json={"query": "backups"}).status_code == 200
        greeting = server.post("/api/ask", json={"question": "hello"}).json()
        assert greeting["hit_type"] == "chat"  # no model needed
        assert "Traceback" not in server.logs()


FAILURES = [
    # (fail mode, times, extra settings, status of the JSON answer, words of the error)
    ("hang", None, {"llm.timeout_s": 0.5}, 502, "timed out after 0.5 s"),
    ("502", None, {}, 502, "answered HTTP 502"),
    ("not-json", None, {}, 502, "answered no server-sent events"),
    ("bad-chunk", None, {}, 502, "malformed stream chunk"),  # after the first token
    ("429", 1, {}, 200, ""),  # retried once, then answered
]


@pytest.mark.parametrize(
    ("mode", "times", "extra", "status", "words"), FAILURES, ids=[f[0] for f in FAILURES]
)
def test_provider_failures_are_clear_errors(
    corpus: Path, mode: str, times: int | None, extra: dict[str, Any], status: int, words: str
) -> None:
    with serve(fail=mode, times=times) as llm:
        settings = load_settings(
            env=FAST_ENV,
            overrides={
                "data_dir": corpus,
                "llm.provider": "openai",
                "llm.model": "test-model",
                "llm.base_url": llm.openai_base,
                "llm.backoff_s": 0,
                **extra,
            },
        )
        with TestClient(create_app(settings), base_url="http://127.0.0.1") as client:
            question = {"question": "How often do database backups run?"}
            response = client.post("/api/ask", json=question)
            assert response.status_code == status, response.text
            if status == 502:
                error = response.json()
                assert error["status"] == 502 and words in error["error"], error
                assert error["error"].startswith("llm openai: ")
                events = _sse(client, question)
                assert events[-1][0] == "error" and events[-1][1]["status"] == 502
                assert words in events[-1][1]["error"]
            else:
                assert response.json()["answer"] == ANSWER
                assert [r.body.get("stream") for r in llm.requests] == [True, True]
            # Still serving: searches and greetings need no model.
            assert client.post("/api/search", json={"query": "backups"}).status_code == 200
            assert client.post("/api/ask", json={"question": "hi"}).json()["hit_type"] == "chat"


def _sse(client: TestClient, body: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    with client.stream("POST", "/api/ask", json={**body, "stream": True}) as response:
        assert response.status_code == 200
        events = read_sse(response.iter_lines())
    return [(e.event, e.data) for e in events]
