"""The ``git`` command, run for one repository's mirror: never a prompt, a hook or a filter,
bounded in time and in what is kept of its words, which never show a credential.

Each command runs in a session of its own with no terminal (neither git nor ssh can ask
for a password: git's credential helpers and the SSH agent are how credentials come), with
``GIT_TERMINAL_PROMPT=0``, hooks off and only the transports a spec can name; a command
past ``ingest.git.timeout_s`` is killed with its children (ssh, git-remote-https).
"""

from __future__ import annotations

import os
import signal
import subprocess
import tempfile
from collections.abc import Iterator, Sequence
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from pathlib import Path
from typing import IO

from knowhub.errors import IngestError
from knowhub.ingest.gitspec import GitSpec

__all__ = ["Entry", "Git"]

# What is kept of a failing command's stderr for its message.
_TAIL_BYTES = 2048
# The environment of a repository a caller may be inside (a hook sets GIT_DIR): it would
# point git at that repository instead of the mirror (``git rev-parse --local-env-vars``).
_REPOSITORY_ENV = (
    "GIT_DIR",
    "GIT_WORK_TREE",
    "GIT_INDEX_FILE",
    "GIT_OBJECT_DIRECTORY",
    "GIT_ALTERNATE_OBJECT_DIRECTORIES",
    "GIT_COMMON_DIR",
    "GIT_NAMESPACE",
    "GIT_PREFIX",
    "GIT_SHALLOW_FILE",
    "GIT_GRAFT_FILE",
    "GIT_REPLACE_REF_BASE",
    "GIT_NO_REPLACE_OBJECTS",
    "GIT_IMPLICIT_WORK_TREE",
    "GIT_INTERNAL_SUPER_PREFIX",
    "GIT_CONFIG",
)
_CAUSES = (
    (
        ("couldn't find remote ref", "not our ref", "unadvertised object"),
        "has no branch, tag or commit {ref}: check the name (`git ls-remote {repo}` lists them)",
    ),
    (
        ("does not appear to be a git repository", "not exported", "not found", "404"),
        "is not a git repository (or not one you may read): check the URL",
    ),
    (
        ("could not read username", "authentication failed", "permission denied", "host key"),
        "refused access: give git its credentials through its credential helper or your SSH "
        "agent, never in knowhub.yaml",
    ),
    (
        ("unable to connect", "could not resolve", "refused", "failed to connect", "timed out"),
        "is unreachable: check the host, the port and the network",
    ),
)


@dataclass(frozen=True)
class Entry:
    """One entry of a commit's tree: its mode (``100644``, ``120000`` a link, ``160000`` a
    submodule), object type, object id and size (-1 for a submodule)."""

    mode: str
    kind: str
    oid: str
    size: int


