"""The `knowhub` command as a user runs it: a real subprocess, real files, real SQLite."""

from __future__ import annotations

import json
import os
import re
import socket
import subprocess
import sys
from pathlib import Path

import click
import pytest

from knowhub.interfaces.cli import cli
from tests.helpers import knowhub, knowhub_on_terminal, write


@pytest.fixture
def docs(tmp_path: Path) -> Path:
    write(
        tmp_path / "docs/guide.md", "# Guide\n\n## Backups\n\nBackups run every night at 02:30.\n"
    )
    write(tmp_path / "docs/ru.txt", "Резервные копии хранятся тридцать пять дней.\n")
    write(tmp_path / "docs/zh.md", "# 手册\n\n## 报销\n\n出差住宿每晚最多报销六百元。\n")
    return tmp_path / "docs"


def test_ingest_prints_summary_and_second_run_is_unchanged(docs: Path, tmp_path: Path) -> None:
    first = knowhub("ingest", str(docs), cwd=tmp_path)
    assert first.returncode == 0, first.stderr
    assert "3 added" in first.stdout and "0 failed" in first.stdout
    assert (tmp_path / "data" / "knowhub.sqlite3").exists()  # ./data by default
    second = knowhub("ingest", str(docs), cwd=tmp_path)
    assert "3 unchanged" in second.stdout and "0 embedded" in second.stdout


