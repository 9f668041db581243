"""A server's memory and CPU, read from ``/proc`` while the load runs (Linux only).

The server is found by its pid or by the loopback port it listens on (``/proc/net/tcp*``
names the listening socket's inode, ``/proc/<pid>/fd`` the process holding it). Figures
cover the process and its descendants (embedding workers), as the operating system sees
them: resident set size and CPU time, 100 % being one core busy.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import time
from dataclasses import dataclass, field
from pathlib import Path

from knowhub.errors import ConfigError

__all__ = ["ProcSampler", "Sample", "pid_listening_on"]

PROC = Path("/proc")
_LISTEN = "0A"
_TICKS = os.sysconf("SC_CLK_TCK")
_PAGE = os.sysconf("SC_PAGE_SIZE")


def pid_listening_on(port: int, proc: Path = PROC) -> int:
    """The process listening on TCP ``port`` (the topmost, when forked children share it)."""
    inodes = _listening_inodes(port, proc)
    if not inodes:
        raise ConfigError(
            f"no process listens on port {port}: start the server first, or give its pid "
            "with --server-pid / --mcp-pid"
        )
    holders = {pid for pid in _pids(proc) if _holds_socket(proc / str(pid), inodes)}
    if not holders:
        raise ConfigError(
            f"port {port} is open but its process is not readable here (another user?): give "
            "its pid with --server-pid / --mcp-pid, or --no-server-stats"
        )
    tops = [pid for pid in holders if _parent(proc / str(pid)) not in holders]
    return min(tops or holders)


@dataclass(frozen=True)
class Sample:
    at_s: float  # seconds since the sampling began
    rss_bytes: int
    cpu_pct: float  # since the previous sample; 100 = one core


@dataclass
class ProcSampler:
    """Samples ``pid``'s process tree every ``interval_s`` while :meth:`run` runs."""

    pid: int
    interval_s: float = 0.5
    proc: Path = PROC
    samples: list[Sample] = field(default_factory=list)
    _started: float = field(default_factory=time.monotonic)
    _last: tuple[float, float] | None = None  # (monotonic time, CPU seconds)

    def sample(self) -> Sample:
        """One reading now (CPU over the time since the previous reading)."""
        now = time.monotonic()
        rss, cpu_s = self._tree()
        pct = 0.0
        if self._last is not None and now > self._last[0]:
            pct = max(cpu_s - self._last[1], 0.0) / (now - self._last[0]) * 100.0
        self._last = (now, cpu_s)
        return Sample(round(now - self._started, 3), rss, round(pct, 1))

    async def run(self, stop: asyncio.Event) -> None:
        """Record samples until ``stop`` is set (or the process is gone); their times count
        from the start of this call."""
        self._started = time.monotonic()
        while not stop.is_set():
            try:
                self.samples.append(self.sample())
            except OSError:
                return
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), self.interval_s)

    def _tree(self) -> tuple[int, float]:
        """RSS bytes and CPU seconds of the process and its live descendants."""
        rss = 0
        ticks = 0
        stack = [self.pid]
        first = True
        while stack:
            pid = stack.pop()
            base = self.proc / str(pid)
            try:
                fields = _stat_fields(base)
                # Finished children's CPU counts too (cutime, cstime), on the root only.
                ticks += int(fields[11]) + int(fields[12])
                if first:
                    ticks += int(fields[13]) + int(fields[14])
                rss += int(fields[21]) * _PAGE
                stack += _children(base)
            except OSError:
                if first:
                    raise
            first = False
        return rss, ticks / _TICKS


def _stat_fields(base: Path) -> list[str]:
    """``/proc/<pid>/stat`` after the command name (which may hold spaces): field 3 on."""
    raw = (base / "stat").read_text(encoding="ascii", errors="replace")
    return raw[raw.rindex(")") + 2 :].split()


def _children(base: Path) -> list[int]:
    found: list[int] = []
    for task in (base / "task").iterdir():
        try:
            found += [int(c) for c in (task / "children").read_text().split()]
        except OSError:
            continue
    return found


def _parent(base: Path) -> int:
    try:
        return int(_stat_fields(base)[1])
    except (OSError, ValueError, IndexError):
        return 0


def _listening_inodes(port: int, proc: Path) -> set[str]:
    inodes: set[str] = set()
    for table in ("tcp", "tcp6"):
        try:
            lines = (proc / "net" / table).read_text(encoding="ascii").splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            cols = line.split()
            if len(cols) > 9 and cols[3] == _LISTEN and int(cols[1].rsplit(":", 1)[1], 16) == port:
                inodes.add(cols[9])
    return inodes


def _pids(proc: Path) -> list[int]:
    return [int(p.name) for p in proc.iterdir() if p.name.isdigit()]


def _holds_socket(base: Path, inodes: set[str]) -> bool:
    wanted = {f"socket:[{inode}]" for inode in inodes}
    try:
        fds = list((base / "fd").iterdir())
    except OSError:  # gone, or another user's
        return False
    for fd in fds:
        try:
            if str(fd.readlink()) in wanted:
                return True
        except OSError:  # closed meanwhile
            continue
    return False
