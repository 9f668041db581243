"""Hostile and oversized files cost bounded memory: a real `knowhub ingest` subprocess,
its peak RSS measured from outside (``ru_maxrss`` of the children of a small wrapper)."""

from __future__ import annotations

import io
import json
import struct
import subprocess
import sys
import zipfile
import zlib
from pathlib import Path

from docx import Document

from tests.helpers import cli_env, write

_PARAGRAPH = b"<w:p><w:r><w:t>a</w:t></w:r></w:p>"
# Run under an address-space limit: were a bomb unpacked again, the run would fail with
# MemoryError instead of taking the machine's memory.
_ADDRESS_SPACE = 6 * 2**30
_WRAPPER = """
import json, resource, subprocess, sys
limit = int(sys.argv[1])
def cap():
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
run = subprocess.run(sys.argv[2:], capture_output=True, text=True, timeout=300, preexec_fn=cap)
peak_kb = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
print(json.dumps({"rc": run.returncode, "out": run.stdout, "err": run.stderr, "peak_kb": peak_kb}))
"""


def _ingest_measured(
    cwd: Path, *args: str, env: dict[str, str] | None = None
) -> tuple[subprocess.CompletedProcess[str], int]:
    """``knowhub ingest ARGS`` and its peak RSS in MB (the largest of its processes)."""
    wrapper = subprocess.run(
        [
            sys.executable,
            "-c",
            _WRAPPER,
            str(_ADDRESS_SPACE),
            sys.executable,
            "-m",
            "knowhub",
            "ingest",
            *args,
        ],
        cwd=cwd,
        env=cli_env(env),
        capture_output=True,
        text=True,
        timeout=320,
    )
    assert wrapper.returncode == 0, wrapper.stderr
    result = json.loads(wrapper.stdout)
    run = subprocess.CompletedProcess(args, result["rc"], result["out"], result["err"])
    return run, result["peak_kb"] // 1024


