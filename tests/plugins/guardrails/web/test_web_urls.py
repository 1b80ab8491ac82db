"""The egress URL check without DNS: ``check_url``, ``check_address``, ``policy_from``.

What is proved here:

- every URL of the corpus (``url_corpus.py``: ``REFUSED`` with their category, ``ALLOWED``) gets
  the decision and category it should;
- ``check_url`` decides on what httpx will connect to: for every allowed URL the scheme, host
  (``raw_host``), port, request target and ``Host`` header of the returned URL equal those of
  ``httpx.URL(url)`` / ``httpx.Request``; a numeric host is read as the C resolver reads it
  (``socket.inet_aton`` and ``getaddrinfo(AI_NUMERICHOST)`` are the oracles);
- property (hypothesis): URLs built from random hosts (random IPv4 addresses in every legacy
  spelling, random IPv6 addresses and embeddings, random names with dots, digits and unicode)
  are never allowed when the resolver's reading of the host is not a public unicast address, and
  ``check_url`` never raises anything but ``EgressRefused``, whose ``url`` never holds a password.

Sources: the WHATWG URL Standard's host parser, section 3.5 (ends in a number checker, IPv4
parser; https://url.spec.whatwg.org/#host-parsing); inet_aton(3); the IANA IPv4/IPv6
Special-Purpose Address Registries (RFC 6890); the Fetch standard's bad ports
(https://fetch.spec.whatwg.org/#bad-port); SSRF bypass classes from PayloadsAllTheThings "Server
Side Request Forgery" (github.com/swisskyrepo/PayloadsAllTheThings) and Orange Tsai, "A New Era of
SSRF - Exploiting URL Parser in Trending Programming Languages" (Black Hat USA 2017).
"""

from __future__ import annotations

import ipaddress
import socket

import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from seamkit_guardrails_web.config import EgressConfig
from seamkit_guardrails_web.errors import EgressRefused
from seamkit_guardrails_web.urls import (
    EgressPolicy,
    check_address,
    check_url,
    host_address,
    mask_userinfo,
    policy_from,
)
from url_corpus import ALLOWED, REFUSED

DEFAULT = EgressPolicy()


def _refusal(url: str | httpx.URL, policy: EgressPolicy = DEFAULT) -> EgressRefused:
    with pytest.raises(EgressRefused) as info:
        check_url(url, policy)
    return info.value


def _policy(**fields: object) -> EgressPolicy:
    return policy_from(EgressConfig.model_validate(fields))


# --- the corpus ---------------------------------------------------------------------------------


def test_corpus_size_and_classes() -> None:
    categories = {category for _, category in REFUSED}
    assert len(REFUSED) + len(ALLOWED) >= 80 and len(ALLOWED) >= 20
    assert len({url for url, _ in REFUSED}) == len(REFUSED)
    assert categories == {
        "scheme", "loopback", "unspecified", "private", "link_local", "metadata", "multicast",
        "reserved", "userinfo", "malformed", "port",
    }


@pytest.mark.parametrize(("url", "category"), REFUSED, ids=[ascii(u) for u, _ in REFUSED])
def test_refused_corpus(url: str, category: str) -> None:
    refusal = _refusal(url)
    assert refusal.category == category, refusal.reason
    assert refusal.reason and refusal.reason in str(refusal)
    authority = url.partition("//")[2].split("/", 1)[0].split("#", 1)[0]
    if "@" in authority:
        userinfo = authority.rpartition("@")[0]
        assert "***" in refusal.url and (not userinfo or userinfo not in refusal.url)


@pytest.mark.parametrize("url", ALLOWED, ids=[ascii(u) for u in ALLOWED])
def test_allowed_corpus_agrees_with_httpx(url: str) -> None:
    checked = check_url(url)
    client_url = httpx.URL(url)
    assert (checked.scheme, checked.raw_host, checked.port) == (
        client_url.scheme, client_url.raw_host, client_url.port)
    sent, expected = httpx.Request("GET", checked), httpx.Request("GET", url)
    assert sent.url.raw_path == expected.url.raw_path
    assert sent.headers["Host"] == expected.headers["Host"]
    assert str(checked) == str(client_url)
    assert check_url(checked) == checked  # an httpx.URL is accepted as is


