"""``knowhub ingest DIR --watch``: the collection follows the folder (a file added, one
moved, one deleted) until Ctrl-C, which ends the command cleanly. A real process, a real
folder watched, the store read as another process sees it."""

from __future__ import annotations

import signal
import subprocess
import sys
from pathlib import Path

from knowhub import App
from tests.helpers import WAIT_S, cli_env, fast_settings, sigint_default, spawned, write
from tests.mcp_helpers import wait_until


def _sources(data: Path) -> list[str]:
    app = App(fast_settings(data))
    try:
        return sorted(d.source for d in app.collection("notes").documents())
    finally:
        app.close()


def test_watch_keeps_the_collection_in_sync_until_ctrl_c(tmp_path: Path) -> None:
    docs, data = tmp_path / "docs", tmp_path / "data"
    write(docs / "backups.md", "# Backups\n\nBackups run every 6 hours.\n")
    argv = [sys.executable, "-m", "knowhub", "--data-dir", str(data), "ingest", str(docs)]
    env = cli_env({"KNOWHUB_SERVER__WATCH_DEBOUNCE_MS": "200"})
    with spawned(
        [*argv, "-c", "notes", "--watch"],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=sigint_default,
    ) as process:
        assert process.stderr is not None
        seen = []
        for line in process.stderr:  # ends with the process (spawned() stops a hung one)
            seen.append(line)
            if line.startswith("watching "):
                break
        assert seen and seen[-1].startswith(f"watching {docs}"), seen
        assert _sources(data) == ["backups.md"]  # the first ingest, before any change
        write(docs / "restore.md", "# Restore\n\nRestores take an hour.\n")
        wait_until(lambda: _sources(data) == ["backups.md", "restore.md"])
        (docs / "backups.md").rename(docs / "old-backups.md")
        (docs / "restore.md").unlink()
        wait_until(lambda: _sources(data) == ["old-backups.md"])
        process.send_signal(signal.SIGINT)
        assert process.wait(WAIT_S) == 0
        assert "stopped watching" in process.stderr.read()
