"""The ingest limits: their defaults, and the renamed max_file_mb."""

from __future__ import annotations

from pathlib import Path

import pytest

from knowhub import load_settings
from knowhub.errors import ConfigError


def test_limits_default_to_200_mb_and_50_million_characters(tmp_path: Path) -> None:
    settings = load_settings(env={}, cwd=tmp_path)
    assert settings.ingest.max_file_bytes == 200_000_000
    assert settings.ingest.max_extracted_chars == 50_000_000


def test_old_max_file_mb_names_the_new_key_and_its_value(tmp_path: Path) -> None:
    (tmp_path / "knowhub.yaml").write_text("ingest:\n  max_file_mb: 10\n", encoding="utf-8")
    with pytest.raises(ConfigError) as info:
        load_settings(env={}, cwd=tmp_path)
    assert "max_file_mb was replaced by ingest.max_file_bytes" in str(info.value)
    assert "max_file_bytes: 10485760" in str(info.value)


def test_old_max_file_mb_in_the_environment_is_refused_too(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"ingest\.max_file_bytes"):
        load_settings(env={"KNOWHUB_INGEST__MAX_FILE_MB": "5"}, cwd=tmp_path)