@pytest.mark.parametrize("url", [u for u in ALLOWED if host_address(httpx.URL(u).raw_host.decode()) is not None])
def test_allowed_literal_hosts_read_as_the_resolver_reads_them(url: str) -> None:
    host = httpx.URL(url).raw_host.decode()
    address = host_address(host)
    resolved = socket.getaddrinfo(host, 80, type=socket.SOCK_STREAM, flags=socket.AI_NUMERICHOST)
    assert {ipaddress.ip_address(sockaddr[4][0]) for sockaddr in resolved} == {address}
    assert address is not None and address.is_global


# --- numeric hosts ---------------------------------------------------------------------------------

NUMERIC_SPELLINGS = [
    "2130706433", "0x7f000001", "0X7F000001", "017700000001", "127.1", "127.0.1", "0x7f.1", "0x7f.0.1",
    "0177.0.0.1", "0177.1", "0x7f.0x0.0x0.0x1", "0", "0x0", "00", "192.168.257", "3232235521", "0300.0250.1.1",
    "169.254.43518", "0xa9fea9fe", "0251.0376.0251.0376", "8.8.8.8", "134744072", "0x08080808", "1.0x10.0.1",
    "4294967295", "0xffffffff", "037777777777", "255.255.255.255", "1.2.3.4",
]
INVALID_NUMERIC = ["1.2.3.4.5", "256.1.1.1", "4294967296", "0x100000000", "08", "09.1.1.1", "1.2.3.256.",
                   "7147006462", "425.510.425.510", "1.2.65536", "1.16777216", "1..2", "0x7f.0x"]


@pytest.mark.parametrize("host", NUMERIC_SPELLINGS)
def test_numeric_host_is_the_address_inet_aton_reads(host: str) -> None:
    expected = ipaddress.IPv4Address(socket.inet_aton(host))
    assert host_address(host) == expected
    assert host_address(host + ".") == expected  # WHATWG drops one trailing dot
    via_getaddrinfo = socket.getaddrinfo(host, 80, socket.AF_INET, socket.SOCK_STREAM, flags=socket.AI_NUMERICHOST)
    assert ipaddress.IPv4Address(via_getaddrinfo[0][4][0]) == expected


@pytest.mark.parametrize("host", INVALID_NUMERIC)
def test_numeric_host_no_resolver_reads_is_refused(host: str) -> None:
    with pytest.raises(OSError):
        socket.inet_aton(host)
    with pytest.raises(EgressRefused) as info:
        host_address(host)
    assert info.value.category == "malformed"


NAMES = ["example.com", "example.com.", "0x7f.example", "1.2.3.a", "1e3", "x.0x7fz", "0x7g", "0xg"]


@pytest.mark.parametrize("host", NAMES)
def test_host_that_does_not_end_in_a_number_is_a_name(host: str) -> None:
    assert host_address(host) is None


def test_ipv6_host_address_drops_the_zone() -> None:
    assert host_address("fe80::1%25eth0") == ipaddress.IPv6Address("fe80::1")
    with pytest.raises(EgressRefused):
        host_address("fe80::1::2")


# --- policy: allow_networks, egress_allow, ports -------------------------------------------------


def test_allow_networks_allows_a_local_server_in_any_spelling_but_not_beyond() -> None:
    policy = _policy(allow_networks=["127.0.0.0/8"])
    for url in ("http://127.0.0.1:8000/", "http://2130706433:8000/", "http://0x7f.1:8000/", "http://[::ffff:127.0.0.1]/"):
        assert check_url(url, policy).port in (None, 8000)
    assert _refusal("http://10.0.0.1/", policy).category == "private"
    assert _refusal("http://[::1]/", policy).category == "loopback"
    assert _refusal("http://localhost:8000/", policy).category == "loopback"  # a name needs egress_allow


def test_metadata_addresses_stay_refused_inside_allow_networks() -> None:
    policy = _policy(allow_networks=["169.254.0.0/16", "100.64.0.0/10", "fd00::/8", "0.0.0.0/0", "::/0"])
    assert check_url("http://169.254.1.1/", policy)
    assert check_url("http://10.1.2.3/", policy)
    for url in ("http://169.254.169.254/", "http://2852039166/", "http://[::ffff:a9fe:a9fe]/", "http://[fd00:ec2::254]/",
                "http://100.100.100.200/", "http://169.254.170.2/", "http://metadata.google.internal/"):
        assert _refusal(url, policy).category == "metadata", url


