"""Drive running servers with N concurrent clients for a bounded time; report what happened.

1. find the servers' processes, note their idle memory and CPU;
2. preflight: each endpoint once, the writer once, the collection's documents (a run whose
   every request would fail stops here, with the reason);
3. N clients, each cycling through the endpoints, plus the writer, until the duration or
   the request budget is spent; the servers sampled meanwhile;
4. a hard stop: a request still running ``timeout + grace`` after the end is counted as hung
   and cancelled;
5. every source a response named is checked against the collection's documents.
"""

from __future__ import annotations

import asyncio
import logging
import os
import time
from collections.abc import Sequence
from contextlib import AsyncExitStack
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import httpx2 as httpx

from knowhub.errors import ConfigError
from knowhub.interfaces.loadtest import ENDPOINTS
from knowhub.interfaces.loadtest.probes import Outcome, Prober, Servers
from knowhub.interfaces.loadtest.procstat import ProcSampler, Sample, pid_listening_on
from knowhub.interfaces.loadtest.report import endpoint_stats, server_stats, spread, summary
from knowhub.interfaces.loadtest.writer import Writer

__all__ = ["LoadOptions", "run_load"]

log = logging.getLogger("knowhub.bench")
GRACE_S = 5.0  # beyond the per-request timeout, before the hard stop
KEEPALIVE_S = 2.0


@dataclass(frozen=True)
class LoadOptions:
    servers: Servers
    clients: int
    duration_s: float
    max_requests: int | None
    endpoints: tuple[str, ...]
    queries: tuple[str, ...]
    writer: Writer | None
    server_pid: int | None  # None: the process listening on the URL's port
    mcp_pid: int | None
    server_stats: bool
    sample_s: float
    min_success: float
    command: str


@dataclass
class _Run:
    outcomes: list[Outcome]
    wall_s: float
    hung: int  # requests cancelled at the hard stop
    # This process's CPU and event-loop lag: a load generator short of CPU inflates latencies.
    client_cpu_pct: float
    loop_lag_ms: list[float]
    loadavg: tuple[float, float]  # the machine's 1-minute load average before and after


@dataclass
class _Budget:
    """Requests left (``None``: unbounded) and the time after which none starts."""

    left: int | None
    deadline: float

    def take(self) -> bool:
        if time.monotonic() >= self.deadline or self.left == 0:
            return False
        if self.left is not None:
            self.left -= 1
        return True


async def run_load(options: LoadOptions) -> dict[str, Any]:
    """Run the load and return the report (see :mod:`knowhub.interfaces.loadtest.report`)."""
    samplers = _samplers(options)
    idle = await _idle(samplers, options.sample_s)
    pool = options.clients * 3 + 10  # a request, a WebSocket and an MCP stream per client
    # Idle connections are dropped before uvicorn's 5 s keep-alive closes them: reusing one
    # the server is closing fails ("Server disconnected") through no fault of the server.
    limits = httpx.Limits(
        max_connections=pool, max_keepalive_connections=pool, keepalive_expiry=KEEPALIVE_S
    )
    # The token goes on every request, the MCP client's included; proxies are never used.
    client = httpx.AsyncClient(
        timeout=options.servers.timeout_s,
        limits=limits,
        headers=options.servers.headers,
        trust_env=False,
    )
    async with client as http:
        options, known = await _preflight(options, http)
        run = await _load(options, http, samplers)
        after = await _after(samplers)
        try:  # documents the writer added, or any other; the report survives without them
            known |= (await _documents(options.servers, http))[1]
        except (ConfigError, httpx.HTTPError) as exc:
            log.warning(
                "after the load, listing the documents failed (%s): sources are "
                "checked against the documents listed before it",
                exc,
            )
    _mark_unknown_sources(run.outcomes, known)
    return _report(options, run, samplers, idle, after)


def _samplers(options: LoadOptions) -> dict[str, ProcSampler]:
    if not options.server_stats:
        return {}
    found = {"http": _pid(options.server_pid, options.servers.url)}
    if options.servers.mcp_url is not None:
        found["mcp"] = _pid(options.mcp_pid, options.servers.mcp_url)
    return {name: ProcSampler(pid, options.sample_s) for name, pid in found.items()}


def _pid(given: int | None, url: str) -> int:
    if given is not None:
        if not Path(f"/proc/{given}").is_dir():
            raise ConfigError(f"no process with pid {given}: check --server-pid / --mcp-pid")
        return given
    parts = urlsplit(url)
    return pid_listening_on(parts.port or (443 if parts.scheme == "https" else 80))


async def _idle(samplers: dict[str, ProcSampler], interval_s: float) -> dict[str, list[Sample]]:
    """Three readings of the servers at rest, before any request of ours."""
    idle: dict[str, list[Sample]] = {name: [] for name in samplers}
    for _ in range(3):
        for name, sampler in samplers.items():
            idle[name].append(sampler.sample())
        await asyncio.sleep(interval_s)
    return idle


