"""The generated MCP instructions over a real data dir (SQLite, the hashing embedder):
bounded whatever the data, written for the caller, and current after a change."""

from __future__ import annotations

from pathlib import Path

from knowhub.app import App
from knowhub.caller import Caller
from knowhub.interfaces.mcp.guide import MAX_CHARS, MAX_COLLECTIONS, Instructions, instructions
from tests.helpers import fast_settings, write


def _filled(tmp_path: Path, collections: int) -> App:
    """``collections`` collections of four documents, each titled by a long heading."""
    app = App(fast_settings(tmp_path / "data"))
    for c in range(collections):
        folder = tmp_path / f"c{c}"
        for d in range(4):
            title = f"Document {d} of collection {c} " + "with a very long title " * 10
            write(folder / f"d{d}.md", f"# {title}\n\n" + "Some text about things. " * (d + 1))
        app.collection(f"coll{c}").ingest([folder])
    return app


def test_instructions_stay_short_whatever_the_data(tmp_path: Path) -> None:
    app = _filled(tmp_path, MAX_COLLECTIONS + 3)
    try:
        text = instructions(app)
    finally:
        app.close()
    assert len(text) <= MAX_CHARS, len(text)
    assert "coll0: 4 documents" in text and "(languages: en)" in text
    assert "'Document 3 of collection 0 with" in text  # the largest first, cut short
    assert "more (list_collections)" in text
    assert f"coll{MAX_COLLECTIONS}:" not in text


def test_instructions_name_only_what_the_caller_may_read_and_follow_changes(
    tmp_path: Path,
) -> None:
    app = _filled(tmp_path, 2)
    limited = app.for_caller(Caller("kbonly", collections=frozenset({"coll1"})))
    kept = Instructions()
    try:
        text = kept(limited)
        assert "coll1: 4 documents" in text and "coll0" not in text
        assert "1 collection." in text
        write(tmp_path / "c1" / "new.md", "# Newcomer\n\nA fifth document.\n")
        app.collection("coll1").ingest([tmp_path / "c1"])
        assert "coll1: 5 documents" in kept(limited)
    finally:
        app.close()


def test_two_data_dirs_alike_in_names_and_counts_get_their_own_instructions(
    tmp_path: Path,
) -> None:
    """Shared mode's sessions are data dirs of their own whose collections share the default
    name (and, alike in size, their counts and versions): one session's titles were given
    to another's client."""
    kept, apps = Instructions(), []
    try:
        for topic in ("Volcanoes", "Glaciers"):
            write(tmp_path / topic / "a.md", f"# {topic}\n\nSome text.\n")
            apps.append(App(fast_settings(tmp_path / topic / "data")))
            apps[-1].collection("default").ingest([tmp_path / topic / "a.md"])
        texts = [kept(app) for app in apps]
    finally:
        for app in apps:
            app.close()
    assert "Volcanoes" in texts[0] and "Glaciers" in texts[1], texts
