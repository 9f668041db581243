"""`knowhub ingest` reads archives, mailboxes and a /usr/share/doc-style folder (this machine's
own gzip-compressed Markdown, changelog and HTML), and `knowhub search` cites each member
inside its archive; a zip bomb and a tar.gz of a 200 MB member name are refused, naming the
archive and the setting or header, with the process's memory bounded."""

from __future__ import annotations

import gzip
import json
import mailbox
import shutil
import subprocess
import sys
import tarfile
import zipfile
from email.message import EmailMessage
from pathlib import Path

from tests.helpers import WAIT_S, cli_env, knowhub, long_name_tgz

# Debian's documentation of packages every Debian system (and this test image) has: apt, and
# SQLite's library, which Python's sqlite3 module links.
REAL_DOCS = {
    "apt/README.md.gz": "markdown",
    "apt/changelog.gz": "text",
    "libsqlite3-0/changelog.html.gz": "html",
}


def _search(data: str, query: str, cwd: Path) -> list[dict[str, object]]:
    result = knowhub("--data-dir", data, "search", query, "--json", cwd=cwd)
    assert result.returncode == 0, result.stderr
    hits: list[dict[str, object]] = json.loads(result.stdout)
    return hits


def test_members_of_a_zip_a_tgz_and_an_mbox_are_ingested_and_cited(tmp_path: Path) -> None:
    docs, data = tmp_path / "docs", str(tmp_path / "data")
    docs.mkdir()
    with zipfile.ZipFile(docs / "bundle.zip", "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("docs/guide.md", "# Guide\n\nThe quokkabeam starts the turbine.\n")
    with tarfile.open(docs / "site.tgz", "w:gz") as archive:
        page = docs / "page.html"
        page.write_text("<h1>Setup</h1><p>Calibrate the lynxfire gauge.</p>")
        archive.add(page, "site/page.html")
        page.unlink()
    box = mailbox.mbox(docs / "team.mbox")
    mail = EmailMessage()
    mail["Subject"], mail["From"] = "Standup", "ann@example.org"
    mail.set_content("The zebrafinch release slips a week.")
    box.add(mail)
    box.close()
    result = knowhub("--data-dir", data, "ingest", str(docs), cwd=tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    assert _search(data, "quokkabeam turbine", tmp_path)[0]["source"] == (
        "bundle.zip!/docs/guide.md"
    )
    assert _search(data, "lynxfire gauge", tmp_path)[0]["source"] == "site.tgz!/site/page.html"
    assert _search(data, "zebrafinch release", tmp_path)[0]["source"] == (
        "team.mbox!/1-standup.eml"
    )
    one = knowhub("--data-dir", data, "remove", "bundle.zip!/docs/guide.md", cwd=tmp_path)
    assert one.stdout.startswith("removed bundle.zip!/docs/guide.md ("), one.stdout + one.stderr
    all_of = knowhub("--data-dir", data, "remove", "site.tgz", "--all-matches", cwd=tmp_path)
    assert all_of.stdout.startswith("removed site.tgz!/site/page.html ("), all_of.stderr


def _distinctive_line(text: str) -> str:
    """A line of the document long enough to find it again among the others."""
    lines = [line.strip(" #*-<>/") for line in text.splitlines()]
    return max((line for line in lines if line.isascii()), key=lambda line: len(set(line.split())))


def test_a_usr_share_doc_folder_and_its_tarball_are_ingested_and_cited(tmp_path: Path) -> None:
    doc, data = tmp_path / "doc", str(tmp_path / "data")
    for relative in REAL_DOCS:
        real = Path("/usr/share/doc") / relative
        assert real.is_file(), f"{real} is missing: this test needs Debian's apt and libsqlite3-0"
        (doc / relative).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(real, doc / relative)
    with tarfile.open(tmp_path / "doc.tar.gz", "w:gz") as archive:
        archive.add(doc / "apt", "apt")
    result = knowhub(
        "--data-dir", data, "ingest", str(doc), str(tmp_path / "doc.tar.gz"), cwd=tmp_path
    )
    assert result.returncode == 0, result.stdout + result.stderr
    for relative, kind in REAL_DOCS.items():
        text = gzip.decompress((doc / relative).read_bytes()).decode("utf-8", "replace")
        if kind == "html":
            text = "".join(part.split(">")[-1] for part in text.split("<"))
        query = _distinctive_line(text)
        sources = [hit["source"] for hit in _search(data, query, tmp_path)[:2]]
        assert relative in sources, (query, sources)
    readme = _distinctive_line(gzip.decompress((doc / "apt/README.md.gz").read_bytes()).decode())
    sources = [hit["source"] for hit in _search(data, readme, tmp_path)[:2]]
    assert "doc.tar.gz!/apt/README.md.gz" in sources


def test_a_zip_bomb_is_refused_naming_the_archive_and_the_setting(tmp_path: Path) -> None:
    bomb = tmp_path / "bomb.zip"
    zeros = bytes(1 << 20)
    with (
        zipfile.ZipFile(bomb, "w", zipfile.ZIP_DEFLATED) as archive,
        archive.open("zeros.txt", "w", force_zip64=True) as member,
    ):
        for _ in range(1024):  # 1 GB of zeros, ~1 MB packed
            member.write(zeros)
    peak_kb, returncode, output = _ingest_measured(tmp_path, bomb)
    assert returncode == "1", output
    assert "bomb.zip!/zeros.txt" in output
    assert (
        "unpacks to 1,073,741,824 bytes > limit 200,000,000; raise ingest.max_file_bytes" in output
    )
    assert int(peak_kb) < 300 * 1024  # kB: the interpreter and knowhub, not 1 GB more


def test_a_tgz_of_a_200_mb_long_name_is_refused_in_bounded_memory(tmp_path: Path) -> None:
    # tarfile read such a name whole before any limit was checked: 449 MB for this 204 kB file.
    bomb = long_name_tgz(tmp_path / "name.tar.gz", 200 << 20)
    peak_kb, returncode, output = _ingest_measured(tmp_path, bomb)
    assert returncode == "1", output
    assert int(peak_kb) < 150 * 1024, output  # kB: 62 MB measured; it was 486 MB
    assert "name.tar.gz: holds a header of 209,715,200 bytes" in output


def _ingest_measured(tmp_path: Path, archive: Path) -> tuple[str, str, str]:
    """``knowhub ingest archive``'s peak RSS (kB), exit status and output."""
    # Measured by a process of its own, whose only child is the ingest: RUSAGE_CHILDREN of
    # this one counts every child it ever had (other tests' servers too).
    measure = (
        "import resource, subprocess, sys\n"
        "done = subprocess.run(sys.argv[1:], capture_output=True, text=True)\n"
        "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)\n"
        "print(done.returncode)\n"
        "print(done.stdout + done.stderr)\n"
    )
    argv = [sys.executable, "-m", "knowhub", "--data-dir", str(tmp_path / "data"), "ingest"]
    result = subprocess.run(
        [sys.executable, "-c", measure, *argv, str(archive)],
        cwd=tmp_path,
        env=cli_env(),
        capture_output=True,
        text=True,
        timeout=WAIT_S,
    )
    peak_kb, returncode, output = result.stdout.split("\n", 2)
    return peak_kb, returncode, output + result.stderr
