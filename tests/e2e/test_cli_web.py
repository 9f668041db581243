"""``knowhub ingest URL`` as a user runs it, against a real nginx on 127.0.0.1: progress on
stderr (pages fetched, not modified), the report on stdout, a re-run that changes nothing."""

from __future__ import annotations

import json
from pathlib import Path

from tests.helpers import knowhub, write
from tests.web_site import nginx_site

CONFIG = "ingest:\n  web:\n    allow_private_networks: [127.0.0.0/8]\n"


def test_ingest_url_crawls_then_a_rerun_finds_every_page_not_modified(tmp_path: Path) -> None:
    write(tmp_path / "knowhub.yaml", CONFIG)
    data = str(tmp_path / "data")
    with nginx_site(tmp_path) as site:
        url = site.url("docs/tutorial/")
        args = ("--data-dir", data, "ingest", url, "--collection", "docs", "--depth", "1")
        first = knowhub(*args, "--exclude", "*/big.html", cwd=tmp_path)
        assert f"fetching {url}" in first.stderr
        assert "fetched" in first.stderr and "disallowed by robots.txt" in first.stdout
        assert first.returncode == 1  # the refused redirects failed (and are listed)
        assert "refused: 169.254.169.254 is a link-local address" in first.stdout
        again = knowhub(*args, "--exclude", "*/big.html", "--json", cwd=tmp_path)
    report = json.loads(again.stdout)
    assert report["collection"] == "docs"
    assert report["embedded"] == 0 and not report["added"] and not report["updated"]
    assert report["fetched"]["not_modified"] >= 4
    assert site.url("docs/tutorial/controlflow.html") in report["unchanged"]
    assert not any("big.html" in entry["source"] for entry in report["failed"])


def test_crawl_options_without_a_url_are_a_usage_error(tmp_path: Path) -> None:
    docs = write(tmp_path / "docs" / "a.md", "# A\n\ntext\n").parent
    result = knowhub(
        "--data-dir", str(tmp_path / "data"), "ingest", str(docs), "--depth", "2", cwd=tmp_path
    )
    assert result.returncode == 2
    assert "--depth and --max-pages apply to a URL" in result.stderr


def test_a_url_of_another_scheme_is_refused_naming_the_fix(tmp_path: Path) -> None:
    result = knowhub(
        "--data-dir", str(tmp_path / "data"), "ingest", "http://good@10.0.0.1/", cwd=tmp_path
    )
    assert result.returncode != 0
    assert "ingest.web.headers" in result.stderr
