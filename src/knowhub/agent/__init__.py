"""The agent side of knowhub: ``knowhub chat``'s LLM loop and the external MCP servers it calls.

``mcp_config`` reads the standard ``mcpServers`` file, ``mcp_pool`` keeps those servers running
behind a synchronous, thread-safe facade, and ``guard`` makes sure no server outlives knowhub.
Import the modules themselves; this package re-exports nothing, so ``python -m
knowhub.agent.guard`` (started once per stdio server) stays a stdlib-only start.
"""
