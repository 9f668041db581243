"""Archives (zip, tar, tgz …) are ingested member by member: each member a document cited as
``bundle.zip!/docs/guide.md``, incremental (an unchanged archive is not opened, a changed one
re-embeds only its changed members), pruned like a folder, a bad member failing alone
(real SQLite files, hashing embedder, archives written by Python's zipfile and tarfile)."""

from __future__ import annotations

import io
import os
import sqlite3
import tarfile
import warnings
import zipfile
from pathlib import Path

import pytest

from knowhub import App, build_app
from knowhub.config import Settings
from knowhub.errors import QueryError
from knowhub.interfaces.mcp.local import LocalService
from knowhub.interfaces.mcp.metrics import Metrics
from knowhub.providers.stores.schema import fts_table
from knowhub.providers.stores.sqlite import DB_NAME
from tests.helpers import fast_settings

GUIDE = "# Guide\n\nThe quokkabeam starts the turbine engine.\n"
NOTES = "# Notes\n\nFeed the zebrafinch every morning.\n"


def make_zip(path: Path, members: dict[str, bytes]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, data in members.items():
            archive.writestr(name, data)
    return path


def make_tar(path: Path, members: dict[str, bytes], mode: str = "w:gz") -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    with tarfile.open(path, mode) as archive:  # type: ignore[call-overload]
        for name, data in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            archive.addfile(info, io.BytesIO(data))
    return path


def bump(path: Path) -> None:
    """A new mtime, for a rewrite within the file system's clock tick."""
    stat = path.stat()
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns + 2_000_000_000))


@pytest.mark.parametrize(
    ("name", "mode"),
    [("bundle.zip", ""), ("bundle.tar", "w"), ("bundle.tgz", "w:gz"), ("b.tar.xz", "w:xz")],
)
def test_each_member_is_a_document_cited_inside_its_archive(
    app: App, tmp_path: Path, name: str, mode: str
) -> None:
    members = {"docs/guide.md": GUIDE.encode(), "notes.txt.gz": _gzip(NOTES.encode())}
    folder = tmp_path / "docs"
    if mode:
        make_tar(folder / name, members, mode)
    else:
        make_zip(folder / name, members)
    report = app.collection().ingest([folder])
    assert sorted(report.added) == [f"{name}!/docs/guide.md", f"{name}!/notes.txt.gz"]
    hit = app.collection().search("quokkabeam turbine").hits[0]
    assert hit.source == f"{name}!/docs/guide.md"
    assert app.collection().search("zebrafinch morning").hits[0].source == f"{name}!/notes.txt.gz"


def _gzip(data: bytes) -> bytes:
    import gzip

    return gzip.compress(data)


def test_an_unchanged_archive_is_not_read_and_a_changed_one_reembeds_only_its_changed_member(
    app: App, tmp_path: Path
) -> None:
    bundle = make_zip(
        tmp_path / "d" / "bundle.zip", {"a.md": GUIDE.encode(), "b.md": b"# B\n\nOld.\n"}
    )
    app.collection().ingest([tmp_path / "d"])
    again = app.collection().ingest([tmp_path / "d"])
    assert sorted(again.unchanged) == ["bundle.zip!/a.md", "bundle.zip!/b.md"]
    assert again.embedded == 0
    make_zip(bundle, {"a.md": GUIDE.encode(), "b.md": b"# B\n\nNew words about the lynxfire.\n"})
    bump(bundle)
    changed = app.collection().ingest([tmp_path / "d"])
    assert changed.updated == ["bundle.zip!/b.md"]
    assert changed.unchanged == ["bundle.zip!/a.md"]
    assert app.collection().search("lynxfire").hits[0].source == "bundle.zip!/b.md"


