"""Ctrl-C held off a write that must happen whole: given to its handler after, or dropped."""

from __future__ import annotations

import signal
from types import FrameType

from knowhub.ingest.stop_signals import stop_signals_held


def test_a_held_ctrl_c_reaches_its_handler_after_the_block_or_is_dropped() -> None:
    seen: list[str] = []

    def handler(number: int, _frame: FrameType | None) -> None:
        seen.append(f"handled {signal.Signals(number).name}")

    previous = signal.signal(signal.SIGINT, handler)
    try:
        with stop_signals_held(deliver=True) as came:
            signal.raise_signal(signal.SIGINT)
            seen.append("block done")
        assert came == [signal.SIGINT]
        assert seen == ["block done", "handled SIGINT"]  # held until the write ended
        seen.clear()
        with stop_signals_held(deliver=False) as came:
            signal.raise_signal(signal.SIGINT)
        assert came == [signal.SIGINT] and seen == []  # the stop already under way
        assert signal.getsignal(signal.SIGINT) is handler  # put back either way
    finally:
        signal.signal(signal.SIGINT, previous)


def test_an_ignored_ctrl_c_stays_ignored_and_a_sigterm_after_it_is_delivered() -> None:
    # A job started with SIGINT ignored: held, the ignored one stood first and the SIGTERM
    # behind it was never delivered.
    seen: list[str] = []

    def handler(number: int, _frame: FrameType | None) -> None:
        seen.append(signal.Signals(number).name)

    before_int = signal.signal(signal.SIGINT, signal.SIG_IGN)
    before_term = signal.signal(signal.SIGTERM, handler)
    try:
        with stop_signals_held(deliver=True) as came:
            signal.raise_signal(signal.SIGINT)
            signal.raise_signal(signal.SIGTERM)
        assert came == [signal.SIGTERM] and seen == ["SIGTERM"]
    finally:
        signal.signal(signal.SIGINT, before_int)
        signal.signal(signal.SIGTERM, before_term)
