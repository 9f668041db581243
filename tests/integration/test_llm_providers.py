"""The chat-model providers (openai, azure, ollama) against a real fake server over HTTP."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

import pytest

from knowhub import ConfigError, ProviderError, registry
from knowhub.config import load_settings
from knowhub.errors import QueryError
from knowhub.providers import jsonhttp
from knowhub.providers.jsonhttp import Transport
from knowhub.providers.llms.azure import AzureChat
from knowhub.providers.llms.base import LLM, ChatMessage
from knowhub.providers.llms.ollama import OllamaChat
from knowhub.providers.llms.openai import ChatCompletionsLLM, OpenAIChat
from knowhub.testing import llm_server
from knowhub.testing.llm_server import ANSWER, LlmServer
from tests.helpers import WAIT_S

PROVIDERS = ["openai", "azure", "ollama"]
KEY = "sk-test-0123456789abcdef"
MODEL = "qwen2.5:7b-instruct"
MESSAGES = [
    ChatMessage("system", "Answer from the sources only."),
    ChatMessage("user", "How often are database backups taken?"),
]
PATHS = {
    "openai": "/v1/chat/completions",
    "azure": "/openai/deployments/gpt-4o-mini-prod/chat/completions",
    "ollama": "/api/chat",
}


def build(
    provider: str,
    server: LlmServer | str,
    tmp_path: Path,
    env: dict[str, str] | None = None,
    **values: object,
) -> LLM:
    """The provider through the registry, as the app builds it, pointed at ``server``."""
    url = server if isinstance(server, str) else server.url
    settings: dict[str, object] = {
        "data_dir": tmp_path,
        "llm.provider": provider,
        "llm.model": MODEL,
        "llm.api_key_env": "LLM_KEY",
        "llm.timeout_s": WAIT_S,
        "llm.max_retries": 2,
        "llm.backoff_s": 0.001,
    }
    if provider == "openai":
        settings["llm.base_url"] = url + "/v1"
    elif provider == "ollama":
        settings["llm.base_url"] = url
    else:
        settings["llm.azure.endpoint"] = url
        settings["llm.azure.deployment"] = "gpt-4o-mini-prod"
    settings.update(values)
    loaded = load_settings(
        env={"LLM_KEY": KEY} if env is None else env, overrides=settings, cwd=tmp_path
    )
    llm: LLM = registry.create("llm", provider, loaded)
    return llm


def drain(llm: LLM, **kwargs: object) -> list[str]:
    return list(llm.stream(MESSAGES, **kwargs))  # type: ignore[arg-type]


# --- the happy path ---


@pytest.mark.parametrize("provider", PROVIDERS)
def test_complete_sends_the_protocol_and_returns_the_answer(provider: str, tmp_path: Path) -> None:
    with llm_server.serve(api_key=KEY) as server:
        llm = build(provider, server, tmp_path)
        assert llm.complete(MESSAGES) == ANSWER
        assert llm.complete(MESSAGES, max_tokens=50, temperature=0.0) == ANSWER
    first, second = server.requests
    assert first.path == PATHS[provider] and first.auth == "ok"
    messages = [m.to_dict() for m in MESSAGES]
    if provider == "ollama":
        assert first.headers["authorization"] == "<redacted>"
        assert first.body == {
            "model": MODEL,
            "messages": messages,
            "stream": False,
            "options": {"temperature": 0.1, "num_predict": 800},
        }
        assert second.body["options"] == {"temperature": 0.0, "num_predict": 50}
        return
    expected = {"messages": messages, "temperature": 0.1, "max_tokens": 800, "stream": False}
    if provider == "azure":
        assert first.query == {"api-version": "2024-10-21"} and "authorization" not in first.headers
        assert first.headers["api-key"] == "<redacted>"
    else:
        expected["model"] = MODEL
        assert first.headers["authorization"] == "<redacted>"
    assert first.body == expected
    assert (second.body["max_tokens"], second.body["temperature"]) == (50, 0.0)


@pytest.mark.parametrize("provider", PROVIDERS)
def test_stream_yields_deltas_as_they_arrive(provider: str, tmp_path: Path) -> None:
    with llm_server.serve(api_key=KEY) as server:
        deltas = list(build(provider, server, tmp_path).stream(MESSAGES))
    assert "".join(deltas) == ANSWER and deltas == llm_server.tokens(ANSWER)
    assert server.last.body["stream"] is True and server.last.auth == "ok"
    # A model that sends its first token, then nothing more until the test ends, and never
    # ends its stream: a client that gathered the whole answer first would have none yet.
    with llm_server.serve(api_key=KEY, fail="stall") as server:
        stream = build(provider, server, tmp_path).stream(MESSAGES)
        assert next(stream) == llm_server.tokens(ANSWER)[0]
        stream.close()


@pytest.mark.parametrize("provider", PROVIDERS)
def test_json_mode_asks_the_server_for_json(provider: str, tmp_path: Path) -> None:
    reply = '{"intent": "search", "queries": []}'
    with llm_server.serve(lambda question: reply, api_key=KEY) as server:
        llm = build(provider, server, tmp_path)
        messages = [ChatMessage("system", "Reply with JSON only."), MESSAGES[1]]
        assert json.loads(llm.complete(messages, json_mode=True)) == json.loads(reply)
    if provider == "ollama":
        assert server.last.body["format"] == "json"
    else:
        assert server.last.body["response_format"] == {"type": "json_object"}


def test_the_answer_can_depend_on_the_question(tmp_path: Path) -> None:
    with llm_server.serve(lambda question: f"You asked: {question}") as server:
        llm = build("openai", server, tmp_path, env={}, **{"llm.api_key_env": ""})
        assert llm.complete(MESSAGES) == f"You asked: {MESSAGES[1].content}"
    assert "authorization" not in server.last.headers and server.last.auth == "-"


def test_openai_refuses_json_mode_when_no_message_mentions_json(tmp_path: Path) -> None:
    with llm_server.serve(api_key=KEY) as server:
        llm = build("openai", server, tmp_path)
        with pytest.raises(
            ProviderError, match=r"HTTP 400: 'messages' must contain the word 'json'"
        ):
            llm.complete(MESSAGES, json_mode=True)
    assert len(server.requests) == 1  # a 4xx is not retried


def test_closing_a_stream_early_is_fine(tmp_path: Path) -> None:
    with llm_server.serve(api_key=KEY, token_delay_s=0.01) as server:
        stream = build("openai", server, tmp_path).stream(MESSAGES)
        assert next(stream) == llm_server.tokens(ANSWER)[0]
        stream.close()
    assert len(server.requests) == 1


# --- keys ---


@pytest.mark.parametrize("provider", PROVIDERS)
def test_a_wrong_key_is_a_401_error_that_never_shows_the_key(provider: str, tmp_path: Path) -> None:
    wrong = "sk-wrong-key-that-must-not-leak"
    with llm_server.serve(api_key=KEY, echo_key=True) as server:
        llm = build(provider, server, tmp_path, env={"LLM_KEY": wrong})
        with pytest.raises(ProviderError, match="HTTP 401") as complete_error:
            llm.complete(MESSAGES)
        with pytest.raises(ProviderError, match="HTTP 401") as stream_error:
            drain(llm)
    assert [r.auth for r in server.requests] == ["wrong", "wrong"]  # not retried
    for error in (complete_error.value, stream_error.value):
        assert wrong not in str(error) and KEY not in str(error)
        assert "***" in str(error) and "llm.api_key_env" in str(error)


def test_a_missing_key_says_which_setting_to_set(tmp_path: Path) -> None:
    with llm_server.serve(api_key=KEY) as server:
        llm = build("openai", server, tmp_path, env={}, **{"llm.api_key_env": ""})
        with pytest.raises(ProviderError, match=r"didn't provide an API key.*set llm\.api_key_env"):
            llm.complete(MESSAGES)
    assert server.last.auth == "missing"


# --- retries ---


@pytest.mark.parametrize("method", ["complete", "stream"])
@pytest.mark.parametrize("fail", ["429", "500", "reset"])
@pytest.mark.parametrize("provider", PROVIDERS)
def test_retries_then_succeeds(provider: str, fail: str, method: str, tmp_path: Path) -> None:
    with llm_server.serve(api_key=KEY, fail=fail, times=2) as server:
        llm = build(provider, server, tmp_path)
        text = llm.complete(MESSAGES) if method == "complete" else "".join(drain(llm))
    assert text == ANSWER
    assert len(server.requests) == 3  # two failures, then the answer


@pytest.mark.parametrize("method", ["complete", "stream"])
@pytest.mark.parametrize("provider", PROVIDERS)
def test_gives_up_after_max_retries_with_the_servers_message(
    provider: str, method: str, tmp_path: Path
) -> None:
    with llm_server.serve(api_key=KEY, fail="502", times=None) as server:
        llm = build(provider, server, tmp_path)
        expected = (
            r"answered HTTP 502: upstream model server unavailable \(gave up after 3 attempts\)"
        )
        with pytest.raises(ProviderError, match=expected):
            llm.complete(MESSAGES) if method == "complete" else drain(llm)
    assert len(server.requests) == 3


def test_no_retries_when_max_retries_is_0(tmp_path: Path) -> None:
    with llm_server.serve(fail="500", times=None) as server:
        llm = build("ollama", server, tmp_path, **{"llm.max_retries": 0})
        with pytest.raises(ProviderError, match=r"HTTP 500: The server had an error") as error:
            llm.complete(MESSAGES)
    assert "gave up" not in str(error.value) and len(server.requests) == 1


def waits(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    """The pauses the transport makes before its retries, taken instead of made: which
    pause it chose is the behaviour, not how long a machine takes to make it."""
    made: list[float] = []
    monkeypatch.setattr(jsonhttp, "time", SimpleNamespace(sleep=made.append))
    return made


def test_retry_after_replaces_the_backoff(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    paused = waits(monkeypatch)
    with llm_server.serve(fail="429", times=1, retry_after="0.05") as server:
        llm = build("openai", server, tmp_path, **{"llm.backoff_s": 30})
        assert llm.complete(MESSAGES) == ANSWER
    assert paused == [0.05] and len(server.requests) == 2


def test_retry_after_is_capped(monkeypatch: pytest.MonkeyPatch) -> None:
    paused = waits(monkeypatch)
    with llm_server.serve(fail="429", times=1, retry_after="3600") as server:
        transport = Transport("llm test", backoff_s=30, max_delay_s=0.01)
        llm = ChatCompletionsLLM(
            server.openai_base + "/chat/completions", "m", {}, transport, model_id="test:m"
        )
        assert llm.complete(MESSAGES) == ANSWER
    assert paused == [0.01] and len(server.requests) == 2


# --- failures ---


@pytest.mark.parametrize("method", ["complete", "stream"])
@pytest.mark.parametrize("provider", PROVIDERS)
def test_a_hung_server_times_out_without_retries(
    provider: str, method: str, tmp_path: Path
) -> None:
    with llm_server.serve(api_key=KEY, fail="hang") as server:
        llm = build(provider, server, tmp_path, **{"llm.timeout_s": 0.3})
        with pytest.raises(ProviderError, match=r"timed out after 0\.3 s waiting for an answer"):
            llm.complete(MESSAGES) if method == "complete" else drain(llm)
    assert len(server.requests) == 1


@pytest.mark.parametrize("provider", PROVIDERS)
def test_a_stream_that_stalls_after_its_first_token_times_out(
    provider: str, tmp_path: Path
) -> None:
    with llm_server.serve(api_key=KEY, fail="stall") as server:
        stream = build(provider, server, tmp_path, **{"llm.timeout_s": 0.3}).stream(MESSAGES)
        assert next(stream) == llm_server.tokens(ANSWER)[0]
        with pytest.raises(ProviderError, match=r"timed out after 0\.3 s waiting for the rest"):
            next(stream)
    assert len(server.requests) == 1


@pytest.mark.parametrize("method", ["complete", "stream"])
@pytest.mark.parametrize("provider", PROVIDERS)
def test_connection_refused_names_the_url_and_the_fix(
    provider: str, method: str, tmp_path: Path
) -> None:
    url = llm_server.closed_url()
    llm = build(provider, url, tmp_path)
    with pytest.raises(ProviderError) as error:
        llm.complete(MESSAGES) if method == "complete" else drain(llm)
    assert f"cannot reach {url}{PATHS[provider]}" in str(error.value)
    assert "connection refused" in str(error.value)
    assert "check the URL and that the server runs (gave up after 3 attempts)" in str(error.value)


@pytest.mark.parametrize("fail", ["not-json", "bad-chunk"])
@pytest.mark.parametrize("provider", PROVIDERS)
def test_a_malformed_json_answer_is_an_error(provider: str, fail: str, tmp_path: Path) -> None:
    with llm_server.serve(api_key=KEY, fail=fail) as server:
        llm = build(provider, server, tmp_path)
        with pytest.raises(ProviderError, match=r"did not answer JSON: '(<html>|\{)"):
            llm.complete(MESSAGES)
    assert len(server.requests) == 1


@pytest.mark.parametrize(
    ("fail", "message"),
    [
        ("bad-chunk", "malformed stream chunk: '{"),
        ("error-chunk", "error mid-answer: (The model is overloaded|model runner has unexpect)"),
    ],
)
@pytest.mark.parametrize("provider", PROVIDERS)
def test_a_bad_chunk_mid_stream_is_an_error(
    provider: str, fail: str, message: str, tmp_path: Path
) -> None:
    with llm_server.serve(api_key=KEY, fail=fail) as server:
        stream = build(provider, server, tmp_path).stream(MESSAGES)
        assert next(stream) == llm_server.tokens(ANSWER)[0]
        with pytest.raises(ProviderError, match=message):
            next(stream)
    assert len(server.requests) == 1  # after the first delta, nothing is retried


@pytest.mark.parametrize("provider", ["openai", "ollama"])
def test_a_stream_that_is_not_one_is_an_error(provider: str, tmp_path: Path) -> None:
    with llm_server.serve(api_key=KEY, fail="not-json") as server:
        llm = build(provider, server, tmp_path)
        message = r"answered no server-sent events|malformed stream chunk: '<html>"
        with pytest.raises(ProviderError, match=message):
            drain(llm)
    assert len(server.requests) == 1


@pytest.mark.parametrize("method", ["complete", "stream"])
@pytest.mark.parametrize("provider", PROVIDERS)
def test_an_empty_answer_is_an_error(provider: str, method: str, tmp_path: Path) -> None:
    with llm_server.serve(api_key=KEY, fail="empty") as server:
        llm = build(provider, server, tmp_path)
        with pytest.raises(ProviderError, match=r"returned an empty answer \(\w+ 'stop'\)"):
            llm.complete(MESSAGES) if method == "complete" else drain(llm)


def test_unknown_deployment_says_what_to_check(tmp_path: Path) -> None:
    with llm_server.serve(api_key=KEY) as server:
        llm = build("azure", server, tmp_path, **{"llm.azure.deployment": "gpt-5"})
        with pytest.raises(ProviderError, match=r"HTTP 404: The API deployment .*llm\.azure"):
            llm.complete(MESSAGES)


@pytest.mark.parametrize(
    "call",
    [
        lambda llm: llm.complete([]),
        lambda llm: llm.stream([]),
        lambda llm: llm.complete(MESSAGES, max_tokens=0),
        lambda llm: llm.stream(MESSAGES, temperature=3.0),
        lambda llm: llm.complete([ChatMessage("robot", "hi")]),  # type: ignore[arg-type]
    ],
)
def test_bad_arguments_are_query_errors_before_any_request(call: object) -> None:
    llm = OpenAIChat(llm_server.closed_url(), "m")
    with pytest.raises(QueryError):
        call(llm)  # type: ignore[operator]


# --- configuration ---


@pytest.mark.parametrize(
    ("provider", "values", "message"),
    [
        (
            "openai",
            {"llm.base_url": ""},
            r"needs llm\.base_url, e\.g\. https://api\.openai\.com/v1",
        ),
        ("openai", {"llm.model": ""}, r"needs llm\.model, e\.g\. gpt-4o-mini"),
        ("openai", {"llm.base_url": "api.openai.com/v1"}, r"not an http\(s\) URL; e\.g\. https"),
        (
            "openai",
            {"llm.base_url": "https://api.openai.com/v1/chat/completions"},
            r"is the full endpoint; give the API root, 'https://api\.openai\.com/v1'",
        ),
        ("ollama", {"llm.base_url": ""}, r"needs llm\.base_url, e\.g\. http://localhost:11434"),
        ("ollama", {"llm.model": ""}, r"needs llm\.model, e\.g\. llama3\.1:8b"),
        (
            "ollama",
            {"llm.base_url": "http://localhost:11434/v1"},
            r"wants the server root, 'http://localhost:11434'",
        ),
        (
            "azure",
            {"llm.azure.endpoint": ""},
            r"needs llm\.azure\.endpoint, e\.g\. https://my-resource\.openai\.azure\.com",
        ),
        ("azure", {"llm.azure.deployment": ""}, r"needs llm\.azure\.deployment, e\.g\. "),
        ("azure", {"llm.api_key_env": ""}, r"needs llm\.api_key_env, e\.g\. AZURE_OPENAI_API_KEY"),
        (
            "azure",
            {"llm.azure.endpoint": "https://r.openai.azure.com/openai/deployments/x"},
            r"resource root only, e\.g\. 'https://r\.openai\.azure\.com'",
        ),
    ],
)
def test_config_errors_name_the_setting_and_an_example(
    provider: str, values: dict[str, object], message: str, tmp_path: Path
) -> None:
    with pytest.raises(ConfigError, match=message):
        build(provider, "http://127.0.0.1:9", tmp_path, **values)


@pytest.mark.parametrize("provider", PROVIDERS)
def test_a_named_key_variable_that_is_unset_is_a_config_error(
    provider: str, tmp_path: Path
) -> None:
    with pytest.raises(ConfigError, match=r"llm\.api_key_env names LLM_KEY, which is not set"):
        build(provider, "http://127.0.0.1:9", tmp_path, env={})


def test_registry_knows_every_llm(tmp_path: Path) -> None:
    settings = load_settings(env={}, overrides={"data_dir": tmp_path}, cwd=tmp_path)
    assert registry.known("llm") == ["azure", "none", "ollama", "openai"]
    assert settings.llm.provider == "none" and registry.create("llm", "none", settings) is None
    with pytest.raises(ConfigError, match="known: azure, none, ollama, openai"):
        registry.create("llm", "anthropic", settings)


def test_switching_provider_is_one_config_line(tmp_path: Path) -> None:
    with llm_server.serve(api_key=KEY) as server:
        (tmp_path / "knowhub.yaml").write_text(
            f"llm:\n  provider: none\n  base_url: {server.url}\n  model: {MODEL}\n"
            f"  api_key_env: LLM_KEY\n  backoff_s: 0.001\n"
            f"  azure: {{endpoint: '{server.url}', deployment: gpt-4o-mini-prod}}\n",
            encoding="utf-8",
        )
        kinds = {"openai": OpenAIChat, "azure": AzureChat, "ollama": OllamaChat}
        for provider, kind in kinds.items():
            env = {"KNOWHUB_LLM__PROVIDER": provider, "LLM_KEY": KEY}
            settings = load_settings(env=env, cwd=tmp_path)
            llm = registry.create("llm", settings.llm.provider, settings)
            assert isinstance(llm, kind) and llm.complete(MESSAGES) == ANSWER
            assert server.last.protocol == provider and server.last.auth == "ok"
        settings = load_settings(env={"LLM_KEY": KEY}, cwd=tmp_path)
        assert registry.create("llm", settings.llm.provider, settings) is None
    # The openai provider posted to the root's /chat/completions, as DeepSeek's API has it.
    assert [r.path for r in server.requests] == ["/chat/completions", PATHS["azure"], "/api/chat"]
