"""Keep a served folder indexed: re-sync it whenever its files change."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from pathlib import Path

import watchfiles

from knowhub.errors import KnowhubError

__all__ = ["FolderWatcher"]

log = logging.getLogger("knowhub.mcp")


class FolderWatcher:
    """Calls ``sync()`` after each burst of changes under ``folder`` has settled.

    A sync re-ingests the whole folder with pruning; unchanged files cost a stat each,
    so one code path handles additions, edits, renames and deletions alike.
    """

    def __init__(self, folder: Path, sync: Callable[[], None], debounce_ms: int) -> None:
        self.folder = folder
        self._sync = sync
        self._debounce_ms = debounce_ms
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        self._thread = threading.Thread(
            target=self._run, name=f"watch {self.folder.name}", daemon=True
        )
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=10)

    def _run(self) -> None:
        try:
            for changes in watchfiles.watch(
                self.folder,
                debounce=self._debounce_ms,
                stop_event=self._stop,
                raise_interrupt=False,
                rust_timeout=1000,
            ):
                log.info("%d change(s) under %s: re-indexing", len(changes), self.folder)
                try:
                    self._sync()
                except KnowhubError as exc:  # it says what and the fix: no traceback
                    log.warning("re-indexing %s: %s", self.folder, exc)
                except Exception:  # a watcher thread must outlive one bad sync
                    log.exception(
                        "re-indexing %s failed; will retry on the next change", self.folder
                    )
        except (OSError, RuntimeError) as exc:
            log.error("stopped watching %s: %s", self.folder, exc)