def test_egress_allow_is_default_deny_with_dot_boundary() -> None:
    policy = _policy(egress_allow=["example.com", ".docs.python.org", "*.wikipedia.org"])
    for url in ("https://example.com/", "https://a.example.com/", "https://A.B.EXAMPLE.COM./x", "https://docs.python.org/3/",
                "https://en.wikipedia.org/wiki/SSRF", "https://wikipedia.org/"):
        assert check_url(url, policy)
    for url in ("https://evilexample.com/", "https://example.com.evil.net/", "https://example.co/", "https://python.org/",
                "https://xexample.com/", "http://93.184.216.34/", "https://com/"):
        assert _refusal(url, policy).category == "not_allowed", url


def test_egress_allow_compares_after_idna_case_and_trailing_dot() -> None:
    for entry in ("bücher.de", "BÜCHER.DE.", "xn--bcher-kva.de"):
        policy = _policy(egress_allow=[entry])
        assert policy.egress_allow == ("xn--bcher-kva.de",)
        for url in ("https://bücher.de/", "https://BÜCHER.de/", "https://xn--bcher-kva.de/", "https://shop.bücher.de./"):
            assert check_url(url, policy)
        assert _refusal("https://bucher.de/", policy).category == "not_allowed"


def test_egress_allow_ip_entry_allows_exactly_that_address_in_any_spelling() -> None:
    policy = _policy(egress_allow=["93.184.216.34", "[2606:4700:4700::1111]"])
    for url in ("http://93.184.216.34/", "http://1572395042/", "http://0x5db8d822/", "https://[2606:4700:4700::1111]/"):
        assert check_url(url, policy)
    for url in ("http://93.184.216.35/", "https://[2606:4700:4700::1001]/", "https://example.com/"):
        assert _refusal(url, policy).category == "not_allowed", url
    # an allow-list entry does not make a non-public address public: that is allow_networks' job
    assert _refusal("http://127.0.0.1/", _policy(egress_allow=["127.0.0.1"])).category == "loopback"
    assert check_url("http://127.0.0.1:8000/", _policy(egress_allow=["127.0.0.1"], allow_networks=["127.0.0.0/8"]))


def test_special_use_names_pass_only_when_egress_allow_names_them() -> None:
    assert check_url("http://localhost:8000/", _policy(egress_allow=["localhost"]))
    assert check_url("http://db.internal/", _policy(egress_allow=["internal"]))
    assert _refusal("http://db.internal/", _policy(egress_allow=["example.com"])).category == "not_allowed"
    # metadata names never pass
    for entries in (["google.internal"], ["metadata.google.internal"], ["internal"], ["metadata"]):
        refusal = _refusal("http://metadata.google.internal/", _policy(egress_allow=entries))
        assert refusal.category == "metadata"


def test_ports_setting_allows_only_those_ports_and_may_allow_a_bad_port() -> None:
    policy = _policy(ports=[8080, 22])
    assert check_url("http://example.com:8080/", policy)
    assert check_url("http://example.com:22/", policy)
    assert _refusal("http://example.com/", policy).category == "port"  # the default port 80 is not listed
    assert _refusal("https://example.com:8443/", policy).category == "port"
    assert check_url("https://example.com/", _policy(ports=[443]))


@pytest.mark.parametrize(
    "fields",
    [
        {"allow_networks": ["10.0.0.0/33"]},
        {"allow_networks": ["not-a-network"]},
        {"egress_allow": [""]},
        {"egress_allow": ["exa mple.com"]},
        {"egress_allow": ["example.com/path"]},
        {"egress_allow": ["user@example.com"]},
        {"egress_allow": ["1.2.3.4.5"]},
        {"egress_allow": ["a..b"]},
        {"egress_allow": ["example.com:8080"]},
        {"egress_allow": ["x" * 64 + ".com"]},
        {"ports": [0]},
        {"ports": [70000]},
    ],
)
def test_policy_from_rejects_malformed_settings(fields: dict[str, object]) -> None:
    with pytest.raises(ValueError):
        _policy(**fields)


