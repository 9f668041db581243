"""``knowhub faq``: question → answer pairs answered directly by ``ask`` (hit_type faq_direct)."""

from __future__ import annotations

from pathlib import Path

import click

from knowhub.interfaces.cli.context import CliContext, emit
from knowhub.interfaces.terminal import echo

__all__ = ["faq"]


@click.group()
def faq() -> None:
    """FAQ entries: a question that repeats one gets its stored answer at once."""


@faq.command("import")
@click.argument("files", nargs=-1, required=True, type=click.Path(path_type=Path, dir_okay=False))
@click.option(
    "--collection",
    "-c",
    help="Collection (default: the configured one; unset, the only one there is).",
)
@click.pass_obj
def import_faq(obj: CliContext, files: tuple[Path, ...], collection: str | None) -> None:
    """Load FAQ FILES: CSV/TSV with question and answer columns, JSON [{question, answer}],
    or Markdown whose headings ending in '?' are questions (or Q:/A: lines).

    Importing a file again replaces its entries.
    """
    for source, count in obj.writer("import FAQs").collection(collection).faq_import(list(files)):
        echo(f"{count} FAQ entries from {source}")


@faq.command("list")
@click.option(
    "--collection",
    "-c",
    help="Collection (default: the configured one; unset, the only one there is).",
)
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@click.pass_obj
def list_faq(obj: CliContext, collection: str | None, as_json: bool) -> None:
    """The FAQ entries of a collection."""
    entries = obj.app().collection(collection).faq()
    if as_json:
        rows = [
            {"source": e.source, "line": e.line, "question": e.question, "answer": e.answer}
            for e in entries
        ]
        emit(rows, True)
    else:
        lines = [f"{Path(e.source).name}:{e.line}  {e.question}" for e in entries]
        emit("\n".join(lines) or "no FAQ entries: run `knowhub faq import FILE`", False)


@faq.command("remove")
@click.argument("file", type=click.Path(path_type=Path, dir_okay=False))
@click.option(
    "--collection",
    "-c",
    help="Collection (default: the configured one; unset, the only one there is).",
)
@click.pass_obj
def remove_faq(obj: CliContext, file: Path, collection: str | None) -> None:
    """Remove the FAQ entries imported from FILE."""
    removed = obj.writer("remove FAQs").collection(collection).faq_remove(str(file))
    echo(f"removed {removed} FAQ entries from {file}")
