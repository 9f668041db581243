"""``knowhub models``: models the user brings, in local folders."""

from __future__ import annotations

import sys
from pathlib import Path

import click
import yaml

from knowhub.interfaces.cli.context import emit
from knowhub.interfaces.terminal import echo

__all__ = ["models"]


@click.group()
def models() -> None:
    """Local model folders: an ONNX embedder or cross-encoder (nothing is downloaded)."""


@models.command("check")
@click.argument("path", type=click.Path(path_type=Path))
@click.option("--file", default="", help="The graph inside the folder, when it holds several.")
@click.option(
    "--kind",
    type=click.Choice(["auto", "embedder", "cross-encoder"]),
    default="auto",
    show_default=True,
    help="auto: a cross-encoder when config.json names a sequence-classification model.",
)
@click.option(
    "--quantize",
    type=click.Choice(["none", "int8"]),
    default="none",
    show_default=True,
    help="int8: also load it quantised and report the parity with the float graph.",
)
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
def check(path: Path, file: str, kind: str, quantize: str, as_json: bool) -> None:
    """Check the model folder PATH: files, opset, inputs, dimension and a test encode;
    print the settings that use it. Exit status 1 when knowhub cannot run it."""
    from knowhub.providers.local.check import check_folder

    report = check_folder(path, file, kind, quantize)
    if as_json:
        payload = {"ok": report.ok, "kind": report.kind, "checks": report.lines}
        emit({**payload, "error": report.error, "settings": report.settings}, True)
    else:
        for line in report.lines:
            echo(f"ok     {line}")
        if report.ok:
            echo(f"\n{report.kind} ready; in knowhub.yaml:\n")
            echo(yaml.safe_dump(report.settings, sort_keys=False).rstrip())
    if not report.ok:
        if not as_json:
            echo(f"error: {report.error}", err=True)
        sys.exit(1)
