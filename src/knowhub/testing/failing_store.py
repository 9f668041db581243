"""A real store that fails on demand, for the tests of what knowhub does when its store fails.

:class:`FailingStore` wraps a working store and passes every call through, but one method's
calls fail as planned: a disk that fills, a server that stops answering, a Ctrl-C in the
middle of a call. The failure comes where the code under test meets the store, through the
:class:`~knowhub.providers.stores.base.Store` protocol, so a test needs no monkeypatch of a
store's private writers, whose names change with the store (and which a plugin's store does
not have). :func:`inject` puts one in place of an :class:`~knowhub.app.App`'s store.

A document write fails alone wherever it is made: ``replace_document`` counts each write,
whether it comes by itself or in a group commit (``replace_documents``), and a failing one
in a group is that write's error in the answer, the others committed together, as the
:class:`~knowhub.providers.stores.base.GroupWriter` contract has a store answer.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from functools import partial
from typing import Any

from knowhub.app import App
from knowhub.providers.stores.base import (
    DocumentWrite,
    Store,
    refresh_index,
    replace_documents,
)

__all__ = ["FailingStore", "Failure", "inject"]

#: An exception to raise, or a function called with the call's arguments in its place
#: (it raises, or sends a signal; when it returns, the call goes on).
Failure = BaseException | Callable[..., object]

_WRITE = "replace_document"


class FailingStore:
    """``store`` with calls of ``fail_on`` failing with ``error``: the first ``after`` calls
    go through, then ``times`` calls fail (None: every one after). ``landed``: a failing
    call is made all the same, before its failure (the store did it, its answer was lost).

    Every other call, and every other attribute, is the wrapped store's.
    """

    def __init__(
        self,
        store: Store,
        fail_on: str | None = None,
        error: Failure | None = None,
        *,
        after: int = 0,
        times: int | None = 1,
        landed: bool = False,
    ) -> None:
        self.store = store
        self._lock = threading.Lock()
        self._method: str | None = None
        self._error: Failure = Exception()
        self._after, self._landed, self._seen = 0, False, 0
        self._times: int | None = 0
        self.failed = 0  # calls failed so far (those of every plan)
        if fail_on is not None:
            self.fail(fail_on, error, after=after, times=times, landed=landed)

    def fail(
        self,
        fail_on: str,
        error: Failure | None,
        *,
        after: int = 0,
        times: int | None = 1,
        landed: bool = False,
    ) -> None:
        """Plan the failures from now on, in place of any planned before (a test that
        needs the store working first arms it once that part is done)."""
        if error is None:
            raise TypeError("FailingStore: say what the failing call does (error=...)")
        if not callable(getattr(self, fail_on, None)):  # the store's, or one defined below
            raise TypeError(f"FailingStore: the store has no method {fail_on!r}")
        if fail_on == _WRITE and not isinstance(error, Exception):
            # In a group commit it is that write's answer, which is an Exception.
            raise TypeError("FailingStore: a document write fails with an Exception")
        with self._lock:
            self._method, self._error = fail_on, error
            self._after, self._times, self._landed = after, times, landed
            self._seen = 0

    def _due(self, method: str) -> bool:
        """Whether this call of ``method`` is one that fails (counting it)."""
        with self._lock:
            if method != self._method:
                return False
            self._seen += 1
            failing = self._seen > self._after and (
                self._times is None or self._seen <= self._after + self._times
            )
            self.failed += failing
            return failing

    def _call(self, method: str, real: Callable[..., Any], *args: Any) -> Any:
        if not self._due(method):
            return real(*args)
        answer = real(*args) if self._landed else None
        if isinstance(self._error, BaseException):
            raise self._error
        self._error(*args)
        return answer if self._landed else real(*args)

    def __getattr__(self, name: str) -> Any:
        """The wrapped store's attribute; the planned method fails as planned."""
        if name.startswith("__") or name == "store":  # not set yet: no recursion
            raise AttributeError(name)
        found = getattr(self.store, name)
        return partial(self._call, name, found) if name == self._method else found

    # Defined here, not reached through __getattr__: a store is told a GroupWriter and an
    # IndexRefresher by the methods its class has (Python 3.12 looks no further).

    def replace_documents(
        self, cid: int, writes: Sequence[DocumentWrite]
    ) -> list[Exception | None]:
        """The writes in one commit where the store can; a failing document write is that
        write's error here (with ``landed``, after it was written all the same)."""
        if self._method != _WRITE:
            real = partial(replace_documents, self.store)
            answer: list[Exception | None] = self._call("replace_documents", real, cid, writes)
            return answer
        failing = [self._due(_WRITE) for _ in writes]
        made = [w for w, fails in zip(writes, failing, strict=True) if self._landed or not fails]
        errors = iter(replace_documents(self.store, cid, made))
        error = self._error
        assert isinstance(error, Exception)  # checked by fail()
        # The store's answer for each write it was given, in order; the planned error for
        # each failing one (landed or not).
        answers = [next(errors) if self._landed or not fails else None for fails in failing]
        return [error if fails else answer for fails, answer in zip(failing, answers, strict=True)]

    def refresh_index(self, cid: int) -> None:
        """The store's refresh, where it has one (planned like any call)."""
        self._call("refresh_index", partial(refresh_index, self.store), cid)


def inject(app: App, *args: Any, **plan: Any) -> FailingStore:
    """Make the store of ``app``'s runtime a :class:`FailingStore` of it (arguments as the
    class takes them after the store), for a test that drives the App as a user would;
    every App over that runtime (:meth:`App.for_caller`) reads it from then on."""
    runtime = app.runtime
    failing = FailingStore(runtime.store, *args, **plan)
    runtime.__dict__["store"] = failing  # what the cached property holds from now on
    return failing
