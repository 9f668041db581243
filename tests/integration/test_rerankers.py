"""The reranking providers against real HTTP servers and a real (tiny, random) cross-encoder."""

from __future__ import annotations

import math
import sys
from functools import partial
from pathlib import Path

import pytest

from knowhub import ConfigError, ProviderError, registry
from knowhub.config import load_settings
from knowhub.providers.rerankers.base import Reranker
from knowhub.providers.rerankers.cross_encoder import CrossEncoderReranker
from knowhub.providers.rerankers.http import HttpReranker
from knowhub.providers.rerankers.llm import LlmReranker
from knowhub.query.rerank import RerankStage
from tests import reranking
from tests.helpers import WAIT_S, fast_settings

QUERY = "how often are database backups taken"
PASSAGES = [
    "Lunch is served at noon in the cafeteria.",
    "The office is closed on public holidays.",
    "Database backups are taken every six hours.",
    "Backups of the wiki are kept for a year.",
]
BEST_FIRST = [2, 3, 1, 0]  # by word overlap with QUERY, then shorter first


def reranker(tmp_path: Path, env: dict[str, str] | None = None, **values: object) -> Reranker:
    """Build the configured reranker through the registry, as the app does."""
    # API keys reach providers only through load_settings' environment.
    settings = load_settings(
        env=env or {}, overrides={"data_dir": tmp_path, **values}, cwd=tmp_path
    )
    built: Reranker = registry.create("reranker", settings.reranker.provider, settings)
    return built


def ranking(scores: list[float]) -> list[int]:
    return sorted(range(len(scores)), key=lambda i: -scores[i])


@pytest.mark.parametrize(
    ("style", "path", "respond"),
    [
        ("jina", "/v1/rerank", reranking.jina),
        ("cohere", "/v2/rerank", reranking.cohere),
        ("tei", "/rerank", reranking.tei),
    ],
)
def test_http_reranker_speaks_each_style(
    tmp_path: Path, style: str, path: str, respond: reranking.Respond
) -> None:
    with reranking.serve(respond) as server:
        model = reranker(
            tmp_path,
            **{
                "reranker.provider": "http",
                "reranker.http.url": server.url + path,
                "reranker.http.style": style,
                "reranker.http.model": "rerank-v3.5",
            },
        )
        scores = model.score(QUERY, PASSAGES)
    assert ranking(scores) == BEST_FIRST  # answers come sorted by score; mapped back to input
    _, headers, body = server.requests[0]
    if style == "tei":
        assert body == {"query": QUERY, "texts": PASSAGES, "truncate": True}
    else:
        assert body == {"model": "rerank-v3.5", "query": QUERY, "documents": PASSAGES, "top_n": 4}
    assert "Authorization" not in headers


def test_http_reranker_sends_the_key_from_the_named_variable(tmp_path: Path) -> None:
    with reranking.serve(reranking.jina) as server:
        model = reranker(
            tmp_path,
            env={"JINA_API_KEY": "jina_s3cret"},
            **{
                "reranker.provider": "http",
                "reranker.http.url": server.url + "/v1/rerank",
                "reranker.http.model": "jina-reranker-v2-base-multilingual",
                "reranker.http.api_key_env": "JINA_API_KEY",
            },
        )
        model.score(QUERY, PASSAGES)
    assert server.requests[0][1]["Authorization"] == "Bearer jina_s3cret"


def test_a_named_key_variable_that_is_unset_is_a_config_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"names NO_SUCH_KEY, which is not set"):
        reranker(
            tmp_path,
            **{
                "reranker.provider": "http",
                "reranker.http.url": "http://127.0.0.1:9/rerank",
                "reranker.http.api_key_env": "NO_SUCH_KEY",
            },
        )


def test_http_reranker_without_url_names_the_setting(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"reranker\.http\.url"):
        reranker(tmp_path, **{"reranker.provider": "http"})


