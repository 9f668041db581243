"""Ctrl-C in the middle of a large file: the summary counts the chunks really embedded, their
vectors are kept in the embedding cache, and the next run embeds only the rest. A real
`knowhub ingest` process whose embedder (a plugin, as a user's would be) encodes in worker
processes and holds the file's last batch until a gate file exists: SIGINT is sent once
every other batch is done, so what the stop finds done is known, however loaded the machine.
"""

from __future__ import annotations

import json
import re
import signal
import subprocess
import sys
from pathlib import Path

from tests.helpers import WAIT_S, cli_env, die_with, held_embedder, sigint_default, spawned, write
from tests.mcp_helpers import wait_until

SECTIONS = 1280  # 20 batches of 64, in 2 worker processes
BATCH = 64


def _held_env(tmp_path: Path, workers: int) -> dict[str, str]:
    return cli_env(
        {
            **held_embedder(tmp_path),
            "HELD_BATCH": str(BATCH),
            "HELD_PARALLEL": "1",
            "HELD_TEXT": f"Step {SECTIONS - 1} turns",  # the last section: the last batch
            "KNOWHUB_EMBEDDER__WORKERS": str(workers),
            "KNOWHUB_INGEST__PROGRESS_INTERVAL_S": "0",  # a progress line at every batch
        }
    )


def _as_from_a_shell() -> None:
    """Ctrl-C's default disposition (an ignored SIGINT would be inherited from the test
    process under xdist), and death with the test process."""
    sigint_default()
    die_with(signal.SIGKILL)()


def _all_but_the_held_batch(log: Path, process: subprocess.Popen[bytes]) -> int | None:
    """The chunks to embed, once the progress lines show every batch but the held one done."""
    assert process.poll() is None, f"exited {process.returncode}: {log.read_text()}"
    for found in re.findall(r"ingesting: ([\d,]+)/([\d,]+) chunks", log.read_text()):
        done, total = (int(count.replace(",", "")) for count in found)
        if done == total - BATCH:
            return total
    return None


def test_ctrl_c_keeps_what_was_embedded_and_says_how_much(tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    parts = "".join(
        f"## Part {i}\n\nStep {i} turns valve {i * 7} twice.\n\n" for i in range(SECTIONS)
    )
    write(docs / "guide.md", f"# Guide\n\n{parts}")
    args = [sys.executable, "-m", "knowhub", "--data-dir", str(tmp_path / "data")]
    log, out = tmp_path / "ingest.log", tmp_path / "report.json"
    with (
        out.open("wb") as stdout,
        log.open("wb") as stderr,
        spawned(
            [*args, "ingest", str(docs), "--json"],
            env=_held_env(tmp_path, workers=2),
            stdout=stdout,
            stderr=stderr,
            preexec_fn=_as_from_a_shell,
        ) as process,
    ):
        total = wait_until(lambda: _all_but_the_held_batch(log, process), WAIT_S, 0.05)
        process.send_signal(signal.SIGINT)
        returncode = process.wait(timeout=WAIT_S)
    assert returncode == 130, log.read_text()
    assert "stopped: 0 documents kept, 1 not done; re-run to continue" in log.read_text()
    stopped = json.loads(out.read_text())
    # Every batch done, not the one held, nor all that was queued (it said "total" before).
    assert stopped["stopped"] and stopped["embedded"] == total - BATCH

    (tmp_path / "gate").touch()
    rerun = subprocess.run(
        [*args, "ingest", str(docs), "--json"],
        env=_held_env(tmp_path, workers=1),  # the same model inline: no pool to start
        capture_output=True,
        text=True,
        timeout=WAIT_S,
    )
    assert rerun.returncode == 0, rerun.stderr
    report = json.loads(rerun.stdout)
    assert (report["cached"], report["embedded"]) == (total - BATCH, BATCH)
