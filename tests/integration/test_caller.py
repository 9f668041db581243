"""The App as one caller may use it: what a token grants, applied below the interfaces."""

from __future__ import annotations

from pathlib import Path

import pytest

from knowhub import App, AuthError, QueryError
from knowhub.caller import LOCAL_USER, Caller
from knowhub.scope import Scope
from tests.helpers import write


def _with(app: App, tmp_path: Path, *names: str) -> None:
    for name in names:
        write(tmp_path / name / "a.md", f"Backups of {name} run nightly.\n")
        app.collection(name).ingest([tmp_path / name])


def test_a_collection_the_caller_may_not_read_is_refused_with_one_message(
    app: App, tmp_path: Path
) -> None:
    _with(app, tmp_path, "kb", "hr")
    ops = app.for_caller(Caller("ops-bot", frozenset({"kb"})))
    refusal = "token 'ops-bot' may not read collection 'hr'"
    for use in (
        lambda: ops.collection("hr").search("backups"),
        lambda: ops.collection("hr").documents(),
        lambda: ops.collection("hr"),
        lambda: ops.resolve("hr"),
    ):
        with pytest.raises(AuthError) as refused:
            use()
        assert str(refused.value) == refusal
    assert [h.collection for h in ops.collection().search("backups").hits] == ["kb"]  # its only one
    assert [c.name for c in ops.collections()] == ["kb"]
    hr_chunk = app.collection("hr").search("backups").hits[0].chunk_id
    with pytest.raises(QueryError, match="no chunk with id"):
        ops.chunk(hr_chunk)  # a chunk it may not read looks like none


def test_the_owner_is_every_apps_caller_and_a_caller_view_shares_the_runtime(
    app: App, tmp_path: Path
) -> None:
    _with(app, tmp_path, "kb")
    assert app.caller == LOCAL_USER and app.for_caller(LOCAL_USER) is app
    narrow = Caller("reader", read_only=True, scope=Scope.of(["acme"], ["*"], "public", ["*"]))
    view = app.for_caller(narrow)
    assert view.caller == narrow and view.scope == narrow.scope
    assert view.runtime is app.runtime and view.store is app.store
    owner = view.for_caller(LOCAL_USER)  # another App over the one runtime: no view of a view
    assert owner.caller == LOCAL_USER and owner.runtime is app.runtime
    assert view.scoped(Scope.of(["*"], ["*"], "public", ["*"])).caller.read_only
    write(tmp_path / "kb" / "b.md", "Restores are tested monthly.\n")
    with pytest.raises(AuthError, match="token 'reader' is read-only: it may not ingest"):
        view.collection("kb").ingest([tmp_path / "kb"])  # the handle refuses, not the caller
    assert [r.source for r in app.collection("kb").documents()] == ["a.md"]
