"""Text for a terminal (knowhub.interfaces.terminal): control characters shown, not obeyed;
and every CLI printer goes through it. The whole path is tests/e2e/test_cli_escapes.py's."""

from __future__ import annotations

import ast
import logging

from knowhub.interfaces.terminal import PrintableFormatter, printable
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


def test_log_lines_are_printable() -> None:
    record = logging.LogRecord("knowhub", logging.WARNING, "f", 1, "bad %s", ("x\x1b[2J",), None)
    assert PrintableFormatter("%(message)s").format(record) == "bad x\\x1b[2J"


def test_no_cli_printer_writes_text_around_the_helper() -> None:
    """Text goes out through ``emit``/``echo`` (knowhub.interfaces.terminal); click.echo and
    print only for JSON, which is exact."""
    for path in sorted(CLI.glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not isinstance(node, ast.Call):
                continue
            name = ast.unparse(node.func)
            if name in ("click.echo", "print", "sys.stdout.write", "sys.stderr.write"):
                argument = ast.unparse(node.args[0]) if node.args else ""
                assert argument.startswith("json.dumps("), f"{path.name}: {ast.unparse(node)}"
