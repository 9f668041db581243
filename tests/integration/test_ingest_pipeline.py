"""Ingest and search end to end on real SQLite files (hashing embedder for speed)."""

from __future__ import annotations

import os
import pathlib
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import pytest

from knowhub import App, StoreError, build_app
from knowhub.ingest import integrity
from knowhub.ingest.loaders.reading import RegularFile
from tests.helpers import WAIT_S, fast_settings, write

T = TypeVar("T")

BACKUPS = "# Guide\n\n## Backups\n\nSnapshots of the database run every six hours.\n"
UPGRADES = "# Guide\n\n## Upgrades\n\nUpgrade the controller firmware before the agents.\n"


def corpus(root: Path) -> Path:
    write(root / "ops/backups.md", BACKUPS)
    write(root / "ops/upgrades.md", UPGRADES)
    write(root / "notes.txt", "Lunch is served at noon in the atrium.\n")
    return root


def test_ingest_then_search_cites_source_section_and_lines(app: App, tmp_path: Path) -> None:
    report = app.collection().ingest([corpus(tmp_path / "docs")])
    assert sorted(report.added) == ["notes.txt", "ops/backups.md", "ops/upgrades.md"]
    assert report.ok and report.chunks >= 3
    hit = app.collection().search("how often are database snapshots taken").hits[0]
    assert hit.source == "ops/backups.md"
    assert hit.section_path == "Guide > Backups"
    assert hit.line_start <= 3 and hit.line_end == 5
    assert "six hours" in hit.text


