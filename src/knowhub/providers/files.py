"""Files knowhub keeps beside its store (pictures, a crawl's manifest, refresh times)."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

__all__ = ["write_atomically"]


def write_atomically(path: Path, data: bytes) -> None:
    """Replace ``path`` with ``data`` in one rename: a reader (or a crash) sees the old file
    or the new one, never part of it. Each writer has a temporary file of its own, so two
    writing one path at once (two ingests keeping one picture) do not meet."""
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(handle, "wb") as out:
            out.write(data)
            out.flush()
            os.fsync(out.fileno())
        Path(temporary).replace(path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise
