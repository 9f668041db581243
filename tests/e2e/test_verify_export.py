"""``knowhub verify``, ``export`` and ``import`` through the real CLI, on real SQLite files.

Corruption is done the way it happens in life: straight into the SQLite file or on disk,
around knowhub, and verify must name each problem and ``--fix`` must undo it.
"""

from __future__ import annotations

import base64
import gzip
import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from knowhub import build_app
from knowhub.providers.stores.schema import fts_table
from knowhub.providers.stores.sqlite import DB_NAME
from tests.helpers import fast_settings, knowhub, write

TOPICS = {
    "guide/alpha.md": ["aardvark burrows", "anteater tongues", "armadillo shells"],
    "guide/beta.md": ["beetle wings", "bumblebee hives", "butterfly scales"],
    "gamma.md": ["gazelle herds", "giraffe necks", "gorilla troops"],
    "delta.md": ["dolphin pods", "dugong seagrass", "dingo packs"],
    "epsilon.md": ["eagle nests", "egret plumes", "emu strides"],
}
QUERIES = ["aardvark burrows", "bumblebee hives", "gorilla troops", "eagle nests", "wings"]


def paragraph(topic: str) -> str:
    words = topic.split()
    return " ".join(f"The {words[0]} studies note {words[1]} number {i}." for i in range(6))


def make_corpus(root: Path) -> None:
    # Small chunks give every document several, so a lost one is one of many.
    write(root / "knowhub.yaml", "chunking:\n  size: 300\n  overlap: 30\n")
    for source, topics in TOPICS.items():
        body = "\n\n".join(f"## {t.title()}\n\n{paragraph(t)}" for t in topics)
        write(root / "docs" / source, f"# {source}\n\n{body}\n")


def ok(*args: str, cwd: Path, env: dict[str, str] | None = None) -> str:
    result = knowhub(*args, cwd=cwd, env=env)
    assert result.returncode == 0, f"{args}\n{result.stdout}\n{result.stderr}"
    return result.stdout


def failed(*args: str, cwd: Path, env: dict[str, str] | None = None) -> str:
    result = knowhub(*args, cwd=cwd, env=env)
    assert result.returncode == 1, f"{args}\n{result.stdout}\n{result.stderr}"
    return result.stdout + result.stderr


def searches(data: Path) -> list[list[dict[str, Any]]]:
    """Each query's hits, searched in-process (the CLI calls above are what is under test)."""
    app = build_app(fast_settings(data))
    try:
        return [
            [h.to_dict() for h in app.collection("kb").search(q, top_k=8).hits] for q in QUERIES
        ]
    finally:
        app.close()


@pytest.fixture
def kb(tmp_path: Path) -> Path:
    make_corpus(tmp_path)
    ok("ingest", "docs", "-c", "kb", cwd=tmp_path)
    return tmp_path