async def _preflight(options: LoadOptions, http: httpx.AsyncClient) -> tuple[LoadOptions, set[str]]:
    """Each endpoint once, and the writer once; then the options naming the collection (the
    one the HTTP server uses for a request naming none, unless ``--collection`` named one)
    and its documents' sources. Raise on failure."""
    failure = await _try_each(options, http)
    if failure is not None:
        raise ConfigError(
            f"preflight: {failure}; the load would only repeat it: fix that first (is the "
            "server running, the token right?)"
        )
    name, known = await _documents(options.servers, http)
    if not known:
        raise ConfigError(
            f"collection {name!r} has no documents: ingest a corpus first (e.g. knowhub "
            "ingest examples/docs)"
        )
    servers = replace(options.servers, collection=name)
    writer = options.writer and replace(options.writer, collection=name)
    return replace(options, servers=servers, writer=writer), known


async def _try_each(options: LoadOptions, http: httpx.AsyncClient) -> str | None:
    """What failed first, if anything, when each endpoint and the writer are tried once."""
    stack = AsyncExitStack()
    prober = Prober(options.servers, http, stack)
    try:
        for endpoint in options.endpoints:
            outcome = await prober.call(endpoint, options.queries[0], time.perf_counter())
            if outcome.kind != "ok":
                return f"{ENDPOINTS[endpoint]} failed ({outcome.kind}: {outcome.error})"
        if options.writer is not None:
            outcome = await options.writer.write(prober, time.perf_counter())
            if outcome.kind != "ok":
                return f"the writer failed ({outcome.kind}: {outcome.error})"
        return None
    finally:
        await _close(stack)


async def _documents(servers: Servers, http: httpx.AsyncClient) -> tuple[str, set[str]]:
    """The collection the load reads (the server says which, when none is named) and its
    documents' sources."""
    named = {"collection": servers.collection} if servers.collection else {}
    resp = await http.get(servers.url + "/api/documents", headers=servers.headers, params=named)
    if resp.status_code != 200:
        raise ConfigError(f"GET /api/documents answered {resp.status_code}: {resp.text[:200]}")
    body = resp.json()
    return str(body["collection"]), {str(doc["source"]) for doc in body.get("documents", [])}


async def _load(
    options: LoadOptions, http: httpx.AsyncClient, samplers: dict[str, ProcSampler]
) -> _Run:
    """The clients and the writer until the end (or the hard stop)."""
    epoch, cpu, loadavg = time.perf_counter(), time.process_time(), os.getloadavg()[0]
    budget = _Budget(options.max_requests, time.monotonic() + options.duration_s)
    outcomes: list[Outcome] = []
    stop = asyncio.Event()
    sampling = [asyncio.create_task(s.run(stop)) for s in samplers.values()]
    lags: list[float] = []
    sampling.append(asyncio.create_task(_loop_lag(stop, lags)))
    tasks = [
        asyncio.create_task(_client(i, options, http, epoch, budget, outcomes))
        for i in range(options.clients)
    ]
    if options.writer is not None:
        tasks.append(
            asyncio.create_task(
                _writing(options.writer, options.servers, http, epoch, budget, outcomes)
            )
        )
    hard_stop = options.duration_s + options.servers.timeout_s + GRACE_S
    done, pending = await asyncio.wait(tasks, timeout=hard_stop)
    for task in pending:
        task.cancel()
    if pending:  # bounded too: a client whose sessions will not close is left behind
        await asyncio.wait(pending, timeout=GRACE_S)
    for task in done:
        if task.exception() is not None:
            log.error("a load client failed", exc_info=task.exception())
    wall_s = time.perf_counter() - epoch
    cpu_pct = (time.process_time() - cpu) / wall_s * 100.0
    stop.set()
    await asyncio.gather(*sampling)
    return _Run(
        outcomes,
        round(wall_s, 2),
        len(pending),
        round(cpu_pct, 1),
        lags,
        (loadavg, os.getloadavg()[0]),
    )


async def _loop_lag(stop: asyncio.Event, lags: list[float], every_s: float = 0.1) -> None:
    """How late this event loop wakes up from a short sleep, in ms, until ``stop``."""
    while not stop.is_set():
        asked = time.perf_counter()
        await asyncio.sleep(every_s)
        lags.append(round((time.perf_counter() - asked - every_s) * 1000.0, 2))


async def _client(
    index: int,
    options: LoadOptions,
    http: httpx.AsyncClient,
    epoch: float,
    budget: _Budget,
    out: list[Outcome],
) -> None:
    """One client: the endpoints in turn (each client starting elsewhere), one at a time."""
    stack = AsyncExitStack()
    prober = Prober(options.servers, http, stack)
    turn = index
    try:
        while budget.take():
            endpoint = options.endpoints[turn % len(options.endpoints)]
            query = options.queries[(turn * 7 + index) % len(options.queries)]
            out.append(await prober.call(endpoint, query, epoch))
            turn += 1
    finally:
        await _close(stack)


