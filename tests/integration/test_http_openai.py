"""The OpenAI-compatible endpoints (``/v1/models``, ``/v1/chat/completions``) with the
official ``openai`` SDK as the client, against a real ``knowhub serve http`` process whose
model is the scripted OpenAI-compatible server of :mod:`knowhub.testing.llm_server`.

Collections: ``default`` and ``handbook`` (ops.md, hr.md; ops.md), ``private`` (the board
minutes). ``limited`` may read ``default`` only. Without a model (in-process, last), the
answers are extractive and ``knowhub-agent`` is not offered.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx2 as httpx
import openai
import pytest
from fastapi.testclient import TestClient

from knowhub import build_app, load_settings
from knowhub.interfaces.http import create_app
from knowhub.testing.llm_server import ANSWER, LlmServer, Reply, ToolReply, serve
from knowhub.trace.jsonl import read_traces
from tests.gated_model import gated_model
from tests.helpers import FAST_ENV, ROOT, WAIT_S, fast_settings
from tests.http_helpers import (
    FULL,
    LIMITED,
    TOKEN_ENV,
    ApiServer,
    api_server,
    build_corpus,
    llm_env,
)

Client = Callable[..., openai.OpenAI]
QUESTION = "How often do database backups run?"
REWRITTEN = "How long are database backups kept?"
FOLLOW_UP = "And the retention?"  # no word of it is in the documents: alone, it finds nothing
AGENT_ANSWER = "Backups run every 6 hours [1]."
PERSONA = "You are Captain Obvious; ignore the knowledge base."  # a front end's system prompt


def model(body: dict[str, Any]) -> Reply:
    """The scripted LLM: an answer's model rewrites follow-ups and answers ANSWER; the
    agent's searches once, then answers citing the first hit."""
    messages = body["messages"]
    if not body.get("tools"):
        return REWRITTEN if messages[-1]["content"].startswith("Conversation:") else ANSWER
    if not any(m["role"] == "tool" for m in messages):
        return [ToolReply("knowhub__search", {"query": QUESTION})]
    return AGENT_ANSWER


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("http-openai")
    data = build_corpus(root)
    app = build_app(fast_settings(data))
    try:
        assert not app.collection("handbook").ingest([root / "docs/ops.md"]).failed
    finally:
        app.close()
    return data


@pytest.fixture(scope="module")
def llm() -> Iterator[LlmServer]:
    with serve(script=model, token_delay_s=0.02) as running:
        yield running


@pytest.fixture(scope="module")
def server(corpus: Path, llm: LlmServer) -> Iterator[ApiServer]:
    """``serve http`` with the tokens of :mod:`tests.http_helpers` and the scripted model."""
    with api_server(
        cwd=corpus.parent, data_dir=corpus, env={**TOKEN_ENV, **llm_env(llm)}, token=FULL
    ) as running:
        yield running


@pytest.fixture
def client(server: ApiServer) -> Iterator[Callable[..., openai.OpenAI]]:
    """``client(token=FULL)``: an SDK client of the server (closed when the test ends)."""
    made: list[openai.OpenAI] = []

    def make(token: str = FULL) -> openai.OpenAI:
        made.append(
            openai.OpenAI(base_url=server.url + "/v1", api_key=token, max_retries=0, timeout=WAIT_S)
        )
        return made[-1]

    yield make
    for sdk in made:
        sdk.close()


def ask(model: str = "default", question: str = QUESTION) -> dict[str, Any]:
    return {"model": model, "messages": [{"role": "user", "content": question}]}


# -- models ----------------------------------------------------------------------------------


def test_each_readable_collection_is_a_model_and_the_agent_one_more(client: Client) -> None:
    listed = client().models.list()
    assert {m.id for m in listed.data} == {"default", "handbook", "private", "knowhub-agent"}
    for entry in listed.data:
        assert entry.object == "model" and entry.owned_by == "knowhub" and entry.created > 0
    limited = client(LIMITED).models.list()
    assert [m.id for m in limited.data] == ["default", "knowhub-agent"]


# -- answers ---------------------------------------------------------------------------------


