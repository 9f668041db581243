"""``knowhub bench load``: drive running servers on this machine and report how they held.

Parse the options, refuse anything but loopback, run :func:`~knowhub.interfaces.loadtest.
driver.run_load`, print the table and write ``report.json`` and ``report.md``.
"""

from __future__ import annotations

import asyncio
import json
import os
import secrets
import shlex
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import click
import yaml

from knowhub.config import load_settings
from knowhub.errors import ConfigError
from knowhub.interfaces.cli.context import CliContext, emit
from knowhub.interfaces.loadtest import ENDPOINTS
from knowhub.interfaces.loadtest.target import loopback_url, websocket_url
from knowhub.interfaces.terminal import echo

if TYPE_CHECKING:
    from knowhub.interfaces.loadtest.driver import LoadOptions
    from knowhub.interfaces.loadtest.writer import Writer

__all__ = ["bench"]

# Questions about the example corpus (examples/docs), in its three languages.
DEFAULT_QUERIES = (
    "How often are database backups taken, and how long are they kept?",
    "Is a robot battery with 900 charge cycles still under warranty?",
    "Can we upgrade Fleetdeck from 4.1 straight to 4.4?",
    "What response time does a priority 1 support ticket get?",
    "How do I reset the console password?",
    "Какие системные требования для установки сервера?",
    "Сколько дней ежегодного отпуска у сотрудника?",
    "报销需要提交哪些材料？",
    "员工试用期是多久？",
    "Kestrel docking station firmware",
    "security handbook incident reporting",
    "售后服务 保修期",
)


@click.group()
def bench() -> None:
    """Measure a running knowhub server."""


@bench.command("load")
@click.option(
    "--url",
    default="http://127.0.0.1:8000",
    show_default=True,
    help="The `knowhub serve http` server (loopback only).",
)
@click.option(
    "--mcp-url",
    help="The `knowhub serve mcp --transport http` endpoint, e.g. "
    "http://127.0.0.1:8080/mcp (loopback only); adds MCP query_knowledge_hub.",
)
@click.option(
    "--clients",
    type=click.IntRange(1, 1000),
    default=10,
    show_default=True,
    help="Concurrent clients, each sending one request at a time.",
)
@click.option(
    "--duration",
    type=click.FloatRange(1, 3600),
    default=30,
    show_default=True,
    help="Seconds during which requests start.",
)
@click.option("--max-requests", type=click.IntRange(1), help="Stop after this many requests.")
@click.option(
    "--timeout",
    type=click.FloatRange(1, 600),
    default=30,
    show_default=True,
    help="Per-request timeout (s); a request still running duration + timeout + 5 s "
    "after the start is counted as hung and cancelled.",
)
@click.option(
    "--endpoints",
    default=",".join(ENDPOINTS),
    show_default=True,
    help="Comma-separated endpoints to cycle through (mcp_query needs --mcp-url).",
)
@click.option(
    "--collection",
    "-c",
    help="Collection to load. Default: the one the HTTP server uses for a request naming "
    "none (its configured collection, or the only one there is).",
)
@click.option("--top-k", type=click.IntRange(1, 20), default=5, show_default=True)
@click.option(
    "--queries",
    type=click.Path(path_type=Path, dir_okay=False, exists=True),
    help="Queries: one per line, or a JSON/YAML list (strings, or objects with "
    "'query' or 'question', as examples/golden.json). Default: a built-in set.",
)
@click.option(
    "--writer",
    "writer_file",
    type=click.Path(path_type=Path, dir_okay=False),
    help="A concurrent writer rewrites this file (created if missing) and re-ingests "
    "it while the load runs; it must lie in the folder the MCP server serves.",
)
@click.option(
    "--writer-via",
    type=click.Choice(["mcp", "cli"]),
    help="mcp: the MCP server's ingest tool (default with --mcp-url); cli: `knowhub "
    "ingest` with this command's --data-dir/--config (the HTTP server's data).",
)
@click.option(
    "--writer-interval",
    type=click.FloatRange(0),
    default=1.0,
    show_default=True,
    help="Seconds between two writes.",
)
@click.option(
    "--token-env",
    metavar="NAME",
    help="Environment variable holding the bearer token (never the token itself).",
)
@click.option("--server-pid", type=int, help="Pid of the HTTP server (default: found by port).")
@click.option("--mcp-pid", type=int, help="Pid of the MCP server (default: found by port).")
@click.option("--no-server-stats", is_flag=True, help="Do not sample the servers' RSS and CPU.")
@click.option("--sample-interval", type=click.FloatRange(0.1, 10), default=0.5, show_default=True)
@click.option(
    "--min-success",
    type=click.FloatRange(0, 1),
    default=0.999,
    show_default=True,
    help="The success rate the goal asks for.",
)
@click.option(
    "--out",
    "out_dir",
    type=click.Path(path_type=Path, file_okay=False),
    help="Folder for report.json and report.md (default: <data dir>/load-report).",
)
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
@click.pass_obj
def load(obj: CliContext, /, **opts: Any) -> None:
    """N concurrent clients against running servers for a bounded time.

    Reports per endpoint successes, errors, timeouts and torn results, P50/P95/P99 of the
    whole answer and of the first token, per-stage times, throughput, and the servers'
    RSS and CPU (idle, during, after). Exit status 1 when the goal is not met.
    """
    from knowhub.interfaces.loadtest.driver import run_load
    from knowhub.interfaces.loadtest.report import markdown, table

    options = _options(obj, opts)
    report = asyncio.run(run_load(options))
    out: Path = opts["out_dir"] or _data_dir(obj) / "load-report"
    out.mkdir(parents=True, exist_ok=True)
    (out / "report.json").write_text(
        json.dumps(report, ensure_ascii=False, indent=2) + "\n", encoding="utf-8"
    )
    (out / "report.md").write_text(markdown(report), encoding="utf-8")
    emit(report if opts["as_json"] else table(report), opts["as_json"])
    echo(f"wrote {out / 'report.json'} and {out / 'report.md'}", err=True)
    if not report["goal"]["passed"]:
        sys.exit(1)


