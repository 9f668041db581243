"""A man page saved as text, searched with the `knowhub` command: the hit is cited by the
option entry it is, as a Markdown hit is by its headings."""

from __future__ import annotations

import json
from pathlib import Path

from tests.helpers import knowhub, write
from tests.man_pages import rendered


def test_search_cites_a_man_page_hit_by_its_section_and_option(tmp_path: Path) -> None:
    write(tmp_path / "docs" / "tar.txt", rendered("tar", "man -Tutf8"))
    ingested = knowhub("ingest", str(tmp_path / "docs"), cwd=tmp_path)
    assert ingested.returncode == 0, ingested.stderr
    out = knowhub("search", "tar --list", "-k", "3", cwd=tmp_path).stdout
    assert "tar.txt, § tar(1) > DESCRIPTION > Operation mode > -t, --list, lines 1" in out
    hits = json.loads(knowhub("search", "tar --list", "--json", cwd=tmp_path).stdout)
    assert hits[0]["section_path"] == "tar(1) > DESCRIPTION > Operation mode > -t, --list"
    assert hits[0]["text"].startswith("-t, --list\n")
    explained = knowhub("search", "tar -x", "-k", "1", "--explain", cwd=tmp_path).stdout
    assert "§ tar(1) > DESCRIPTION > Operation mode > -x, --extract, --get" in explained
    assert "entries defining the option asked put first" in explained
