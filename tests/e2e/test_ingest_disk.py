"""`knowhub ingest` on a data dir it cannot write: a full disk stops the run once, naming the
data dir and the fix (not one failure per file), and a read-only data dir is called that,
with how to fix its permissions (not "restore a backup").

The full disk is a real one: a 600 kB tmpfs mounted over the data dir in a mount namespace of
the command's own (``unshare``), so nothing outside the test sees it."""

from __future__ import annotations

import os
import random
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers import AS_OWNER, cli_env, write

_WORDS = [
    "backup",
    "server",
    "night",
    "restore",
    "volume",
    "policy",
    "ticket",
    "laptop",
    "travel",
    "hotel",
]


def _docs(folder: Path, count: int) -> None:
    chooser = random.Random(36)
    for n in range(count):
        lines = [" ".join(chooser.choice(_WORDS) for _ in range(60)) + "." for _ in range(30)]
        write(folder / f"doc{n:02d}.md", f"# Doc {n}\n\n" + "\n\n".join(lines) + "\n")


def _on_small_disk(cwd: Path, data: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """``knowhub ARGS`` with a 600 kB disk mounted over ``data`` (for it alone)."""
    namespace = ["unshare", "--mount"] if os.geteuid() == 0 else ["unshare", "-m", "-r"]
    mount = 'mount -t tmpfs -o size=600k tmpfs "$0" && exec "$@"'
    command = [*namespace, "sh", "-c", mount, str(data), sys.executable, "-m", "knowhub", *args]
    env = cli_env({"KNOWHUB_DATA_DIR": str(data)})
    probe = subprocess.run([*namespace, "true"], capture_output=True, text=True, timeout=60)
    if probe.returncode != 0:
        pytest.skip(f"no mount namespace here to mount a small disk in: {probe.stderr.strip()}")
    return subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True, timeout=300)


def test_a_full_disk_stops_the_ingest_once_naming_the_data_dir(tmp_path: Path) -> None:
    _docs(tmp_path / "docs", 60)  # ~1 MB of text: its index cannot fit in 600 kB
    data = tmp_path / "data"
    data.mkdir()
    run = _on_small_disk(tmp_path, data, "ingest", "docs")
    assert run.returncode == 1, run.stdout + run.stderr
    assert "failed doc" not in run.stdout, "one stop, not a failure per file"
    [line] = [line for line in run.stderr.splitlines() if line.startswith("error:")]
    assert line.startswith(
        f"error: ingest stopped: the data dir {data} is full (database or disk is full): "
        "free space there, or move it to a larger disk; "
    ), run.stderr
    assert line.endswith(" not done; run it again to continue")


def test_a_read_only_data_dir_is_named_with_how_to_fix_its_permissions(tmp_path: Path) -> None:
    write(tmp_path / "docs" / "a.md", "# Backups\n\nThey run nightly.\n")
    data = tmp_path / "data"
    env = cli_env({"KNOWHUB_DATA_DIR": str(data)})
    knowhub = [sys.executable, "-m", "knowhub", "ingest", "docs"]
    first = subprocess.run(knowhub, cwd=tmp_path, env=env, capture_output=True, timeout=120)
    assert first.returncode == 0, first.stderr
    write(tmp_path / "docs" / "b.md", "# Restores\n\nAsk the on-call engineer.\n")
    data.chmod(0o555)
    try:
        run = subprocess.run(
            [*AS_OWNER, *knowhub],
            cwd=tmp_path,
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
        )
    finally:
        data.chmod(0o755)
    assert run.returncode == 1
    assert "backup" not in run.stderr
    assert run.stderr.strip() == (
        f"error: data dir {data} is not writable by this user (uid {os.getuid()}) (attempt to "
        "write a readonly database): give --data-dir (or KNOWHUB_DATA_DIR) a folder this user "
        "may write, or change its owner or mode"
    )