# --- check_address ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("address", "category"),
    [
        ("127.0.0.1", "loopback"), ("::1", "loopback"), ("10.1.1.1", "private"), ("100.64.0.1", "private"),
        ("fd00::1", "private"), ("169.254.1.1", "link_local"), ("fe80::1", "link_local"), ("224.0.0.251", "multicast"),
        ("ff02::fb", "multicast"), ("0.0.0.0", "unspecified"), ("::", "unspecified"), ("192.0.2.1", "reserved"),
        ("198.18.5.5", "reserved"), ("240.1.1.1", "reserved"), ("2001:db8::5", "reserved"),
        ("169.254.169.254", "metadata"), ("fd00:ec2::254", "metadata"), ("::ffff:169.254.169.254", "metadata"),
        ("::ffff:10.0.0.1", "private"), ("64:ff9b::7f00:1", "loopback"), ("64:ff9b:1::8.8.8.8", "private"),
        ("2002:0a00:0001::1", "private"), ("2001:0:4136:e378:8000:63bf:3fff:fdd2", "reserved"),
        ("::ffff:0:7f00:1", "reserved"), ("fec0::1", "private"),
    ],
)
def test_check_address_refuses_non_public(address: str, category: str) -> None:
    with pytest.raises(EgressRefused) as info:
        check_address(ipaddress.ip_address(address), url="http://user:secret@example.com/")
    assert info.value.category == category
    assert "secret" not in info.value.url and "***" in info.value.url


@pytest.mark.parametrize(
    "address", ["8.8.8.8", "93.184.216.34", "2606:4700:4700::1111", "::ffff:8.8.8.8", "64:ff9b::808:808"]
)
def test_check_address_allows_public_unicast(address: str) -> None:
    check_address(ipaddress.ip_address(address))


def test_check_address_allow_networks_covers_an_embedded_address() -> None:
    policy = _policy(allow_networks=["10.0.0.0/8"])
    check_address(ipaddress.ip_address("10.2.3.4"), policy)
    check_address(ipaddress.ip_address("::ffff:10.2.3.4"), policy)
    with pytest.raises(EgressRefused):
        check_address(ipaddress.ip_address("192.168.1.1"), policy)


def test_check_url_input_types() -> None:
    assert _refusal(None).category == "malformed"  # type: ignore[arg-type]
    assert _refusal(b"http://example.com/").category == "malformed"  # type: ignore[arg-type]
    refusal = _refusal(httpx.URL("http://user:s3cr3t@example.com/"))
    assert refusal.category == "userinfo" and "s3cr3t" not in refusal.url and "s3cr3t" not in str(refusal)
    assert _refusal(httpx.URL("http://2130706433/")).category == "loopback"


def test_mask_userinfo() -> None:
    assert mask_userinfo("http://user:pw@example.com/a@b") == "http://***@example.com/a@b"
    assert mask_userinfo("https://a@b:c@d@example.com:8080/?x=@") == "https://***@example.com:8080/?x=@"
    assert mask_userinfo("https://example.com/?next=u:p@h") == "https://example.com/?next=u:p@h"
    assert mask_userinfo("mailto:someone@example.com") == "mailto:someone@example.com"


# --- property: never allows a non-public host, never raises anything else -------------------------


def _spell_ipv4(value: int, form: int, radix: tuple[int, ...], trailing_dot: bool) -> str:
    """``value`` in one of the inet_aton forms: 4, 3, 2 or 1 parts, each decimal, octal or hex."""
    parts = 4 - form
    octets = value.to_bytes(4, "big")
    numbers = [*octets[: parts - 1], int.from_bytes(octets[parts - 1:], "big")]

    def spell(n: int, r: int) -> str:
        return {10: str(n), 8: "0" + format(n, "o"), 16: "0x" + format(n, "x")}[r]

    text = ".".join(spell(n, radix[i % len(radix)]) for i, n in enumerate(numbers))
    return text + ("." if trailing_dot else "")


