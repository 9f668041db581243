"""Connecting to Milvus: milvus-lite embedded in this process, or a Milvus server.

pymilvus and milvus-lite are imported only when a Milvus store opens (``knowhub[milvus]``);
their failures become :class:`~knowhub.errors.StoreError` messages saying what to fix.
"""

from __future__ import annotations

import fcntl
import logging
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from knowhub.errors import ConfigError, StoreError

__all__ = [
    "Gate",
    "lite_servers",
    "load_grpc",
    "load_pymilvus",
    "open_server",
    "quiet_pymilvus",
    "reason",
]

_EXTRA = "pip install 'knowhub[milvus]'"
# pymilvus pings an idle channel every 10 s; a gRPC server with the default policy (milvus-
# lite's, embedded or `python -m milvus_lite server`) allows one per 5 minutes and, after two
# early ones, closes the channel with "Too many pings": the next search of an idle `knowhub
# serve` failed. Pinging just over that still finds a dead connection.
_GRPC_OPTIONS = {"grpc.keepalive_time_ms": 330_000}


class Gate:
    """Searches share it, writes take it alone (writers first, so searches cannot starve
    them). milvus-lite empties its memtable before the segment it flushes becomes visible,
    so a search running during a flush (and any write may flush) misses those rows; all
    its clients live in one process, so a lock in this process closes that window."""

    def __init__(self) -> None:
        self._changed = threading.Condition()
        self._readers = 0
        self._writers = 0  # waiting or writing
        self._writing = False

    @contextmanager
    def shared(self) -> Iterator[None]:
        with self._changed:
            self._changed.wait_for(lambda: not self._writers)
            self._readers += 1
        try:
            yield
        finally:
            with self._changed:
                self._readers -= 1
                self._changed.notify_all()

    @contextmanager
    def exclusive(self) -> Iterator[None]:
        with self._changed:
            self._writers += 1
            self._changed.wait_for(lambda: not self._readers and not self._writing)
            self._writing = True
        try:
            yield
        finally:
            with self._changed:
                self._writing = False
                self._writers -= 1
                self._changed.notify_all()


def reason(exc: BaseException) -> str:
    message = getattr(exc, "message", None)
    if callable(getattr(exc, "details", None)):  # a grpc.RpcError
        message = exc.details()  # type: ignore[attr-defined]
    return str(message or exc)


def load_pymilvus() -> Any:  # untyped: pymilvus ships no annotations mypy reads
    try:
        import pymilvus
    except ImportError as exc:
        raise ConfigError(
            f"store.provider is milvus, but pymilvus is not installed: {_EXTRA}"
        ) from exc
    return pymilvus


def _server_manager() -> Any:
    """milvus-lite's registry of the servers it runs in this process, one per folder."""
    try:
        from milvus_lite.server_manager import server_manager_instance
    except ImportError as exc:
        raise ConfigError(
            f"store.milvus.uri is empty, which means milvus-lite, but it is not installed: "
            f"{_EXTRA}, or set store.milvus.uri to a Milvus server"
        ) from exc
    return server_manager_instance


def load_grpc() -> Any:
    import grpc  # pymilvus depends on it

    return grpc


class _QuietPymilvus(logging.Filter):
    """Drops two pymilvus log records that only repeat what knowhub reports better: the
    error (with traceback) it logs for every failed call, which knowhub raises as a
    StoreError, and milvus-lite's missing iterator timestamp, which is harmless."""

    def filter(self, record: logging.LogRecord) -> bool:
        return record.funcName != "_log_rpc_error" and not record.getMessage().startswith(
            "failed to get mvccTs"
        )


_quiet = _QuietPymilvus()


def quiet_pymilvus() -> None:
    for name in ("pymilvus.decorators", "pymilvus.client.iterator.query_iterator"):
        logger = logging.getLogger(name)
        if _quiet not in logger.filters:
            logger.addFilter(_quiet)