def test_second_run_reads_no_file_and_embeds_nothing(
    app: App, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    docs = corpus(tmp_path / "docs")
    app.collection().ingest([docs])

    def refuse(self: Path, *args: object, **kwargs: object) -> bytes:
        raise AssertionError(f"read {self}")

    monkeypatch.setattr(pathlib.Path, "read_bytes", refuse)
    monkeypatch.setattr(pathlib.Path, "open", refuse)
    monkeypatch.setattr(RegularFile, "read", refuse)  # how ingest reads a file's contents
    # Not even opened: an open can fetch a file on a network or cloud-synced folder.
    monkeypatch.setattr(integrity, "open_regular", refuse)
    report = app.collection().ingest([docs])
    assert len(report.unchanged) == 3
    assert (report.added, report.updated, report.embedded) == ([], [], 0)


def test_touched_but_identical_file_is_unchanged(app: App, tmp_path: Path) -> None:
    docs = corpus(tmp_path / "docs")
    app.collection().ingest([docs])
    os.utime(docs / "notes.txt", ns=(1, 1))
    report = app.collection().ingest([docs])
    assert "notes.txt" in report.unchanged and report.embedded == 0


def test_changed_file_replaces_its_chunks(app: App, tmp_path: Path) -> None:
    docs = corpus(tmp_path / "docs")
    app.collection().ingest([docs])
    write(docs / "notes.txt", "Dinner is served at seven in the garden.\n")
    report = app.collection().ingest([docs])
    assert report.updated == ["notes.txt"]
    texts = [h.text for h in app.collection().search("served", top_k=10).hits]
    assert any("Dinner" in t for t in texts)
    assert not any("Lunch" in t for t in texts)
    assert app.store.integrity_report() == dict.fromkeys(app.store.integrity_report(), 0)


def test_unchanged_chunks_of_an_edited_file_come_from_the_cache(app: App, tmp_path: Path) -> None:
    paragraphs = [f"Paragraph {i} talks about topic number {i} at length." * 8 for i in range(6)]
    doc = write(tmp_path / "docs/long.md", "\n\n".join(paragraphs))
    first = app.collection().ingest([doc.parent])
    write(doc, "\n\n".join([*paragraphs[:-1], "A brand new closing paragraph."]))
    second = app.collection().ingest([doc.parent])
    assert second.updated == ["long.md"]
    assert 0 < second.embedded < first.embedded
    assert second.cached > 0


def test_prune_removes_deleted_files_from_results(app: App, tmp_path: Path) -> None:
    docs = corpus(tmp_path / "docs")
    app.collection().ingest([docs])
    (docs / "ops/backups.md").unlink()
    kept = app.collection().ingest([docs])
    assert kept.removed == []  # without --prune nothing is removed
    report = app.collection().ingest([docs], prune=True)
    assert report.removed == ["ops/backups.md"]
    sources = {
        h.source for h in app.collection().search("database snapshots six hours", top_k=10).hits
    }
    assert "ops/backups.md" not in sources


def test_failed_file_does_not_stop_others_or_lose_old_content(app: App, tmp_path: Path) -> None:
    docs = corpus(tmp_path / "docs")
    app.collection().ingest([docs])
    (docs / "ops/upgrades.md").write_bytes(b"\x00\x01\x02binary\x00" * 100)
    write(docs / "new.md", "# New\n\nA fresh document about telescopes.\n")
    report = app.collection().ingest([docs])
    assert [s for s, _ in report.failed] == ["ops/upgrades.md"]
    assert "binary" in report.failed[0][1]
    assert report.added == ["new.md"]
    # the last good version of the broken file is still searchable
    assert app.collection().search("controller firmware").hits[0].source == "ops/upgrades.md"


def test_missing_path_is_reported(app: App, tmp_path: Path) -> None:
    report = app.collection().ingest([tmp_path / "nowhere"])
    assert report.failed and "no such file" in report.failed[0][1]


def test_tags_become_filters_inside_both_legs(app: App, tmp_path: Path) -> None:
    write(tmp_path / "fin/budget.md", "# Budget\n\nThe travel budget is reviewed monthly.\n")
    write(tmp_path / "eng/travel.md", "# Travel\n\nEngineers book travel through the portal.\n")
    app.collection().ingest([tmp_path / "fin"], tags={"knowledge": "finance"})
    app.collection().ingest([tmp_path / "eng"], tags={"knowledge": "engineering"})
    hits = app.collection().search("travel", top_k=10, filters={"knowledge": "finance"}).hits
    assert [h.source for h in hits] == ["budget.md"]
    assert hits[0].metadata["knowledge"] == "finance"


def test_include_and_exclude_globs(app: App, tmp_path: Path) -> None:
    docs = corpus(tmp_path / "docs")
    assert sorted(app.collection().ingest([docs], include=["*.md"]).added) == [
        "ops/backups.md",
        "ops/upgrades.md",
    ]
    assert app.collection().ingest([docs], exclude=["ops/*"]).added == ["notes.txt"]


def test_collections_are_separate(app: App, tmp_path: Path) -> None:
    docs = corpus(tmp_path / "docs")
    app.collection("lunch").ingest([docs / "notes.txt"])
    app.collection("ops").ingest([docs / "ops"])
    assert {c.name: c.documents for c in app.collections()} == {"lunch": 1, "ops": 2}
    assert {h.source for h in app.collection("lunch").search("served noon").hits} == {"notes.txt"}


def test_remove_by_path_and_by_hash(app: App, tmp_path: Path) -> None:
    docs = corpus(tmp_path / "docs")
    app.collection().ingest([docs])
    assert [r.source for r in app.collection().remove(str(docs / "notes.txt"))] == ["notes.txt"]
    record = next(r for r in app.collection().documents() if r.source == "ops/backups.md")
    assert [r.source for r in app.collection().remove(record.doc_hash[:12])] == ["ops/backups.md"]
    assert [r.source for r in app.collection().documents()] == ["ops/upgrades.md"]


def test_switching_embedder_on_a_collection_is_refused(tmp_path: Path) -> None:
    docs = corpus(tmp_path / "docs")
    first = build_app(fast_settings(tmp_path / "data"))
    first.collection().ingest([docs])
    other = build_app(fast_settings(tmp_path / "data", **{"embedder.hashing.dim": 64}))
    with pytest.raises(StoreError, match="new collection"):
        other.collection().ingest([docs])


# A FIFO blocked the whole run in open(): bounded, so the old code fails instead of hanging.
@pytest.mark.timeout(WAIT_S)
def test_a_fifo_in_a_folder_is_skipped_with_its_reason_and_the_rest_is_ingested(
    app: App, tmp_path: Path
) -> None:
    docs = corpus(tmp_path / "docs")
    os.mkfifo(docs / "x.txt")
    report = app.collection().ingest([docs], prune=True)
    assert sorted(report.added) == ["notes.txt", "ops/backups.md", "ops/upgrades.md"]
    assert report.ok and report.failed == []
    assert report.skipped == [
        (
            "x.txt",
            "x.txt: is a FIFO (named pipe), not a regular file; only regular files are ingested",
        )
    ]
    assert report.to_dict()["skipped"] == [{"source": s, "reason": r} for s, r in report.skipped]


@pytest.mark.timeout(WAIT_S)
def test_a_fifo_named_directly_fails_saying_what_it_is(app: App, tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "x.txt")
    report = app.collection().ingest([tmp_path / "x.txt"])
    assert report.failed == [
        (
            "x.txt",
            "x.txt: is a FIFO (named pipe), not a regular file; only regular files are ingested",
        )
    ]


def test_confined_ingest_skips_links_leading_out_and_prunes_what_they_brought_in(
    app: App, tmp_path: Path
) -> None:
    docs = corpus(tmp_path / "docs")
    write(tmp_path / "outside" / "secret.txt", "The vault combination is 1234.\n")
    (docs / "leak.txt").symlink_to(tmp_path / "outside" / "secret.txt")
    # Unconfined (the local CLI): a symlinked file is followed, wherever it leads.
    assert "leak.txt" in app.collection().ingest([docs]).added
    report = app.collection().ingest([docs], prune=True, confine=docs)
    assert report.removed == ["leak.txt"]  # indexed before: it must not stay served
    assert [s for s, _ in report.skipped] == ["leak.txt"]
    assert "leads outside" in report.skipped[0][1]
    assert all(
        "vault" not in h.text for h in app.collection().search("vault combination", top_k=10).hits
    )


def chunk_ids(app: App, source: str) -> list[str]:
    [record] = [r for r in app.collection().documents() if r.source == source]
    cid = app.store.collection_id("default")
    assert cid is not None
    return [s.chunk.chunk_id for s in app.store.stored_chunks(cid, record.path)]


def test_a_renamed_folder_moves_its_documents_with_their_chunk_ids(
    app: App, tmp_path: Path
) -> None:
    notes = corpus(tmp_path / "notes")
    app.collection().ingest([notes], prune=True)
    before = chunk_ids(app, "ops/backups.md")
    renamed = notes.rename(tmp_path / "Notes")
    report = app.collection().ingest([renamed], prune=True)
    assert sorted(report.moved) == [
        (s, s) for s in ("notes.txt", "ops/backups.md", "ops/upgrades.md")
    ]
    assert (report.added, report.removed, report.embedded) == ([], [], 0)
    records = app.collection().documents()
    assert sorted(r.path for r in records) == sorted(
        str(renamed / s) for s in ("notes.txt", "ops/backups.md", "ops/upgrades.md")
    )
    assert chunk_ids(app, "ops/backups.md") == before
    hits = app.collection().search("database snapshots six hours", top_k=10).hits
    assert [h.source for h in hits].count("ops/backups.md") == 1
    assert app.store.integrity_report() == dict.fromkeys(app.store.integrity_report(), 0)


def test_a_file_moved_and_edited_with_its_folder_is_a_move_by_source(
    app: App, tmp_path: Path
) -> None:
    app.collection().ingest([corpus(tmp_path / "v1")])
    (tmp_path / "v1").rename(tmp_path / "v2")
    write(tmp_path / "v2/ops/backups.md", BACKUPS + "\nRestores are tested monthly.\n")
    report = app.collection().ingest([tmp_path / "v2"])
    assert ("ops/backups.md", "ops/backups.md") in report.moved
    assert [r.path for r in app.collection().documents() if r.source == "ops/backups.md"] == [
        str(tmp_path / "v2/ops/backups.md")
    ]


def test_another_folders_file_at_the_same_source_is_no_move(app: App, tmp_path: Path) -> None:
    # Other bytes at the same source moved a document deleted from a folder that is still
    # there: any guide.md deleted from one folder "moved" to another folder's guide.md.
    write(tmp_path / "notes/guide.md", BACKUPS)
    app.collection().ingest([tmp_path / "notes"], tags={"team": "ops"})
    (tmp_path / "notes/guide.md").unlink()
    write(tmp_path / "handbook/guide.md", UPGRADES)
    report = app.collection().ingest([tmp_path / "handbook"])
    assert (report.moved, report.added) == ([], ["guide.md"])
    [new] = [
        r for r in app.collection().documents() if r.path == str(tmp_path / "handbook/guide.md")
    ]
    assert new.metadata["tags"] == {}  # not the deleted document's team=ops


def test_a_file_and_a_link_to_it_in_one_run_are_one_document(app: App, tmp_path: Path) -> None:
    write(tmp_path / "docs/v2.md", BACKUPS)
    (tmp_path / "docs/latest.md").symlink_to(tmp_path / "docs/v2.md")
    report = app.collection().ingest([tmp_path / "docs"])
    assert (report.added, report.unchanged) == (["latest.md"], ["v2.md"])
    assert len(app.collection().documents()) == 1


def test_a_file_renamed_in_its_folder_is_a_move_not_an_add(app: App, tmp_path: Path) -> None:
    docs = corpus(tmp_path / "docs")
    app.collection().ingest([docs])
    (docs / "notes.txt").rename(docs / "lunch.txt")
    report = app.collection().ingest([docs], prune=True)
    assert (report.moved, report.added, report.removed) == ([("notes.txt", "lunch.txt")], [], [])


def test_identical_files_at_two_paths_are_two_documents_with_distinct_chunk_ids(
    app: App, tmp_path: Path
) -> None:
    write(tmp_path / "docs/a.md", BACKUPS)
    write(tmp_path / "docs/copy/a.md", BACKUPS)
    app.collection().ingest([tmp_path / "docs"])
    first, second = chunk_ids(app, "a.md"), chunk_ids(app, "copy/a.md")
    assert not set(first) & set(second)
    # A copy moved back where its twin was first recorded still gets an id of its own.
    (tmp_path / "docs/a.md").rename(tmp_path / "docs/b.md")
    app.collection().ingest([tmp_path / "docs"], prune=True)
    write(tmp_path / "docs/a.md", BACKUPS)
    app.collection().ingest([tmp_path / "docs"])
    ids = [chunk_ids(app, s) for s in ("a.md", "b.md", "copy/a.md")]
    assert len({i for group in ids for i in group}) == sum(map(len, ids))
    assert chunk_ids(app, "b.md") == first


def test_the_same_corpus_ingested_twice_gets_the_same_chunk_ids(tmp_path: Path) -> None:
    docs = corpus(tmp_path / "docs")
    found = []
    for data in ("one", "two"):
        app = build_app(fast_settings(tmp_path / data))
        try:
            app.collection().ingest([docs])
            found.append(chunk_ids(app, "ops/backups.md"))
        finally:
            app.close()
    assert found[0] == found[1]


def test_tags_persist_until_a_run_changes_them(app: App, tmp_path: Path) -> None:
    docs = corpus(tmp_path / "docs")
    app.collection().ingest([docs], tags={"team": "ops"})
    again = app.collection().ingest([docs], prune=True)
    assert (len(again.unchanged), again.updated) == (3, [])
    assert again.retagged == []
    assert app.collection().search("snapshots", filters={"team": "ops"}).hits
    changed = app.collection().ingest([docs], tags={"team": "infra"})
    assert (sorted(changed.retagged), changed.embedded) == (
        ["notes.txt", "ops/backups.md", "ops/upgrades.md"],
        0,
    )
    assert not app.collection().search("snapshots", filters={"team": "ops"}).hits
    assert app.collection().search("snapshots", filters={"team": "infra"}).hits
    cleared = app.collection().ingest([docs], tags={"team": ""})  # an empty value removes the tag
    assert len(cleared.retagged) == 3
    assert all(r.metadata["tags"] == {} for r in app.collection().documents())


def test_search_shows_a_passage_once_when_two_folders_hold_the_same_file(
    app: App, tmp_path: Path
) -> None:
    write(tmp_path / "a/guide.md", BACKUPS)
    write(tmp_path / "b/guide.md", BACKUPS)
    app.collection().ingest([tmp_path / "a"])
    app.collection().ingest([tmp_path / "b"])
    assert len(app.collection().documents()) == 2  # two files on disk: two documents
    hits = app.collection().search("database snapshots six hours", top_k=5).hits
    assert len({(h.source, h.text) for h in hits}) == len(hits) > 0


def test_a_file_reached_through_a_symlinked_folder_is_one_document(
    app: App, tmp_path: Path
) -> None:
    corpus(tmp_path / "real")
    (tmp_path / "docs").symlink_to(tmp_path / "real")
    # as `ingest docs`, then `ingest docs/en` by another path
    app.collection().ingest([tmp_path / "docs"])
    again = app.collection().ingest([tmp_path / "real/ops"])
    assert (sorted(again.unchanged), again.added) == (["backups.md", "upgrades.md"], [])
    write(tmp_path / "real/ops/upgrades.md", UPGRADES + "\nAgents restart on their own.\n")
    edited = app.collection().ingest([tmp_path / "real/ops"])
    assert (edited.updated, edited.added) == (["upgrades.md"], [])
    assert len(app.collection().documents()) == 3
    (tmp_path / "real/ops/backups.md").unlink()
    pruned = app.collection().ingest([tmp_path / "real/ops"], prune=True)
    assert pruned.removed == ["ops/backups.md"]


def test_prune_renamed_drops_a_renamed_folders_leftovers_and_keeps_other_folders(
    app: App, tmp_path: Path
) -> None:
    write(tmp_path / "mnt/wiki/gone.md", BACKUPS)
    write(tmp_path / "old/kept.md", "Deploys go out on Tuesdays.\n")
    write(tmp_path / "old/deleted.md", "The on-call rota changes on Mondays.\n")
    app.collection().ingest([tmp_path / "mnt/wiki"])
    app.collection().ingest([tmp_path / "old"])
    (tmp_path / "mnt/wiki/gone.md").unlink()  # unmounted: the mount point is left, empty
    (tmp_path / "old/deleted.md").unlink()
    (tmp_path / "old").rename(tmp_path / "new")  # `mv old new`, a file deleted meanwhile
    # A served folder (MCP local mode): what the renamed folder left behind goes with it.
    report = app.collection().ingest([tmp_path / "new"], prune=True, prune_renamed=True)
    assert (report.moved, report.removed) == ([("kept.md", "kept.md")], ["deleted.md"])
    assert sorted(r.source for r in app.collection().documents()) == ["gone.md", "kept.md"]
    # A CLI prune stays under its paths.
    assert app.collection().ingest([tmp_path / "new"], prune=True).removed == []


def test_each_chunk_is_tokenized_once_and_languages_detected_per_section(
    app: App, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from knowhub.ingest import chunk
    from knowhub.lang import detect, tokenize

    calls: dict[str, int] = {"tokenized": 0, "detected": 0, "sections": 0}

    def counted(name: str, function: Callable[..., T]) -> Callable[..., T]:
        def counting(*args: Any) -> T:
            calls[name] += 1
            return function(*args)

        return counting

    monkeypatch.setattr(tokenize, "_terms", counted("tokenized", tokenize._terms))
    monkeypatch.setattr(detect, "detect_language", counted("detected", detect.detect_language))
    monkeypatch.setattr(chunk, "span_languages", counted("sections", chunk.span_languages))
    tokenize._recent_terms.cache_clear()
    english = ("Guide", "One", "Two", "Paragraph {} of the English guide.")
    russian = ("Справка", "Первый", "Второй", "Абзац {} о копиях.")
    for name, (title, one, two, sentence) in (("en", english), ("ru", russian)):
        body = "\n\n".join(sentence.format(i) * 12 for i in range(8))
        write(
            tmp_path / f"docs/{name}.md", f"# {title}\n\n## {one}\n\n{body}\n\n## {two}\n\n{body}\n"
        )
    report = app.collection().ingest([tmp_path / "docs"])
    assert report.ok and report.chunks >= 8
    # Tokenized for the index, then found again by the hashing embedder's own tokenizing.
    assert calls["tokenized"] == report.chunks
    # Per file: the (empty) text before the first heading, then two sections; a section in
    # one script is never detected chunk by chunk.
    assert (calls["sections"], calls["detected"]) == (6, 0)
    languages = {hit.language for hit in app.collection().search("guide копиях", top_k=20).hits}
    assert languages == {"en", "ru"}
    searched = calls["detected"]  # a mixed-script query's language is detected too
    mixed = write(tmp_path / "mixed/notes.md", "# Notes\n\nЗаметки: backups run nightly.\n")
    assert app.collection().ingest([mixed.parent]).ok
    # mixed: as before, per chunk
    assert (calls["sections"], calls["detected"] - searched) == (8, 1)