def test_search_json_has_every_citation_field(docs: Path, tmp_path: Path) -> None:
    knowhub("ingest", str(docs), cwd=tmp_path)
    result = knowhub("search", "when do backups run", "--json", "-k", "2", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    hits = json.loads(result.stdout)
    assert hits and hits[0]["source"] == "guide.md"
    for key in (
        "chunk_id",
        "score",
        "source",
        "text",
        "page",
        "section_path",
        "line_start",
        "line_end",
        "char_start",
        "char_end",
        "metadata",
    ):
        assert key in hits[0]
    assert hits[0]["section_path"] == "Guide > Backups"


def test_search_in_chinese_and_russian(docs: Path, tmp_path: Path) -> None:
    knowhub("ingest", str(docs), cwd=tmp_path)
    zh = json.loads(knowhub("search", "住宿报销多少钱", "--json", cwd=tmp_path).stdout)
    ru = json.loads(knowhub("search", "сколько дней хранят копии", "--json", cwd=tmp_path).stdout)
    assert zh[0]["source"] == "zh.md"
    assert ru[0]["source"] == "ru.txt"


def test_text_output_shows_citation_and_chunk_id(docs: Path, tmp_path: Path) -> None:
    knowhub("ingest", str(docs), cwd=tmp_path)
    out = knowhub("search", "backups night", cwd=tmp_path).stdout
    assert "guide.md, § Guide > Backups, lines" in out
    chunk_id = out.split("chunk ", 1)[1].split()[0]
    shown = knowhub("show", chunk_id, cwd=tmp_path)
    assert shown.returncode == 0 and "Backups run every night at 02:30." in shown.stdout


def test_html_hits_cite_lines_of_the_file_and_bad_bytes_only_warn(
    docs: Path, tmp_path: Path
) -> None:
    # Cited "lines 43-48" (of the extracted text) for a paragraph at line 77 of the file;
    # a file with one bad byte was rejected whole ("unknown text encoding").
    head = "<html><head><title>Release notes</title></head><body>\n" + "<br>\n" * 75
    (docs / "release-notes.html").write_text(
        head + "<p>The scheduler now retries failed jobs three times.</p>\n</body></html>\n"
    )
    (docs / "damaged.md").write_bytes("Ежедневные отчёты: ".encode() * 3 + b"\xff ok\n")
    ingested = knowhub("ingest", str(docs), cwd=tmp_path)
    assert ingested.returncode == 0 and "5 added" in ingested.stdout, ingested.stderr
    assert "warning: " in ingested.stderr and "damaged.md: 1 invalid UTF-8" in ingested.stderr
    assert "at byte offset 105 replaced" in ingested.stderr
    out = knowhub("search", "scheduler retries failed jobs", "-k", "1", cwd=tmp_path).stdout
    assert "release-notes.html, lines 77-77" in out


def test_filters_tags_and_collections(docs: Path, tmp_path: Path) -> None:
    knowhub(
        "ingest", str(docs / "guide.md"), "--collection", "ops", "--tag", "team=ops", cwd=tmp_path
    )
    hits = json.loads(
        knowhub(
            "search", "backups", "-c", "ops", "--filter", "team=ops", "--json", cwd=tmp_path
        ).stdout
    )
    assert hits and hits[0]["metadata"]["team"] == "ops"
    none = json.loads(
        knowhub(
            "search", "backups", "-c", "ops", "--filter", "team=hr", "--json", cwd=tmp_path
        ).stdout
    )
    assert none == []
    english = json.loads(
        knowhub(
            "search", "backups", "-c", "ops", "--filter", "lang=en", "--json", cwd=tmp_path
        ).stdout
    )
    assert english and english[0]["source"] == "guide.md"
    typo = knowhub("search", "backups", "-c", "ops", "--filter", "teem=ops", cwd=tmp_path)
    assert typo.returncode == 1 and "error: filters: unknown key 'teem'" in typo.stderr
    assert "a metadata key its documents have (roles, team, visibility)" in typo.stderr
    assert "ops" in knowhub("collections", cwd=tmp_path).stdout
    assert "guide.md" in knowhub("docs", "-c", "ops", cwd=tmp_path).stdout


def test_remove_and_prune(docs: Path, tmp_path: Path) -> None:
    knowhub("ingest", str(docs), cwd=tmp_path)
    removed = knowhub("remove", str(docs / "ru.txt"), cwd=tmp_path)
    assert removed.returncode == 0 and "removed ru.txt" in removed.stdout
    (docs / "zh.md").unlink()
    pruned = knowhub("ingest", str(docs), "--prune", "--json", cwd=tmp_path)
    report = json.loads(pruned.stdout)
    assert report["removed"] == ["zh.md"]
    assert "zh.md" not in knowhub("docs", cwd=tmp_path).stdout


def test_tags_persist_and_a_renamed_folder_is_moved_not_added(docs: Path, tmp_path: Path) -> None:
    knowhub("ingest", str(docs), "--tag", "team=ops", cwd=tmp_path)
    again = knowhub("ingest", str(docs), "--prune", cwd=tmp_path)  # as the README goes on
    assert "3 unchanged" in again.stdout and "retagged" not in again.stdout
    retagged = knowhub("ingest", str(docs), "--tag", "team=", cwd=tmp_path)
    assert "3 retagged" in retagged.stdout and "0 embedded" in retagged.stdout
    renamed = docs.rename(tmp_path / "Docs")
    moved = knowhub("ingest", str(renamed), "--prune", cwd=tmp_path)
    assert "3 moved" in moved.stdout and "0 added" in moved.stdout, moved.stdout
    assert "moved guide.md → guide.md" in moved.stdout
    listed = json.loads(knowhub("docs", "--json", cwd=tmp_path).stdout)
    assert sorted(d["source"] for d in listed) == ["guide.md", "ru.txt", "zh.md"]


def test_failed_file_gives_reason_and_nonzero_exit(docs: Path, tmp_path: Path) -> None:
    (docs / "broken.pdf").write_bytes(b"%PDF-1.7 truncated garbage")
    (docs / "empty.md").write_text("   \n")
    result = knowhub("ingest", str(docs), cwd=tmp_path)
    assert result.returncode == 1
    assert "3 added" in result.stdout and "2 failed" in result.stdout
    assert "failed broken.pdf:" in result.stdout and "failed empty.md:" in result.stdout
    assert "Traceback" not in result.stderr + result.stdout


def test_fifo_and_symlinked_file_in_a_folder(docs: Path, tmp_path: Path) -> None:
    # `mkfifo d/x.txt; knowhub ingest d` blocked forever, writing nothing.
    os.mkfifo(docs / "x.txt")
    write(tmp_path / "elsewhere" / "kept.md", "# Kept\n\nA linked file from elsewhere.\n")
    (docs / "linked.md").symlink_to(tmp_path / "elsewhere" / "kept.md")
    result = knowhub("ingest", str(docs), cwd=tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "4 added" in result.stdout and "0 failed, 1 skipped" in result.stdout
    assert "skipped x.txt: is a FIFO (named pipe), not a regular file" in result.stdout
    traced = json.loads(knowhub("traces", "--json", "--kind", "ingest", cwd=tmp_path).stdout)
    (skip,) = traced["traces"][0]["ingest"]["skipped"]  # /ui/ingestion shows the run's skips
    assert skip["source"] == "x.txt" and "FIFO" in skip["reason"]
    # The local CLI follows symlinked files (the README says so).
    assert "linked.md" in knowhub("search", "linked file elsewhere", cwd=tmp_path).stdout
    named = knowhub("ingest", str(docs / "x.txt"), cwd=tmp_path)
    assert named.returncode == 1
    assert "failed x.txt: x.txt: is a FIFO (named pipe)" in named.stdout
    assert "no such file" not in named.stdout


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["search", "backups", "-k", "0"], "top_k must be between 1 and 100"),
        (["search", "backups", "--min-score", "-1"], "min_score must be a number >= 0"),
        (["search", "   "], "query is empty"),
        (["search", "backups", "-c", "Bad Name"], "invalid collection name"),
        (["search", "backups", "-c", "nope"], "unknown collection 'nope'"),
        (["search", "backups", "--filter", "novalue"], "is not key=value"),
        (["show", "0000_missing"], "no chunk with id"),
        (["remove", "nothing-here.md"], "no document"),
    ],
)
def test_bad_arguments_get_one_clear_line(
    docs: Path, tmp_path: Path, args: list[str], message: str
) -> None:
    knowhub("ingest", str(docs), cwd=tmp_path)
    result = knowhub(*args, cwd=tmp_path)
    assert result.returncode == 1
    assert message in result.stderr
    assert "Traceback" not in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1


