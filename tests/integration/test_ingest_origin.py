"""A mirrored source (a website, a repository) is ingested as a folder whose files take
their sources from where they live: shown, cited and reported by that name, while
integrity and pruning work on the mirror's files (real SQLite files, hashing embedder)."""

from __future__ import annotations

from pathlib import Path

from knowhub import App
from knowhub.ingest.origin import Origin
from tests.helpers import write

SITE = "https://docs.example.org/guide/"


def _mirror(root: Path) -> Origin:
    write(root / "intro.html", "<h1>Intro</h1><p>The quokkabeam starts the engine.</p>")
    write(root / "setup" / "install.md", "# Install\n\nRun the zebrafinch installer.\n")
    return Origin(root, lambda relative: SITE + relative)


def test_each_file_of_a_mirror_takes_its_source_from_its_origin(app: App, tmp_path: Path) -> None:
    origin = _mirror(tmp_path / "mirror")
    report = app.collection().ingest([origin.root], origin=origin)
    assert sorted(report.added) == [SITE + "intro.html", SITE + "setup/install.md"]
    hits = app.collection().search("zebrafinch installer").hits
    assert hits[0].source == SITE + "setup/install.md"
    sources = {record.source for record in app.collection().documents()}
    assert sources == {SITE + "intro.html", SITE + "setup/install.md"}


def test_an_unchanged_mirror_is_unchanged_and_a_file_gone_from_it_is_pruned(
    app: App, tmp_path: Path
) -> None:
    origin = _mirror(tmp_path / "mirror")
    app.collection().ingest([origin.root], origin=origin)
    again = app.collection().ingest([origin.root], origin=origin)
    assert sorted(again.unchanged) == [SITE + "intro.html", SITE + "setup/install.md"]
    (origin.root / "intro.html").unlink()
    pruned = app.collection().ingest([origin.root], prune=True, origin=origin)
    assert pruned.removed == [SITE + "intro.html"]
    assert [r.source for r in app.collection().documents()] == [SITE + "setup/install.md"]


def test_a_file_named_beside_the_mirror_keeps_its_own_source(app: App, tmp_path: Path) -> None:
    origin = _mirror(tmp_path / "mirror")
    beside = write(tmp_path / "notes.txt", "A note beside the mirror.\n")
    report = app.collection().ingest([origin.root, beside], origin=origin)
    assert "notes.txt" in report.added
