"""A minimal MCP client over streamable HTTP: JSON-RPC posts, one per tool call.

The SDK's client spends about twice the server's CPU per call (its task hops and the
standing GET stream of each session: measured 80 % of a core for 68 calls/s against the
server's 40 %), which on a small machine takes CPU from the servers under test and adds its
own event-loop lag to every latency. This one costs what an HTTP API request costs.
"""

from __future__ import annotations

import itertools
import json
from typing import Any

import httpx2 as httpx

__all__ = ["McpCallError", "RawMcp", "tool_text"]

PROTOCOL = "2025-06-18"
ACCEPT = "application/json, text/event-stream"


class McpCallError(Exception):
    """The server answered a JSON-RPC error, or not JSON-RPC at all."""


class RawMcp:
    """One MCP session at ``url``: :meth:`open` (initialize), :meth:`call_tool`, :meth:`close`."""

    def __init__(self, http: httpx.AsyncClient, url: str) -> None:
        self.http = http
        self.url = url
        self._headers = {"Accept": ACCEPT, "MCP-Protocol-Version": PROTOCOL}
        self._ids = itertools.count(1)

    async def open(self) -> None:
        hello = {
            "protocolVersion": PROTOCOL,
            "capabilities": {},
            "clientInfo": {"name": "knowhub-bench-load", "version": "1"},
        }
        resp = await self.http.post(
            self.url, json=self._request("initialize", hello), headers=self._headers
        )
        await self._result(resp)
        session = resp.headers.get("mcp-session-id")
        if session:
            self._headers["Mcp-Session-Id"] = session
        note = {"jsonrpc": "2.0", "method": "notifications/initialized"}
        done = await self.http.post(self.url, json=note, headers=self._headers)
        if done.status_code not in (200, 202):
            raise McpCallError(f"notifications/initialized answered HTTP {done.status_code}")

    async def call_tool(self, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
        """The tool's result: ``content``, ``structuredContent``, ``isError``."""
        body = self._request("tools/call", {"name": name, "arguments": arguments})
        resp = await self.http.post(self.url, json=body, headers=self._headers)
        return await self._result(resp)

    async def close(self) -> None:
        if "Mcp-Session-Id" in self._headers:
            await self.http.delete(self.url, headers=self._headers)

    def _request(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        return {"jsonrpc": "2.0", "id": next(self._ids), "method": method, "params": params}

    async def _result(self, resp: httpx.Response) -> dict[str, Any]:
        """The JSON-RPC result in a JSON body or an event stream (notifications skipped)."""
        if resp.status_code != 200:
            raise McpCallError(f"HTTP {resp.status_code}: {resp.text[:200]}")
        if resp.headers.get("content-type", "").startswith("text/event-stream"):
            messages = [
                json.loads(line[5:]) for line in resp.text.splitlines() if line.startswith("data:")
            ]
        else:
            messages = [resp.json()]
        for message in messages:
            if isinstance(message, dict) and "id" in message:
                if "error" in message:
                    raise McpCallError(f"JSON-RPC error {message['error']}"[:300])
                result: dict[str, Any] = message.get("result") or {}
                return result
        raise McpCallError(f"no JSON-RPC response in {resp.text[:200]!r}")


def tool_text(result: dict[str, Any]) -> str:
    """The text blocks of a tool result (a tool error's message)."""
    blocks = result.get("content") or []
    return " ".join(str(b.get("text", "")) for b in blocks if isinstance(b, dict))
