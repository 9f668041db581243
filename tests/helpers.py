"""Helpers shared by tests: fast deterministic settings and file writing."""

from __future__ import annotations

from pathlib import Path

from knowhub import Settings, load_settings

ROOT = Path(__file__).resolve().parents[1]


def fast_settings(data_dir: Path, **overrides: object) -> Settings:
    """Settings with the hashing embedder (instant, deterministic) and no config file."""
    values: dict[str, object] = {
        "data_dir": data_dir,
        "embedder.provider": "hashing",
        "embedder.workers": 1,
    }
    values.update(overrides)
    return load_settings(env={}, overrides=values, cwd=data_dir.parent)


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path
