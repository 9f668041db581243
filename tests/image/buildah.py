"""The Dockerfile's image, built and run with buildah: there is no Docker daemon here.

The base is a Debian root file system made by debootstrap (python3 and venv, as the
official ``python:*-slim`` images have), imported ``FROM scratch``; its tarball is kept in
``KNOWHUB_IMAGE_CACHE`` (default ``~/.cache/knowhub-image``) and the images in buildah's own
storage, so a second run on one machine builds only what changed. Containers run with
``--isolation chroot`` in the host's network namespace: a server inside answers on
127.0.0.1.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from tests.helpers import ROOT, WAIT_S

BASE = "localhost/knowhub-base:bookworm"
IMAGE = "localhost/knowhub:test"
SUITE = "bookworm"
# debootstrap's packages: what the Dockerfile's stages need of a Python base image.
BASE_PACKAGES = "python3,python3-venv,python3-pip,ca-certificates"
# Registry traffic may pass a proxy with its own CA: the host's bundle is mounted over the
# image's for the build's RUN steps, and pip is pointed at it.
HOST_CA = Path("/etc/ssl/certs/ca-certificates.crt")
APT_SOURCES = (Path("/etc/apt/sources.list.d"), Path("/etc/apt/sources.list"))


def cache_dir() -> Path:
    configured = os.environ.get("KNOWHUB_IMAGE_CACHE")
    if configured:
        return Path(configured)
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "knowhub-image"


def buildah(*args: str, timeout: float = 120) -> str:
    """Run ``buildah ARGS``; its stdout, or AssertionError with its stderr."""
    done = subprocess.run(
        ["buildah", *args], capture_output=True, text=True, timeout=timeout, check=False
    )
    if done.returncode != 0:
        raise AssertionError(f"buildah {' '.join(args)} exited {done.returncode}:\n{done.stderr}")
    return done.stdout


def has_image(name: str) -> bool:
    listed = subprocess.run(["buildah", "images", "-q", name], capture_output=True, check=False)
    return listed.returncode == 0 and bool(listed.stdout.strip())


def debian_mirror() -> str:
    """``DEBIAN_MIRROR``, else the first Debian archive this host's apt reads from."""
    if os.environ.get("DEBIAN_MIRROR"):
        return os.environ["DEBIAN_MIRROR"]
    folder, listing = APT_SOURCES
    texts = [p.read_text() for p in sorted(folder.glob("*.sources"))] if folder.is_dir() else []
    texts += [listing.read_text()] if listing.is_file() else []
    for text in texts:
        for url in re.findall(r"(?:^URIs:|^deb)\s+(\S+)", text, flags=re.MULTILINE):
            if url.rstrip("/").endswith("/debian"):
                return url
    raise AssertionError("no Debian mirror in /etc/apt: set DEBIAN_MIRROR=URL of one")


def base_image() -> str:
    """The Debian base image, built from the cached root file system (made on first use)."""
    if has_image(BASE):
        return BASE
    cache = cache_dir()
    tarball = cache / f"rootfs-{SUITE}.tar"
    if not tarball.is_file():
        _debootstrap(tarball)
    (cache / "Containerfile").write_text(f'FROM scratch\nADD {tarball.name} /\nCMD ["bash"]\n')
    buildah(
        "bud",
        "--isolation",
        "chroot",
        "-t",
        BASE,
        "-f",
        str(cache / "Containerfile"),
        str(cache),
        timeout=600,
    )
    return BASE


def _debootstrap(tarball: Path) -> None:
    tarball.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=tarball.parent) as work:
        rootfs = Path(work) / "rootfs"
        subprocess.run(
            [
                "debootstrap",
                "--variant=minbase",
                f"--include={BASE_PACKAGES}",
                SUITE,
                str(rootfs),
                debian_mirror(),
            ],
            check=True,
            capture_output=True,
            timeout=1200,
        )
        partial = tarball.with_suffix(".part")
        subprocess.run(["tar", "-C", str(rootfs), "-cf", str(partial), "."], check=True)
        partial.replace(tarball)


def build_image() -> float:
    """Build the Dockerfile on the base image as :data:`IMAGE`; the seconds it took."""
    base = base_image()
    started = time.monotonic()
    ca = f"{HOST_CA}:{HOST_CA}:ro"
    buildah(
        "bud",
        "--isolation",
        "chroot",
        "--format",
        "docker",
        "--layers",
        "--build-arg",
        f"BASE={base}",
        "--build-arg",
        f"PIP_CERT={HOST_CA}",
        "-v",
        ca,
        "-t",
        IMAGE,
        str(ROOT),
        timeout=1800,
    )
    return time.monotonic() - started


@dataclass(frozen=True)
class Mount:
    host: Path
    inside: str
    read_only: bool = False

    def option(self) -> str:
        return f"{self.host}:{self.inside}" + (":ro" if self.read_only else "")


@contextmanager
def container(name: str) -> Iterator[str]:
    """A container of :data:`IMAGE`, removed when the block ends."""
    subprocess.run(["buildah", "rm", name], capture_output=True, check=False)  # an old run's
    created = buildah("from", "--name", name, IMAGE).strip()
    # buildah run mounts the image's VOLUME /data itself, and now and then over the test's own
    # bind mount of that path (a race, seen under load): this container drops the VOLUME.
    buildah("config", "--volume", "/data-", created)
    try:
        yield created
    finally:
        subprocess.run(["buildah", "rm", created], capture_output=True, check=False)


def run_argv(
    name: str,
    argv: list[str],
    mounts: list[Mount],
    env: dict[str, str] | None = None,
    user: str = "knowhub",
) -> list[str]:
    """``buildah run`` of ``argv`` in container ``name``, as the image's user unless told
    (buildah run applies neither ENTRYPOINT nor USER: ``argv`` starts with the program)."""
    options = ["--isolation", "chroot", "--user", user]
    for mount in mounts:
        options += ["-v", mount.option()]
    for key, value in (env or {}).items():
        options += ["-e", f"{key}={value}"]
    return ["buildah", "run", *options, name, "--", *argv]


@contextmanager
def started(argv: list[str], log: Path) -> Iterator[subprocess.Popen[str]]:
    """``argv`` (a :func:`run_argv`) running until the block ends: then SIGTERM to its whole
    process group (buildah and the server under it), SIGKILL after ``WAIT_S``."""
    with log.open("w", encoding="utf-8") as out:
        process = subprocess.Popen(
            argv, stdout=out, stderr=subprocess.STDOUT, text=True, start_new_session=True
        )
    try:
        yield process
    finally:
        _stop_group(process)


def _stop_group(process: subprocess.Popen[str]) -> None:
    for sig, wait in ((signal.SIGTERM, WAIT_S), (signal.SIGKILL, WAIT_S)):
        try:
            os.killpg(process.pid, sig)
        except ProcessLookupError:
            break
        try:
            process.wait(timeout=wait)
            break
        except subprocess.TimeoutExpired:
            continue


def owned_by_image_user(path: Path) -> Path:
    """``path`` made writable by the image's user (uid 10001), as a bind-mounted /data must be."""
    path.mkdir(parents=True, exist_ok=True)
    shutil.chown(path, 10001, 10001)
    return path
