"""Discovery: what a walk yields, what it passes over and why, and where files may lead.

Real files, FIFOs, sockets and symlinks in ``tmp_path``; discovery only stats them, so
none of these tests can block on a FIFO.
"""

from __future__ import annotations

import os
import socket
from pathlib import Path

from knowhub.ingest.discover import Candidate, Skipped, discover
from tests.helpers import write

NOT_REGULAR = "not a regular file; only regular files are ingested"


def _tree(tmp_path: Path) -> Path:
    """``docs`` with a good file, a FIFO, a socket, links in and out, and an outside folder."""
    docs = tmp_path / "docs"
    (docs / "sub").mkdir(parents=True)
    (docs / "good.md").write_text("# Good\n", encoding="utf-8")
    (docs / "sub" / "inner.md").write_text("# Inner\n", encoding="utf-8")
    os.mkfifo(docs / "x.txt")
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text("secret\n", encoding="utf-8")
    (docs / "leak.txt").symlink_to(outside / "secret.txt")
    (docs / "alias.md").symlink_to(docs / "sub" / "inner.md")
    (docs / "away").symlink_to(outside, target_is_directory=True)
    (docs / "loop.md").symlink_to(docs / "loop.md")
    (docs / "broken.md").symlink_to(docs / "gone.md")
    return docs


def _split(found: list[Candidate | Skipped]) -> tuple[list[str], dict[str, str]]:
    kept = [f.source for f in found if isinstance(f, Candidate)]
    skipped = {f.source: f.reason for f in found if isinstance(f, Skipped)}
    return kept, skipped


def test_a_walk_skips_what_is_not_a_regular_file_and_says_why(tmp_path: Path) -> None:
    docs = _tree(tmp_path)
    kept, skipped = _split(list(discover([docs], [], [])))
    # Local ingest follows symlinked files, wherever they lead.
    assert kept == ["alias.md", "good.md", "leak.txt", "sub/inner.md"]
    assert skipped == {
        "x.txt": f"x.txt: is a FIFO (named pipe), {NOT_REGULAR}",
        "away": "away: is a symlink to a folder; folder symlinks are not followed: "
        "name its target to ingest it",
        "loop.md": "loop.md: is a symlink loop: fix or remove the link",
        "broken.md": "broken.md: is a broken symlink (its target is gone): fix or remove it",
    }


def test_sockets_are_skipped_and_excluded_ones_are_not_reported(tmp_path: Path) -> None:
    docs = tmp_path / "d"
    docs.mkdir()
    # A short relative name: a UNIX socket path is limited to about 100 bytes.
    cwd = Path.cwd()
    os.chdir(docs)
    try:
        with socket.socket(socket.AF_UNIX) as a, socket.socket(socket.AF_UNIX) as b:
            a.bind("s.md")
            b.bind("s.sock")  # what it is says more than its type
            os.mkfifo("skip.md")
            found = list(discover([docs], [], ["skip.md"]))
    finally:
        os.chdir(cwd)
    assert found == [
        Skipped(str(docs / "s.md"), "s.md", f"s.md: is a socket, {NOT_REGULAR}", explicit=False),
        Skipped(str(docs / "s.sock"), "s.sock", f"s.sock: is a socket, {NOT_REGULAR}", False),
    ]


