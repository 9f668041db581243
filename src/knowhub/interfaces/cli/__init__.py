"""The ``knowhub`` command line: parse, call :class:`~knowhub.app.App`, format.

:mod:`.group` is the root group (global options, commands loaded by name, the one error
boundary); :mod:`.context` what every command shares; one module per command or family.
"""

from knowhub.interfaces.cli.group import cli, main

__all__ = ["cli", "main"]
