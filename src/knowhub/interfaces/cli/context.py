"""What every ``knowhub`` command module shares: the command context and output.

Its own module, not the group's: the group loads the command modules, so a command module
importing the group would be a cycle.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from knowhub.caller import LOCAL_USER, Caller
from knowhub.config import Settings, TokenSettings, load_settings
from knowhub.errors import ConfigError
from knowhub.interfaces.terminal import echo, echo_json, printable

if TYPE_CHECKING:  # built on a command's first use of it: `--help` and `--version` never load it
    from knowhub.app import App

__all__ = ["CliContext", "emit", "progress_bar"]


class CliContext:
    """The global options (``--data-dir``, ``--config``, ``--debug``, ``--as-token``) and the
    app they build, once, when a command first asks for it."""

    def __init__(
        self, data_dir: Path | None, config: Path | None, debug: bool, as_token: str | None = None
    ) -> None:
        self.data_dir = data_dir
        self.config = config
        self.debug = debug
        self.as_token = as_token
        self._base: App | None = None
        self._app: App | None = None

    def app(self, **overrides: Any) -> App:
        """The App; with ``--as-token NAME``, as that configured token sees it: its
        collections only, and in them its data scope."""
        if self._app is None:
            from knowhub.app import build_app

            settings = load_settings(
                config_file=self.config, overrides={"data_dir": self.data_dir, **overrides}
            )
            self._base = build_app(settings, interface="cli")
            token = _token(settings, self.as_token)
            caller = LOCAL_USER if token is None else Caller.of_token(token)
            self._app = self._base.for_caller(caller)
        return self._app

    def writer(self, what: str) -> App:
        """The App for a command that changes the knowledge base (``what`` it does);
        refused with ``--as-token`` naming a read-only token."""
        app = self.app()
        app.caller.check_write(what)
        return app

    def close(self) -> None:
        if self._base is not None:
            self._base.close()


def _token(settings: Settings, name: str | None) -> TokenSettings | None:
    """The token named ``name`` in ``server.tokens`` (its secret is not needed: whoever
    runs the CLI already reads the data directory); None without ``--as-token``."""
    if name is None:
        return None
    for spec in settings.server.tokens:
        if spec.name == name:
            return spec
    known = ", ".join(spec.name for spec in settings.server.tokens) or "none configured"
    raise ConfigError(f"--as-token {name!r}: no such token in server.tokens (known: {known})")


@contextmanager
def progress_bar(label: str) -> Iterator[Callable[[int, int, str], None] | None]:
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
        bar.label = printable(f"{label} {current[-40:]}")
        bar.update(done - bar.pos)

    try:
        yield update
    finally:
        if bar is not None:
            bar.__exit__(None, None, None)


def emit(payload: Any, as_json: bool) -> None:
    """``payload`` on stdout: as indented JSON (exact, its control characters escaped:
    :func:`~knowhub.interfaces.terminal.json_text`), or as it is (rendered text, its
    control characters shown: :func:`~knowhub.interfaces.terminal.printable`)."""
    if as_json:
        echo_json(payload, indent=2)
    else:
        echo(str(payload))
