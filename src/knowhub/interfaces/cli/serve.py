"""``knowhub serve mcp`` (the MCP server over stdio or streamable HTTP) and
``knowhub serve http`` (the HTTP API)."""

from __future__ import annotations

import logging
import re
import sys
from pathlib import Path

import click

from knowhub.config import load_settings
from knowhub.errors import QueryError
from knowhub.interfaces.cli.context import CliContext
from knowhub.interfaces.terminal import PrintableFormatter

__all__ = ["parse_duration", "serve"]

_DURATION = re.compile(r"(?P<n>\d+(?:\.\d+)?)\s*(?P<unit>[smhd]?)")
_SECONDS = {"": 1.0, "s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0}


_allow_unauthenticated = click.option(
    "--allow-unauthenticated",
    is_flag=True,
    help="Allow a non-loopback --host with no token configured (not recommended).",
)
_log_file = click.option(
    "--log-file",
    type=click.Path(path_type=Path, dir_okay=False),
    help="Write logs there instead of stderr.",
)


@click.group()
def serve() -> None:
    """Run a server."""


@serve.command("mcp")
@click.option(
    "--transport", type=click.Choice(["stdio", "http"]), default="stdio", show_default=True
)
@click.option(
    "--mode",
    type=click.Choice(["local", "shared"]),
    default="local",
    show_default=True,
    help="local: one folder; shared: many folders (HTTP).",
)
@click.option("--host", default="127.0.0.1", show_default=True)
@click.option("--port", type=click.IntRange(1, 65535), default=8080, show_default=True)
@click.option(
    "--docs",
    type=click.Path(path_type=Path, file_okay=False),
    default=Path("docs"),
    show_default=True,
    help="Local mode: the folder served (as the configured collection, or the one that "
    "already indexes it).",
)
@click.option(
    "--path-root",
    type=click.Path(path_type=Path, file_okay=False),
    default=Path(),
    show_default=True,
    help="Shared mode: folders are registered relative to it.",
)
@click.option(
    "--idle-timeout",
    default="30m",
    show_default=True,
    help="Shared mode: unload sessions idle this long (0: never).",
)
@click.option("--read-only", is_flag=True, help="No ingest/register/unregister tools.")
@_allow_unauthenticated
@_log_file
@click.pass_obj
def serve_mcp(
    obj: CliContext,
    transport: str,
    mode: str,
    host: str,
    port: int,
    docs: Path,
    path_root: Path,
    idle_timeout: str,
    read_only: bool,
    allow_unauthenticated: bool,
    log_file: Path | None,
) -> None:
    """Serve the knowledge base to MCP clients (Claude Desktop, Cline, Cursor …).

    Local mode indexes --docs on start (unchanged files cost nothing) and follows its
    changes. Shared mode (HTTP) serves many folders: register one on /mcp, then use its
    tools on /mcp/<session_id>. Nothing but protocol is written to stdout.
    """
    _configure_logging(log_file, obj.debug)
    settings = load_settings(config_file=obj.config, overrides={"data_dir": obj.data_dir})
    wire = None
    if transport == "stdio" and mode == "local":
        # Before the MCP SDK's import (~1.2 s): the handshake is answered meanwhile.
        from knowhub.interfaces.mcp.early import Wire, handshake_file

        key = (Path(settings.data_dir).resolve(), docs.resolve(), read_only, obj.config)
        wire = Wire(handshake_file(Path(settings.data_dir), *key), settings.server.max_body_bytes)
    from knowhub.interfaces.mcp.server import ServeOptions
    from knowhub.interfaces.mcp.server import serve as run

    options = ServeOptions(
        transport=transport,  # type: ignore[arg-type]
        mode=mode,  # type: ignore[arg-type]
        host=host,
        port=port,
        docs=docs,
        path_root=path_root,
        idle_timeout_s=parse_duration(idle_timeout, "--idle-timeout"),
        read_only=read_only,
        allow_unauthenticated=allow_unauthenticated,
    )
    run(settings, options, wire)


@serve.command("http")
@click.option("--host", default="127.0.0.1", show_default=True)
@click.option("--port", type=click.IntRange(1, 65535), default=8000, show_default=True)
@_allow_unauthenticated
@_log_file
@click.pass_obj
def serve_http(
    obj: CliContext, host: str, port: int, allow_unauthenticated: bool, log_file: Path | None
) -> None:
    """Serve the HTTP API: search, answers (JSON, SSE, WebSocket), collections, metrics.

    The same bearer tokens and checks as the MCP server (server.* settings); OpenAPI
    documentation at /docs.
    """
    from knowhub.interfaces.http.server import serve as run

    _configure_logging(log_file, obj.debug)
    settings = load_settings(config_file=obj.config, overrides={"data_dir": obj.data_dir})
    run(settings, host, port, allow_unauthenticated)


def _configure_logging(log_file: Path | None, debug: bool) -> None:
    """knowhub's own INFO logs to stderr (or ``log_file``); stdout stays the protocol's."""
    root = logging.getLogger()
    for old in list(root.handlers):
        root.removeHandler(old)
    handler: logging.Handler = (
        logging.FileHandler(log_file, encoding="utf-8")
        if log_file
        else logging.StreamHandler(sys.stderr)
    )
    handler.setFormatter(PrintableFormatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    root.addHandler(handler)
    root.setLevel(logging.DEBUG if debug else logging.WARNING)
    logging.getLogger("knowhub").setLevel(logging.DEBUG if debug else logging.INFO)


def parse_duration(text: str, option: str) -> float | None:
    """``"30m"`` → 1800.0 seconds; ``"0"`` → None (never)."""
    match = _DURATION.fullmatch(text.strip().lower())
    if match is None:
        raise QueryError(f"{option} {text!r} is not a duration: write e.g. 90s, 30m or 2h")
    seconds = float(match["n"]) * _SECONDS[match["unit"]]
    return seconds or None
