"""Index snapshots on disk: one folder of arrays per collection version, mapped on open.

A snapshot is written into a temporary folder (every file fsynced), renamed into place and
the parent fsynced, so a crash leaves the old snapshot or the new one, never half of one;
older snapshots are then removed, each renamed out of the way first (a crash in the middle
of deleting its files leaves a temporary folder, not a damaged snapshot). A process opens
one by mapping its arrays (100k chunks: a few ms, against ~2 s rebuilding them from
SQLite), and pages in only what it touches.
Each file's size and CRC-32 are recorded: opening checks the sizes, ``verify`` the CRCs.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import secrets
import shutil
import time
import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from knowhub.providers.stores.derived.ann import Ann
from knowhub.providers.stores.derived.segment import Segment

__all__ = ["FORMAT", "Snapshot", "checksum_errors", "latest", "remove_all", "write"]

log = logging.getLogger("knowhub.store")

FORMAT = 3  # bump when the arrays change meaning (3: the digest is a code point)
_META = "snapshot.json"
_ANN = "ann.faiss"


@dataclass(frozen=True)
class Snapshot:
    version: int
    segment: Segment
    ann: Ann | None
    path: Path


def write(folder: Path, version: int, segment: Segment, ann: Ann | None) -> Path | None:
    """Write the snapshot of a collection at ``version`` under ``folder``, atomically;
    nothing when a usable one of that version or a newer one is there already (None). One
    of another format is no obstacle: left there, it made every process rebuild for good."""
    folder.mkdir(parents=True, exist_ok=True)
    if any(_version_of(p) >= version and _usable(p) for p in folder.iterdir()):
        return None
    token = secrets.token_hex(4)
    tmp = folder / f".tmp-{token}"
    tmp.mkdir()
    try:
        files: dict[str, dict[str, Any]] = {}
        for name, array in segment.arrays().items():
            path = tmp / f"{name}.npy"
            np.save(path, np.ascontiguousarray(array), allow_pickle=False)
            files[path.name] = _described(path)
        if ann is not None:
            ann.save(tmp / _ANN)
            files[_ANN] = _described(tmp / _ANN)
        meta = {"format": FORMAT, "version": version, "files": files}
        (tmp / _META).write_text(json.dumps(meta), encoding="utf-8")
        _fsync_all(tmp)
        final = folder / f"v{version:012d}-{token}"
        tmp.rename(final)
        _fsync(folder)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    for old in folder.iterdir():
        # Only older snapshots and crashed writers' leftovers: a newer snapshot, or a
        # temporary folder being written, is not ours to remove. A process may still map an
        # old one: its mapping outlives this.
        if old != final and (
            0 <= _version_of(old) < version
            or _abandoned(old)
            or (_version_of(old) == version and not _usable(old))
        ):
            _discard(old)
    return final


def latest(folder: Path, at_most: int) -> Snapshot | None:
    """The newest readable snapshot of a version up to ``at_most``; None if there is none.
    An unreadable one is reported and skipped (the caller rebuilds from SQLite)."""
    if not folder.is_dir():
        return None
    # The version is in the name: newer ones are skipped unopened.
    candidates = sorted(
        (p for p in folder.iterdir() if 0 <= _version_of(p) <= at_most), reverse=True
    )
    for path in candidates:
        try:
            snapshot = _open(path)
        except (OSError, ValueError, KeyError, RuntimeError) as exc:
            log.warning(
                "index snapshot %s is unreadable (%s): rebuilding it from SQLite", path, exc
            )
            continue
        return snapshot
    return None


def checksum_errors(folder: Path) -> list[str]:
    """Files of the snapshots under ``folder`` whose size or CRC differs from the record."""
    errors = []
    for path in sorted(folder.glob("v*")) if folder.is_dir() else []:
        try:
            meta = json.loads((path / _META).read_text(encoding="utf-8"))
            for name, want in meta["files"].items():
                if _described(path / name) != want:
                    errors.append(f"{path.name}/{name}")
        except (OSError, ValueError, KeyError) as exc:
            errors.append(f"{path.name}: {exc}")
    return errors


def _version_of(path: Path) -> int:
    """The version in a snapshot folder's name (``v000000000042-token``); -1 for another."""
    head = path.name.split("-", 1)[0]
    return int(head[1:]) if head.startswith("v") and head[1:].isdigit() else -1


def _usable(path: Path) -> bool:
    """Whether the snapshot is of this format and its files have the sizes its record says
    (what opening checks)."""
    try:
        meta = json.loads((path / _META).read_text(encoding="utf-8"))
        files = meta["files"]
        return meta["format"] == FORMAT and all(
            (path / name).stat().st_size == want["size"] for name, want in files.items()
        )
    except (OSError, ValueError, KeyError, TypeError):
        return False


def _abandoned(path: Path) -> bool:
    """A temporary folder no writer has touched for an hour (its process died)."""
    try:
        return path.name.startswith(".tmp-") and time.time() - path.stat().st_mtime > 3600
    except OSError:
        return False


def _discard(path: Path) -> None:
    """Remove a snapshot folder: renamed to a temporary name first (atomic), so that only a
    temporary folder is ever half deleted; one already temporary is deleted where it is."""
    if not path.name.startswith(".tmp-"):
        gone = path.with_name(f".tmp-{secrets.token_hex(4)}-gone")
        try:
            path.rename(gone)
        except OSError:  # another process removed it first
            return
        path = gone
    shutil.rmtree(path, ignore_errors=True)


def remove_all(folder: Path) -> None:
    shutil.rmtree(folder, ignore_errors=True)


def _open(path: Path) -> Snapshot:
    meta = json.loads((path / _META).read_text(encoding="utf-8"))
    if meta["format"] != FORMAT:
        raise ValueError(f"format {meta['format']}, this knowhub reads {FORMAT}")
    arrays = {}
    for name, want in meta["files"].items():
        if (path / name).stat().st_size != want["size"]:
            raise ValueError(f"{name} is {(path / name).stat().st_size} bytes, not {want['size']}")
        if name.endswith(".npy"):
            mapped = np.load(path / name, mmap_mode="r", allow_pickle=False)
            # A plain array over the mapping: slicing a np.memmap costs ~25 µs in Python.
            arrays[name[: -len(".npy")]] = np.asarray(mapped)
    ann = Ann.load(path / _ANN) if _ANN in meta["files"] else None
    return Snapshot(int(meta["version"]), Segment.from_arrays(arrays), ann, path)


def _described(path: Path) -> dict[str, Any]:
    crc = 0
    with path.open("rb") as f:
        while block := f.read(1 << 20):
            crc = zlib.crc32(block, crc)
    return {"size": path.stat().st_size, "crc32": crc}


def _fsync_all(folder: Path) -> None:
    for path in folder.iterdir():
        with path.open("rb") as f:
            os.fsync(f.fileno())
    _fsync(folder)


def _fsync(folder: Path) -> None:
    fd = os.open(folder, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        with contextlib.suppress(OSError):
            os.close(fd)
