"""Manual pages rendered by this machine's man(1), as a user saves them to a ``.txt`` file.

The tests need man-db (``make test`` installs it) and the pages of tar, ls, grep and at (their
packages ship them); a missing one fails the test with the fix, never skips it.
"""

from __future__ import annotations

import shutil
import subprocess

import pytest
from benchmarks.man_pages import FORMS, render

__all__ = ["FORMS", "rendered"]


def rendered(page: str, form: str = "man") -> str:
    """``page`` as ``form`` (one of :data:`FORMS`) writes it, 80 columns wide."""
    for tool in ("man", "col"):
        if shutil.which(tool) is None:
            pytest.fail(f"{tool} is not installed: apt-get install man-db (make test does)")
    found = subprocess.run(["man", "-w", page], capture_output=True, text=True, check=False)
    if found.returncode != 0:
        pytest.fail(
            f"the {page} man page is missing ({found.stderr.strip()}): install the package "
            "that ships it, and let dpkg keep /usr/share/man (no path-exclude for it)"
        )
    return render(page, form)
