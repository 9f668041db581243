"""``sources:`` in knowhub.yaml: validated at load, each mistake named with its fix."""

from __future__ import annotations

from pathlib import Path

import pytest

from knowhub.config import load_settings
from knowhub.config.sources import SourceEntry, interval_seconds
from knowhub.errors import ConfigError
from knowhub.ingest.gitspec import parse_git_spec
from tests.helpers import write


def _load(tmp_path: Path, yaml: str):  # type: ignore[no-untyped-def]
    write(tmp_path / "knowhub.yaml", yaml)
    return load_settings(env={}, cwd=tmp_path)


@pytest.mark.parametrize(
    ("text", "seconds"),
    [("90s", 90), ("30m", 1800), ("6h", 21600), ("1d", 86400), ("1w", 604800), ("1h30m", 5400)],
)
def test_refresh_intervals_are_read(text: str, seconds: float) -> None:
    assert interval_seconds(text) == seconds


@pytest.mark.parametrize("text", ["manual", "0", "never"])
def test_a_manual_source_is_refreshed_by_sync_only(text: str) -> None:
    assert interval_seconds(text) == 0


@pytest.mark.parametrize("text", ["soon", "6", "h", "6x", "6h later"])
def test_a_bad_interval_names_the_form(text: str) -> None:
    with pytest.raises(ValueError, match="90s, 30m, 6h"):
        interval_seconds(text)


def test_a_website_and_a_repository_with_their_options(tmp_path: Path) -> None:
    settings = _load(
        tmp_path,
        "sources:\n"
        "  - {url: 'https://docs.example.org/guide/', refresh: 6h, depth: 2, max_pages: 50,"
        " exclude: ['*/old/*']}\n"
        "  - {git: 'https://example.org/team/handbook.git', ref: v2, collection: handbook}\n",
    )
    web, git = settings.sources
    assert (web.spec, web.name, web.refresh_s) == (
        "https://docs.example.org/guide/",
        "https://docs.example.org/guide/",
        21600,
    )
    assert web.options() == {"depth": 2, "max_pages": 50, "exclude": ["*/old/*"]}
    assert git.spec == "git+https://example.org/team/handbook.git"
    assert (git.options(), git.collection) == ({"ref": "v2"}, "handbook")


@pytest.mark.parametrize(
    ("git", "spec"),
    [
        ("https://example.org/r.git", "git+https://example.org/r.git"),
        ("ssh://git@example.org/r.git", "git+ssh://git@example.org/r.git"),
        ("git+file:///srv/r.git", "git+file:///srv/r.git"),
        ("/srv/git/handbook.git", "git+file:///srv/git/handbook.git"),
        ("git://127.0.0.1:9418/r.git", "git://127.0.0.1:9418/r.git"),
        ("deploy@example.org:team/r.git", "deploy@example.org:team/r.git"),
        ("git@example.org:team/r.git", "git@example.org:team/r.git"),
    ],
)
def test_a_git_entry_is_the_spec_knowhub_ingest_takes(git: str, spec: str) -> None:
    entry = SourceEntry(git=git)
    assert entry.spec == spec
    assert parse_git_spec(entry.spec) is not None  # a spec the git kind reads


def test_a_git_entry_named_by_default_shows_no_credentials() -> None:
    entry = SourceEntry(git="https://ghp_SECRET@example.org/r.git")
    assert entry.spec == "git+https://ghp_SECRET@example.org/r.git"  # git still gets it
    assert entry.name == entry.shown == "git+https://example.org/r.git"


@pytest.mark.parametrize(
    ("yaml", "message"),
    [
        ("sources: [{s3: bucket}]", "unknown kind of source s3: use url:"),
        ("sources: [{collection: docs}]", "url: (a website) or git: (a repository); neither"),
        ("sources: [{url: 'https://x.org/', git: 'y'}]", "url, git given"),
        ("sources: [{url: 'https://x.org/', ref: main}]", "unknown key(s) ref; a website takes"),
        ("sources: [{git: 'https://x.org/r.git', depth: 2}]", "unknown key(s) depth; a git"),
        ("sources: [{url: 'https://x.org/', refresh: soon}]", "not an interval"),
        ("sources: [{url: 'https://x.org/'}, {url: 'https://x.org/'}]", "named twice"),
    ],
)
def test_a_mistake_in_sources_is_named_with_its_fix(
    tmp_path: Path, yaml: str, message: str
) -> None:
    with pytest.raises(ConfigError) as caught:
        _load(tmp_path, yaml)
    assert message in str(caught.value)
