"""The ingest limits: their defaults, and the renamed max_file_mb; the OCR settings."""

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


def test_ocr_is_on_by_default_in_english_chinese_and_russian(tmp_path: Path) -> None:
    ingest = load_settings(env={}, cwd=tmp_path).ingest
    assert (ingest.ocr, ingest.ocr_languages, ingest.ocr_dpi) == (True, "eng+chi_sim+rus", 200)
    assert (ingest.ocr_tessdata, ingest.ocr_max_megapixels) == (None, 40.0)
    with pytest.raises(ConfigError, match="ocr_languages"):
        load_settings(env={"KNOWHUB_INGEST__OCR_LANGUAGES": "eng, rus"}, cwd=tmp_path)


def test_tesseracts_own_variable_names_the_language_data_below_knowhubs_setting(
    tmp_path: Path,
) -> None:
    prefix = {"TESSDATA_PREFIX": "/opt/tessdata"}
    assert load_settings(env=prefix, cwd=tmp_path).ingest.ocr_tessdata == Path("/opt/tessdata")
    mine = {**prefix, "KNOWHUB_INGEST__OCR_TESSDATA": "/srv/tessdata"}
    assert load_settings(env=mine, cwd=tmp_path).ingest.ocr_tessdata == Path("/srv/tessdata")
