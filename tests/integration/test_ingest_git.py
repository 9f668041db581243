"""Git repositories ingested by their clone URL: a bare repository served by a real
``git daemon`` on 127.0.0.1, and local ones by ``git+file://``; the tracked files at a ref,
each document citing ``repo@commit:path``, a new commit re-ingesting only what it changed
(real git, real SQLite files, hashing embedder)."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest

from knowhub import App
from knowhub.caller import Caller
from knowhub.errors import AuthError, IngestError
from knowhub.ingest.remote import remote_source
from knowhub.ingest.report import IngestReport
from knowhub.ingest.sources import Fetched
from tests.git_helpers import (
    commit_all,
    git,
    git_daemon,
    git_http,
    new_repository,
    published,
    push,
)
from tests.helpers import fast_settings, free_port, write

GUIDE = (
    "# Guide\n\n## Install\n\nRun the quokkabeam installer first.\n\n"
    "## Use\n\nThe zebrafinch command prints the report.\n"
)
FILES = {
    "docs/guide.md": GUIDE,
    "notes/alpha.md": "# Alpha\n\nThe marmoset plan, first draft.\n",
    "notes/beta.md": "# Beta\n\nThe narwhal budget for next year.\n",
    "notes/old-name.md": "# Renamed\n\nThe axolotl roadmap stays as it is.\n",
    "README.md": "# Project\n\nAn overview of the pangolin project.\n",
    ".gitignore": "secret.md\n",
}


FILES_OF_TWO = ["docs/guide.md", "notes.md"]


def _fetched(app: App, spec: str, notes: list[str] | None = None) -> tuple[Fetched, IngestReport]:
    source = remote_source(spec, app.settings)
    assert source is not None
    fetched = source.fetch(app.settings, (notes if notes is not None else []).append)
    report = app.collection().ingest([fetched.origin.root], origin=fetched.origin, prune=True)
    return fetched, report


def test_a_repository_served_by_git_daemon_is_ingested_and_a_new_commit_only_its_changes(
    app: App, tmp_path: Path
) -> None:
    work = new_repository(tmp_path / "work", FILES)
    write(work / "secret.md", "# Secret\n\nThe ignored wombat password.\n")  # never committed
    first = commit_all(work, "first")
    bare = published(work, tmp_path / "served")
    with git_daemon(tmp_path / "served") as host:
        repo = f"{host}/repo.git"
        notes: list[str] = []
        _, report = _fetched(app, repo, notes)
        assert sorted(report.added) == sorted(
            f"{repo}@{first}:{name}" for name in FILES if name != ".gitignore"
        )
        # .gitignore is tracked, but left out as a folder's dot files are (ingest.exclude)
        assert notes == [f"{repo}: fetched commit {first}, 5 files"]
        hit = app.collection().search("zebrafinch command").hits[0]
        assert (hit.source, hit.line_start, hit.line_end) == (f"{repo}@{first}:docs/guide.md", 7, 9)
        # As docs/sources.md says: `git show COMMIT:PATH` shows the very text cited.
        assert git(bare, "show", f"{first}:docs/guide.md") == GUIDE.strip()
        assert hit.text in GUIDE
        hits = app.collection().search("wombat password").hits
        assert not [h for h in hits if "secret" in h.source]  # ignored: not in the repository

        write(work / "notes/alpha.md", "# Alpha\n\nThe marmoset plan, second draft.\n")
        write(work / "notes/gamma.md", "# Gamma\n\nThe okapi schedule.\n")
        git(work, "rm", "--quiet", "notes/beta.md")
        git(work, "mv", "notes/old-name.md", "notes/new-name.md")
        second = commit_all(work, "second")
        push(work, bare)
        _, again = _fetched(app, repo, notes)

    assert again.updated == [f"{repo}@{second}:notes/alpha.md"]
    assert again.added == [f"{repo}@{second}:notes/gamma.md"]
    assert again.removed == [f"{repo}@{first}:notes/beta.md"]
    assert again.moved == [
        (f"{repo}@{first}:notes/old-name.md", f"{repo}@{second}:notes/new-name.md")
    ]
    # Unchanged files are not read again: they keep the commit their text was read at.
    assert sorted(again.unchanged) == [f"{repo}@{first}:README.md", f"{repo}@{first}:docs/guide.md"]
    assert notes[1] == f"{repo}: commit {first} → {second}: 1 changed, 2 added, 2 deleted"
    written = {r.source: r.chunk_count for r in app.collection().documents()}
    changed = (
        written[f"{repo}@{second}:notes/alpha.md"] + written[f"{repo}@{second}:notes/gamma.md"]
    )
    assert 0 < again.embedded <= changed  # the moved file's chunks come from the cache
    assert again.chunks == changed + written[f"{repo}@{second}:notes/new-name.md"]
    assert (
        app.collection()
        .search("okapi schedule")
        .hits[0]
        .source.endswith(f"@{second}:notes/gamma.md")
    )


def test_a_local_repository_is_read_at_a_tag_not_at_its_head(app: App, tmp_path: Path) -> None:
    work = new_repository(tmp_path / "work", {"docs/guide.md": GUIDE})
    tagged = commit_all(work, "first")
    git(work, "tag", "--annotate", "-m", "release", "v1.0")
    write(work / "docs/guide.md", GUIDE.replace("quokkabeam", "capybara"))
    commit_all(work, "second")
    spec = f"git+file://{work}@v1.0"
    _, report = _fetched(app, spec)
    assert report.added == [f"git+file://{work}@{tagged}:docs/guide.md"]
    texts = " ".join(hit.text for hit in app.collection().search("installer first").hits)
    assert "quokkabeam" in texts and "capybara" not in texts


def test_include_and_exclude_keep_a_repository_s_paths_and_a_narrower_run_prunes(
    app: App, tmp_path: Path
) -> None:
    work = new_repository(tmp_path / "work", FILES)
    first = commit_all(work, "first")
    spec = f"git+file://{work}"
    wide = remote_source(spec, app.settings, {"include": ["notes/*"], "exclude": ["*beta*"]})
    assert wide is not None
    report = app.collection().ingest_source(wide)
    assert sorted(report.added) == [f"{spec}@{first}:notes/{n}.md" for n in ("alpha", "old-name")]
    narrow = remote_source(spec, app.settings, {"include": ["notes/alpha.md"]})
    assert narrow is not None
    report = app.collection().ingest_source(narrow)
    assert report.removed == [f"{spec}@{first}:notes/old-name.md"]
    with pytest.raises(IngestError, match="takes no depth option"):
        remote_source(spec, app.settings, {"depth": 2})


def test_a_full_commit_hash_is_a_ref(app: App, tmp_path: Path) -> None:
    work = new_repository(tmp_path / "work", {"docs/guide.md": GUIDE})
    first = commit_all(work, "first")
    full = git(work, "rev-parse", "HEAD")
    write(work / "docs/later.md", "# Later\n\nWritten after.\n")
    commit_all(work, "second")
    _, report = _fetched(app, f"git+file://{work}@{full}")
    assert report.added == [f"git+file://{work}@{first}:docs/guide.md"]


def test_a_mirror_damaged_behind_its_back_is_repaired(app: App, tmp_path: Path) -> None:
    work = new_repository(tmp_path / "work", {"docs/guide.md": GUIDE, "notes.md": "# N\n"})
    head = commit_all(work, "first")
    fetched, _ = _fetched(app, f"git+file://{work}")
    (fetched.origin.root / "docs" / "guide.md").unlink()  # a file lost
    _, again = _fetched(app, f"git+file://{work}")
    assert sorted(again.unchanged) == [f"git+file://{work}@{head}:{n}" for n in FILES_OF_TWO]
    assert again.removed == []
    (fetched.origin.root.parent / "state.json").unlink()  # as a first fetch stopped midway
    write(fetched.origin.root / "stray.md", "# Stray\n\nNot in the repository.\n")
    _, repaired = _fetched(app, f"git+file://{work}")
    assert sorted(repaired.unchanged) == [f"git+file://{work}@{head}:{n}" for n in FILES_OF_TWO]
    assert (repaired.added, repaired.removed) == ([], [])  # the stray file went with the tree
    assert not (fetched.origin.root / "stray.md").exists()


def test_links_submodules_and_lfs_pointers_are_skipped_and_said(app: App, tmp_path: Path) -> None:
    pointer = "version https://git-lfs.github.com/spec/v1\noid sha256:" + "a" * 64 + "\nsize 9\n"
    work = new_repository(tmp_path / "work", {"docs/guide.md": GUIDE, "docs/big.md": pointer})
    (work / "docs" / "passwd.md").symlink_to("/etc/passwd")
    git(work, "add", "--all")
    git(work, "update-index", "--add", "--cacheinfo", f"160000,{'b' * 40},vendor/lib")
    git(work, "commit", "--quiet", "-m", "first")  # not commit_all: `add --all` drops the link
    head = git(work, "rev-parse", "HEAD")[:12]
    fetched, report = _fetched(app, f"git+file://{work}")
    assert report.added == [f"git+file://{work}@{head}:docs/guide.md"]
    reasons = {name.rsplit(":", 1)[-1]: why for name, why in fetched.skipped}
    assert "a Git LFS pointer" in reasons["docs/big.md"]
    assert "a symbolic link: not followed" in reasons["docs/passwd.md"]
    assert "a submodule: not followed" in reasons["vendor/lib"]
    assert not (fetched.origin.root / "docs" / "passwd.md").exists()


def test_a_file_over_the_size_limit_is_not_even_written(tmp_path: Path) -> None:
    big = "# Big\n\n" + "word " * 100
    work = new_repository(tmp_path / "work", {"big.md": big, "a.md": "# A\n"})
    commit_all(work, "first")
    settings = fast_settings(tmp_path / "data", **{"ingest.max_file_bytes": 100})
    source = remote_source(f"git+file://{work}", settings)
    assert source is not None
    fetched = source.fetch(settings)
    assert sorted(p.name for p in fetched.origin.root.iterdir()) == ["a.md"]
    assert [why.split(": ", 1)[1] for _, why in fetched.skipped] == [
        f"{len(big)} bytes, over ingest.max_file_bytes (100): not read"
    ]


def test_a_name_the_file_system_refuses_fails_alone(app: App, tmp_path: Path) -> None:
    work = new_repository(tmp_path / "work", {"docs/guide.md": GUIDE})
    blob = git(work, "hash-object", "-w", "docs/guide.md")
    long = "docs/" + "n" * 300 + ".md"  # over NAME_MAX (255 bytes): no file can bear it
    git(work, "add", "--all")
    git(work, "update-index", "--add", "--cacheinfo", f"100644,{blob},{long}")
    git(work, "commit", "--quiet", "-m", "first")
    head = git(work, "rev-parse", "HEAD")[:12]
    fetched, report = _fetched(app, f"git+file://{work}")
    assert report.added == [f"git+file://{work}@{head}:docs/guide.md"]
    assert [name for name, _ in fetched.failed] == [f"git+file://{work}@{head}:{long}"]
    assert "not written to the mirror: File name too long" in fetched.failed[0][1]


def test_an_unknown_ref_and_a_folder_that_is_no_repository_fail_naming_the_fix(
    app: App, tmp_path: Path
) -> None:
    work = new_repository(tmp_path / "work", {"a.md": "# A\n"})
    commit_all(work, "first")
    source = remote_source(f"git+file://{work}@no-such-tag", app.settings)
    assert source is not None
    with pytest.raises(IngestError, match="has no branch, tag or commit no-such-tag") as no:
        source.fetch(app.settings)
    assert f"check the name (`git ls-remote file://{work}` lists them)" in str(no.value)
    nothing = remote_source(f"git+file://{tmp_path / 'nothing'}", app.settings)
    assert nothing is not None
    with pytest.raises(IngestError, match="is not a git repository"):
        nothing.fetch(app.settings)


def test_credentials_in_the_url_reach_git_and_nothing_else(app: App, tmp_path: Path) -> None:
    work = new_repository(tmp_path / "work", {"docs/guide.md": GUIDE})
    head = commit_all(work, "first")
    published(work, tmp_path / "http" / "repos", "handbook.git")
    with git_http(tmp_path / "http", "reader", "s3cr3t-t0ken") as base:
        plain = f"git+{base}/handbook.git"
        _, report = _fetched(app, plain.replace("http://", "http://reader:s3cr3t-t0ken@"))
        assert report.added == [f"{plain}@{head}:docs/guide.md"]
        for spec in (plain, plain.replace("http://", "http://reader:wr0ng-t0ken@")):
            source = remote_source(spec, app.settings)
            assert source is not None
            with pytest.raises(IngestError, match="refused access: give git its credentials") as no:
                source.fetch(app.settings)
            assert "t0ken" not in str(no.value)


def test_an_unreachable_host_fails_at_once_and_credentials_never_show(app: App) -> None:
    spec = f"git+http://reader:s3cr3t-t0ken@127.0.0.1:{free_port()}/repo.git"
    source = remote_source(spec, app.settings)
    assert source is not None
    assert "s3cr3t" not in source.spec and "reader" not in source.spec
    with pytest.raises(IngestError, match="is unreachable: check the host") as failed:
        source.fetch(app.settings)
    assert "s3cr3t-t0ken" not in str(failed.value)
    assert str(failed.value).startswith("git+http://127.0.0.1:")


def test_a_host_that_never_answers_fails_after_the_timeout(tmp_path: Path) -> None:
    settings = fast_settings(tmp_path / "data", **{"ingest.git.timeout_s": 1})
    with socket.socket() as silent:  # connections queue, nothing is ever said
        silent.bind(("127.0.0.1", 0))
        silent.listen()
        source = remote_source(f"git://127.0.0.1:{silent.getsockname()[1]}/repo.git", settings)
        assert source is not None
        with pytest.raises(
            IngestError, match=r"did not finish within 1 s \(ingest.git.timeout_s\)"
        ):
            source.fetch(settings)


def test_a_repository_is_ingested_only_for_a_caller_limited_in_nothing(
    app: App, tmp_path: Path
) -> None:
    # A token that may write one collection must not read what the server can (its disk,
    # its SSH keys) through git: refused before anything is fetched.
    work = new_repository(tmp_path / "work", {"secret.md": "# Secret\n\nThe wombat key.\n"})
    commit_all(work, "first")
    source = remote_source(f"git+file://{work}", app.settings)
    assert source is not None
    kb_only = Caller("kb-only", collections=frozenset({"kb"}))
    with pytest.raises(AuthError, match="fetched with the server's own access"):
        app.for_caller(kb_only).collection("kb").ingest_source(source)
    assert not (app.settings.data_dir / "sources" / "git").exists()
    report = app.collection("kb").ingest_source(source)  # the owner's (limited in nothing)
    assert [source.rsplit(":", 1)[1] for source in report.added] == ["secret.md"]
