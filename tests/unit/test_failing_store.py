"""knowhub.testing.failing_store: a real store whose planned calls fail, the others passed
through; the wrapper the store-failure tests use in place of patching a store's writers."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from knowhub import App
from knowhub.caller import Caller
from knowhub.errors import StoreError
from knowhub.providers.stores.base import DocumentWrite, GroupWriter, IndexRefresher
from knowhub.providers.stores.sqlite import DB_NAME, SQLiteStore
from knowhub.testing.failing_store import FailingStore, inject
from knowhub.testing.store_data import assert_whole, make_doc, new_collection
from tests.helpers import fast_settings


@pytest.fixture
def store(tmp_path: Path) -> Iterator[SQLiteStore]:
    opened = SQLiteStore(tmp_path / DB_NAME)
    yield opened
    opened.close()


def _writes(*sources: str) -> list[DocumentWrite]:
    docs = [make_doc(source, [f"Text of {source}."]) for source in sources]
    return [DocumentWrite(d.record, d.chunks, d.vectors, d.tokens, d.cache_keys) for d in docs]


def _sources(store: SQLiteStore, cid: int) -> set[str]:
    return {record.source for record in store.records(cid)}


def test_a_failing_write_in_a_group_is_its_own_error_and_the_others_are_committed(
    store: SQLiteStore,
) -> None:
    cid = new_collection(store)
    error = OSError("disk full")
    failing = FailingStore(store, "replace_document", error, after=1)
    assert isinstance(failing, GroupWriter) and isinstance(failing, IndexRefresher)
    assert failing.replace_documents(cid, _writes("a.md", "b.md", "c.md")) == [None, error, None]
    assert _sources(store, cid) == {"a.md", "c.md"} and failing.failed == 1
    assert_whole(store)
    failing.replace_documents(cid, _writes("d.md"))  # times=1: the next goes through
    assert _sources(store, cid) == {"a.md", "c.md", "d.md"}


def test_a_landed_write_is_made_and_still_answered_with_its_error(store: SQLiteStore) -> None:
    cid = new_collection(store)
    error = OSError("the answer was lost")
    failing = FailingStore(store, "replace_document", error, landed=True)
    assert failing.replace_documents(cid, _writes("a.md", "b.md")) == [error, None]
    assert _sources(store, cid) == {"a.md", "b.md"}


def test_calls_fail_after_some_pass_for_as_many_times_as_planned(store: SQLiteStore) -> None:
    failing = FailingStore(store, "set_meta", StoreError("down"), after=1, times=2)
    assert failing.set_meta("t:k", "1", None)
    for _ in range(2):
        with pytest.raises(StoreError, match="down"):
            failing.set_meta("t:k", "2", "1")
    assert failing.set_meta("t:k", "2", "1") and failing.get_meta("t:k") == "2"
    assert failing.failed == 2
    failing.fail("get_meta", StoreError("gone"), times=None)  # re-planned: every call
    for _ in range(3):
        with pytest.raises(StoreError, match="gone"):
            failing.get_meta("t:k")
    assert failing.set_meta("t:k", "3", "2")  # no longer planned


def test_a_function_in_place_of_an_error_gets_the_call_and_the_call_goes_on(
    store: SQLiteStore,
) -> None:
    seen: list[tuple[object, ...]] = []
    failing = FailingStore(store, "set_meta", lambda *call: seen.append(call))
    assert failing.set_meta("t:k", "1", None)
    assert seen == [("t:k", "1", None)] and store.get_meta("t:k") == "1"


def test_a_plan_the_store_cannot_fail_is_refused(store: SQLiteStore) -> None:
    with pytest.raises(TypeError, match="no method 'write_it'"):
        FailingStore(store, "write_it", OSError())
    with pytest.raises(TypeError, match="fails with an Exception"):
        FailingStore(store, "replace_document", KeyboardInterrupt())
    with pytest.raises(TypeError, match="error="):
        FailingStore(store, "set_meta")


def test_inject_puts_it_in_the_runtimes_store_and_every_caller_reads_it(tmp_path: Path) -> None:
    app = App(fast_settings(tmp_path))
    try:
        view = app.for_caller(Caller("reader"))
        failing = inject(view, "get_meta", StoreError("down"))  # any App over the runtime
        assert app.store is failing and view.store is failing
        with pytest.raises(StoreError, match="down"):
            view.store.get_meta("t:k")
    finally:
        app.close()
