"""The download's file name: the document's own name, never a path or a header break-out."""

from __future__ import annotations

import pytest

from knowhub.interfaces.http.console.source import safe_filename


@pytest.mark.parametrize(
    ("source", "name"),
    [
        ("team/hr.md", "hr.md"),
        ("..\\..\\etc\\passwd", "passwd"),
        ('q"uote;\r\nSet-Cookie: x.pdf', "q_uote___Set-Cookie_ x.pdf"),
        ("备份 (v2).md", "备份 (v2).md"),
        ("...", "document"),
    ],
)
def test_a_download_is_named_by_the_files_own_name(source: str, name: str) -> None:
    assert safe_filename(source) == name
