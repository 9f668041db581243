"""The crawl's address policy: which URLs and addresses may be fetched (SSRF)."""

from __future__ import annotations

import ipaddress

import pytest

from knowhub.config.web import WebSettings
from knowhub.ingest.web.policy import (
    WebRefusedError,
    address_refused,
    checked_addresses,
    normalized_url,
    web_target,
)

REFUSED = [
    "127.0.0.1",
    "10.0.0.1",
    "172.16.5.4",
    "192.168.1.1",
    "169.254.169.254",  # the cloud metadata service
    "100.64.0.1",  # CGNAT
    "0.0.0.0",
    "224.0.0.1",
    "::1",
    "fe80::1",
    "fd00::1",  # unique-local
    "::ffff:10.0.0.1",  # IPv4-mapped
    "::ffff:169.254.169.254",
    "::",
    "ff02::1",
    "64:ff9b::a9fe:a9fe",  # NAT64 of 169.254.169.254
    "64:ff9b::7f00:1",  # NAT64 of 127.0.0.1
    "64:ff9b::a00:1",  # NAT64 of 10.0.0.1
    "64:ff9b:1::a00:1",  # local-use NAT64: this network's own translator
    "2002:a9fe:a9fe::1",  # 6to4 of 169.254.169.254
    "2002:7f00:1::1",  # 6to4 of 127.0.0.1
]


@pytest.mark.parametrize("address", REFUSED)
def test_private_and_special_addresses_are_refused(address: str) -> None:
    assert address_refused(ipaddress.ip_address(address), False) is not None


@pytest.mark.parametrize(
    "address",
    [
        "93.184.215.14",
        "2606:2800:21f:cb07:6820:80da:af6b:8b2c",
        "64:ff9b::5db8:d70e",  # NAT64 of 93.184.215.14
        "2002:5db8:d70e::1",  # 6to4 of 93.184.215.14
    ],
)
def test_public_addresses_are_allowed(address: str) -> None:
    assert address_refused(ipaddress.ip_address(address), False) is None


def test_a_list_of_networks_allows_those_only() -> None:
    loopback = ["127.0.0.0/8"]
    assert address_refused(ipaddress.ip_address("127.0.0.1"), loopback) is None
    assert (
        address_refused(ipaddress.ip_address("10.0.0.1"), loopback)
        == "10.0.0.1 is a private address"
    )
    assert "link-local" in (
        address_refused(ipaddress.ip_address("169.254.169.254"), loopback) or ""
    )


def test_true_allows_private_networks_but_never_multicast_or_unspecified() -> None:
    assert address_refused(ipaddress.ip_address("10.0.0.1"), True) is None
    assert address_refused(ipaddress.ip_address("0.0.0.0"), True) is not None
    assert address_refused(ipaddress.ip_address("224.0.0.1"), True) is not None


@pytest.mark.parametrize(
    "url",
    [
        "http://2130706433/",  # 127.0.0.1 as one decimal number
        "http://0177.0.0.1/",  # octal
        "http://0x7f.1/",  # hexadecimal, short form
        "http://localhost:8080/",
        "http://127.1/",
        "http://[::1]/",
        "http://[::ffff:127.0.0.1]/",
        "http://169.254.169.254/latest/meta-data/",
    ],
)
def test_every_spelling_of_a_private_address_is_refused_after_resolution(url: str) -> None:
    with pytest.raises(WebRefusedError, match="allow_private_networks"):
        checked_addresses(web_target(url), False)


@pytest.mark.parametrize(
    "url",
    ["file:///etc/passwd", "ftp://example.org/", "gopher://example.org/", "javascript:alert(1)"],
)
def test_only_http_and_https_are_fetched(url: str) -> None:
    with pytest.raises(WebRefusedError, match="only http:// and https://"):
        web_target(url)


@pytest.mark.parametrize(
    "url", ["http://good@10.0.0.1/", "http://user:pw@example.org/", "http://example.org@127.0.0.1/"]
)
def test_a_user_name_in_a_url_is_refused(url: str) -> None:
    with pytest.raises(WebRefusedError, match=r"ingest\.web\.headers"):
        web_target(url)


def test_a_url_without_a_host_is_refused() -> None:
    with pytest.raises(WebRefusedError, match="names no host"):
        web_target("http:///path")


def test_urls_are_normalized_to_name_a_page_once() -> None:
    assert normalized_url("HTTP://Docs.Example.ORG:80/a/./b/../c.html#part") == (
        "http://docs.example.org/a/c.html"
    )
    assert normalized_url("https://example.org") == "https://example.org/"
    assert normalized_url("https://example.org:8443/x?q=1") == "https://example.org:8443/x?q=1"
    assert normalized_url("../up.html#x", "https://example.org/a/b/page.html") == (
        "https://example.org/a/up.html"
    )


def test_the_host_header_keeps_a_port_that_is_not_the_schemes() -> None:
    assert web_target("http://example.org:8080/").host_header == "example.org:8080"
    assert web_target("https://example.org/").host_header == "example.org"
    assert web_target("http://[::1]:81/").host_header == "[::1]:81"


def test_an_ipv6_address_reaching_an_ipv4_one_is_checked_as_it() -> None:
    nat64 = ipaddress.ip_address("64:ff9b::7f00:1")
    assert address_refused(nat64, False) == "127.0.0.1 is a loopback address"
    assert address_refused(nat64, ["127.0.0.0/8"]) is None  # allowed as the IPv4 address is
    local = ipaddress.ip_address("64:ff9b:1::1")
    assert address_refused(local, ["64:ff9b:1::/48"]) is None


def test_a_non_ascii_host_is_asked_for_by_its_idna_name() -> None:
    target = web_target("https://Bücher.example/a")
    assert target.host == "xn--bcher-kva.example"
    assert target.host_header == "xn--bcher-kva.example"
    with pytest.raises(WebRefusedError, match="not a valid domain name"):
        web_target("https://a..b/")


def test_a_malformed_url_is_refused_not_raised() -> None:
    with pytest.raises(WebRefusedError, match="not a URL"):
        web_target("http://[::1")


def test_credentials_are_keyed_by_the_host_as_a_crawl_names_it() -> None:
    settings = WebSettings(headers={"Bücher.Example.": {"X-Token": "t"}})
    assert settings.headers == {"xn--bcher-kva.example": {"X-Token": "t"}}
    assert web_target("https://bücher.example/").host in settings.headers
    with pytest.raises(ValueError, match=r"ingest\.web\.headers: 'a\.\.b' is not a host name"):
        WebSettings(headers={"a..b": {}})