@pytest.mark.parametrize(
    ("fail", "message"),
    [
        ("500", "answered HTTP 500: .*model crashed"),
        ("not-json", "did not answer JSON"),
        ("hang", r"timed out after 0\.3 s"),
        ("bad-shape", "scores for 3 of 4 passages"),
    ],
)
def test_http_failures_are_provider_errors(tmp_path: Path, fail: str, message: str) -> None:
    respond = partial(reranking.jina, bad_shape=fail == "bad-shape")
    # 0.3 s is the setting under test for the server that never answers; the others must
    # get their answer, however long a loaded machine takes.
    timeout_s = 0.3 if fail == "hang" else WAIT_S
    with reranking.serve(respond, fail=None if fail == "bad-shape" else fail) as server:
        model = HttpReranker(server.url + "/v1/rerank", "jina", "m", timeout_s=timeout_s)
        with pytest.raises(ProviderError, match=message):
            model.score(QUERY, PASSAGES)


def test_connection_refused_is_a_provider_error() -> None:
    model = HttpReranker(reranking.closed_port_url(), "tei", timeout_s=WAIT_S)
    with pytest.raises(ProviderError, match=r"cannot reach .*check the URL"):
        model.score(QUERY, PASSAGES)


@pytest.mark.parametrize("fail", ["500", "not-json", "hang"])
def test_stage_keeps_the_fused_order_when_the_endpoint_fails(fail: str) -> None:
    hits = reranking.hits_for(PASSAGES)
    with reranking.serve(reranking.tei, fail=fail) as server:
        # Every failure keeps the fused order: a loaded machine that turns a slow 500 into
        # a timeout changes nothing, so 0.3 s (the hanging endpoint's) serves them all.
        stage = RerankStage(
            HttpReranker(server.url + "/rerank", "tei", timeout_s=0.3), "http", timeout_s=WAIT_S
        )
        kept, outcome = stage(QUERY, hits)
    assert kept == hits and not outcome.used and outcome.error


def test_llm_reranker_grades_numbered_passages(tmp_path: Path) -> None:
    with reranking.serve(reranking.chat()) as server:
        model = reranker(
            tmp_path,
            env={"LLM_KEY": "sk-test"},
            **{
                "reranker.provider": "llm",
                "reranker.llm.base_url": server.url + "/v1",
                "reranker.llm.model": "qwen2.5-7b-instruct",
                "reranker.llm.api_key_env": "LLM_KEY",
            },
        )
        scores = model.score(QUERY, PASSAGES)
    assert ranking(scores)[:2] == BEST_FIRST[:2] and all(0 <= s <= 10 for s in scores)
    path, headers, body = server.requests[0]
    assert path == "/v1/chat/completions" and headers["Authorization"] == "Bearer sk-test"
    assert body["model"] == "qwen2.5-7b-instruct" and body["temperature"] == 0
    assert body["response_format"] == {"type": "json_object"}
    user = body["messages"][-1]["content"]
    assert user.startswith(f"Query: {QUERY}\n") and "[3] Database backups" in user


@pytest.mark.parametrize(
    ("reply", "message"),
    [
        ("Sure! Passage 3 is best.", "reply is not JSON"),
        ('{"grades": [1, 2, 3, 4]}', r'expected \{"scores": \[4 numbers\]\}'),
        ('{"scores": [1, 2, 3]}', r'expected \{"scores": \[4 numbers\]\}'),
        ('{"scores": [1, 2, 3, 11]}', "score 11 is not a number from 0 to 10"),
        ('{"scores": [1, 2, "high", 4]}', "score 'high' is not a number"),
        ('{"scores": [1, 2, true, 4]}', "score True is not a number"),
    ],
)
def test_malformed_llm_replies_are_errors(reply: str, message: str) -> None:
    with reranking.serve(reranking.chat(lambda q, p: reply)) as server:
        model = LlmReranker(server.url + "/v1", "m", timeout_s=WAIT_S)
        with pytest.raises(ProviderError, match=message):
            model.score(QUERY, PASSAGES)


def test_llm_reply_in_a_json_fence_is_accepted() -> None:
    reply = '```json\n{"scores": [0, 1, 9, 5]}\n```'
    with reranking.serve(reranking.chat(lambda q, p: reply)) as server:
        scores = LlmReranker(server.url + "/v1", "m", json_mode=False).score(QUERY, PASSAGES)
    assert scores == [0.0, 1.0, 9.0, 5.0]
    assert "response_format" not in server.requests[0][2]


