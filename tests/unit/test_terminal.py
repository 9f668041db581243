"""Text for a terminal (knowhub.interfaces.terminal): control characters shown, not obeyed;
and every CLI printer goes through it. The whole path is tests/e2e/test_cli_escapes.py's."""

from __future__ import annotations

import ast
import json
import logging

from knowhub.interfaces.terminal import PrintableFormatter, json_text, printable
from tests.helpers import ROOT

CLI = ROOT / "src" / "knowhub" / "interfaces" / "cli"


def test_controls_and_bidi_overrides_are_shown_as_escapes() -> None:
    assert printable("red\x1b[31m.md") == "red\\x1b[31m.md"
    assert printable("a\x1b]8;;https:x\x07b") == "a\\x1b]8;;https:x\\x07b"
    assert printable("over\rwrite\x08\x7f\x9b") == "over\\rwrite\\x08\\x7f\\x9b"
    assert printable("evil\u202etxt\u2066.md") == "evil\\u202etxt\\u2066.md"
    assert printable(printable("\x1b")) == "\\x1b"  # shown once, however often it passes


def test_text_and_names_of_every_script_are_kept() -> None:
    kept = "tabs\tand\nlines, café, 报销制度.md, Отчёт, עברית, مرحبا, emoji 🎉, ‎zero-width\u200b"
    assert printable(kept) == kept


def test_json_text_writes_what_a_terminal_would_obey_as_escapes_and_reads_back_exact() -> None:
    value = {
        "csi\x9b2J": [
            "evil\u202etxt\u2066.md",
            "del\x7f",
            "esc\x1b[2J",
            "cr\r",
            "ls\u2028ps\u2029",
        ],
        "kept": "tabs\tand\nlines, café, 报销制度.md, 🎉",
    }
    for indent in (None, 2):
        text = json_text(value, indent)
        assert json.loads(text) == value  # exact
        assert printable(text) == text, text  # nothing a terminal obeys
        assert "\u2028" not in text and "\u2029" not in text, text  # nor line separators
        assert "报销制度.md, 🎉" in text  # text of every script as it is
    assert json_text("\x9b\u202e") == '"\\u009b\\u202e"'


def test_log_lines_are_printable() -> None:
    record = logging.LogRecord("knowhub", logging.WARNING, "f", 1, "bad %s", ("x\x1b[2J",), None)
    assert PrintableFormatter("%(message)s").format(record) == "bad x\\x1b[2J"


def test_no_cli_printer_writes_around_the_helpers() -> None:
    """Text and JSON go out through ``emit``, ``echo`` and ``echo_json``
    (knowhub.interfaces.terminal): never click.echo, print or a stream's write."""
    for path in sorted(CLI.glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Call):
                name = ast.unparse(node.func)
                banned = ("click.echo", "print", "sys.stdout.write", "sys.stderr.write")
                assert name not in banned, f"{path.name}: {ast.unparse(node)}"
