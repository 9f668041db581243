"""The console's source runs (real threads, waited on by events): one at a time, a second
start of a source under way refused, the outcome or the error kept, shown only to callers who
may read the run's collection (with a data scope: their own runs only), and no queued run
started once stopping."""

from __future__ import annotations

import threading
from collections.abc import Callable

from knowhub.caller import Caller
from knowhub.errors import QueryError
from knowhub.interfaces.http.console.source_runs import SourceRuns
from knowhub.scope import Scope
from tests.helpers import WAIT_S
from tests.mcp_helpers import wait_until

OWNER = Caller("owner")


def _held(gate: threading.Event, began: threading.Event, outcome: str) -> Callable[..., str]:
    def work(note: Callable[[str], None]) -> str:
        note("fetching")
        began.set()
        assert gate.wait(WAIT_S), "the test never let the run end"
        return outcome

    return work


def _state(runs: SourceRuns, key: str) -> str:
    return str(runs.visible(OWNER)[key]["state"])


def test_runs_go_one_at_a_time_and_keep_their_outcome() -> None:
    runs, gate, began = SourceRuns(), threading.Event(), threading.Event()
    assert runs.start("a", "git+file:///a", "kb", _held(gate, began, "1 added"), OWNER)
    assert began.wait(WAIT_S)
    assert runs.start("b", "git+file:///b", "kb", lambda note: "2 added", OWNER)
    assert not runs.start("a", "git+file:///a", "kb", lambda note: "again", OWNER)  # under way
    shown = runs.visible(OWNER)
    assert (shown["a"]["state"], shown["a"]["note"]) == ("running", "fetching")
    assert shown["b"]["state"] == "queued"  # waits for a's end
    gate.set()
    wait_until(lambda: _state(runs, "b") == "done")
    ended = runs.visible(OWNER)
    assert (ended["a"]["outcome"], ended["b"]["outcome"]) == ("1 added", "2 added")
    assert ended["a"]["finished"] and ended["a"]["ended"]


def test_a_failed_run_shows_the_error_and_may_start_again() -> None:
    runs = SourceRuns()

    def refused(note: Callable[[str], None]) -> str:
        raise QueryError("spec: the host was not found")

    assert runs.start("a", "https://x.example/", "kb", refused, OWNER)
    wait_until(lambda: _state(runs, "a") == "failed")
    assert runs.visible(OWNER)["a"]["outcome"] == "spec: the host was not found"
    assert runs.start("a", "https://x.example/", "kb", lambda note: "1 added", OWNER)
    wait_until(lambda: _state(runs, "a") == "done")


def test_runs_are_shown_only_to_callers_who_may_read_their_collection_unscoped_or_their_own() -> (
    None
):
    runs = SourceRuns()
    runs.start("a", "git+file:///a", "kb", lambda note: "1 added", OWNER)
    runs.start("b", "git+file:///b", "private", lambda note: "1 added", OWNER)
    wait_until(lambda: all(r["finished"] for r in runs.visible(OWNER).values()))
    kb_only = Caller("kbonly", collections=frozenset({"kb"}))
    scoped = Caller("scoped", scope=Scope.of(["acme"], ["*"], "public", ["*"]))
    assert set(runs.visible(kb_only)) == {"a"}
    assert runs.visible(scoped) == {}
    runs.start("c", "git+file:///c", "kb", lambda note: "refused", scoped)
    wait_until(lambda: "c" in runs.visible(scoped))
    assert set(runs.visible(scoped)) == {"c"}  # its own only
    assert set(runs.visible(Caller("scoped", scope=scoped.scope))) == set()  # another token


def test_a_stopping_book_starts_no_queued_run() -> None:
    runs, gate, began = SourceRuns(), threading.Event(), threading.Event()
    ran = threading.Event()
    runs.start("a", "git+file:///a", "kb", _held(gate, began, "1 added"), OWNER)
    assert began.wait(WAIT_S)

    def marks(note: Callable[[str], None]) -> str:
        ran.set()
        return "ran"

    runs.start("b", "git+file:///b", "kb", marks, OWNER)
    runs.stop()
    gate.set()
    wait_until(lambda: _state(runs, "b") == "failed")
    assert not ran.is_set()
    assert "the server stopped" in runs.visible(OWNER)["b"]["outcome"]
    assert _state(runs, "a") == "done"  # the one under way ended as it would
