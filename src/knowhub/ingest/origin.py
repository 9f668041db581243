"""Where the files of a mirrored source came from: a website's pages, a repository's files.

A source that is not a folder (a website, a git repository) is first brought into a folder
of the data dir, its *mirror*, and that folder is ingested as any other: integrity, pruning,
dead letters and moves work on its files unchanged. The :class:`Origin` gives each file its
name where it lives (a URL, ``repo@commit:path``), which is the document's source — shown,
stored, cited and traced — while the store still knows the document by its mirror path.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

__all__ = ["Origin"]


@dataclass(frozen=True)
class Origin:
    """A mirror folder (``root``) and the name of each of its files where it lives:
    ``source_of(relative)`` for the posix path relative to ``root``."""

    root: Path
    source_of: Callable[[str], str]

    def source(self, path: str, relative: str) -> str:
        """The source of the file at ``path`` (discovered as ``relative``): its origin's
        name when it lies under ``root``, else ``relative`` as discovery gave it."""
        try:
            inside = Path(os.path.abspath(path)).relative_to(os.path.abspath(self.root))
        except ValueError:  # not the mirror's: named beside it
            return relative
        return self.source_of(inside.as_posix())
