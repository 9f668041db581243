"""What every ``knowhub`` command module shares: the command context, error handling and
output.

Its own module, not ``cli``: ``cli`` imports the command modules to join them to its group,
so a command module importing ``cli`` made a cycle, and importing one command module first
(a plugin, a test, ``python -c``) failed.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from knowhub.config import load_settings
from knowhub.errors import KnowhubError

if TYPE_CHECKING:  # built on a command's first use of it: `--help` and `--version` never load it
    from knowhub.app import App

__all__: list[str] = []  # for the command modules only; the CLI's API is knowhub.interfaces.cli


class _Context:
    def __init__(self, data_dir: Path | None, config: Path | None, debug: bool) -> None:
        self.data_dir = data_dir
        self.config = config
        self.debug = debug
        self._app: App | None = None

    def app(self, **overrides: Any) -> App:
        if self._app is None:
            from knowhub.app import build_app

            settings = load_settings(
                config_file=self.config, overrides={"data_dir": self.data_dir, **overrides}
            )
            self._app = build_app(settings, interface="cli")
        return self._app


@contextmanager
def _errors(obj: _Context) -> Iterator[None]:
    """Turn failures into one line on stderr and a non-zero exit (tracebacks with --debug)."""
    try:
        yield
    except KnowhubError as exc:
        if obj.debug:
            raise
        click.echo(f"error: {exc}", err=True)
        sys.exit(1)
    except (KeyboardInterrupt, click.exceptions.Exit, SystemExit):
        raise
    except Exception as exc:  # the CLI is the one place allowed to catch everything
        if obj.debug:
            raise
        click.echo(f"error: {type(exc).__name__}: {exc} (run with --debug for details)", err=True)
        sys.exit(1)


@contextmanager
def _progress(label: str) -> Iterator[Callable[[int, int, str], None] | None]:
    """A progress bar of steps (e.g. queries) on stderr when it is a terminal; nothing
    otherwise. An ingest's progress is :func:`~knowhub.interfaces.progress.ingest_progress`."""
    if not sys.stderr.isatty():
        yield None
        return
    bar: Any = None

    def update(done: int, total: int, current: str) -> None:
        nonlocal bar
        if bar is None:
            bar = click.progressbar(length=total, label=label, file=sys.stderr)
            bar.__enter__()
        bar.label = f"{label} {current[-40:]}"
        bar.update(done - bar.pos)

    try:
        yield update
    finally:
        if bar is not None:
            bar.__exit__(None, None, None)


def _emit(payload: Any, as_json: bool) -> None:
    if as_json:
        click.echo(json.dumps(payload, ensure_ascii=False, indent=2, default=str))
    else:
        click.echo(payload)