def test_verify_names_each_corruption_and_fix_repairs_them(kb: Path) -> None:
    assert ok("verify", "--collection", "kb", cwd=kb).startswith("ok: 5 documents")

    db = sqlite3.connect(kb / "data" / DB_NAME)
    (cid,) = db.execute("SELECT id FROM collections WHERE name = 'kb'").fetchone()

    def chunk(source: str, index: int) -> tuple[int, str]:
        row = db.execute(
            "SELECT k.id, k.chunk_id FROM chunks k JOIN documents d ON d.id = k.document_id "
            "WHERE d.source = ? AND k.idx = ?",
            (source, index),
        ).fetchone()
        return int(row[0]), str(row[1])

    lexical_row, lexical_chunk = chunk("guide/alpha.md", 0)
    db.execute(f"DELETE FROM {fts_table(cid)} WHERE rowid = ?", (lexical_row,))
    lost_row, _ = chunk("guide/beta.md", 1)
    db.execute("DELETE FROM chunks WHERE id = ?", (lost_row,))  # its FTS row stays behind
    _, orphan_chunk = chunk("epsilon.md", 0)
    db.execute("DELETE FROM documents WHERE source = 'epsilon.md'")  # its chunks stay behind
    db.commit()
    db.close()
    write(kb / "docs" / "gamma.md", "# gamma.md\n\nA new text about quokka smiles only.\n")
    (kb / "docs" / "delta.md").unlink()

    report = failed("verify", cwd=kb)
    assert f"problem: kb: {lexical_chunk}: chunk of guide/alpha.md has no lexical (BM25) row" in (
        report
    )
    assert "problem: kb: guide/beta.md: has 2 of its 3 chunks (missing index 1)" in report
    assert f"problem: kb: row {lost_row}: lexical index row without a chunk" in report
    assert f"problem: kb: {orphan_chunk}: chunk without a document" in report
    gamma, delta = kb / "docs" / "gamma.md", kb / "docs" / "delta.md"
    assert f"problem: kb: gamma.md: file {gamma} changed since it was indexed" in report
    assert f"problem: kb: delta.md: file {delta} is gone" in report
    assert "FAILED: " in report

    result = knowhub("verify", "--json", cwd=kb)
    assert result.returncode == 1
    as_json = json.loads(result.stdout)
    assert not as_json["ok"]
    kinds = {p["kind"] for p in as_json["problems"]}
    assert kinds == {
        "missing_lexical",
        "missing_chunks",
        "orphan_lexical",
        "orphan_chunk",
        "changed_file",
        "missing_file",
    }

    other = {"KNOWHUB_EMBEDDER__HASHING__DIM": "128"}
    wrong = failed("verify", "-c", "kb", cwd=kb, env=other)
    assert "built with embedder hashing-256 (dim 256), but hashing-128 (dim 128)" in wrong

    fixed = ok("verify", "--fix", cwd=kb)
    assert "fixed: kb: delta.md: removed (its file is gone)" in fixed
    assert "fixed: kb: gamma.md: re-ingested" in fixed
    assert "fixed: kb: guide/alpha.md: re-ingested" in fixed
    assert "fixed: kb: guide/beta.md: re-ingested" in fixed
    assert fixed.rstrip().splitlines()[-1].startswith("ok: 3 documents")
    assert ok("verify", cwd=kb).startswith("ok: 3 documents")

    app = build_app(fast_settings(kb / "data"))
    try:
        docs = sorted(d.source for d in app.collection("kb").documents())
        assert docs == ["gamma.md", "guide/alpha.md", "guide/beta.md"]
        assert app.collection("kb").search("quokka smiles").hits[0].source == "gamma.md"
        aardvark = app.collection("kb").search("aardvark").hits[0]
        assert aardvark.source == "guide/alpha.md"
        assert aardvark.lexical_rank is not None, "the re-ingested chunk is back in BM25"
        assert all(h.source != "delta.md" for h in app.collection("kb").search("dolphin pods").hits)
    finally:
        app.close()


def test_export_import_round_trip_gives_identical_search_results(kb: Path) -> None:
    write(kb / "faq.csv", "question,answer\nWhere do emus stride?,Across the plains.\n")
    ok("faq", "import", "faq.csv", "-c", "kb", cwd=kb)
    before = searches(kb / "data")
    assert all(before), "every query finds something"

    for bundle in ("kb.jsonl", "kb.jsonl.gz"):
        stats = json.loads(ok("export", "-c", "kb", bundle, "--json", cwd=kb))
        assert (stats["documents"], stats["faq"]) == (5, 1)
        target = kb / f"copy-{bundle.replace('.', '-')}"
        ok("--data-dir", str(target), "import", bundle, cwd=kb)
        after = searches(target)
        for old, new in zip(before, after, strict=True):
            assert [h["chunk_id"] for h in new] == [h["chunk_id"] for h in old]
            for a, b in zip(old, new, strict=True):
                assert abs(a["score"] - b["score"]) < 1e-6
                assert {**a, "score": 0} == {**b, "score": 0}
    assert ok("--data-dir", str(target), "verify", cwd=kb).startswith("ok: 5 documents")
    # The new data dir holds one collection, "kb": a search naming none reads it.
    assert "gamma.md" in ok("--data-dir", str(target), "search", "gorilla troops", cwd=kb)

    app = build_app(fast_settings(target))
    try:
        version = app.collections()[0].version
        assert [e.question for e in app.collection("kb").faq()] == ["Where do emus stride?"]
        ok("--data-dir", str(target), "import", "kb.jsonl.gz", cwd=kb)
        assert app.collections()[0].version == version, "a second import rewrote documents"
    finally:
        app.close()

    assert (kb / "kb.jsonl.gz").read_bytes()[:2] == b"\x1f\x8b"
    plain = (kb / "kb.jsonl").read_text(encoding="utf-8").splitlines()
    zipped = gzip.decompress((kb / "kb.jsonl.gz").read_bytes()).decode().splitlines()
    assert zipped[1:] == plain[1:], "gzip changes the encoding only"
    header = json.loads(plain[0])
    assert (header["format"], header["format_version"]) == ("knowhub-bundle", 2)
    assert (header["embedder"], header["dim"], header["collection"]) == ("hashing-256", 256, "kb")
    chunk = next(json.loads(ln) for ln in plain if json.loads(ln)["kind"] == "chunk")
    assert len(base64.b64decode(chunk["vector"])) == 4 * 256
    assert chunk["tokens"] and "section_path" in chunk and "char_start" in chunk