class _LiteServers:
    """milvus-lite runs as a gRPC server inside this process, started by pymilvus for a
    ``.db`` folder and shared by every client of that folder. Counting the indexes open on
    each folder lets the last one to close stop its server, which releases the folder's
    lock so another process can open it; one process at a time may. The indexes of one
    folder also share its :class:`Gate`."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._users: dict[Path, int] = {}
        self._gates: dict[Path, Gate] = {}

    def open(self, path: Path, db_name: str) -> tuple[Any, Gate, Callable[[], None]]:
        """A client of the milvus-lite folder ``path``, its gate, and the release to call
        once the client is closed."""
        pymilvus = load_pymilvus()
        _server_manager()  # before pymilvus, whose own message names another extra
        path = path.absolute()
        with self._lock:
            if not self._users.get(path):
                _check_not_locked(path)
            try:
                client, _ = _connect(pymilvus, uri=str(path), db_name=db_name)
            except pymilvus.MilvusException as exc:
                self._stop_unused(path)
                raise _lite_error(path, exc) from exc
            self._users[path] = self._users.get(path, 0) + 1
            gate = self._gates.setdefault(path, Gate())
        return client, gate, lambda: self._release(path)

    def _release(self, path: Path) -> None:
        with self._lock:
            self._users[path] -= 1
            self._stop_unused(path)

    def _stop_unused(self, path: Path) -> None:
        if not self._users.get(path):
            self._users.pop(path, None)
            self._gates.pop(path, None)
            _server_manager().release_server(str(path))  # flushes, frees the lock


lite_servers = _LiteServers()


def _check_not_locked(path: Path) -> None:
    """Refuse a milvus-lite folder another process holds (milvus-lite takes an exclusive
    flock on ``LOCK`` while open) before pymilvus tries and logs a traceback."""
    lock = path / "LOCK"
    if not lock.exists():
        return
    with lock.open("a") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError as exc:
            raise _locked_error(path) from exc
        fcntl.flock(handle, fcntl.LOCK_UN)


def _locked_error(path: Path) -> StoreError:
    return StoreError(
        f"milvus-lite at {path} is open in another process (milvus-lite allows one process "
        "at a time): stop it (e.g. a running `knowhub serve`), or run a Milvus server and "
        "set store.milvus.uri"
    )


def _lite_error(path: Path, exc: BaseException) -> StoreError:
    if (path / "LOCK").exists():
        try:
            _check_not_locked(path)
        except StoreError as locked:
            return locked
    return StoreError(f"cannot open milvus-lite at {path}: {reason(exc)}")


def _connect(pymilvus: Any, **options: str) -> tuple[Any, bool]:
    """A ``MilvusClient`` that has proved the server answers and ``db_name`` exists, and
    whether the server is milvus-lite (also run as ``python -m milvus_lite server``), which
    lacks the whitespace tokenizer and indexes synchronously."""
    client = pymilvus.MilvusClient(**options, grpc_options=_GRPC_OPTIONS)
    try:
        client.list_collections()
        return client, str(client.get_server_version()).startswith("milvus_lite")
    except BaseException:
        client.close()
        raise


def open_server(uri: str, token: str, db_name: str) -> tuple[Any, bool]:
    """A client of the Milvus server at ``uri``, and whether it is milvus-lite."""
    pymilvus = load_pymilvus()
    try:
        client, lite = _connect(pymilvus, uri=uri, token=token, db_name=db_name)
    except pymilvus.MilvusException as exc:
        raise StoreError(
            f"cannot use Milvus at {_display_uri(uri)}"
            + (f" (database {db_name})" if db_name else "")
            + f": {reason(exc)}; check store.milvus.uri, token_env and db_name in "
            "knowhub.yaml and that the server runs"
        ) from exc
    return client, lite


def _display_uri(uri: str) -> str:
    """``uri`` without a user or password it may carry."""
    parts = urlsplit(uri)
    if parts.password is None and parts.username is None:
        return uri
    host = parts.hostname or ""
    netloc = f"{host}:{parts.port}" if parts.port else host
    return parts._replace(netloc=netloc).geturl()
