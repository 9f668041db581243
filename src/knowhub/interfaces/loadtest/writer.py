"""The concurrent writer: rewrites one file of the served folder and re-ingests it while the
readers run, then checks that a search sees the new revision.

Two ways in, as an operator has them: the MCP server's ``ingest`` tool (``serve mcp`` in
local mode serves the folder holding the file), or a ``knowhub ingest`` child process into
the server's data directory. Each write is an :class:`Outcome` of the endpoint
``writer``, with the stages ``ingest`` and ``visible`` (the search that finds it).
"""

from __future__ import annotations

import asyncio
import json
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

from knowhub.interfaces.loadtest.checks import check_search
from knowhub.interfaces.loadtest.mcp_raw import tool_text
from knowhub.interfaces.loadtest.probes import Outcome, Prober, describe

__all__ = ["Writer"]


@dataclass
class Writer:
    file: Path
    via: Literal["mcp", "cli"]
    interval_s: float
    collection: str | None  # None: the servers' default (until the preflight names it)
    timeout_s: float
    run_id: str
    knowhub_argv: list[str] = field(default_factory=list)  # the CLI's command, for via="cli"
    revision: int = 0

    def describe(self) -> str:
        how = "the MCP ingest tool" if self.via == "mcp" else "knowhub ingest"
        return f"{self.file} rewritten every {self.interval_s} s and ingested with {how}"

    async def write(self, prober: Prober, epoch: float) -> Outcome:
        """One revision: write, ingest, find it by its marker word; never raises."""
        self.revision += 1
        start = time.perf_counter()
        outcome = Outcome("writer", round(start - epoch, 3), 0.0)
        ingested: float | None = None
        try:
            async with asyncio.timeout(self.timeout_s):
                outcome.kind, outcome.error, ingested = await self._revise(prober)
        except TimeoutError:
            outcome.kind, outcome.error = "timeout", f"no answer within {self.timeout_s} s"
        except Exception as exc:  # a failed write is a figure of the report
            outcome.kind, outcome.error = "error", describe(exc)
        end = time.perf_counter()
        outcome.latency_ms = round((end - start) * 1000.0, 2)
        if ingested is not None:
            outcome.stages_ms = {
                "ingest": round((ingested - start) * 1000.0, 2),
                "visible": round((end - ingested) * 1000.0, 2),
            }
        return outcome

    async def _revise(self, prober: Prober) -> tuple[str, str | None, float]:
        """Write and ingest the next revision, then look for it: (kind, error, when the
        ingest returned). A failed ingest is an error; a finished one the search misses is
        torn (a reader saw the store before the write it was told had committed)."""
        marker = f"kwload{self.run_id}r{self.revision}"
        self._write_file(marker)
        failed = await (self._by_tool(prober) if self.via == "mcp" else self._by_cli())
        ingested = time.perf_counter()
        if failed:
            return "error", "; ".join(failed)[:300], ingested
        problems = await self._visible(prober, marker)
        return ("torn", "; ".join(problems)[:300], ingested) if problems else ("ok", None, ingested)

    def _write_file(self, marker: str) -> None:
        """Replace the file in one step (a hidden temporary renamed over it), so that the
        server's folder watcher never reads half a revision."""
        now = datetime.now(UTC).isoformat(timespec="milliseconds")
        text = (
            "# Load-test note\n\n"
            f"Revision {self.revision} of this note was written at {now} by knowhub bench "
            f"load while readers searched.\n\nIts marker word is {marker}.\n"
        )
        temporary = self.file.with_name(f".{self.file.name}.tmp")
        temporary.write_text(text, encoding="utf-8")
        temporary.replace(self.file)

    async def _by_tool(self, prober: Prober) -> list[str]:
        client = await prober.mcp()
        result = await client.call_tool(
            "ingest", {"path": str(self.file.resolve()), "collection": self.collection}
        )
        if result.get("isError"):
            return [f"ingest tool error: {tool_text(result)[:200]}"]
        out: Any = result.get("structuredContent") or {}
        return [f"ingest failed: {f}" for f in out.get("failed", [])]

    async def _by_cli(self) -> list[str]:
        named = ["-c", self.collection] if self.collection else []
        argv = [*self.knowhub_argv, "ingest", str(self.file), *named, "--json"]
        process = await asyncio.create_subprocess_exec(
            *argv, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE
        )
        try:
            out, err = await process.communicate()
        finally:
            if process.returncode is None:  # timed out: the ingest must not outlive the run
                process.kill()
                await process.wait()
        if process.returncode != 0:
            tail = err.decode("utf-8", "replace").strip()[-200:]
            return [f"knowhub ingest exited {process.returncode}: {tail}"]
        failed = json.loads(out).get("failed", [])
        return [f"ingest failed: {f}" for f in failed]

    async def _visible(self, prober: Prober, marker: str) -> list[str]:
        """Once the ingest has returned, the HTTP server must find the new revision."""
        servers = prober.servers
        resp = await prober.http.post(
            servers.url + "/api/search",
            headers=servers.headers,
            # The note's other words too: a query of the marker alone has one lexical hit
            # and no dense signal, and min-max fusion can rank that hit below the top_k.
            json={
                "query": f"load-test note marker word {marker}",
                "top_k": 3,
                "collection": self.collection,
            },
        )
        if resp.status_code != 200:
            return [f"search for the new revision answered HTTP {resp.status_code}"]
        body = resp.json()
        problems = check_search(body).problems
        if not any(marker in str(hit.get("text", "")) for hit in body.get("hits", [])):
            problems.append(
                f"revision {self.revision} (marker {marker}) not found by /api/search after "
                "its ingest returned"
            )
        return problems
