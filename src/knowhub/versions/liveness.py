"""Whether a version marked building is still being built, by whom.

A build writes its claim beside the versions record (meta key ``version-build:C:N``): the
machine and process building it, and a heartbeat it renews every :data:`HEARTBEAT_S`. A
version still marked building whose builder is gone is *interrupted* (a state computed
when read, never stored): it may be resumed or dropped. Gone means:

* **stopped**: the build was stopped by Ctrl-C (or SIGTERM), which marks its claim so.
* **on the machine that reads** (same kernel boot and PID namespace, so the same process
  table): the builder's pid no longer names the process that started the build (the pid's
  start time in ``/proc`` differs, or it is gone). Exact and immediate: ``kill -9`` of a
  build shows at once. A process that ``/proc`` hides (mounted ``hidepid=2``, a builder of
  another user) but that exists (``kill(pid, 0)``) is judged as one elsewhere.
* **elsewhere** (several hosts sharing a PostgreSQL store, another container; or a system
  without ``/proc``): no heartbeat for :data:`STALE_S`. Clocks of hosts sharing a store only
  need to agree within a minute or so.

A version marked building with no claim (the instant between reserving it and claiming it,
or a build by a knowhub from before claims) counts as building for :data:`STALE_S` after it
was created, then as interrupted.

A heartbeat that fails (the store briefly unreachable) is logged and tried again at the next
one. A build whose claim another build took over (it judged this one dead: a store
unreachable for :data:`STALE_S`) stops at its next step, leaving the version to that build.
"""

from __future__ import annotations

import json
import logging
import os
import socket
import threading
import time
from dataclasses import asdict, dataclass, replace
from datetime import UTC, datetime
from functools import cache
from pathlib import Path

from knowhub.errors import StoreError
from knowhub.providers.stores.base import Store

__all__ = [
    "HEARTBEAT_S",
    "INTERRUPTED",
    "STALE_S",
    "Builder",
    "Claim",
    "builder_of",
    "describe",
    "interrupted",
    "read_claim",
    "release",
]

log = logging.getLogger("knowhub.versions")

INTERRUPTED = "interrupted"
HEARTBEAT_S = 10.0  # a write of one small row per build every 10 s
STALE_S = 60.0  # six missed heartbeats: a slow store or a skewed clock is not a dead build
_PROC = Path("/proc")  # the process table, as this process may see it


@dataclass(frozen=True)
class Claim:
    """Who builds a version: where, which process, and when it last said so."""

    host: str  # the machine's name, for people
    machine: str  # the process table it lives in: boot id and PID namespace
    pid: int
    started: str | None  # the process's start time (clock ticks after boot), if known
    heartbeat: float  # time.time() of the last heartbeat
    stopped: bool = False  # the build was stopped (Ctrl-C): interrupted, whatever the process

    def to_json(self) -> str:
        return json.dumps(asdict(self), sort_keys=True)


def _key(collection: str, number: int) -> str:
    return f"version-build:{collection}:{number}"


def read_claim(store: Store, collection: str, number: int) -> str | None:
    """The claim on version ``number`` of ``collection`` as stored (None: unclaimed)."""
    return store.get_meta(_key(collection, number))


def builder_of(raw: str | None) -> Claim | None:
    """The claim ``raw`` (:func:`read_claim`) read; None for none or an unreadable one."""
    if raw is None:
        return None
    try:
        return Claim(**json.loads(raw))
    except (ValueError, TypeError):
        return None  # half a claim: no better than none (its version's age decides)


def interrupted(raw: str | None, created_at: str, *, proc: Path = _PROC) -> bool:
    """Whether a version marked building, created at ``created_at`` and claimed by ``raw``
    (:func:`read_claim`), has lost its builder (``proc``: the process table read, the
    default; a test hides it)."""
    claim = builder_of(raw)
    if claim is None:
        created = datetime.strptime(created_at, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=UTC)
        return time.time() - created.timestamp() > STALE_S
    if claim.stopped:
        return True
    if claim.machine == _machine() and claim.started is not None:
        alive = _is_running(claim.pid, claim.started, proc)
        if alive is not None:
            return not alive
    return time.time() - claim.heartbeat > STALE_S


def describe(raw: str | None) -> str:
    """The builder as a person reads it: ``process 4242 on build-host``."""
    claim = builder_of(raw)
    return "no process claimed it" if claim is None else f"process {claim.pid} on {claim.host}"


def release(store: Store, collection: str, number: int) -> None:
    """Forget any claim on a version (it is dropped)."""
    key = _key(collection, number)
    for _ in range(10):  # a heartbeat may land in between: read again
        current = store.get_meta(key)
        if current is None or store.set_meta(key, None, current):
            return


