"""A search's language is its question's: Latin commands and options inside a Russian or
Chinese question do not make it English (issue 37, item 3)."""

from __future__ import annotations

from pathlib import Path

from knowhub import App
from tests.helpers import write


def test_a_mixed_script_question_is_searched_in_the_language_of_its_words(
    app: App, tmp_path: Path
) -> None:
    write(tmp_path / "kb" / "quota.md", "# Квоты\n\nВключите квоты опцией usrquota в fstab.\n")
    write(tmp_path / "kb" / "nginx.md", "# nginx\n\n如何配置 nginx 反向代理。\n")
    app.collection("kb").ingest([tmp_path / "kb"])
    assert app.collection("kb").search("квоты usrquota").language == "ru"
    assert app.collection("kb").search("如何配置 nginx").language == "zh"
    assert app.collection("kb").search("usrquota fstab").language == "en"
