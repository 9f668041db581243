"""The root ``knowhub`` group: global options, commands loaded by name when run, and the
CLI's one error boundary.

Results go to stdout; progress, logs and errors go to stderr. Any knowhub error becomes a
one-line message and exit status 1 (2 for usage errors); tracebacks only with ``--debug``.
"""

from __future__ import annotations

import importlib
import logging
import sys
from pathlib import Path
from typing import Any, ClassVar

import click

from knowhub.errors import KnowhubError
from knowhub.interfaces.cli.context import CliContext
from knowhub.interfaces.terminal import PrintableFormatter, echo

__all__ = ["KnowhubGroup", "cli", "main"]


class KnowhubGroup(click.Group):
    """The group whose commands' modules load when one is run (or help is asked): a search
    imports neither ingest's, versions', eval's, bench's nor the servers' (~0.1 s).

    It is also where a failure anywhere below becomes one line on stderr and exit status 1,
    so that no command handles errors of its own.
    """

    _LAZY: ClassVar[dict[str, str]] = {
        "ask": "ask:ask",
        "bench": "bench:bench",
        "calibrate": "calibrate:calibrate",
        "chat": "chat:chat",
        "collections": "browse:collections",
        "docs": "browse:docs",
        "eval": "eval:eval_command",
        "export": "bundle:export_command",
        "faq": "faq:faq",
        "import": "bundle:import_command",
        "ingest": "ingest:ingest",
        "models": "models:models",
        "remove": "ingest:remove",
        "search": "search:search",
        "serve": "serve:serve",
        "show": "browse:show",
        "sync": "sync:sync",
        "traces": "traces:traces",
        "verify": "bundle:verify",
        "versions": "versions:versions",
    }

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*super().list_commands(ctx), *self._LAZY})

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name in self._LAZY and cmd_name not in self.commands:
            module, name = self._LAZY[cmd_name].split(":")
            command = getattr(importlib.import_module(f"knowhub.interfaces.cli.{module}"), name)
            self.add_command(command, cmd_name)
        return super().get_command(ctx, cmd_name)

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except (click.exceptions.Exit, click.exceptions.Abort, click.ClickException):
            raise  # click's own: usage errors (exit 2), --help, Ctrl-C at a prompt
        except Exception as exc:  # the CLI is the one place allowed to catch everything
            if ctx.params.get("debug"):
                raise
            echo(_message(exc), err=True)
            sys.exit(1)


def _message(exc: Exception) -> str:
    if isinstance(exc, KnowhubError):
        return f"error: {exc}"
    return f"error: {type(exc).__name__}: {exc} (run with --debug for details)"


@click.group(cls=KnowhubGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.option(
    "--data-dir",
    type=click.Path(path_type=Path, file_okay=False),
    help="Where the index lives (default ./data, or KNOWHUB_DATA_DIR).",
)
@click.option(
    "--config",
    type=click.Path(path_type=Path, dir_okay=False),
    help="YAML settings file (default ./knowhub.yaml if present, or KNOWHUB_CONFIG).",
)
@click.option("--debug", is_flag=True, help="Show tracebacks and debug logs.")
@click.option(
    "--as-token",
    metavar="NAME",
    help="Run with the data scope of server.tokens entry NAME (tenants, datasets, "
    "max_visibility, roles): see what that token's holder sees.",
)
@click.version_option(package_name="knowhub")
@click.pass_context
def cli(
    ctx: click.Context,
    data_dir: Path | None,
    config: Path | None,
    debug: bool,
    as_token: str | None,
) -> None:
    """knowhub: ingest your documents, then search them with citations."""
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(PrintableFormatter("%(levelname)s %(name)s: %(message)s"))
    logging.basicConfig(level=logging.DEBUG if debug else logging.WARNING, handlers=[handler])
    obj = ctx.obj = CliContext(data_dir, config, debug, as_token)
    ctx.call_on_close(obj.close)


def main() -> None:
    """Console-script entry point."""
    cli(prog_name="knowhub")