def _zip_bomb_docx(path: Path, unpacked_mb: int) -> Path:
    """A valid .docx whose document.xml holds ``unpacked_mb`` MB of empty paragraphs, yet
    the file is under 2 MB: one deflated 1 MB block, repeated (a full flush ends each
    block, so every copy decodes on its own). CRCs are right: it is a real zip."""
    template = io.BytesIO()
    Document().save(template)
    with zipfile.ZipFile(template) as archive:
        parts = {name: archive.read(name) for name in archive.namelist()}
    head, tail = parts["word/document.xml"].split(b"<w:body>")
    head += b"<w:body>"
    block = _PARAGRAPH * (2**20 // len(_PARAGRAPH))
    packer = zlib.compressobj(9, zlib.DEFLATED, -15)
    packed_head = packer.compress(head) + packer.flush(zlib.Z_FULL_FLUSH)
    packed_block = packer.compress(block) + packer.flush(zlib.Z_FULL_FLUSH)
    packed = packed_head + packed_block * unpacked_mb + packer.compress(tail) + packer.flush()
    crc = zlib.crc32(head)
    for _ in range(unpacked_mb):
        crc = zlib.crc32(block, crc)
    crc = zlib.crc32(tail, crc)
    size = len(head) + len(block) * unpacked_mb + len(tail)
    entries = [
        (name, zipfile.ZIP_STORED, data, zlib.crc32(data), len(data))
        for name, data in parts.items()
        if name != "word/document.xml"
    ]
    entries.append(("word/document.xml", zipfile.ZIP_DEFLATED, packed, crc, size))
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(_zip(entries))
    return path


def _zip(entries: list[tuple[str, int, bytes, int, int]]) -> bytes:
    """A zip archive of (name, method, stored bytes, crc32, unpacked size) entries."""
    body, directory = io.BytesIO(), io.BytesIO()
    for name, method, data, crc, size in entries:
        raw = name.encode()
        offset = body.tell()
        body.write(
            struct.pack(
                "<IHHHHHIIIHH",
                0x04034B50,
                20,
                0,
                method,
                0,
                0x21,
                crc,
                len(data),
                size,
                len(raw),
                0,
            )
            + raw
            + data
        )
        directory.write(
            struct.pack(
                "<IHHHHHHIIIHHHHHII",
                0x02014B50,
                20,
                20,
                0,
                method,
                0,
                0x21,
                crc,
                len(data),
                size,
                len(raw),
                0,
                0,
                0,
                0,
                0,
                offset,
            )
            + raw
        )
    end = struct.pack(
        "<IHHHHIIH", 0x06054B50, 0, 0, len(entries), len(entries), directory.tell(), body.tell(), 0
    )
    return body.getvalue() + directory.getvalue() + end


def test_zip_bomb_docx_fails_alone_quickly_with_bounded_memory(tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    bomb = _zip_bomb_docx(docs / "bomb.docx", unpacked_mb=300)
    assert bomb.stat().st_size < 2 * 2**20  # small packed …
    assert sum(i.file_size for i in zipfile.ZipFile(bomb).infolist()) > 3 * 10**8  # … huge
    write(docs / "good.md", "# Good\n\nBackups run every night.\n")
    run, peak_mb = _ingest_measured(tmp_path, str(docs))
    assert "1 added" in run.stdout and "1 failed" in run.stdout, run.stdout + run.stderr
    unpacked = sum(i.file_size for i in zipfile.ZipFile(bomb).infolist())
    reason = f"bomb.docx: too large: unpacks to {unpacked} bytes > limit 200000000; raise "
    assert reason + "ingest.max_file_bytes" in run.stdout
    # Measured: 59 MB; before the fix 5.5 GB, still parsing when killed after 300 s.
    assert peak_mb < 400, peak_mb


def test_large_text_file_fails_past_the_character_limit_with_bounded_memory(
    tmp_path: Path,
) -> None:
    docs = tmp_path / "docs"
    line = "Backups run every night at two and are kept for thirty five days.\n"
    write(docs / "big.txt", line * (40 * 10**6 // len(line)))  # 40 MB
    write(docs / "good.md", "# Good\n\nThe espresso machine is cleaned on Fridays.\n")
    limits = {"KNOWHUB_INGEST__MAX_EXTRACTED_CHARS": "5000000"}
    run, peak_mb = _ingest_measured(tmp_path, str(docs), env=limits)
    assert "1 added" in run.stdout and "1 failed" in run.stdout, run.stdout + run.stderr
    reason = "big.txt: extracts to more than 5000000 characters; raise ingest.max_extracted_chars"
    assert reason in run.stdout
    assert peak_mb < 250, peak_mb  # measured 100 MB: the file's 40 MB once, 5 M characters


def test_file_over_the_byte_limit_is_reported_with_its_size(tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    big = write(docs / "big.txt", "x" * 3000 + "\n")
    write(docs / "good.md", "# Good\n\nText.\n")
    run, _ = _ingest_measured(tmp_path, str(docs), env={"KNOWHUB_INGEST__MAX_FILE_BYTES": "2000"})
    assert "1 added" in run.stdout and "1 failed" in run.stdout, run.stdout + run.stderr
    size = big.stat().st_size
    assert f"big.txt: too large: {size} bytes > limit 2000; raise ingest.max_file_bytes" in (
        run.stdout
    )


def test_old_max_file_mb_setting_names_its_replacement(tmp_path: Path) -> None:
    write(tmp_path / "knowhub.yaml", "ingest:\n  max_file_mb: 10\n")
    write(tmp_path / "docs/good.md", "# Good\n\nText.\n")
    run, _ = _ingest_measured(tmp_path, "docs")
    assert run.returncode != 0
    assert "ingest.max_file_bytes" in run.stderr and "max_file_bytes: 10485760" in run.stderr