def test_an_unchanged_archive_is_not_opened_again(app: App, tmp_path: Path) -> None:
    bundle = make_zip(tmp_path / "d" / "bundle.zip", {"a.md": GUIDE.encode()})
    app.collection().ingest([tmp_path / "d"])
    stat = bundle.stat()
    bundle.write_bytes(b"\0" * stat.st_size)  # garbage of its size and mtime: fails if opened
    os.utime(bundle, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    again = app.collection().ingest([tmp_path / "d"])
    assert again.unchanged == ["bundle.zip!/a.md"] and not again.failed
    bump(bundle)  # now its mtime says it changed: it is read, and found not a zip
    changed = app.collection().ingest([tmp_path / "d"])
    assert [source for source, _ in changed.failed] == ["bundle.zip"]
    assert "not a valid zip" in changed.failed[0][1]


def test_a_member_removed_and_an_archive_deleted_are_pruned(app: App, tmp_path: Path) -> None:
    bundle = make_zip(
        tmp_path / "d" / "bundle.zip", {"a.md": GUIDE.encode(), "b.md": NOTES.encode()}
    )
    app.collection().ingest([tmp_path / "d"])
    make_zip(bundle, {"a.md": GUIDE.encode()})
    bump(bundle)
    kept = app.collection().ingest([tmp_path / "d"])  # without --prune: kept, as files are
    assert not kept.removed
    pruned = app.collection().ingest([tmp_path / "d"], prune=True)
    assert pruned.removed == ["bundle.zip!/b.md"]
    bundle.unlink()
    gone = app.collection().ingest([tmp_path / "d"], prune=True)
    assert gone.removed == ["bundle.zip!/a.md"]
    assert not list(app.collection().documents())


def test_a_renamed_archive_moves_its_documents(app: App, tmp_path: Path) -> None:
    bundle = make_zip(tmp_path / "d" / "bundle.zip", {"a.md": GUIDE.encode()})
    app.collection().ingest([tmp_path / "d"])
    bundle.rename(tmp_path / "d" / "renamed.zip")
    moved = app.collection().ingest([tmp_path / "d"], prune=True)
    assert moved.moved == [("bundle.zip!/a.md", "renamed.zip!/a.md")]
    assert moved.embedded == 0


def test_a_bad_member_fails_alone_and_is_not_read_again_until_the_archive_changes(
    app: App, tmp_path: Path
) -> None:
    make_zip(tmp_path / "d" / "bundle.zip", {"bad.pdf": b"%PDF-1.4 broken", "a.md": GUIDE.encode()})
    report = app.collection().ingest([tmp_path / "d"])
    assert report.added == ["bundle.zip!/a.md"]
    assert [source for source, _ in report.failed] == ["bundle.zip!/bad.pdf"]
    again = app.collection().ingest([tmp_path / "d"])
    assert again.unchanged == ["bundle.zip!/a.md"]
    assert [source for source, _ in again.failed] == ["bundle.zip!/bad.pdf"]
    assert "previously failed" in again.failed[0][1]


def test_an_archive_in_an_archive_is_read_to_the_depth_set(tmp_path: Path) -> None:
    inner = io.BytesIO()
    with zipfile.ZipFile(inner, "w") as archive:
        archive.writestr("deep.md", GUIDE)
    innermost = io.BytesIO()
    with zipfile.ZipFile(innermost, "w") as archive:
        archive.writestr("deeper.zip", inner.getvalue())
    make_tar(
        tmp_path / "d" / "outer.tgz",
        {"inner.zip": inner.getvalue(), "nest.zip": innermost.getvalue()},
    )
    app = build_app(fast_settings(tmp_path / "data"))
    try:
        report = app.collection().ingest([tmp_path / "d"])
    finally:
        app.close()
    assert report.added == ["outer.tgz!/inner.zip!/deep.md"]
    skipped = dict(report.skipped)
    assert "ingest.archive_max_depth" in skipped["outer.tgz!/nest.zip!/deeper.zip"]


def test_member_names_that_climb_out_are_only_names(app: App, tmp_path: Path) -> None:
    bundle = make_zip(
        tmp_path / "d" / "bundle.zip",
        {"../../escaped.md": GUIDE.encode(), "/etc/abs.md": NOTES.encode()},
    )
    report = app.collection().ingest([bundle])
    assert sorted(report.added) == ["bundle.zip!/escaped.md", "bundle.zip!/etc/abs.md"]
    assert not (tmp_path / "escaped.md").exists() and not (tmp_path.parent / "escaped.md").exists()


def test_links_and_devices_in_a_tar_are_passed_over_with_a_reason(app: App, tmp_path: Path) -> None:
    path = tmp_path / "d" / "links.tar"
    path.parent.mkdir()
    with tarfile.open(path, "w") as archive:
        info = tarfile.TarInfo("a.md")
        info.size = len(GUIDE)
        archive.addfile(info, io.BytesIO(GUIDE.encode()))
        link = tarfile.TarInfo("passwd.md")
        link.type, link.linkname = tarfile.SYMTYPE, "/etc/passwd"
        archive.addfile(link)
        device = tarfile.TarInfo("null.md")
        device.type = tarfile.CHRTYPE
        archive.addfile(device)
    report = app.collection().ingest([tmp_path / "d"])
    assert report.added == ["links.tar!/a.md"]
    skipped = dict(report.skipped)
    assert "link" in skipped["links.tar!/passwd.md"]
    assert "device" in skipped["links.tar!/null.md"]


def test_a_removed_archive_member_is_removed_by_its_source(app: App, tmp_path: Path) -> None:
    make_zip(tmp_path / "d" / "bundle.zip", {"a.md": GUIDE.encode()})
    app.collection().ingest([tmp_path / "d"])
    removed = app.collection().remove("bundle.zip!/a.md")
    assert [r.source for r in removed] == ["bundle.zip!/a.md"]


def test_verify_finds_members_whole_and_fix_rebuilds_them_under_their_names(
    tmp_path: Path,
) -> None:
    make_zip(tmp_path / "d" / "bundle.zip", {"a.md": GUIDE.encode(), "b.md": NOTES.encode()})
    app = build_app(fast_settings(tmp_path / "data"))
    try:
        app.collection("kb").ingest([tmp_path / "d"])
        assert app.verify("kb").ok, app.verify("kb").to_dict()
        record = next(r for r in app.collection("kb").documents() if r.source.endswith("b.md"))
        app.store.remove_document(app.store.collection_id("kb") or 0, record.path)
        again = app.collection("kb").ingest([tmp_path / "d"])  # its mark no longer holds
        assert again.added == ["bundle.zip!/b.md"] and again.unchanged == ["bundle.zip!/a.md"]
        cid = app.store.collection_id("kb")
        with sqlite3.connect(tmp_path / "data" / DB_NAME) as raw:
            raw.execute(f"DELETE FROM {fts_table(int(cid or 0))}")
        fixed = app.verify("kb", fix=True)
        assert fixed.ok, fixed.to_dict()
        assert sorted(fixed.fixed) == [
            "kb: bundle.zip!/a.md: re-ingested",
            "kb: bundle.zip!/b.md: re-ingested",
        ]
        assert app.collection("kb").search("zebrafinch").hits[0].source == "bundle.zip!/b.md"
    finally:
        app.close()


def test_an_archive_named_alone_prunes_its_removed_members(app: App, tmp_path: Path) -> None:
    bundle = make_zip(tmp_path / "bundle.zip", {"a.md": GUIDE.encode(), "b.md": NOTES.encode()})
    assert sorted(app.collection().ingest([bundle]).added) == [
        "bundle.zip!/a.md",
        "bundle.zip!/b.md",
    ]
    make_zip(bundle, {"b.md": NOTES.encode()})
    bump(bundle)
    pruned = app.collection().ingest([bundle], prune=True)
    assert pruned.removed == ["bundle.zip!/a.md"] and pruned.unchanged == ["bundle.zip!/b.md"]


def test_new_tags_on_an_unchanged_archive_retag_its_members(app: App, tmp_path: Path) -> None:
    make_zip(tmp_path / "d" / "bundle.zip", {"a.md": GUIDE.encode()})
    app.collection().ingest([tmp_path / "d"], {"team": "ops"})
    retagged = app.collection().ingest([tmp_path / "d"], {"team": "web"})
    assert retagged.retagged == ["bundle.zip!/a.md"] and retagged.embedded == 0
    (record,) = app.collection().documents()
    assert record.metadata["tags"] == {"team": "web"}


def test_a_message_in_a_zip_is_a_document_and_so_are_its_attachments(
    app: App, tmp_path: Path
) -> None:
    from email.message import EmailMessage

    mail = EmailMessage()
    mail["Subject"] = "Kiln schedule"
    mail.set_content("The kiln fires on Friday.")
    mail.add_attachment(NOTES.encode(), maintype="text", subtype="markdown", filename="notes.md")
    make_zip(tmp_path / "d" / "mail.zip", {"inbox/kiln.eml": mail.as_bytes()})
    report = app.collection().ingest([tmp_path / "d"])
    assert sorted(report.added) == [
        "mail.zip!/inbox/kiln.eml",
        "mail.zip!/inbox/kiln.eml!/notes.md",
    ]
    assert (
        app.collection().search("zebrafinch").hits[0].source == "mail.zip!/inbox/kiln.eml!/notes.md"
    )


def test_removing_an_archive_removes_its_members_when_all_are_asked_for(
    app: App, tmp_path: Path
) -> None:
    make_zip(tmp_path / "d" / "bundle.zip", {"a.md": GUIDE.encode(), "b.md": NOTES.encode()})
    app.collection().ingest([tmp_path / "d"])
    with pytest.raises(QueryError, match="matches 2 documents"):
        app.collection().remove("bundle.zip")
    removed = app.collection().remove(str(tmp_path / "d" / "bundle.zip"), all_matches=True)
    assert sorted(r.source for r in removed) == ["bundle.zip!/a.md", "bundle.zip!/b.md"]
    assert not list(app.collection().documents())


def _served_sync(settings: Settings, folder: Path) -> list[str]:
    """One sync of ``serve mcp --docs FOLDER`` (its service, in process), then its sources."""
    service = LocalService(settings, folder, Metrics(), watch=False)
    try:
        service.sync()
    finally:
        service.close()
    app = build_app(settings)
    try:
        return sorted(r.source for r in app.collection().documents())
    finally:
        app.close()


def test_a_served_folder_follows_its_archives_and_serves_none_from_outside(
    tmp_path: Path,
) -> None:
    served, settings = tmp_path / "served", fast_settings(tmp_path / "data")
    bundle = make_zip(served / "bundle.zip", {"a.md": GUIDE.encode(), "b.md": NOTES.encode()})
    outside = make_zip(tmp_path / "secret" / "secret.zip", {"s.md": b"# S\n\nSecret words.\n"})
    (served / "linked.zip").symlink_to(outside)
    assert _served_sync(settings, served) == ["bundle.zip!/a.md", "bundle.zip!/b.md"]
    make_zip(bundle, {"a.md": GUIDE.encode()})
    bump(bundle)
    assert _served_sync(settings, served) == ["bundle.zip!/a.md"]


def test_a_second_member_of_one_name_is_a_warning_and_the_first_is_read(
    app: App, tmp_path: Path
) -> None:
    path = tmp_path / "d" / "dup.zip"
    path.parent.mkdir()
    with warnings.catch_warnings(), zipfile.ZipFile(path, "w") as archive:
        warnings.simplefilter("ignore")  # zipfile warns of the duplicate it writes
        archive.writestr("a.md", GUIDE)
        archive.writestr("a.md", NOTES)
    report = app.collection().ingest([tmp_path / "d"], prune=True)
    assert report.added == ["dup.zip!/a.md"] and not report.removed
    assert report.warnings == [
        ("dup.zip!/a.md", "dup.zip!/a.md: a second member of this name, not read (the first is)")
    ]
    assert app.collection().search("quokkabeam").hits[0].source == "dup.zip!/a.md"


def test_a_member_grown_too_large_fails_and_keeps_its_document(tmp_path: Path) -> None:
    settings = fast_settings(tmp_path / "data")
    small = settings.model_copy(
        update={"ingest": settings.ingest.model_copy(update={"max_file_bytes": 1000})}
    )
    bundle = make_zip(tmp_path / "d" / "bundle.zip", {"a.md": GUIDE.encode()})
    app = build_app(small)
    try:
        app.collection().ingest([tmp_path / "d"])
        make_zip(bundle, {"a.md": GUIDE.encode() + b"x" * 2000})
        bump(bundle)
        report = app.collection().ingest([tmp_path / "d"], prune=True)
        assert [source for source, _ in report.failed] == ["bundle.zip!/a.md"]
        assert "ingest.max_file_bytes" in report.failed[0][1] and not report.removed
        assert [r.source for r in app.collection().documents()] == ["bundle.zip!/a.md"]
    finally:
        app.close()


def test_a_new_version_is_built_from_the_archives_members(app: App, tmp_path: Path) -> None:
    from knowhub.versions.build import build_version
    from knowhub.versions.switch import activate_version

    make_zip(tmp_path / "d" / "bundle.zip", {"a.md": GUIDE.encode(), "b.md": NOTES.encode()})
    app.collection("kb").ingest([tmp_path / "d"], {"team": "ops"})
    report = build_version(app, "kb", chunk_size=200)
    assert sorted(report.added) == ["bundle.zip!/a.md", "bundle.zip!/b.md"]
    assert not report.missing and report.ok
    activate_version(app, "kb", 2)
    built = {r.source: r.metadata["tags"] for r in app.collection("kb").documents()}
    assert built == {"bundle.zip!/a.md": {"team": "ops"}, "bundle.zip!/b.md": {"team": "ops"}}
    assert app.collection("kb").search("zebrafinch").hits[0].source == "bundle.zip!/b.md"
