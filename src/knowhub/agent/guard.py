"""``python -m knowhub.agent.guard -- COMMAND ARGS…``: a stdio MCP server that cannot outlive us.

The pool starts every stdio server through this guard. The MCP SDK starts the guard as the
leader of a new process group and, on a clean close, kills that group; the guard starts the
server in the same group, so the SDK's kill still reaches it (and its children, e.g. the node
process behind ``npx``). What the SDK cannot cover is knowhub itself dying (``kill -9``, OOM):
then nobody closes the group. The guard notices its parent is gone, SIGTERMs the whole group
and SIGKILLs it ~2 s later.

Stdlib only, nothing of knowhub imported: the pool runs this file as ``python -I …/guard.py``
(no PYTHONPATH needed, none leaked to the server), which adds ~50 ms to a server's start;
``-m knowhub.agent.guard`` works as well (``knowhub/__init__`` is light).
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time

__all__ = ["main"]

POLL_S = 0.2  # how often the parent is checked
GRACE_S = 2.0  # SIGTERM → SIGKILL
NOT_FOUND = 127  # the shell's status for "command not found"


def main(argv: list[str]) -> int:
    """Run ``argv`` (after ``--parent PID`` and ``--``, both optional) and return its exit
    status. ``--parent``: the process to outlive no longer than POLL_S (default: ours, as
    found now; given, a parent that died before this line is noticed too)."""
    parent = os.getppid()
    if argv[:1] == ["--parent"] and len(argv) > 1 and argv[1].isdigit():
        parent, argv = int(argv[1]), argv[2:]
    if argv[:1] == ["--"]:
        argv = argv[1:]
    if not argv:
        print(
            "usage: python -m knowhub.agent.guard [--parent PID] -- COMMAND [ARGS…]",
            file=sys.stderr,
        )
        return 2
    if os.getpgrp() != os.getpid():  # started by hand, not by the SDK: our own group to kill
        os.setpgid(0, 0)
    # The guard's environment is the server's: resolve on that PATH, as a direct spawn would.
    resolved = shutil.which(argv[0])
    if resolved is None:
        print(
            f"command not found: {argv[0]} (searched PATH={os.environ.get('PATH', '')}); "
            "install it or give its full path in the MCP servers file",
            file=sys.stderr,
        )
        return NOT_FOUND
    try:
        child = subprocess.Popen([resolved, *argv[1:]])  # same group, inherited stdio
    except OSError as e:
        print(f"cannot start {resolved}: {e}", file=sys.stderr)
        return NOT_FOUND
    _drop_stdio()
    return _watch(child, parent)


def _drop_stdio() -> None:
    """Give our copies of the pipes up, so EOF travels between client and server as if direct."""
    devnull = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(devnull, fd)
    os.close(devnull)


def _watch(child: subprocess.Popen[bytes], parent: int) -> int:
    while True:
        try:
            status = child.wait(timeout=POLL_S)
        except subprocess.TimeoutExpired:
            if os.getppid() != parent:  # re-parented: knowhub is gone
                _stop_group(child)
            continue
        # The server is done; what it started (a wrapper's grandchild) goes with it.
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        os.killpg(os.getpgrp(), signal.SIGTERM)
        return status if status >= 0 else 128 - status


def _stop_group(child: subprocess.Popen[bytes]) -> None:
    """SIGTERM the group (ourselves spared), then SIGKILL it (ourselves included)."""
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    group = os.getpgrp()
    os.killpg(group, signal.SIGTERM)
    deadline = time.monotonic() + GRACE_S
    while child.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)
    # Whatever is left (the server, or a grandchild that ignored SIGTERM) goes now.
    os.killpg(group, signal.SIGKILL)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
