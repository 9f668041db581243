"""`knowhub remove` by path, source or doc-hash prefix: a real subprocess and a real SQLite.

A doc-hash prefix once went into SQL LIKE unescaped: `remove '________'` removed every
document, exit 0.
"""

from __future__ import annotations

import json
import os
import sqlite3
from pathlib import Path

import pytest

from tests.helpers import knowhub, write

FILES = {
    "a.md": "# A\n\nBackups run nightly.\n",
    "b.md": "# B\n\nInvoices are due in thirty days.\n",
    "c.md": "# C\n\nThe office opens at nine.\n",
}


@pytest.fixture
def kb(tmp_path: Path) -> Path:
    """``tmp_path`` with FILES ingested into ./data."""
    for name, text in FILES.items():
        write(tmp_path / "docs" / name, text)
    done = knowhub("ingest", str(tmp_path / "docs"), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    return tmp_path


def _hashes(kb: Path) -> dict[str, str]:
    listed = knowhub("docs", "--json", cwd=kb)
    assert listed.returncode == 0, listed.stderr
    return {r["source"]: r["doc_hash"] for r in json.loads(listed.stdout)}


def test_remove_refuses_a_prefix_that_is_not_hex_and_removes_nothing(kb: Path) -> None:
    for key in ("________", "a%%%%%%%", "%", "*", "[0-9a-f]*", "abc_ef12"):
        result = knowhub("remove", key, cwd=kb)
        assert result.returncode == 1, result.stdout
        assert f"path_or_doc_hash {key!r} is not a doc-hash prefix" in result.stderr
        assert "hex digits only (0-9, a-f)" in result.stderr
        assert result.stdout == ""
    assert len(_hashes(kb)) == 3


def test_remove_refuses_a_prefix_shorter_than_eight_hex_digits(kb: Path) -> None:
    short = _hashes(kb)["a.md"][:7]
    result = knowhub("remove", short, cwd=kb)
    assert result.returncode == 1
    assert f"{short!r} is too short: give at least 8 hex digits" in result.stderr
    assert len(_hashes(kb)) == 3


def test_remove_by_prefix_in_any_case_removes_that_document(kb: Path) -> None:
    prefix = _hashes(kb)["b.md"][:8].upper()
    result = knowhub("remove", prefix, cwd=kb)
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("removed b.md")
    assert set(_hashes(kb)) == {"a.md", "c.md"}


def test_a_prefix_matching_several_documents_removes_none_unless_all_matches(kb: Path) -> None:
    # Two documents whose hashes share 8 digits: rare (see validate.MIN_HASH_PREFIX), so
    # made here by rewriting the stored hashes.
    with sqlite3.connect(kb / "data" / "knowhub.sqlite3") as db:
        db.execute(
            "UPDATE documents SET doc_hash = 'abcdef12' || substr(doc_hash, 9) "
            "WHERE source IN ('a.md', 'c.md')"
        )
    db.close()
    hashes = _hashes(kb)

    refused = knowhub("remove", "abcdef12", cwd=kb)
    assert refused.returncode == 1
    assert "'abcdef12' matches 2 documents in collection 'default', so none was removed" in (
        refused.stderr
    )
    assert "--all-matches" in refused.stderr
    for source in ("a.md", "c.md"):
        assert f"{source}  {hashes[source]}" in refused.stderr, refused.stderr
    assert len(_hashes(kb)) == 3

    removed = knowhub("remove", "abcdef12", "--all-matches", cwd=kb)
    assert removed.returncode == 0, removed.stderr
    assert sorted(removed.stdout.splitlines()) == [
        "removed a.md (1 chunks)",
        "removed c.md (1 chunks)",
    ]
    assert set(_hashes(kb)) == {"b.md"}


def test_a_source_named_like_a_pattern_is_removed_by_its_name_only(tmp_path: Path) -> None:
    write(tmp_path / "docs" / "a_b%.md", "# Odd\n\nOdd name.\n")
    write(tmp_path / "docs" / "aXbY.md", "# Plain\n\nPlain name.\n")
    assert knowhub("ingest", str(tmp_path / "docs"), cwd=tmp_path).returncode == 0
    assert knowhub("remove", "a_b%", cwd=tmp_path).returncode == 1
    result = knowhub("remove", "a_b%.md", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == ["removed a_b%.md (1 chunks)"]
    assert set(_hashes(tmp_path)) == {"aXbY.md"}


def test_a_file_whose_name_is_not_utf8_is_removed_by_its_path(tmp_path: Path) -> None:
    # Sources and paths are stored with undecodable bytes escaped (knowhub.surrogates); the
    # path a shell passes carries the raw byte, as a surrogate, and must find them.
    path = tmp_path / "docs" / os.fsdecode(b"caf\xe9.md")
    write(path, "# Cafe\n\nCoffee at ten.\n")
    assert knowhub("ingest", str(tmp_path / "docs"), cwd=tmp_path).returncode == 0
    result = knowhub("remove", str(path), cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == ["removed caf\\xe9.md (1 chunks)"]
    assert _hashes(tmp_path) == {}
