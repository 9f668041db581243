"""``knowhub bench load``: concurrent clients against running servers, and their report.

Kept light: the CLI imports this package at start-up; the driver (httpx, websockets)
loads only when a load test runs.
"""

from __future__ import annotations

__all__ = ["ENDPOINTS"]

# name → what the report calls it
ENDPOINTS = {
    "health": "GET /health",
    "search": "POST /api/search",
    "retrieval_debug": "POST /api/retrieval/debug",
    "ask": "POST /api/ask",
    "ask_sse": "POST /api/ask (SSE)",
    "ws_stream": "WS /api/stream",
    "mcp_query": "MCP query_knowledge_hub",
}
