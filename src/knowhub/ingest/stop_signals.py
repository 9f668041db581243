"""Ctrl-C and SIGTERM held off a short write that must happen whole."""

from __future__ import annotations

import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from types import FrameType

__all__ = ["stop_signals_held"]

_STOPS = (signal.SIGINT, signal.SIGTERM)


@contextmanager
def stop_signals_held(*, deliver: bool) -> Iterator[list[signal.Signals]]:
    """Hold Ctrl-C and SIGTERM until the block ends; yields the list of those that came.

    ``deliver``: the first one that came is given to its handler once the block is done (a
    commit and the report of what it wrote happen both or neither); otherwise it is dropped
    (during a stopped run's last write, a second Ctrl-C is the stop already under way).

    Python runs signal handlers in the main thread, whichever thread the kernel gives the
    signal to, so handlers are what is swapped: a signal mask is per thread, and a worker
    thread left running would take the signal and trip the main thread's handler anyway.
    In another thread (a server's ingest, stopped through ``stop_ingests``) nothing is held.
    """
    came: list[signal.Signals] = []
    if threading.current_thread() is not threading.main_thread():
        yield came
        return
    frames: list[FrameType | None] = []

    def hold(number: int, frame: FrameType | None) -> None:
        came.append(signal.Signals(number))
        frames.append(frame)

    previous = {
        signum: signal.signal(signum, hold)
        for signum in _STOPS
        # One set outside Python cannot be put back; one ignored stays ignored (held, it
        # could stand first in line before one that is not).
        if signal.getsignal(signum) not in (None, signal.SIG_IGN)
    }
    try:
        yield came
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)
        if deliver and came:
            _deliver(previous[came[0]], came[0], frames[0])


def _deliver(handler: object, number: signal.Signals, frame: FrameType | None) -> None:
    """Give ``number`` to the ``handler`` that was held off: KeyboardInterrupt, usually."""
    if callable(handler):
        handler(number, frame)
    elif handler == signal.SIG_DFL:
        signal.raise_signal(number)  # the default action, now the handler is back