_interesting_v4 = st.sampled_from(
    [0, 0x7F000001, 0x0A000001, 0xAC100001, 0xC0A80001, 0xA9FEA9FE, 0x64400001, 0xC0000201, 0xE0000001,
     0xFFFFFFFF, 0x08080808, 0x5DB8D822, 0x64646464 + 0x64, 0xC0000000 + 192]
)
_v4_value = st.one_of(_interesting_v4, st.integers(0, 2**32 - 1))
_v4_host = st.builds(
    _spell_ipv4, _v4_value, st.integers(0, 3), st.lists(st.sampled_from([8, 10, 16]), min_size=1, max_size=4),
    st.booleans(),
)
_v6_value = st.one_of(
    st.integers(0, 2**128 - 1),
    st.builds(lambda prefix, v4: prefix | v4,
              st.sampled_from([0, 0xFFFF << 32, 0x0064FF9B << 96, (0x0064FF9B0001) << 80, 0xFFFF << 48]), _v4_value),
    st.builds(lambda v4, rest: (0x2002 << 112) | (v4 << 80) | rest, _v4_value, st.integers(0, 2**80 - 1)),
    st.builds(lambda top, rest: (top << 112) | rest,
              st.sampled_from([0xFE80, 0xFC00, 0xFD00, 0xFF02, 0x2001, 0x2606, 0x64]), st.integers(0, 2**112 - 1)),
)


def _spell_ipv6(value: int, compressed: bool, zone: str) -> str:
    address = ipaddress.IPv6Address(value)
    return f"[{address.compressed if compressed else address.exploded}{zone}]"


_v6_host = st.builds(_spell_ipv6, _v6_value, st.booleans(), st.sampled_from(["", "", "", "%25eth0", "%251"]))
_name_host = st.lists(
    st.sampled_from(
        [*"abcxyz0179.-_%:[]@\\ \t", "0x", "\u3002", "\uff0e", "\uff4c", "\u24db", "\u00fc", "X", "localhost"]
    ),
    min_size=1, max_size=12,
).map("".join)
_special_host = st.sampled_from(["localhost", "LOCALHOST.", "metadata", "a.localhost"])
_host = st.one_of(_v4_host, _v6_host, _name_host, _special_host)


def _resolver_reading(host: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    """What the C resolver reads from a host without DNS (``None``: it would look the name up)."""
    if ":" in host:
        return ipaddress.IPv6Address(host.split("%", 1)[0])
    try:
        return ipaddress.IPv4Address(socket.inet_aton(host))
    except OSError:
        pass
    try:  # WHATWG's reading of a trailing dot, which inet_aton itself refuses
        return ipaddress.IPv4Address(socket.inet_aton(host[:-1])) if host.endswith(".") else None
    except OSError:
        return None


def _public(address: ipaddress.IPv4Address | ipaddress.IPv6Address) -> bool:
    if isinstance(address, ipaddress.IPv6Address):
        for embedded in (address.ipv4_mapped, address.sixtofour):
            if embedded is not None and not _public(embedded):
                return False
        if address in ipaddress.IPv6Network("64:ff9b::/96"):
            return _public(ipaddress.IPv4Address(int(address) & 0xFFFFFFFF))
    return address.is_global and not address.is_multicast


@settings(max_examples=1500, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    scheme=st.sampled_from(["http", "https", "HTTP", "ftp", "file"]),
    userinfo=st.sampled_from(["", "", "", "user:s3cr3t-pw@", "s3cr3t-pw@", "a:s3cr3t-pw@b@"]),
    host=_host,
    port=st.one_of(st.just(""), st.integers(-1, 70000).map(lambda p: f":{p}"), st.sampled_from([":", ":8_0", ":+8"])),
    path=st.sampled_from(["/", "", "/a?b=c#d", "/\u00e9", "\\@evil.com/", "#@evil.com"]),
)
def test_property_never_allows_a_non_public_host(scheme: str, userinfo: str, host: str, port: str, path: str) -> None:
    url = f"{scheme}://{userinfo}{host}{port}{path}"
    try:
        checked = check_url(url)
    except EgressRefused as refusal:
        assert "s3cr3t-pw" not in refusal.url and "s3cr3t-pw" not in str(refusal)
        return
    assert checked.scheme in ("http", "https") and not checked.userinfo
    raw = checked.raw_host.decode("ascii")
    assert raw == httpx.URL(url).raw_host.decode("ascii")
    address = _resolver_reading(raw)
    if address is not None:
        assert _public(address), (url, address)
    else:
        assert raw.rstrip(".") not in ("localhost", "metadata") and not raw.rstrip(".").endswith(".localhost")
