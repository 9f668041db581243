"""Which URLs and addresses a crawl may reach (SSRF: a server ingesting a URL for a remote
caller must not reach its cloud's metadata service or its intranet).

A URL is checked for its scheme and form; its host is then resolved once, every address is
checked, and the connection goes to the address that was checked (no second lookup a DNS
server could answer differently). Each redirect is a new URL, checked the same way.
"""

from __future__ import annotations

import ipaddress
import socket
from dataclasses import dataclass
from urllib.parse import urljoin, urlsplit, urlunsplit

from knowhub.errors import IngestError

__all__ = [
    "Address",
    "WebRefusedError",
    "WebTarget",
    "address_refused",
    "checked_addresses",
    "normalized_url",
    "web_target",
]

Address = ipaddress.IPv4Address | ipaddress.IPv6Address

_PORTS = {"http": 80, "https": 443}
# Not global, yet not flagged by any of ipaddress's is_* but is_global (Python 3.11).
_CGNAT = ipaddress.ip_network("100.64.0.0/10")
# IPv6 addresses that reach an IPv4 address (RFC 6052 NAT64, RFC 3056 6to4): checked as it.
_NAT64 = ipaddress.ip_network("64:ff9b::/96")
_SIX_TO_FOUR = ipaddress.ip_network("2002::/16")
# Local-use NAT64 (RFC 8215): translated by this network's own gateway, to anywhere.
_LOCAL_NAT64 = ipaddress.ip_network("64:ff9b:1::/48")


class WebRefusedError(IngestError):
    """A URL the address policy refuses (scheme, form, or an address it resolves to)."""


@dataclass(frozen=True)
class WebTarget:
    """A checked URL's parts: where to connect, what to ask for."""

    url: str  # normalized, without its fragment
    scheme: str
    host: str  # lower-case, an IPv6 address without brackets
    port: int

    @property
    def host_header(self) -> str:
        """The Host header (the port only when it is not the scheme's own)."""
        host = f"[{self.host}]" if ":" in self.host else self.host
        return host if _PORTS[self.scheme] == self.port else f"{host}:{self.port}"


def normalized_url(url: str, base: str | None = None) -> str:
    """``url`` (relative to ``base``) as one page is named once: scheme and host lower-case,
    the scheme's own port and the fragment dropped, ``.``/``..`` resolved, ``/`` for no
    path. Not checked: see :func:`web_target`."""
    parts = urlsplit(urljoin(base, url.strip()) if base else url.strip())
    scheme = parts.scheme.lower()
    host = (parts.hostname or "").rstrip(".")
    if ":" in host:
        host = f"[{host}]"
    try:
        port = parts.port
    except ValueError:
        port = None
    netloc = host if port is None or _PORTS.get(scheme) == port else f"{host}:{port}"
    if parts.username is not None or parts.password is not None:
        netloc = f"{parts.username or ''}@{netloc}"  # kept, so that web_target refuses it
    path = urljoin("/", parts.path) if parts.path else "/"
    return urlunsplit((scheme, netloc, path, parts.query, ""))


def web_target(url: str) -> WebTarget:
    """The parts of a URL a crawl may ask for, or :class:`WebRefusedError` saying why not:
    only ``http``/``https``, a host, no user name or password in it (credentials come from
    ``ingest.web.headers``, for one host)."""
    try:
        parts = urlsplit(url)
    except ValueError as exc:  # http://[::1 (an IPv6 address not closed)
        raise WebRefusedError(f"{url}: not a URL ({exc})") from exc
    scheme = parts.scheme.lower()
    if scheme not in _PORTS:
        raise WebRefusedError(f"{url}: only http:// and https:// URLs are fetched")
    if "@" in parts.netloc:
        raise WebRefusedError(
            f"{url}: a user name or password in a URL is refused (it hides the host); "
            "put credentials in ingest.web.headers for the host"
        )
    try:
        port = parts.port or _PORTS[scheme]
    except ValueError as exc:
        raise WebRefusedError(f"{url}: the port is not a number from 1 to 65535") from exc
    host = (parts.hostname or "").rstrip(".")
    if not host:
        raise WebRefusedError(f"{url}: the URL names no host")
    try:  # the name as DNS, the Host header and TLS know it (bücher.example: xn--bcher-kva…)
        host = host.encode("idna").decode("ascii")
    except UnicodeError as exc:
        raise WebRefusedError(f"{url}: the host {host} is not a valid domain name") from exc
    return WebTarget(normalized_url(url), scheme, host, port)


def address_refused(address: Address, allowed: bool | list[str]) -> str | None:
    """Why a crawl may not connect to ``address`` (``"a private address"``), or None.

    ``allowed`` is ``ingest.web.allow_private_networks``: True lets every private,
    loopback, link-local, unique-local and CGNAT address through; a list of CIDR networks
    only the addresses in them. Multicast and unspecified addresses are never fetched."""
    address = _embedded_ipv4(address) or address
    if address.is_multicast or address.is_unspecified:
        return f"{address} is a multicast or unspecified address"
    kind = _kind(address)
    if kind is None:
        return None
    if allowed is True or (
        isinstance(allowed, list)
        and any(address in ipaddress.ip_network(n, strict=False) for n in allowed)
    ):
        return None
    return f"{address} is {kind}"


def _embedded_ipv4(address: Address) -> ipaddress.IPv4Address | None:
    """The IPv4 address an IPv6 one reaches (mapped, NAT64, 6to4), or None."""
    if not isinstance(address, ipaddress.IPv6Address):
        return None
    if address in _NAT64:
        return ipaddress.IPv4Address(int(address) & 0xFFFFFFFF)
    return address.ipv4_mapped or address.sixtofour


def _kind(address: Address) -> str | None:
    if address.is_loopback:
        return "a loopback address"
    if address.is_link_local:
        return "a link-local address (cloud metadata services live there)"
    if isinstance(address, ipaddress.IPv4Address) and address in _CGNAT:
        return "a shared (CGNAT) address"
    if address in _LOCAL_NAT64:
        return "a local-use NAT64 address"
    if address.is_private:
        return "a private address"
    if not address.is_global:
        return "a reserved address"
    return None


def checked_addresses(target: WebTarget, allowed: bool | list[str]) -> list[Address]:
    """The addresses to connect to for ``target``, in the resolver's order: its host
    resolved once, every address it resolves to checked (a name that also resolves to a
    private address is refused). Raises :class:`WebRefusedError` naming the URL, the
    address and ``ingest.web.allow_private_networks``."""
    try:
        found = socket.getaddrinfo(target.host, target.port, type=socket.SOCK_STREAM)
    except (socket.gaierror, UnicodeError) as exc:
        raise WebRefusedError(f"{target.url}: the host {target.host} was not found") from exc
    addresses = [ipaddress.ip_address(str(info[4][0]).split("%")[0]) for info in found]
    for address in addresses:
        reason = address_refused(address, allowed)
        if reason is not None:
            resolved = "" if target.host == str(address) else f" ({target.host} resolves to it)"
            raise WebRefusedError(
                f"{target.url}: refused: {reason}{resolved}; set "
                "ingest.web.allow_private_networks (true, or a list of networks) to crawl "
                "such addresses (only for sites you trust: see docs/sources.md)"
            )
    return list(dict.fromkeys(addresses))
