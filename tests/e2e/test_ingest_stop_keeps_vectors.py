"""Ctrl-C in the middle of a large file: the summary counts the chunks really embedded, their
vectors are kept in the embedding cache, and the next run embeds only the rest. A real
`knowhub ingest` process whose embedder (the slow plugin of test_ingest_signals) encodes in
worker processes; SIGINT is sent once its progress lines show batches done."""

from __future__ import annotations

import json
import re
import signal
import subprocess
import sys
from pathlib import Path

from tests.e2e.test_ingest_signals import slow_env
from tests.helpers import die_with, write
from tests.mcp_helpers import wait_until

SECTIONS = 1280  # 20 batches of 64: a second each, so the run is long past the first two


def _as_from_a_shell() -> None:
    """Ctrl-C's default disposition (an ignored SIGINT would be inherited from the test
    process under xdist), and death with the test process."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    die_with(signal.SIGKILL)()


def _progress(log: Path, process: subprocess.Popen[bytes]) -> tuple[int, int] | None:
    """(chunks embedded, chunks to embed) once two batches at least are done."""
    assert process.poll() is None, f"exited {process.returncode}: {log.read_text()}"
    for found in re.findall(r"ingesting: ([\d,]+)/([\d,]+) chunks", log.read_text()):
        done, total = (int(count.replace(",", "")) for count in found)
        if done >= 128:
            return done, total
    return None


def test_ctrl_c_keeps_what_was_embedded_and_says_how_much(tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    parts = "".join(
        f"## Part {i}\n\nStep {i} turns valve {i * 7} twice.\n\n" for i in range(SECTIONS)
    )
    write(docs / "guide.md", f"# Guide\n\n{parts}")
    args = [sys.executable, "-m", "knowhub", "--data-dir", str(tmp_path / "data")]
    env = {**slow_env(tmp_path, seconds=1.0), "KNOWHUB_INGEST__PROGRESS_INTERVAL_S": "0"}
    log, out = tmp_path / "ingest.log", tmp_path / "report.json"
    with out.open("wb") as stdout, log.open("wb") as stderr:
        process = subprocess.Popen(
            [*args, "ingest", str(docs), "--json"],
            env=env,
            stdout=stdout,
            stderr=stderr,
            preexec_fn=_as_from_a_shell,
        )
    try:
        seen, total = wait_until(lambda: _progress(log, process), timeout=120, interval=0.05)
        process.send_signal(signal.SIGINT)
        returncode = process.wait(timeout=120)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    assert returncode == 130, log.read_text()
    assert "stopped: 0 documents kept, 1 not done; re-run to continue" in log.read_text()
    stopped = json.loads(out.read_text())
    embedded = stopped["embedded"]
    print(f"{embedded} of {total} chunks embedded when stopped ({seen} seen in progress)")
    assert stopped["stopped"] and seen <= embedded < total  # was: total, all that was queued

    rerun = subprocess.run(
        [*args, "ingest", str(docs), "--json"],
        # The same model inline (one worker: no pool to start), at full speed.
        env={**slow_env(tmp_path, seconds=0), "KNOWHUB_EMBEDDER__WORKERS": "1"},
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert rerun.returncode == 0, rerun.stderr
    report = json.loads(rerun.stdout)
    assert (report["cached"], report["embedded"]) == (embedded, total - embedded)
