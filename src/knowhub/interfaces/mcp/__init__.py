"""The MCP server: thin adapters over :class:`~knowhub.app.App` (``knowhub serve mcp``).

``kb`` pairs a reader and a writer App over one data directory; ``tools`` holds the data
tools, ``shared`` the multi-tenant sessions and their control tools, ``local`` the served
folder and its watcher, ``http`` the Starlette app with auth, limits, /health and /metrics.
"""