def _options(obj: CliContext, opts: dict[str, Any]) -> LoadOptions:
    from knowhub.interfaces.loadtest.driver import LoadOptions
    from knowhub.interfaces.loadtest.probes import Servers

    url = loopback_url(opts["url"], "--url")
    mcp_url = opts["mcp_url"] and loopback_url(opts["mcp_url"], "--mcp-url")
    if mcp_url and mcp_url.count("/") == 2:  # no path: the MCP server's default endpoint
        mcp_url += "/mcp"
    endpoints = _endpoints(opts["endpoints"], mcp_url)
    servers = Servers(
        url,
        websocket_url(url, "/api/stream"),
        mcp_url,
        _headers(opts["token_env"]),
        opts["collection"],
        opts["top_k"],
        opts["timeout"],
    )
    return LoadOptions(
        servers=servers,
        clients=opts["clients"],
        duration_s=opts["duration"],
        max_requests=opts["max_requests"],
        endpoints=endpoints,
        queries=_queries(opts["queries"]),
        writer=_writer(obj, opts, mcp_url),
        server_pid=opts["server_pid"],
        mcp_pid=opts["mcp_pid"],
        server_stats=not opts["no_server_stats"],
        sample_s=opts["sample_interval"],
        min_success=opts["min_success"],
        command=shlex.join(["knowhub", *sys.argv[1:]]),
    )


def _data_dir(obj: CliContext) -> Path:
    settings = load_settings(config_file=obj.config, overrides={"data_dir": obj.data_dir})
    return settings.data_dir


def _endpoints(text: str, mcp_url: str | None) -> tuple[str, ...]:
    names = [n.strip() for n in text.split(",") if n.strip()]
    unknown = [n for n in names if n not in ENDPOINTS]
    if unknown or not names:
        raise ConfigError(f"--endpoints {text!r}: unknown {unknown}; choose from {list(ENDPOINTS)}")
    if mcp_url is None:
        names = [n for n in names if n != "mcp_query"]  # the default list, without an MCP server
        if not names:
            raise ConfigError("--endpoints mcp_query needs --mcp-url")
    return tuple(names)


def _headers(token_env: str | None) -> dict[str, str]:
    if not token_env:
        return {}
    # The token comes from the environment so that it never shows in `ps` or shell history.
    token = os.environ.get(token_env)
    if not token:
        raise ConfigError(f"--token-env {token_env}: that environment variable is not set")
    return {"Authorization": f"Bearer {token}"}


def _queries(path: Path | None) -> tuple[str, ...]:
    if path is None:
        return DEFAULT_QUERIES
    text = path.read_text(encoding="utf-8")
    if path.suffix.lower() in (".json", ".yaml", ".yml"):
        items = yaml.safe_load(text)  # JSON is YAML
        found = [
            i if isinstance(i, str) else str(i.get("query") or i.get("question") or "")
            for i in (items if isinstance(items, list) else [])
        ]
    else:
        found = [line.strip() for line in text.splitlines()]
    queries = tuple(q for q in found if q and not q.startswith("#"))
    if not queries:
        raise ConfigError(f"--queries {path}: no queries found (one per line, or a JSON list)")
    return queries


def _writer(obj: CliContext, opts: dict[str, Any], mcp_url: str | None) -> Writer | None:
    file: Path | None = opts["writer_file"]
    if file is None:
        return None
    via: Literal["mcp", "cli"] = opts["writer_via"] or ("mcp" if mcp_url else "cli")
    if via == "mcp" and mcp_url is None:
        raise ConfigError("--writer-via mcp needs --mcp-url (the server whose folder holds it)")
    if not file.parent.is_dir():
        raise ConfigError(f"--writer {file}: folder {file.parent} does not exist")
    from knowhub.interfaces.loadtest.writer import Writer

    argv = [sys.executable, "-m", "knowhub"]
    if obj.data_dir is not None:
        argv += ["--data-dir", str(obj.data_dir)]
    if obj.config is not None:
        argv += ["--config", str(obj.config)]
    return Writer(
        file.absolute(),
        via,
        opts["writer_interval"],
        opts["collection"],
        opts["timeout"],
        secrets.token_hex(3),
        argv,
    )
