"""The console's source runs: a website or repository added, or a ``sources:`` entry
refreshed, fetched and ingested in the background while the page says how it stands.

Runs go one at a time (a crawl holds the network and the runtime's writing lock for
minutes; a second would only wait on the same lock), each in its own daemon thread so the
event loop never waits on it. The last run of each source is kept in memory: ``queued``,
``running`` (with the fetch's latest line: ``crawled 40 of 120 pages``), then ``done`` with
the report's summary or ``failed`` with the error's text. A run is shown to whoever may read
its collection, as the documents it brought are; to a caller with a data scope, only the runs
it started (an ingest has no scope: only an unrestricted caller sees another's). A stopping
server starts no queued run.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from typing import Any, Literal

from knowhub.caller import Caller
from knowhub.errors import KnowhubError

__all__ = ["SourceRun", "SourceRuns", "Work", "when"]

log = logging.getLogger("knowhub.http")

State = Literal["queued", "running", "done", "failed"]
Work = Callable[[Callable[[str], None]], str]
"""A run's work: told where to say what the fetch is doing, it answers the summary line
(or raises a :class:`~knowhub.errors.KnowhubError` whose text the page shows)."""


@dataclass
class SourceRun:
    """One source's latest run, as the page shows it (``spec`` without credentials)."""

    key: str
    spec: str
    collection: str
    owner: Caller  # who started it (its very object, as an upload job's)
    state: State = "queued"
    started: float = 0.0
    ended: float | None = None
    note: str = ""
    outcome: str = ""

    @property
    def finished(self) -> bool:
        return self.state in ("done", "failed")

    def view(self) -> dict[str, Any]:
        """The run as the page shows it, its times in UTC."""
        shown = {k: v for k, v in asdict(self).items() if k != "owner"}
        return shown | {
            "finished": self.finished,
            "started": when(self.started),
            "ended": when(self.ended),
        }


def when(epoch: float | None) -> str:
    """``epoch`` as the console shows a time (UTC); "" for none."""
    return "" if epoch is None else time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(epoch))


class SourceRuns:
    """The runs of this server's console, by source key (a ``sources:`` name, or the spec
    of a source added from the console)."""

    def __init__(self) -> None:
        self._runs: dict[str, SourceRun] = {}
        self._lock = threading.Lock()  # guards _runs
        self._one = threading.Lock()  # held by the run under way: one at a time
        self._stopping = threading.Event()

    def start(self, key: str, spec: str, collection: str, work: Work, owner: Caller) -> bool:
        """Queue ``work`` as ``key``'s run by ``owner``; False (nothing queued) when one is
        under way."""
        with self._lock:
            current = self._runs.get(key)
            if current is not None and not current.finished:
                return False
            run = SourceRun(key, spec, collection, owner, started=time.time())
            self._runs[key] = run
        thread = threading.Thread(
            target=self._run, args=(run, work), name=f"knowhub-source-{key}", daemon=True
        )
        thread.start()
        return True

    def visible(self, caller: Caller) -> dict[str, dict[str, Any]]:
        """The runs of the collections ``caller`` may read, as views, by key; to a caller
        with a data scope only its own (a run's outcome names documents of every scope;
        its own can only be the door's refusal)."""
        with self._lock:
            runs = list(self._runs.values())
        unscoped = caller.may_see_scope(None)
        seen = [
            r
            for r in caller.readable(runs, lambda r: r.collection)
            if unscoped or r.owner is caller
        ]
        return {r.key: r.view() for r in seen}

    def stop(self) -> None:
        """Start no queued run (the one under way ends at the server's stop of ingests)."""
        self._stopping.set()

    def _run(self, run: SourceRun, work: Work) -> None:
        with self._one:
            if self._stopping.is_set():
                self._end(run, "failed", "not run: the server stopped; refresh it again")
                return
            run.state = "running"

            def note(line: str) -> None:
                run.note = line

            try:
                outcome = work(note)
            except KnowhubError as exc:
                self._end(run, "failed", str(exc))
            except Exception:  # a worker thread must say what became of the run
                log.exception("source run %s failed", run.key)
                self._end(run, "failed", "internal error: see the server log")
            else:
                self._end(run, "done", outcome)

    def _end(self, run: SourceRun, state: State, outcome: str) -> None:
        with self._lock:
            run.state, run.outcome, run.ended = state, outcome, time.time()
