"""The servers' settings: bearer tokens, limits of the HTTP and MCP servers, the agent's chat."""

from __future__ import annotations

import ipaddress
from pathlib import Path
from typing import Literal

from pydantic import Field, field_validator, model_validator

from knowhub.config.base import Section

__all__ = [
    "UPLOAD_CONTAINERS",
    "UPLOAD_EXTENSIONS",
    "AgentSettings",
    "ServerSettings",
    "TokenSettings",
]


class TokenSettings(Section):
    """One bearer token of the HTTP servers; the secret itself is in the environment (or in
    the file its ``NAME_FILE`` variable names), never in settings."""

    name: str = Field(description="Who holds it: shown in logs and metrics, never the token.")
    token_env: str = Field(
        description="Environment variable holding the token (or NAME_FILE: a file holding it)."
    )
    collections: list[str] = Field(
        default_factory=lambda: ["*"], description="Collections it may read ('*': all)."
    )
    sessions: list[str] = Field(
        default_factory=lambda: ["*"], description="Shared-mode session ids it may use ('*': all)."
    )
    read_only: bool = Field(False, description="No ingest, register or unregister.")
    mcp_servers: list[str] | None = Field(
        None,
        description="Servers of agent.mcp_config its chats may use ('*': all; []: none). "
        "Unset: all for a token that reads every collection, none for one limited to some. "
        "A token with a data scope is offered none.",
    )
    # Its data scope (knowhub.scope; docs/security.md, "Data scope"): unset, everything.
    tenants: list[str] = Field(
        default_factory=lambda: ["*"], description="Tenants whose documents it sees ('*': all)."
    )
    datasets: list[str] = Field(
        default_factory=lambda: ["*"], description="Datasets whose documents it sees ('*': all)."
    )
    max_visibility: Literal["public", "internal", "restricted"] = Field(
        "restricted", description="The most confidential visibility it sees."
    )
    roles: list[str] = Field(
        default_factory=lambda: ["*"],
        description="Its roles: it sees documents open to every role or to one of these "
        "('*': all documents, whatever their roles).",
    )

    @model_validator(mode="after")
    def _no_servers_with_a_scope(self) -> TokenSettings:
        # Third-party MCP servers reach data knowhub cannot scope: a scoped token's chats
        # are offered none, so naming some would be a promise the server does not keep.
        scoped = [self.tenants, self.datasets, self.roles] != [["*"]] * 3 or (
            self.max_visibility != "restricted"
        )
        if scoped and self.mcp_servers:
            raise ValueError(
                f"token {self.name!r} has a data scope and mcp_servers {self.mcp_servers}: "
                "chats of a token with a data scope use knowhub's tools only (MCP servers' "
                "data is not scoped by knowhub); remove mcp_servers or the scope"
            )
        return self


# What ingest.loaders reads (config sits below ingest, so the list is written out here; a unit
# test keeps the two equal).
_TEXT_EXTENSIONS = (
    ".htm",
    ".html",
    ".json",
    ".markdown",
    ".md",
    ".mdx",
    ".rst",
    ".txt",
    ".xhtml",
)
_IMAGE_EXTENSIONS = (".bmp", ".jpeg", ".jpg", ".png", ".tif", ".tiff", ".webp")  # read by OCR
# Documents in zip packages (Office, OpenDocument, EPUB) and other formats with markup.
_DOCUMENT_EXTENSIONS = (".docx", ".epub", ".ipynb", ".odp", ".ods", ".odt", ".pptx", ".rtf")
UPLOAD_EXTENSIONS = (
    *_TEXT_EXTENSIONS,
    ".csv",
    *_DOCUMENT_EXTENSIONS,
    ".pdf",
    ".xlsx",
    ".eml",
    *_IMAGE_EXTENSIONS,
)
# Files whose members are documents (ingest.loaders' archives and mailboxes): accepted too.
UPLOAD_CONTAINERS = (".zip", ".tar", ".tgz", ".mbox")


