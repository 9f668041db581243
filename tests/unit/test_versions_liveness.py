"""Whether a version marked building still has a live builder (knowhub.versions.liveness),
with claims in a real SQLite store. The whole path, a `versions build` killed with SIGKILL,
is tests/e2e/test_cli_versions.py's."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest

from knowhub.errors import StoreError
from knowhub.providers.stores.sqlite import DB_NAME, SQLiteStore
from knowhub.testing.failing_store import FailingStore
from knowhub.versions.liveness import (
    STALE_S,
    Builder,
    builder_of,
    interrupted,
    read_claim,
    release,
)
from knowhub.versions.record import utc_now
from tests.helpers import WAIT_S, spawned
from tests.mcp_helpers import wait_until


@pytest.fixture
def store(tmp_path: Path) -> Iterator[SQLiteStore]:
    opened = SQLiteStore(tmp_path / DB_NAME)
    yield opened
    opened.close()


def _long_ago() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(time.time() - 10 * STALE_S))


def test_a_build_of_this_process_is_alive_and_its_claim_goes_with_it(store: SQLiteStore) -> None:
    with Builder(store, "kb", 2, replacing=None):
        raw = read_claim(store, "kb", 2)
        claim = builder_of(raw)
        assert claim is not None and claim.pid == os.getpid()
        assert not interrupted(raw, _long_ago())  # this process: alive, however old
    assert read_claim(store, "kb", 2) is None


def test_a_builder_that_exited_is_gone_at_once(store: SQLiteStore, tmp_path: Path) -> None:
    code = (
        "import sys; from pathlib import Path; "
        "from knowhub.providers.stores.sqlite import SQLiteStore; "
        "from knowhub.versions.liveness import Builder; "
        "Builder(SQLiteStore(Path(sys.argv[1])), 'kb', 2, replacing=None).__enter__()"
    )
    # It claims the version, then exits without giving it up (as a killed build would).
    subprocess.run([sys.executable, "-c", code, str(tmp_path / DB_NAME)], check=True, timeout=120)
    raw = read_claim(store, "kb", 2)
    assert builder_of(raw) is not None
    assert interrupted(raw, utc_now())  # no need to wait for the heartbeat to go stale


def test_a_pid_reused_by_another_process_is_not_the_builder(store: SQLiteStore) -> None:
    with Builder(store, "kb", 2, replacing=None):
        raw = read_claim(store, "kb", 2)
    claim = builder_of(raw)
    assert claim is not None and claim.started is not None
    reused = replace(claim, started=str(int(claim.started) + 1)).to_json()  # same pid, later
    assert interrupted(reused, utc_now())


def test_a_live_builder_hidden_from_proc_is_judged_by_its_heartbeat(
    store: SQLiteStore, tmp_path: Path
) -> None:
    with Builder(store, "kb", 2, replacing=None):
        raw = read_claim(store, "kb", 2)
    claim = builder_of(raw)
    assert claim is not None
    # /proc mounted with hidepid=2 (or a builder of another user): no /proc/<pid> to read.
    hidden = tmp_path / "hidden"
    # This process (which may be signalled) and pid 1 (EPERM unless root): both alive.
    for pid in (os.getpid(), 1):
        alive = replace(claim, pid=pid)
        assert not interrupted(alive.to_json(), _long_ago(), proc=hidden), pid
        silent = replace(alive, heartbeat=alive.heartbeat - STALE_S - 1)
        assert interrupted(silent.to_json(), _long_ago(), proc=hidden), pid
    with spawned([sys.executable, "-c", "pass"]) as exited:
        exited.wait(WAIT_S)
    gone = replace(claim, pid=exited.pid).to_json()
    assert interrupted(gone, utc_now(), proc=hidden)  # at once


def test_a_builder_on_another_machine_is_judged_by_its_heartbeat(store: SQLiteStore) -> None:
    with Builder(store, "kb", 2, replacing=None):
        raw = read_claim(store, "kb", 2)
    claim = builder_of(raw)
    assert claim is not None
    elsewhere = replace(claim, host="replica-2", machine="another-boot/pid:[1]", pid=1)
    assert not interrupted(elsewhere.to_json(), _long_ago())
    stale = replace(elsewhere, heartbeat=elsewhere.heartbeat - STALE_S - 1)
    assert interrupted(stale.to_json(), _long_ago())


def test_an_unclaimed_build_is_building_for_a_while_then_interrupted() -> None:
    assert not interrupted(None, utc_now())  # reserved, about to be claimed
    assert interrupted(None, _long_ago())  # a build from before claims, or one that died
    assert interrupted("{half a claim", _long_ago())


def test_a_claim_taken_meanwhile_is_not_taken_again(store: SQLiteStore) -> None:
    dead = json.dumps({"host": "h", "machine": "m", "pid": 1, "started": "1", "heartbeat": 0.0})
    store.set_meta("version-build:kb:2", dead, None)
    with (
        Builder(store, "kb", 2, replacing=dead),  # the one that judged it dead first
        pytest.raises(StoreError, match="was claimed by another build meanwhile"),
    ):
        Builder(store, "kb", 2, replacing=dead).__enter__()
    assert read_claim(store, "kb", 2) is None
    store.set_meta("version-build:kb:3", dead, None)
    release(store, "kb", 3)  # a dropped version's claim
    assert read_claim(store, "kb", 3) is None


def test_the_heartbeat_goes_on_until_another_build_takes_the_claim_over(
    store: SQLiteStore,
) -> None:
    with Builder(store, "kb", 2, replacing=None, interval_s=0.01) as builder:
        first = read_claim(store, "kb", 2)
        wait_until(lambda: read_claim(store, "kb", 2) != first, timeout=60, interval=0.01)
        # Another process judged this one dead and resumed the build: it stops beating.
        other = json.dumps({"host": "h", "machine": "m", "pid": 1, "started": "1", "heartbeat": 0})
        while not store.set_meta("version-build:kb:2", other, read_claim(store, "kb", 2)):
            pass  # a heartbeat landed in between
        builder._thread.join(60)
        assert not builder._thread.is_alive()
        with pytest.raises(StoreError, match=r"version 2 of 'kb' was taken over by process 1"):
            builder.check()  # what the build's progress calls: it stops
    assert read_claim(store, "kb", 2) == other  # not given up: it was not this build's


@pytest.mark.parametrize("landed", [False, True], ids=["lost", "landed"])
def test_a_heartbeat_that_fails_is_retried_and_the_build_goes_on(
    tmp_path: Path, landed: bool, caplog: pytest.LogCaptureFixture
) -> None:
    store = FailingStore(SQLiteStore(tmp_path / DB_NAME))
    try:
        with Builder(store, "kb", 2, replacing=None, interval_s=0.01) as builder:
            # Three heartbeats fail, as a store briefly unreachable answers; with ``landed``,
            # each was written all the same (its answer was lost).
            store.fail("set_meta", StoreError("the store did not answer"), times=3, landed=landed)
            wait_until(lambda: store.failed == 3, timeout=60, interval=0.01)
            failed = read_claim(store, "kb", 2)
            # A heartbeat after the failures is written (or the thread died: the test fails).
            wait_until(
                lambda: read_claim(store, "kb", 2) != failed or not builder._thread.is_alive(),
                timeout=60,
                interval=0.01,
            )
            assert builder._thread.is_alive()
            builder.check()  # still this build's
        assert read_claim(store, "kb", 2) is None  # given up at the end, as ever
    finally:
        store.close()
    assert "could not renew its claim" in caplog.text