class Builder:
    """This process's claim on a version, taken over from ``replacing`` (the claim read when
    the version was judged free: None for none), renewed every :data:`HEARTBEAT_S` by a
    thread while the block runs, and given up after it (marked stopped after a Ctrl-C).

    The build calls :meth:`check` as it goes: it raises once another build took the claim
    over, so that two builds never go on writing the same version.
    """

    def __init__(
        self,
        store: Store,
        collection: str,
        number: int,
        replacing: str | None,
        interval_s: float = HEARTBEAT_S,
    ) -> None:
        self.store = store
        self.interval_s = interval_s
        self.key = _key(collection, number)
        self.what = f"version {number} of {collection!r}"
        self._replacing = replacing
        self._written: str | None = None  # the claim as last written; None: not ours (now)
        self._lost: str | None = None  # why the claim is no longer this build's
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._beat, name="version-build", daemon=True)

    def __enter__(self) -> Builder:
        if not self._write(self._replacing):
            raise StoreError(
                f"{self.what} was claimed by another build meanwhile "
                f"({describe(self.store.get_meta(self.key))}): see `knowhub versions list`"
            )
        self._thread.start()
        return self

    def __exit__(self, kind: type[BaseException] | None, *exc: object) -> None:
        self._stop.set()
        self._thread.join()
        if self._written is None:  # taken over: the other build's to give up
            return
        claim = None
        if kind is not None and issubclass(kind, KeyboardInterrupt):
            # Interrupted at once, though this process may live on a while (a caller that
            # catches the Ctrl-C): to be resumed or dropped, not "building" for a minute.
            claim = replace(_claim(), stopped=True).to_json()
        self.store.set_meta(self.key, claim, self._written)

    def check(self) -> None:
        """Go on building only while the claim is this build's.

        Raises:
            StoreError: another build took the claim over (it judged this one dead).
        """
        if self._lost is not None:
            raise StoreError(self._lost)

    @property
    def taken_over(self) -> bool:
        """Whether another build took the claim over (:meth:`check` raises)."""
        return self._lost is not None

    def _beat(self) -> None:
        while not self._stop.wait(self.interval_s):
            try:
                held = self._renew()
            except Exception as exc:  # the store failed for a moment: a dead thread would
                # let the claim go stale while the build goes on, for another to take over.
                log.warning(
                    "%s: could not renew its claim (%s); trying again in %g s",
                    self.what,
                    exc,
                    self.interval_s,
                )
                continue
            if not held:
                log.warning("%s", self._lost)
                return

    def _renew(self) -> bool:
        """Write a new heartbeat; False (and why, for :meth:`check`) when the claim is no
        longer this build's."""
        if self._write(self._written):
            return True
        current = self.store.get_meta(self.key)
        if _mine(current):  # a heartbeat that failed had landed all the same
            self._written = current
            return True
        taker = "nobody (the version was dropped)" if current is None else describe(current)
        self._lost = (
            f"{self.what} was taken over by {taker}, which found this build's heartbeat "
            "stale: this build stopped, leaving the version to it; see `knowhub versions list`"
        )
        self._written = None
        return False

    def _write(self, expected: str | None) -> bool:
        text = _claim().to_json()
        if self.store.set_meta(self.key, text, expected):
            self._written = text
            return True
        return False


def _claim() -> Claim:
    """This process's claim, as of now."""
    pid = os.getpid()
    return Claim(socket.gethostname(), _machine(), pid, _start_time(pid), time.time())


def _mine(raw: str | None) -> bool:
    """Whether the claim ``raw`` is this process's (and not marked stopped)."""
    claim, own = builder_of(raw), _claim()
    if claim is None or claim.stopped:
        return False
    return (claim.machine, claim.pid, claim.started) == (own.machine, own.pid, own.started)


@cache
def _machine() -> str:
    """The process table this process sees: the kernel's boot id and the PID namespace
    (containers on one host share the boot, not the namespace); "" where unknown. Read
    once: neither changes while the process runs."""
    try:
        boot = Path("/proc/sys/kernel/random/boot_id").read_text().strip()
        return f"{boot}/{Path('/proc/self/ns/pid').readlink()}"
    except OSError:
        return ""


def _stat(pid: int, proc: Path = _PROC) -> list[str] | None:
    """``/proc/<pid>/stat``'s fields after the command name (None: no such file to read)."""
    try:
        stat = (proc / str(pid) / "stat").read_text()
    except OSError:
        return None
    return stat.rsplit(")", 1)[1].split()  # after the command name, which may hold spaces


def _start_time(pid: int) -> str | None:
    """When process ``pid`` started (``/proc/<pid>/stat``'s field 22, clock ticks after
    boot), so that a pid reused by another process is not taken for the builder; None
    where there is no ``/proc``."""
    fields = _stat(pid)
    return None if fields is None else fields[19]


def _is_running(pid: int, started: str, proc: Path = _PROC) -> bool | None:
    """Whether process ``pid`` is the one that started at ``started``; None where that
    cannot be told (``/proc`` hides it: the heartbeat must say)."""
    fields = _stat(pid, proc)
    if fields is not None:
        return fields[0] not in ("Z", "X") and fields[19] == started  # Z, X: exited, unreaped
    try:
        os.kill(pid, 0)  # signal 0: nothing is sent, only whether there is such a process
    except ProcessLookupError:
        return False
    except PermissionError:
        pass  # there is: another user's, which /proc hides (hidepid=2)
    return None  # there is one; whether the builder or a later one under its pid, unknown