class ServerSettings(Section):
    tokens: list[TokenSettings] = Field(
        default_factory=list, description="Bearer tokens; none: open to localhost only."
    )
    allowed_origins: list[str] = Field(
        default_factory=lambda: ["http://localhost:*", "http://127.0.0.1:*", "http://[::1]:*"],
        description="Browser Origin headers accepted ('host:*' allows any port).",
    )
    max_body_bytes: int = Field(1_048_576, ge=1024, description="Larger request bodies: 413.")
    max_result_chars: int = Field(
        40_000, ge=500, description="Ceiling on a tool result's text (the max_chars budget)."
    )
    workers: int = Field(
        16, ge=1, description="HTTP API threads for searches and other blocking calls."
    )
    max_answers: int = Field(
        16, ge=1, description="HTTP API answers produced at once (each in a thread)."
    )
    max_queued: int = Field(
        512, ge=0, description="Requests waiting for a worker or answer slot; more get 503."
    )
    search_docs_tool: bool = Field(True, description="Also offer search under 'search_docs'.")
    watch_debounce_ms: int = Field(800, ge=50, description="Quiet time before re-indexing.")
    first_sync_wait_s: float = Field(
        5.0,
        ge=0,
        le=300,
        description="MCP local mode: a search waits this long for the first sync of --docs "
        "to end (then answers with what is indexed, saying so).",
    )
    auth_max_failures: int = Field(
        10, ge=1, description="Wrong tokens one client address may send per auth_window_s."
    )
    auth_window_s: float = Field(60.0, gt=0, description="The window auth_max_failures counts in.")
    auth_lockout_s: float = Field(
        60.0, gt=0, description="How long an address over the limit gets 429 (Retry-After)."
    )
    auth_tracked_clients: int = Field(
        10_000, ge=1, description="Client addresses remembered; the stalest is forgotten first."
    )
    trusted_proxies: list[str] = Field(
        default_factory=list,
        description="Addresses or networks (CIDR) of reverse proxies whose X-Forwarded-For and "
        "X-Forwarded-Proto are believed; from any other peer they are ignored.",
    )
    # 5 s: most answers of a hosted model that are already streaming end within it, and it
    # leaves half of `docker stop`'s 10 s for the rest of the shutdown (docs/deployment.md).
    shutdown_grace_s: float = Field(
        5.0,
        ge=0,
        le=3600,
        description="On SIGTERM, answers in flight get this long to end; then each ends with "
        "an error event saying the server is shutting down.",
    )
    max_upload_bytes: int = Field(
        50_000_000, ge=1, description="A console upload's largest file; a larger one is refused."
    )
    max_upload_body_bytes: int = Field(
        1 << 30,
        ge=1024,
        description="A console upload's whole body, all its files together; a larger one is "
        "refused (413) and none of its files kept.",
    )
    upload_extensions: list[str] = Field(
        default_factory=lambda: [*UPLOAD_EXTENSIONS, *UPLOAD_CONTAINERS],
        description="File extensions the console accepts for upload (what the loaders read).",
    )

    @field_validator("trusted_proxies")
    @classmethod
    def _networks(cls, proxies: list[str]) -> list[str]:
        """Each an address or a network, written as uvicorn's proxy check compares them (it
        would take anything else as a literal name that never matches, silently)."""
        return [_network(entry) for entry in proxies]

    @model_validator(mode="after")
    def _dotted_extensions(self) -> ServerSettings:
        """``pdf``, ``.PDF`` and ``.pdf`` all mean ``.pdf``: compared lower-case, with the dot."""
        self.upload_extensions = [
            "." + e.strip().lower().lstrip(".") for e in self.upload_extensions
        ]
        return self


def _network(entry: str) -> str:
    text = entry.strip()
    try:
        if "/" in text:
            return str(ipaddress.ip_network(text, strict=False))
        return str(ipaddress.ip_address(text))
    except ValueError:
        raise ValueError(
            f"{entry!r} is not an IP address or network: give the proxy's address "
            "(10.0.0.5) or its network in CIDR form (172.16.0.0/12); names and '*' are "
            "not accepted"
        ) from None


class AgentSettings(Section):
    """``knowhub chat``: the model's tool loop and the MCP servers it may use."""

    mcp_config: Path | None = Field(
        None, description="An mcpServers JSON file (as Claude Desktop or Cursor write it)."
    )
    max_steps: int = Field(8, ge=1, le=50, description="Model calls in one chat turn at most.")
    tool_timeout_s: float = Field(60.0, gt=0, description="One tool call's limit.")
    start_timeout_s: float = Field(60.0, gt=0, description="An MCP server's start and listing.")
    max_result_chars: int = Field(
        12_000, ge=500, description="A tool result is cut to this (with a note to the model)."
    )
    max_total_result_chars: int = Field(
        60_000, ge=1000, description="All tool results of one chat turn together."
    )