def test_llm_reranker_needs_base_url_and_model(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"reranker\.llm\.base_url .* reranker\.llm\.model"):
        reranker(tmp_path, **{"reranker.provider": "llm", "reranker.llm.model": "m"})


# --- cross-encoder: a tiny randomly initialised BERT, built and saved by the test ---

VOCAB = [
    "[PAD]",
    "[UNK]",
    "[CLS]",
    "[SEP]",
    "[MASK]",
    ".",
    *sorted({w.lower().strip(".") for text in [QUERY, *PASSAGES] for w in text.split()}),
]


@pytest.fixture(scope="module")
def tiny_cross_encoder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    folder = tmp_path_factory.mktemp("tiny-cross-encoder")
    (folder / "vocab.txt").write_text("\n".join(VOCAB) + "\n", encoding="utf-8")
    torch.manual_seed(7)
    config = transformers.BertConfig(
        vocab_size=len(VOCAB),
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=64,
        max_position_embeddings=128,
        num_labels=1,
        initializer_range=0.1,
    )
    transformers.BertForSequenceClassification(config).save_pretrained(folder)
    # The vocabulary file is the first argument in transformers 4 (vocab_file) and 5 (vocab).
    tokenizer = transformers.BertTokenizer(str(folder / "vocab.txt"))
    assert tokenizer.tokenize("Lunch is served.") == ["lunch", "is", "served", "."]
    tokenizer.save_pretrained(folder)
    return folder


def test_cross_encoder_scores_are_finite_and_deterministic(
    tiny_cross_encoder: Path, tmp_path: Path
) -> None:
    model = reranker(
        tmp_path,
        **{
            "reranker.provider": "cross-encoder",
            "reranker.cross_encoder.model_path": str(tiny_cross_encoder),
        },
    )
    first = model.score(QUERY, PASSAGES)
    again = CrossEncoderReranker(tiny_cross_encoder, batch_size=2).score(QUERY, PASSAGES)
    assert len(first) == 4 and all(math.isfinite(s) for s in first)
    assert first == pytest.approx(again, abs=1e-6)
    assert len(set(first)) == 4  # random weights, but distinct scores to order by


def test_cross_encoder_order_drives_the_rerank_stage(tiny_cross_encoder: Path) -> None:
    model = CrossEncoderReranker(tiny_cross_encoder)
    scores = model.score(QUERY, PASSAGES)
    reranked, outcome = RerankStage(model, "cross-encoder")(QUERY, reranking.hits_for(PASSAGES))
    assert outcome.used and outcome.error is None
    assert [h.text for h in reranked] == [PASSAGES[i] for i in ranking(scores)]
    assert [h.rerank_score for h in reranked] == pytest.approx(sorted(scores, reverse=True))


def test_cross_encoder_folder_must_exist(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"model folder .* not found"):
        reranker(
            tmp_path,
            **{
                "reranker.provider": "cross-encoder",
                "reranker.cross_encoder.model_path": str(tmp_path / "nope"),
            },
        )
    with pytest.raises(ConfigError, match=r"reranker\.cross_encoder\.model_path"):
        reranker(tmp_path, **{"reranker.provider": "cross-encoder"})


def test_cross_encoder_missing_extra_names_the_install_command(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "sentence_transformers", None)
    model = CrossEncoderReranker(tmp_path)
    with pytest.raises(
        ConfigError, match=r"pip install torch==2\.13\.0 && pip install 'knowhub\[st\]'"
    ):
        model.score(QUERY, PASSAGES)


def test_registry_knows_every_reranker(tmp_path: Path) -> None:
    assert registry.known("reranker") == [
        "cross-encoder",
        "http",
        "llm",
        "none",
        "onnx-cross-encoder",
    ]
    assert registry.create("reranker", "none", fast_settings(tmp_path)) is None
    with pytest.raises(
        ConfigError, match="known: cross-encoder, http, llm, none, onnx-cross-encoder"
    ):
        registry.create("reranker", "colbert", fast_settings(tmp_path))