def test_bad_config_names_the_fix(docs: Path, tmp_path: Path) -> None:
    (tmp_path / "knowhub.yaml").write_text("embedder: {provider: nope}\n")
    result = knowhub("ingest", str(docs), cwd=tmp_path, env={"KNOWHUB_EMBEDDER__PROVIDER": "nope"})
    assert result.returncode == 1
    assert "unknown embedder provider 'nope'" in result.stderr and "hashing" in result.stderr


def test_data_dir_from_flag_and_environment(docs: Path, tmp_path: Path) -> None:
    knowhub("--data-dir", str(tmp_path / "flag"), "ingest", str(docs), cwd=tmp_path)
    knowhub("ingest", str(docs), cwd=tmp_path, env={"KNOWHUB_DATA_DIR": str(tmp_path / "env")})
    assert (tmp_path / "flag" / "knowhub.sqlite3").exists()
    assert (tmp_path / "env" / "knowhub.sqlite3").exists()


def test_debug_shows_traceback(tmp_path: Path) -> None:
    result = knowhub("--debug", "search", "x", "-c", "missing", cwd=tmp_path)
    assert result.returncode == 1 and "Traceback" in result.stderr


def test_every_command_has_help() -> None:
    assert isinstance(cli, click.Group)
    context = click.Context(cli)
    for name in cli.list_commands(context):  # the lazily loaded ones too
        command = cli.get_command(context, name)
        assert command is not None and command.help, f"`knowhub {name}` has no help text"
        result = subprocess.run(
            [sys.executable, "-m", "knowhub", name, "--help"],
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert result.returncode == 0 and "Usage:" in result.stdout


def test_progress_counts_chunks_embedded_on_a_terminal(docs: Path, tmp_path: Path) -> None:
    status, output = knowhub_on_terminal("ingest", str(docs), cwd=tmp_path)
    assert status == 0, output
    *_, last = re.findall(r"\ringesting: [^\r\x1b]*", output)  # one line, redrawn in place
    done = r"\ringesting: (\d+)/\1 chunks embedded \(100\.0 %\), 3/3 files, .*done in"
    assert re.match(done, last), output
    piped = knowhub("ingest", str(docs), "--collection", "other", cwd=tmp_path)
    assert "ingesting" not in piped.stderr + piped.stdout  # done before a log line is due


@pytest.mark.parametrize("transport", ["stdio", "http"])
def test_serve_mcp_refuses_a_docs_folder_that_does_not_exist(
    tmp_path: Path, transport: str
) -> None:
    # It warned on stderr only, created the folder and served it empty: a typo looked
    # like documents with nothing to say.
    result = knowhub("serve", "mcp", "--transport", transport, "--docs", "notes", cwd=tmp_path)
    assert result.returncode == 1
    assert f"error: --docs notes: {tmp_path / 'notes'} does not exist: give the folder" in (
        result.stderr
    )
    assert not (tmp_path / "notes").exists()


@pytest.mark.parametrize("command", [["http"], ["mcp", "--transport", "http", "--docs", "docs"]])
def test_a_server_on_a_taken_port_says_so_and_not_that_it_listens(
    docs: Path, tmp_path: Path, command: list[str]
) -> None:
    # "knowhub HTTP API on http://…" came first, then uvicorn's raw "[Errno 98] …".
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        result = knowhub("serve", *command, "--port", str(port), cwd=tmp_path)
    assert result.returncode == 1
    assert f"error: port {port} is in use on 127.0.0.1: choose another with --port" in (
        result.stderr
    )
    assert "Errno" not in result.stderr and "on http://" not in result.stderr
