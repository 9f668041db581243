"""Settings of websites ingested by URL (``ingest.web``, docs/sources.md, "Websites")."""

from __future__ import annotations

import ipaddress

from pydantic import Field, field_validator

from knowhub.config.base import Section

__all__ = ["WebSettings"]


class WebSettings(Section):
    """How pages are fetched: politeness, limits, credentials and the address policy."""

    max_concurrency: int = Field(
        4, ge=1, le=32, description="Requests in flight at once to one host."
    )
    requests_per_second: float = Field(
        4.0,
        gt=0,
        description="Requests started per second to one host at most (a robots.txt "
        "Crawl-delay asking for fewer wins).",
    )
    max_page_bytes: int = Field(
        20_000_000,
        ge=1,
        description="A page whose body runs past this fails alone (reading stops there).",
    )
    timeout_s: float = Field(30.0, gt=0, description="Seconds to connect, or between bytes read.")
    user_agent: str = Field(
        "knowhub",
        min_length=1,
        description="Sent as User-Agent, and the agent robots.txt rules are read for.",
    )
    headers: dict[str, dict[str, str]] = Field(
        default_factory=dict,
        description="Headers by host (credentials such as Authorization), sent only to a "
        "crawl's own origin (its start URL's scheme, host and port): never to another host or "
        "port, nor to plain http, after a redirect; never logged or traced.",
    )
    allow_private_networks: bool | list[str] = Field(
        False,
        description="Fetch from private, loopback, link-local, unique-local and CGNAT "
        "addresses: true for all, or a list of CIDR networks (127.0.0.0/8). Off by default: "
        "a server ingesting a URL for a remote caller must not reach its metadata service or "
        "intranet (SSRF).",
    )
    max_redirects: int = Field(5, ge=0, le=20, description="Redirects followed per request.")

    @field_validator("allow_private_networks")
    @classmethod
    def _networks(cls, value: bool | list[str]) -> bool | list[str]:
        if isinstance(value, list):
            for network in value:
                try:
                    ipaddress.ip_network(network, strict=False)
                except ValueError as exc:
                    raise ValueError(
                        f"ingest.web.allow_private_networks: {network!r} is not a network: "
                        "write a CIDR such as 127.0.0.0/8 or fd00::/8, or true for all"
                    ) from exc
        return value

    @field_validator("headers")
    @classmethod
    def _hosts(cls, value: dict[str, dict[str, str]]) -> dict[str, dict[str, str]]:
        return {_host(host): headers for host, headers in value.items()}


def _host(name: str) -> str:
    """``name`` as a crawl names a host: lower-case, an internationalized name in its
    ``xn--`` form (the Host header's)."""
    try:
        return name.lower().rstrip(".").encode("idna").decode("ascii")
    except UnicodeError as exc:
        raise ValueError(
            f"ingest.web.headers: {name!r} is not a host name; write the host as the URL "
            "names it (docs.example.org)"
        ) from exc