def test_files_of_types_knowhub_does_not_read_are_skipped_saying_so(tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    for name in ("a.css", "b.gif", "c.tar.gz", "README.md.gz", "NEWS.gz", "notes.md", "x.tmp"):
        write(docs / "sub" / name, "")
    kept, skipped = _split(list(discover([docs], [], ["*.tmp"])))
    assert kept == ["sub/NEWS.gz", "sub/README.md.gz", "sub/c.tar.gz", "sub/notes.md"]
    assert skipped == {  # excluded on purpose (x.tmp): not reported
        "sub/a.css": "sub/a.css: unsupported file type .css",
        "sub/b.gif": "sub/b.gif: unsupported file type .gif",
    }
    found = [f for f in discover([docs], [], []) if isinstance(f, Skipped)]
    assert all(f.unsupported and f.lasting and not f.explicit for f in found)


def test_a_fifo_named_directly_is_reported_as_a_fifo(tmp_path: Path) -> None:
    fifo = tmp_path / "x.txt"
    os.mkfifo(fifo)
    found = list(discover([fifo], [], []))
    assert found == [
        Skipped(str(fifo), "x.txt", f"x.txt: is a FIFO (named pipe), {NOT_REGULAR}", True)
    ]


def test_confined_discovery_keeps_only_files_resolving_inside(tmp_path: Path) -> None:
    docs = _tree(tmp_path)
    kept, skipped = _split(list(discover([docs], [], [], confine=docs)))
    assert kept == ["alias.md", "good.md", "sub/inner.md"]  # a link inside stays
    assert skipped["leak.txt"].startswith(f"leak.txt: leads outside {docs.resolve()}")
    assert "away" in skipped and "x.txt" in skipped
    # Named directly: the file, and a link to a folder outside, fail the same way.
    (docs / "out").symlink_to(tmp_path / "outside", target_is_directory=True)
    for name in ("leak.txt", "out"):
        (found,) = discover([docs / name], [], [], confine=docs)
        assert isinstance(found, Skipped) and found.explicit
        assert "leads outside" in found.reason and "secret" not in found.reason


def test_a_confined_root_itself_may_not_lead_outside(tmp_path: Path) -> None:
    docs = _tree(tmp_path)
    (tmp_path / "served").mkdir()
    (tmp_path / "served" / "link").symlink_to(docs, target_is_directory=True)
    (found,) = discover([tmp_path / "served" / "link"], [], [], confine=tmp_path / "served")
    assert isinstance(found, Skipped) and found.explicit and "leads outside" in found.reason


def test_only_a_lasting_reason_prunes_a_skipped_files_document() -> None:
    # A permission or I/O error is passing: pruning on it would drop and re-embed the file.
    unreadable = Skipped("/d/a.md", "a.md", "a.md: cannot be read (Permission denied): …", False)
    fifo = Skipped("/d/b.md", "b.md", f"b.md: is a FIFO (named pipe), {NOT_REGULAR}", False)
    assert (unreadable.lasting, fifo.lasting) == (False, True)


def test_a_folder_tree_deeper_than_python_recurses_is_walked(tmp_path: Path) -> None:
    folders = [tmp_path / "docs"]
    try:
        for _ in range(1201):  # one mkdir at a time: os.makedirs itself recurses per level
            folders[-1].mkdir()
            folders.append(folders[-1] / "d")
        (folders[-2] / "deep.md").write_text("# Deep\n\nStill found.\n")
        [found] = discover([tmp_path / "docs"], [], [])
        assert isinstance(found, Candidate) and found.source == "d/" * 1200 + "deep.md"
    finally:  # removed here: pytest's own clean-up (shutil.rmtree) recurses per level too
        (folders[-2] / "deep.md").unlink(missing_ok=True)
        for folder in reversed(folders):
            if folder.exists():
                folder.rmdir()


def test_a_compressed_copy_beside_its_file_is_skipped_and_read_when_named(tmp_path: Path) -> None:
    # nginx's gzip_static serves index.html.gz beside index.html: one document, not two.
    docs = tmp_path / "docs"
    for name in (
        "index.html",
        "index.html.gz",
        "notes.md",
        "notes.md.bz2",
        "NEWS.gz",
        "a.log.1.gz",
    ):
        write(docs / name, "")
    write(docs / "a.log", "")
    kept, skipped = _split(list(discover([docs], [], [])))
    assert kept == ["NEWS.gz", "a.log.1.gz", "index.html", "notes.md"]
    assert skipped == {
        "a.log": "a.log: unsupported file type .log",
        "index.html.gz": "index.html.gz: a compressed copy of index.html, beside it",
        "notes.md.bz2": "notes.md.bz2: a compressed copy of notes.md, beside it",
    }
    named = list(discover([docs / "index.html.gz"], [], []))
    assert named == [Candidate(str(docs / "index.html.gz"), "index.html.gz", explicit=True)]
