"""The App as one caller may use it: what a token grants, applied below the interfaces."""

from __future__ import annotations

from pathlib import Path

import pytest

from knowhub import App, AuthError, QueryError
from knowhub.agent.chat import open_agent
from knowhub.caller import LOCAL_USER, Caller
from knowhub.collection import Collection
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


def test_every_change_through_the_door_refuses_a_read_only_caller(app: App, tmp_path: Path) -> None:
    """The handle's changes, the repair and an FAQ copy: none by a read-only caller, and
    nothing changed (the interfaces' own refusals come first; this is the door's)."""
    _with(app, tmp_path, "kb")
    (tmp_path / "kb" / "a.md").unlink()  # verify --fix would remove its document
    faq = write(tmp_path / "faq.csv", "question,answer\nWho?,Dana.\n")
    reader = app.for_caller(Caller("reader", read_only=True))
    kb = reader.collection("kb")
    cid = app.collection("kb").store_id()
    for use in (
        lambda: kb.remove("a.md"),
        lambda: kb.faq_import([faq]),
        lambda: kb.put_faq(cid, str(faq), [("Who?", "Dana.", 2)]),
        lambda: reader.verify("kb", fix=True),
    ):
        with pytest.raises(AuthError, match="token 'reader' is read-only"):
            use()
    assert [r.source for r in app.collection("kb").documents()] == ["a.md"]
    assert app.collection("kb").faq() == []
    scoped = app.scoped(Scope.of(["acme"], ["*"], "public", ["*"]))
    with pytest.raises(AuthError, match="repairing the index needs an unrestricted data scope"):
        scoped.verify("kb", fix=True)
    assert [r.source for r in app.collection("kb").documents()] == ["a.md"]


def test_a_handle_opened_by_hand_checks_its_name_before_it_writes_or_traces(
    app: App, tmp_path: Path
) -> None:
    """``Collection(runtime, caller, name)`` built without the App checks the name the
    same way: an ingest into a collection the caller may not read is refused before any
    lock or trace."""
    _with(app, tmp_path, "hr")
    before = len(list(app.traces()))
    limited = Caller("ops-bot", frozenset({"kb"}))
    with pytest.raises(AuthError, match="token 'ops-bot' may not read collection 'hr'"):
        Collection(app.runtime, limited, "hr").ingest([tmp_path / "hr"])
    assert len(list(app.traces())) == before


def test_a_chat_on_a_collection_the_caller_may_not_read_is_refused_before_the_model(
    app: App, tmp_path: Path
) -> None:
    """The agent resolves its collection through the door: refused before any model is
    asked for (this App has none: reaching it would be a ConfigError)."""
    _with(app, tmp_path, "kb", "hr")
    agent = open_agent(app)
    try:
        with pytest.raises(AuthError, match="token 'ops-bot' may not read collection 'hr'"):
            agent.turn(
                "Who runs backups?", collection="hr", caller=Caller("ops-bot", frozenset({"kb"}))
            )
    finally:
        agent.close()