class Git:
    """Git commands on the mirror ``git_dir`` of ``spec``'s repository."""

    def __init__(self, git_dir: Path, spec: GitSpec, timeout_s: float) -> None:
        self.git_dir = git_dir
        self.spec = spec
        self.timeout_s = timeout_s
        self.env = _environment()

    def init(self) -> None:
        """A bare repository, without the templates' sample hooks, unless one is there."""
        if not (self.git_dir / "HEAD").is_file():
            self.run("init", "--bare", "--quiet", "--template=", "--", str(self.git_dir))

    def fetch(self, ref: str | None, into: str) -> str:
        """Fetch ``ref`` (the remote's HEAD when None), its commit alone (shallow: the
        history is not read), into the ref ``into``: its full commit id."""
        wanted = ref or "HEAD"
        self.run(
            "fetch", "--quiet", "--no-tags", "--no-recurse-submodules", "--depth=1",
            "--no-write-fetch-head", "--", self.spec.url, f"+{wanted}:{into}",
        )  # fmt: skip
        return self.commit(into)

    def commit(self, ref: str) -> str:
        peeled = self.run("rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}", quiet=True)
        if not peeled:
            raise IngestError(
                f"{self.spec.shown}: {self.spec.ref} names no commit (a tag of a tree?)"
            )
        return peeled.decode("ascii").strip()

    def keep(self, ref: str, commit: str) -> None:
        """Point ``ref`` at ``commit``: what a ref points at is never collected as garbage."""
        self.run("update-ref", ref, commit)

    def listing(self, commit: str) -> dict[str, Entry]:
        """Every entry of ``commit``'s tree, by path (undecodable bytes escaped as the
        file system's names are)."""
        out = self.run("ls-tree", "-r", "-z", "-l", "--full-tree", commit)
        entries: dict[str, Entry] = {}
        for line in out.split(b"\0"):
            if not line:
                continue
            meta, _, path = line.partition(b"\t")
            mode, kind, oid, size = meta.decode("ascii").split()
            entries[os.fsdecode(path)] = Entry(mode, kind, oid, -1 if size == "-" else int(size))
        return entries

    @contextmanager
    def blobs(self, oids: Sequence[str]) -> Iterator[Iterator[tuple[str, int, IO[bytes]]]]:
        """Each blob's id, size and a stream to read exactly that many of its bytes from
        before the next, as written (no filter, no line-ending conversion)."""
        with tempfile.TemporaryFile() as wanted, tempfile.TemporaryFile() as errors:
            wanted.write("".join(f"{oid}\n" for oid in oids).encode("ascii"))
            wanted.seek(0)
            process = self._started(("cat-file", "--batch"), wanted, subprocess.PIPE, errors)
            with process:  # its pipe closed however the block ends
                try:
                    assert process.stdout is not None
                    yield _batch(process.stdout, len(oids))
                    self._waited(process, errors, ("cat-file",))
                finally:
                    _killed(process)

    def run(self, *args: str, quiet: bool = False) -> bytes:
        """Run ``git ARGS``: its stdout; a failure raises (``quiet``: returns b"")."""
        with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as errors:
            process = self._started(args, subprocess.DEVNULL, out, errors)
            try:
                if not self._waited(process, errors, args, quiet):
                    return b""
            finally:
                _killed(process)
            out.seek(0)
            return out.read()

    def _started(
        self, args: Sequence[str], stdin: IO[bytes] | int, stdout: IO[bytes] | int,
        stderr: IO[bytes],
    ) -> subprocess.Popen[bytes]:  # fmt: skip
        # core.hooksPath: a user's global hooks (reference-transaction) must not run either.
        argv = ["git", "-c", "core.hooksPath=/dev/null", f"--git-dir={self.git_dir}", *args]
        try:
            return subprocess.Popen(
                argv, stdin=stdin, stdout=stdout, stderr=stderr, env=self.env,
                start_new_session=True,  # no terminal to prompt on; killed as a group
            )  # fmt: skip
        except FileNotFoundError as exc:
            raise IngestError(
                f"{self.spec.shown}: the git command is not installed: install git "
                "(apt-get install git) to ingest repositories"
            ) from exc

    def _waited(
        self, process: subprocess.Popen[bytes], errors: IO[bytes], args: Sequence[str],
        quiet: bool = False,
    ) -> bool:  # fmt: skip
        """Whether ``process`` succeeded within the time given; a failure raises unless
        ``quiet``."""
        try:
            code = process.wait(self.timeout_s)
        except subprocess.TimeoutExpired:
            raise IngestError(
                f"{self.spec.shown}: git {args[0]} did not finish within {self.timeout_s:g} s "
                "(ingest.git.timeout_s): check that the host answers, or raise the setting "
                "for a large repository"
            ) from None
        if code == 0 or quiet:
            return code == 0
        raise self._failure(args[0], _tail(errors))

    def _failure(self, action: str, said: str) -> IngestError:
        said = self.spec.masked(said)
        lowered = said.lower()
        for needles, cause in _CAUSES:
            if any(needle in lowered for needle in needles):
                why = cause.format(ref=self.spec.ref or "HEAD", repo=self.spec.plain)
                return IngestError(f"{self.spec.shown} {why} (git {action}: {said})")
        return IngestError(f"{self.spec.shown}: git {action} failed: {said}")


def _environment() -> dict[str, str]:
    """The child's environment: the caller's (its credential helpers, SSH agent, proxy),
    without a repository's variables, and with no prompt and only the transports a spec
    names (never ``ext::``, which runs a command)."""
    env = {k: v for k, v in os.environ.items() if k not in _REPOSITORY_ENV}
    env.update(
        GIT_TERMINAL_PROMPT="0",
        GIT_ALLOW_PROTOCOL="https:http:ssh:git:file",
        LC_ALL="C",  # git's messages in English: they are matched to say the cause
    )
    return env


def _batch(stream: IO[bytes], count: int) -> Iterator[tuple[str, int, IO[bytes]]]:
    for _ in range(count):
        header = stream.readline().decode("ascii", "replace").split()
        if len(header) != 3 or header[1] != "blob":
            raise IngestError(f"git cat-file gave no blob ({' '.join(header)}): fetch again")
        yield header[0], int(header[2]), stream
        stream.read(1)  # the newline after each blob


def _tail(errors: IO[bytes]) -> str:
    """The last words of a command's stderr, on one line."""
    size = errors.seek(0, os.SEEK_END)
    errors.seek(max(0, size - _TAIL_BYTES))
    text = errors.read().decode("utf-8", "replace")
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    return "; ".join(lines) or "no message"


def _killed(process: subprocess.Popen[bytes]) -> None:
    """End ``process`` and its children (ssh, a remote helper), if still running."""
    if process.poll() is None:
        with suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)
        process.wait()
