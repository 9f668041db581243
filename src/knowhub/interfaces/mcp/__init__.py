"""The MCP server: thin adapters over :class:`~knowhub.app.App` (``knowhub serve mcp``).

``kb`` pairs a reader and a writer App over one data directory; ``tools/`` holds the tool
groups (a class each, registered with the SDK's ``add_tool``), ``shared`` the multi-tenant
sessions, ``local`` the served folder and its watcher, ``http`` the Starlette app with auth,
limits, /health and /metrics; ``server`` assembles them.
"""
