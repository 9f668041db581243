"""An older index snapshot removed by a process killed half way leaves no damaged snapshot.

``kill -9`` during an ingest (tests/integration/test_crash_safety.py) once caught a process
between two files of an old snapshot's removal: the folder kept its name and lost its
digests, and the next ``verify`` reported the index damaged. Removal now renames the folder
out of the way before deleting its files.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any, cast

import numpy as np
import pytest

from knowhub.providers.stores.derived import snapshot
from knowhub.providers.stores.derived.segment import Segment


class _Arrays:
    """What :func:`snapshot.write` asks of a segment: its arrays."""

    def arrays(self) -> dict[str, np.ndarray[Any, Any]]:
        return {"ids": np.arange(3, dtype=np.int64), "digests": np.arange(3, dtype=np.int32)}


def test_a_removal_cut_short_leaves_no_damaged_snapshot(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder, segment = tmp_path / "1", cast(Segment, _Arrays())
    assert snapshot.write(folder, 1, segment, None) is not None

    def killed(path: Path | str, ignore_errors: bool = False) -> None:
        """The process dies after deleting one file of the folder."""
        min(Path(path).iterdir()).unlink()
        raise KeyboardInterrupt

    monkeypatch.setattr(shutil, "rmtree", killed)
    with pytest.raises(KeyboardInterrupt):
        snapshot.write(folder, 2, segment, None)  # the new one in place, the old one half gone
    monkeypatch.undo()
    assert snapshot.checksum_errors(folder) == []
    assert [p.name.split("-")[0] for p in folder.glob("v*")] == ["v000000000002"]
