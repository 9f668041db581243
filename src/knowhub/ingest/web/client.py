"""One page fetched: redirects followed by hand, each hop's address checked and connected
to as checked, the body read up to ``ingest.web.max_page_bytes``, credentials only for
their own host."""

from __future__ import annotations

import ssl
import threading
from dataclasses import dataclass, field
from types import TracebackType
from typing import Self

import httpx2

from knowhub.config.web import WebSettings
from knowhub.errors import IngestError
from knowhub.ingest.web.policy import WebRefusedError, WebTarget, checked_addresses, web_target

__all__ = ["PageTooLargeError", "Reply", "WebClient"]

_REDIRECTS = frozenset({301, 302, 303, 307, 308})


class PageTooLargeError(IngestError):
    """A body longer than ``ingest.web.max_page_bytes``: it fails alone."""


@dataclass
class Reply:
    """What the last hop answered: ``url`` is where the page was found (after redirects)."""

    url: str
    status: int
    content_type: str = ""
    body: bytes = b""
    etag: str = ""
    last_modified: str = ""


@dataclass
class WebClient:
    """Fetches for one crawl. ``connected`` records each ``address:port`` a connection was
    asked for, in order: what the address policy let through, and nothing else."""

    settings: WebSettings
    connected: list[str] = field(default_factory=list)
    # The certificates TLS trusts: the system's, or a context of one's own (a test's CA).
    verify: ssl.SSLContext | bool = True
    # The crawl's start URL: ingest.web.headers go to its scheme, host and port only (not
    # to plain http, nor another port, after a redirect); empty: to none.
    origin: str = ""
    _lock: threading.Lock = field(default_factory=threading.Lock)

    _clients: dict[str, httpx2.Client] = field(default_factory=dict)

    def _http(self, host: str) -> httpx2.Client:
        """The connections to ``host``: its own pool, as connections go to an address (a
        connection made, and verified by TLS, for one name never carries another's requests)."""
        with self._lock:
            if host not in self._clients:
                # Environment proxies would connect somewhere the policy never checked.
                self._clients[host] = httpx2.Client(
                    trust_env=False,
                    verify=self.verify,
                    follow_redirects=False,
                    timeout=self.settings.timeout_s,
                    limits=httpx2.Limits(max_connections=self.settings.max_concurrency),
                )
            return self._clients[host]

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        for client in self._clients.values():
            client.close()

    def get(self, url: str, conditional: dict[str, str] | None = None) -> Reply:
        """GET ``url``; a redirect is followed (at most ``max_redirects``) only once its
        target passes the policy. Raises :class:`WebRefusedError`,
        :class:`PageTooLargeError` or ``httpx2.HTTPError`` (a network failure)."""
        target = web_target(url)
        for _ in range(self.settings.max_redirects + 1):
            reply, location = self._hop(target, conditional or {})
            if location is None:
                return reply
            try:
                joined = str(httpx2.URL(target.url).join(location))
            except httpx2.InvalidURL as exc:  # the page fails alone, not the crawl
                raise WebRefusedError(
                    f"{url}: redirected to {location!r}, which is not a URL ({exc})"
                ) from exc
            target = web_target(joined)
        raise WebRefusedError(
            f"{url}: more than {self.settings.max_redirects} redirects (ingest.web.max_redirects)"
        )

    def _send(self, target: WebTarget, conditional: dict[str, str]) -> httpx2.Response:
        """The response of the first of the host's checked addresses that connects (every
        one of them was checked before any is tried)."""
        addresses = checked_addresses(target, self.settings.allow_private_networks)
        http = self._http(target.host)
        for address in addresses:
            shown = f"[{address}]" if address.version == 6 else str(address)
            with self._lock:
                self.connected.append(f"{shown}:{target.port}")
            request = http.build_request(
                "GET",
                httpx2.URL(target.url).copy_with(host=str(address)),
                headers=self._headers(target, conditional),
                # TLS is checked against the name, not the address connected to.
                extensions={"sni_hostname": target.host} if target.scheme == "https" else {},
            )
            try:
                return http.send(request, stream=True)
            except httpx2.ConnectError:
                if address == addresses[-1]:
                    raise
        raise AssertionError("unreachable: a host resolves to one address at least")

    def _hop(self, target: WebTarget, conditional: dict[str, str]) -> tuple[Reply, str | None]:
        response = self._send(target, conditional)
        try:
            if response.status_code in _REDIRECTS and "location" in response.headers:
                return Reply(target.url, response.status_code), response.headers["location"]
            body = self._body(target, response) if response.status_code == 200 else b""
        finally:
            response.close()
        return Reply(
            target.url,
            response.status_code,
            response.headers.get("content-type", ""),
            body,
            response.headers.get("etag", ""),
            response.headers.get("last-modified", ""),
        ), None

    def _headers(self, target: WebTarget, conditional: dict[str, str]) -> dict[str, str]:
        headers = {"Host": target.host_header, "User-Agent": self.settings.user_agent}
        headers.update(conditional)
        if self.origin and _same_origin(web_target(self.origin), target):
            headers.update(self.settings.headers.get(target.host, {}))
        return headers

    def _body(self, target: WebTarget, response: httpx2.Response) -> bytes:
        limit = self.settings.max_page_bytes
        declared = response.headers.get("content-length", "")
        if declared.isdigit() and int(declared) > limit:
            raise _too_large(target, limit)
        parts: list[bytes] = []
        size = 0
        for part in response.iter_bytes():
            size += len(part)
            if size > limit:  # stop reading: the rest never reaches memory
                raise _too_large(target, limit)
            parts.append(part)
        return b"".join(parts)


def _same_origin(one: WebTarget, other: WebTarget) -> bool:
    return (one.scheme, one.host, one.port) == (other.scheme, other.host, other.port)


def _too_large(target: WebTarget, limit: int) -> PageTooLargeError:
    return PageTooLargeError(
        f"{target.url}: the page is larger than ingest.web.max_page_bytes ({limit} bytes); "
        "raise the setting to read it"
    )