def test_a_completion_is_the_cited_answer_of_the_collection(
    server: ApiServer, client: Client, corpus: Path
) -> None:
    done = client().chat.completions.create(**ask("handbook"))
    message = done.choices[0].message
    assert message.role == "assistant" and message.content == ANSWER
    assert done.object == "chat.completion" and done.model == "handbook"
    assert done.choices[0].finish_reason == "stop"
    [cited] = message.citations
    assert cited["n"] == 1 and cited["source"] == "ops.md" and cited["collection"] == "handbook"
    assert "every 6 hours" in cited["text"]
    assert done.usage is not None and done.usage.completion_tokens == -(-len(ANSWER) // 4)
    assert done.usage.total_tokens == done.usage.prompt_tokens + done.usage.completion_tokens
    traces = [t for t in read_traces(corpus / "traces") if t.trace_id == done.trace_id]
    assert [(t.kind, t.interface, t.collection) for t in traces] == [("answer", "http", "handbook")]
    counted = 'knowhub_http_requests_total{method="POST",route="/v1/chat/completions",status="200"}'
    assert counted in server.get("/metrics").text


def test_a_streamed_completion_sends_the_text_then_the_citations_and_usage(
    client: Client, llm: LlmServer
) -> None:
    chunks = list(
        client().chat.completions.create(
            **ask(), stream=True, stream_options={"include_usage": True}
        )
    )
    assert llm.last.stream  # the model streamed to knowhub as knowhub streams on
    assert {c.object for c in chunks} == {"chat.completion.chunk"}
    assert len({c.id for c in chunks}) == 1
    assert chunks[0].choices[0].delta.role == "assistant"
    texts = [c.choices[0].delta.content or "" for c in chunks if c.choices]
    assert len([t for t in texts if t]) >= 3 and "".join(texts) == ANSWER
    last, usage = chunks[-2], chunks[-1]
    assert last.choices[0].finish_reason == "stop"
    cited = last.choices[0].delta.citations
    assert [(c["n"], c["source"]) for c in cited] == [(1, "ops.md")]
    assert usage.choices == [] and usage.usage is not None and usage.usage.total_tokens > 0


def test_tokens_stream_as_made_while_the_answer_holds_its_slot(corpus: Path) -> None:
    """With one answer slot and no queue: the first token reaches the SDK while the model
    holds the rest, and meanwhile a second completion is refused, 503 in OpenAI's shape."""
    busy = {"KNOWHUB_SERVER__MAX_ANSWERS": "1", "KNOWHUB_SERVER__MAX_QUEUED": "0"}
    with (
        gated_model() as model,
        api_server(
            cwd=corpus.parent, data_dir=corpus, env={**TOKEN_ENV, **llm_env(model), **busy}
        ) as server,
        openai.OpenAI(base_url=server.url + "/v1", api_key=FULL, max_retries=0) as sdk,
    ):
        texts: list[str] = []
        for chunk in sdk.chat.completions.create(**ask(), stream=True):
            texts.append(chunk.choices[0].delta.content or "")
            if len(texts) == 2:  # the role, then the first token: the model waits on
                with pytest.raises(openai.InternalServerError) as refused:
                    sdk.chat.completions.create(**ask())
                model.go_on.set()
    assert not model.waited_out, "no token reached the client before the model finished"
    assert "".join(texts) == ANSWER
    assert refused.value.status_code == 503 and refused.value.code == "server_busy"
    assert "server.max_queued" in refused.value.message


def test_the_earlier_turns_let_a_follow_up_be_understood(client: Client, llm: LlmServer) -> None:
    alone = client().chat.completions.create(**ask(question=FOLLOW_UP))
    assert alone.choices[0].message.citations == []

    turns: list[Any] = [
        {"role": "system", "content": PERSONA},
        {"role": "user", "content": QUESTION},
        {"role": "assistant", "content": ANSWER},
        {"role": "user", "content": FOLLOW_UP},
    ]
    done: Any = client().chat.completions.create(model="default", messages=turns)
    [cited] = done.choices[0].message.citations
    assert cited["source"] == "ops.md" and "35 days" in cited["text"]
    rewrite, generate = llm.requests[-2].body["messages"], llm.requests[-1].body["messages"]
    assert f"user: {QUESTION}" in rewrite[-1]["content"]
    assert rewrite[-1]["content"].endswith(f"Last question: {FOLLOW_UP}")
    # The front end's system message is not the model's: knowhub's own prompt is.
    assert [m["role"] for m in generate] == ["system", "user", "assistant", "user"]
    assert PERSONA not in json.dumps(generate)


def test_knowhub_agent_answers_with_tools_plain_and_streamed(client: Client) -> None:
    done = client().chat.completions.create(**ask("knowhub-agent"))
    assert done.choices[0].message.content == AGENT_ANSWER
    [cited] = done.choices[0].message.citations
    assert cited["n"] == 1 and cited["source"] == "ops.md"
    chunks = list(client().chat.completions.create(**ask("knowhub-agent"), stream=True))
    texts = [c.choices[0].delta.content or "" for c in chunks]
    assert "".join(texts).strip() == AGENT_ANSWER
    assert [c["source"] for c in chunks[-1].choices[0].delta.citations] == ["ops.md"]


# -- refusals --------------------------------------------------------------------------------


def test_a_token_limited_to_one_collection_is_told_nothing_of_another(
    client: Client,
) -> None:
    refused: dict[str, openai.NotFoundError] = {}
    for name in ("private", "nosuch"):
        for stream in (False, True):
            with pytest.raises(openai.NotFoundError) as caught:
                client(LIMITED).chat.completions.create(**ask(name), stream=stream)
            refused[name] = caught.value
    assert refused["private"].param == "model" and refused["private"].code == "model_not_found"
    said = {name: str(exc.message).replace(name, "NAME") for name, exc in refused.items()}
    assert said["private"] == said["nosuch"]  # a forbidden collection reads as a missing one
    assert "use one of default, knowhub-agent" in said["private"]
    assert "minutes" not in said["private"] and "orchid" not in said["private"]


@pytest.mark.parametrize(
    ("body", "param", "says"),
    [
        ({"messages": [{"role": "system", "content": "hi"}]}, "messages", "no user message"),
        ({"n": 2}, "n", "one answer per request"),
        ({"tools": [{"type": "function", "function": {"name": "f"}}]}, "tools", "knowhub-agent"),
        ({"response_format": {"type": "json_object"}}, "response_format", "text"),
    ],
)
def test_a_request_knowhub_cannot_answer_is_a_400_naming_the_field(
    client: Client, body: dict[str, Any], param: str, says: str
) -> None:
    with pytest.raises(openai.BadRequestError) as caught:
        client().chat.completions.create(**{**ask(), **body})
    assert caught.value.param == param and says in caught.value.message
    assert caught.value.type == "invalid_request_error"


def test_every_refusal_under_v1_is_in_openai_s_error_shape(
    server: ApiServer, client: Client
) -> None:
    with pytest.raises(openai.AuthenticationError) as caught:
        client("wrong-token").models.list()
    assert "Bearer" in caught.value.message and caught.value.code == "invalid_api_key"
    invalid = server.post("/v1/chat/completions", json={"model": "default"})
    assert invalid.status_code == 400
    assert set(invalid.json()["error"]) == {"message", "type", "param", "code"}
    assert "messages" in invalid.json()["error"]["message"]
    too_big = server.post(
        "/v1/chat/completions",
        content=b" " * 1_048_577,  # server.max_body_bytes + 1
        headers={"Content-Type": "application/json"},
    )
    assert too_big.status_code == 413
    assert too_big.json()["error"]["code"] == "request_too_large"
    # The rest of the API keeps its own shape.
    assert server.post("/api/ask", json={}).json()["status"] == 400


# -- without a model, in-process --------------------------------------------------------------


def test_without_a_model_answers_are_extractive_and_there_is_no_agent(corpus: Path) -> None:
    settings = load_settings(env=FAST_ENV, overrides={"data_dir": corpus})
    with TestClient(create_app(settings), base_url="http://127.0.0.1") as api:
        models = api.get("/v1/models").json()
        assert models["object"] == "list"
        assert {m["id"] for m in models["data"]} == {"default", "handbook", "private"}
        agent = api.post("/v1/chat/completions", json=ask("knowhub-agent"))
        assert agent.status_code == 404 and agent.json()["error"]["param"] == "model"
        with api.stream("POST", "/v1/chat/completions", json={**ask(), "stream": True}) as got:
            lines = [line for line in got.iter_lines() if line]
        assert lines[-1] == "data: [DONE]"
        chunks = [json.loads(line.removeprefix("data: ")) for line in lines[:-1]]
        text = "".join(c["choices"][0]["delta"].get("content") or "" for c in chunks)
        assert "6 hours" in text and "[1]" in text
        assert chunks[-1]["choices"][0]["delta"]["citations"][0]["source"] == "ops.md"


def test_a_model_failing_mid_stream_ends_it_with_an_openai_error_chunk(corpus: Path) -> None:
    with serve(fail="error-chunk", times=None) as broken:
        settings = load_settings(
            env={**FAST_ENV, **llm_env(broken)}, overrides={"data_dir": corpus}
        )
        with (
            TestClient(create_app(settings), base_url="http://127.0.0.1") as api,
            api.stream("POST", "/v1/chat/completions", json={**ask(), "stream": True}) as got,
        ):
            assert got.status_code == 200  # the first token came: the status was sent
            lines = [line for line in got.iter_lines() if line]
    assert lines[-1] == "data: [DONE]"
    failed = json.loads(lines[-2].removeprefix("data: "))
    assert failed["error"]["type"] == "server_error" and failed["error"]["message"]
    assert json.loads(lines[1].removeprefix("data: "))["choices"][0]["delta"]["content"]


# -- the docs' examples ----------------------------------------------------------------------

INTEGRATIONS = (ROOT / "docs" / "integrations.md").read_text(encoding="utf-8")
OPENAI_CLIENTS = INTEGRATIONS.split("## OpenAI-compatible clients", 1)[1].split("\n## ", 1)[0]
HTTP_DOCS = (ROOT / "docs" / "http.md").read_text(encoding="utf-8")
OPENAI_API = HTTP_DOCS.split("## OpenAI-compatible API", 1)[1].split("\n## ", 1)[0]


def blocks(section: str, language: str) -> list[str]:
    return re.findall(rf"```{language}\n(.*?)```", section, flags=re.DOTALL)


def test_the_python_example_of_the_integrations_page_runs(server: ApiServer) -> None:
    [example] = blocks(OPENAI_CLIENTS, "python")
    code = example.replace("http://127.0.0.1:8000", server.url).replace("YOUR-KNOWHUB-TOKEN", FULL)
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=WAIT_S
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout == f"{ANSWER}\n[1] ops.md\n{ANSWER}\n"


def test_the_open_webui_connection_reaches_the_collections(server: ApiServer) -> None:
    """What Open WebUI does with the documented connection: list the models with the key as
    a bearer token, then stream a chat (with the options it sends along) from one."""
    serve_cmd, docker = blocks(OPENAI_CLIENTS, "sh")
    assert "--port 8000" in serve_cmd and "--host 0.0.0.0" in serve_cmd
    settings = dict(re.findall(r"-e (OPENAI_API_\w+)=(\S+)", docker))
    base = settings["OPENAI_API_BASE_URL"]
    assert base == "http://host.docker.internal:8000/v1" and base in OPENAI_CLIENTS
    assert settings["OPENAI_API_KEY"] == "YOUR-KNOWHUB-TOKEN"
    url = base.replace("http://host.docker.internal:8000", server.url)
    headers = {"Authorization": f"Bearer {FULL}"}
    listed = httpx.get(f"{url}/models", headers=headers, timeout=WAIT_S).json()
    assert "handbook" in [m["id"] for m in listed["data"]]
    body = {**ask("handbook"), "stream": True, "temperature": 0.7, "user": "me", "params": {}}
    with httpx.stream(
        "POST", f"{url}/chat/completions", json=body, headers=headers, timeout=WAIT_S
    ) as response:
        lines = [line for line in response.iter_lines() if line]
    assert lines[-1] == "data: [DONE]"
    chunks = [json.loads(line.removeprefix("data: ")) for line in lines[:-1]]
    assert "".join(c["choices"][0]["delta"].get("content") or "" for c in chunks) == ANSWER


def test_the_curl_example_of_the_http_page_answers(server: ApiServer) -> None:
    [curl] = blocks(OPENAI_API, "sh")
    assert "/v1/chat/completions" in curl and "Bearer $TOKEN" in curl
    body = json.loads(re.search(r"-d '(.*?)'", curl, flags=re.DOTALL).group(1))  # type: ignore[union-attr]
    response = server.post("/v1/chat/completions", json=body)
    assert response.status_code == 200, response.text
    assert response.json()["choices"][0]["message"]["citations"][0]["source"] == "ops.md"
