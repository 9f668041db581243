"""Manual pages rendered by this machine's man(1), as a user saves them to a ``.txt`` file.

The tests need man-db (``make test`` installs it) and the pages of tar, ls and grep (their
packages ship them); a missing one fails the test with the fix, never skips it.
"""

from __future__ import annotations

import os
import shutil
import subprocess

import pytest

# How a user saves a page: through a pipe (man-db then removes the formatting itself), for a
# terminal as groff draws it (overstrikes), with SGR escapes, or cleaned by col -b (tabs).
FORMS = ("man", "man -Tutf8", "GROFF_SGR=1 man -Tutf8", "man -Tutf8 | col -b")


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
    env = {**os.environ, "MANWIDTH": "80", "LC_ALL": "C.UTF-8", "MANPAGER": "cat"}
    env.pop("MAN_KEEP_FORMATTING", None)
    command = ["man", *(["-Tutf8"] if "-Tutf8" in form else []), page]
    if form.startswith("GROFF_SGR=1"):
        env["GROFF_SGR"] = "1"
    output = subprocess.run(command, capture_output=True, env=env, check=True, timeout=60).stdout
    if form.endswith("col -b"):
        output = subprocess.run(["col", "-b"], input=output, capture_output=True, check=True).stdout
    return output.decode()
