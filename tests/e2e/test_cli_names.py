"""A file whose name is not UTF-8 (``b"caf\\xe9.txt"``) is indexed, found, kept unchanged,
pruned, and its ingest run traced: a real `knowhub` subprocess on real files."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from tests.helpers import knowhub, write

ESCAPED = "caf\\xe9.txt"  # the source name: the undecodable byte written as \xe9


@pytest.fixture
def docs(tmp_path: Path) -> Path:
    folder = tmp_path / "docs"
    write(folder / "good.md", "# Good\n\nBackups run every night.\n")
    try:  # the name's bytes on disk are b"caf\xe9.txt"; Python shows them as "caf\udce9.txt"
        (folder / os.fsdecode(b"caf\xe9.txt")).write_bytes(
            b"The espresso machine is descaled every Friday.\n"
        )
    except OSError as exc:  # e.g. a file system that only takes UTF-8 names
        pytest.skip(f"cannot create a non-UTF-8 file name here: {exc}")
    return folder


def test_non_utf8_file_name_is_indexed_found_and_traced(docs: Path, tmp_path: Path) -> None:
    first = knowhub("ingest", str(docs), cwd=tmp_path)
    assert first.returncode == 0, first.stdout + first.stderr
    assert "2 added" in first.stdout and "0 failed" in first.stdout
    hits = json.loads(knowhub("search", "espresso descaled", "--json", cwd=tmp_path).stdout)
    assert hits and hits[0]["source"] == ESCAPED
    shown = knowhub("search", "espresso descaled", cwd=tmp_path)
    assert shown.returncode == 0 and ESCAPED in shown.stdout
    again = knowhub("ingest", str(docs), cwd=tmp_path)
    assert "2 unchanged" in again.stdout, again.stdout
    traces = json.loads(knowhub("traces", "--json", cwd=tmp_path).stdout)
    assert traces["summary"]["by_kind"].get("ingest") == 2, traces["summary"]
    assert "surrogates not allowed" not in first.stderr + again.stderr
    verified = knowhub("verify", cwd=tmp_path)
    assert verified.returncode == 0, verified.stdout + verified.stderr


def test_non_utf8_file_name_is_pruned_when_deleted(docs: Path, tmp_path: Path) -> None:
    assert knowhub("ingest", str(docs), cwd=tmp_path).returncode == 0
    (docs / os.fsdecode(b"caf\xe9.txt")).unlink()
    pruned = knowhub("ingest", str(docs), "--prune", cwd=tmp_path)
    assert "1 unchanged" in pruned.stdout and "1 removed" in pruned.stdout, pruned.stdout
    assert ESCAPED not in knowhub("docs", cwd=tmp_path).stdout