async def _writing(
    writer: Writer,
    servers: Servers,
    http: httpx.AsyncClient,
    epoch: float,
    budget: _Budget,
    out: list[Outcome],
) -> None:
    stack = AsyncExitStack()
    prober = Prober(servers, http, stack)
    try:
        while time.monotonic() < budget.deadline:
            out.append(await writer.write(prober, epoch))
            await asyncio.sleep(min(writer.interval_s, max(budget.deadline - time.monotonic(), 0)))
    finally:
        await _close(stack)


async def _close(stack: AsyncExitStack) -> None:
    """Close a client's sessions; a session broken by the load may fail to close cleanly."""
    try:
        await stack.aclose()
    except Exception as exc:  # nothing more to learn from a closing session
        log.debug("closing a load client's sessions: %s", exc)


async def _after(samplers: dict[str, ProcSampler]) -> dict[str, Sample]:
    """The servers' memory a second after the load."""
    await asyncio.sleep(1.0)
    after: dict[str, Sample] = {}
    for name, sampler in samplers.items():
        try:
            after[name] = sampler.sample()
        except OSError:
            continue
    return after


def _mark_unknown_sources(outcomes: Sequence[Outcome], known: set[str]) -> None:
    """A response naming a source the collection never held is torn."""
    for outcome in outcomes:
        unknown = outcome.sources - known
        if outcome.kind == "ok" and unknown:
            outcome.kind = "torn"
            outcome.error = f"names sources not in the collection: {sorted(unknown)[:3]}"


def _report(
    options: LoadOptions,
    run: _Run,
    samplers: dict[str, ProcSampler],
    idle: dict[str, list[Sample]],
    after: dict[str, Sample],
) -> dict[str, Any]:
    names = [*options.endpoints, *(["writer"] if options.writer else [])]
    grouped = {name: [o for o in run.outcomes if o.endpoint == name] for name in names}
    report: dict[str, Any] = {
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
        "command": options.command,
        "run": _settings(options),
        "wall_s": run.wall_s,
        "total": summary(grouped, run.wall_s),
        "hung": run.hung,
        "load_generator": {"cpu_pct": run.client_cpu_pct, "loop_lag_ms": spread(run.loop_lag_ms)},
        "machine": {
            "cpus": os.cpu_count(),
            "loadavg_1m_before": round(run.loadavg[0], 2),
            "loadavg_1m_after": round(run.loadavg[1], 2),
        },
        "endpoints": {name: endpoint_stats(group, run.wall_s) for name, group in grouped.items()},
        "servers": {
            name: {"pid": s.pid, **server_stats(s.samples, idle[name], after.get(name))}
            for name, s in samplers.items()
        },
    }
    report["goal"] = _verdict(report, options.min_success)
    return report


def _settings(options: LoadOptions) -> dict[str, Any]:
    return {
        "url": options.servers.url,
        "mcp_url": options.servers.mcp_url,
        "collection": options.servers.collection,
        "clients": options.clients,
        "duration_s": options.duration_s,
        "max_requests": options.max_requests,
        "timeout_s": options.servers.timeout_s,
        "endpoints": list(options.endpoints),
        "queries": len(options.queries),
        "writer": options.writer.describe() if options.writer else None,
    }


def _verdict(report: dict[str, Any], min_success: float) -> dict[str, Any]:
    """Goal: the success rate, no timeout, no torn result, nothing hung, bounded memory."""
    failures: list[str] = []
    total = report["total"]
    if (total["success_rate"] or 0.0) < min_success:
        failures.append(f"success {total['success_rate']} < {min_success}")
    for what in ("timeouts", "torn"):
        if total[what]:
            failures.append(f"{total[what]} {what}")
    if report["hung"]:
        failures.append(f"{report['hung']} requests hung past the hard stop (deadlock?)")
    for name, stats in report["servers"].items():
        if stats["memory_bounded"] is False:
            failures.append(
                f"{name} server peak RSS {stats['peak_rss_mb']} MB > {stats['rss_bound_mb']} MB"
            )
    problems = []
    for name, stats in report["endpoints"].items():
        if not stats["requests"]:
            failures.append(f"{ENDPOINTS.get(name, name)}: no request completed")
        elif stats["ok"] < stats["requests"]:
            worst = next(iter(stats["error_kinds"]), "?")
            problems.append(
                f"{ENDPOINTS.get(name, name)}: {stats['requests'] - stats['ok']} "
                f"of {stats['requests']} failed, e.g. {worst}"
            )
    return {
        "min_success": min_success,
        "passed": not failures,
        "failures": failures,
        "problems": problems,
    }
