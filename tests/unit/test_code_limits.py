"""The house limits on the product's code: modules of at most 600 lines, functions of at
most 60 (their docstring not counted: what a function says of itself is not what it does).
A function past it does two things; a module past it, several."""

from __future__ import annotations

import ast
from pathlib import Path

SOURCE = Path(__file__).resolve().parents[2] / "src" / "knowhub"
MODULE_LINES = 600
FUNCTION_LINES = 60


def _modules() -> list[Path]:
    found = sorted(SOURCE.rglob("*.py"))
    assert len(found) > 100, SOURCE  # the source was found: an empty list proves nothing
    return found


def _length(node: ast.FunctionDef | ast.AsyncFunctionDef) -> int:
    """The function's lines, its docstring left out."""
    lines = (node.end_lineno or node.lineno) - node.lineno + 1
    first = node.body[0]
    if (
        isinstance(first, ast.Expr)
        and isinstance(first.value, ast.Constant)
        and isinstance(first.value.value, str)
    ):
        lines -= (first.end_lineno or first.lineno) - first.lineno + 1
    return lines


def test_every_module_is_at_most_600_lines() -> None:
    long = {
        str(path.relative_to(SOURCE)): lines
        for path in _modules()
        if (lines := len(path.read_text(encoding="utf-8").splitlines())) > MODULE_LINES
    }
    assert not long, f"split these modules (lines): {long}"


def test_every_function_is_at_most_60_lines_besides_its_docstring() -> None:
    long = {
        f"{path.relative_to(SOURCE)}:{node.lineno} {node.name}": _length(node)
        for path in _modules()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
        and _length(node) > FUNCTION_LINES
    }
    assert not long, f"split these functions (lines besides the docstring): {long}"
