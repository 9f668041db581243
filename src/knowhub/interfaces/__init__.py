"""Interfaces: thin adapters (CLI, and later MCP and HTTP) over ``knowhub.app.App``."""