def test_import_refuses_another_embedder_a_damaged_line_and_an_unknown_version(
    kb: Path,
) -> None:
    ok("export", "-c", "kb", "kb.jsonl", cwd=kb)
    other = {"KNOWHUB_EMBEDDER__HASHING__DIM": "128"}
    refused = failed("--data-dir", "other", "import", "kb.jsonl", cwd=kb, env=other)
    assert "built with embedder hashing-256 (dim 256), but hashing-128 (dim 128)" in refused

    lines = (kb / "kb.jsonl").read_text(encoding="utf-8").splitlines()
    damaged = [*lines[:4], lines[4][: len(lines[4]) // 2], *lines[5:]]
    write(kb / "damaged.jsonl", "\n".join(damaged) + "\n")
    error = failed("--data-dir", "fresh", "import", "damaged.jsonl", cwd=kb)
    assert "damaged.jsonl: line 5: " in error and "export it again" in error
    docs = knowhub("--data-dir", "fresh", "collections", "--json", cwd=kb)
    assert json.loads(docs.stdout) == [], "nothing is written from a damaged bundle"
    write(kb / "faq.csv", "question,answer\nWhere do emus stride?,Across the plains.\n")
    no_home = failed("--data-dir", "fresh", "faq", "import", "faq.csv", cwd=kb)
    assert "error: unknown collection 'default' (known: none yet)" in no_home
    docs = knowhub("--data-dir", "fresh", "collections", "--json", cwd=kb)
    assert json.loads(docs.stdout) == [], "faq import creates no empty collection"

    write(kb / "truncated.jsonl", "\n".join(lines[:-3]) + "\n")
    assert "truncated" in failed("--data-dir", "fresh", "import", "truncated.jsonl", cwd=kb)

    header = {**json.loads(lines[0]), "format_version": 99}
    write(kb / "future.jsonl", "\n".join([json.dumps(header), *lines[1:]]) + "\n")
    future = failed("--data-dir", "fresh", "import", "future.jsonl", cwd=kb)
    assert "bundle format version 99 is not one this knowhub" in future


def test_pictures_travel_in_the_bundle_checked_and_a_version_1_bundle_still_imports(
    tmp_path: Path,
) -> None:
    from knowhub.providers.images import ImageStore
    from tests.pictures_helpers import text_png, word_with_figure

    figure = text_png("Kiln temperature limit 1200 degrees")
    word_with_figure(tmp_path / "docs" / "kiln.docx", figure)
    ok("ingest", "docs", "-c", "kb", cwd=tmp_path)
    stats = json.loads(ok("export", "-c", "kb", "kb.jsonl", "--json", cwd=tmp_path))
    assert stats["images"] == 1
    lines = (tmp_path / "kb.jsonl").read_text(encoding="utf-8").splitlines()
    (picture,) = [json.loads(ln) for ln in lines if json.loads(ln)["kind"] == "image"]
    assert base64.b64decode(picture["data"]) == figure
    ok("--data-dir", "copy", "import", "kb.jsonl", cwd=tmp_path)
    assert ImageStore(tmp_path / "copy" / "images").get(picture["sha256"]) == (figure, "image/png")
    found = ok("--data-dir", "copy", "search", "kiln temperature", "--json", cwd=tmp_path)
    assert json.loads(found)[0]["metadata"]["image"] == picture["sha256"]

    tampered = {**picture, "data": base64.b64encode(figure[:-1] + b"x").decode()}
    bad = [json.dumps(tampered) if json.loads(ln)["kind"] == "image" else ln for ln in lines]
    write(tmp_path / "tampered.jsonl", "\n".join(bad) + "\n")
    error = failed("--data-dir", "fresh", "import", "tampered.jsonl", cwd=tmp_path)
    assert "does not hold what its hash names" in error and "export it again" in error

    old = [ln for ln in lines if json.loads(ln)["kind"] != "image"]
    end = {k: v for k, v in json.loads(old[-1]).items() if k != "images"}
    old = [json.dumps({**json.loads(old[0]), "format_version": 1}), *old[1:-1], json.dumps(end)]
    write(tmp_path / "v1.jsonl", "\n".join(old) + "\n")
    v1 = json.loads(ok("--data-dir", "v1", "import", "v1.jsonl", "--json", cwd=tmp_path))
    assert (v1["documents"], v1["images"]) == (1, 0)


def test_verify_of_an_unknown_collection_is_an_error(kb: Path) -> None:
    result = knowhub("verify", "-c", "nope", cwd=kb)
    assert result.returncode == 1
    assert "unknown collection 'nope'" in result.stderr
