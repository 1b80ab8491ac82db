"""The URL and address checks (no DNS): :func:`check_url`, :func:`check_address`, :func:`host_address`.

``check_url`` parses a URL with ``httpx.URL`` (the parser of the client that fetches it) and then
interprets the host exactly as the connection will: httpx hands its ASCII host (``raw_host``:
IDNA-encoded, lower-cased, not otherwise normalised) to ``getaddrinfo``, which accepts every
legacy ``inet_aton`` spelling of an IPv4 address (``2130706433``, ``0x7f.1``, ``017700000001``,
``127.1``). So a host that *ends in a number* (WHATWG URL Standard, section 3.5) is read with the
WHATWG IPv4 parser (:mod:`seamkit_guardrails_web._numeric`) and the address it spells is checked;
one that cannot be read is refused rather than guessed at.

Address classes refused (category in brackets), from the IANA IPv4 and IPv6 Special-Purpose
Address Registries (RFC 6890 and the RFCs each entry cites;
https://www.iana.org/assignments/iana-ipv4-special-registry,
https://www.iana.org/assignments/iana-ipv6-special-registry), plus ``ipaddress``'s ``is_global``
as a second opinion:

- ``metadata``: cloud instance-metadata endpoints (AWS 169.254.169.254, fd00:ec2::254, ECS
  169.254.170.2, EKS pod identity 169.254.170.23 / fd00:ec2::23, Alibaba 100.100.100.200, Oracle
  192.0.0.192, Azure WireServer 168.63.129.16) and names (``metadata.google.internal``,
  ``metadata``, ``instance-data``...). Refused even inside ``allow_networks``.
- ``loopback``: 127.0.0.0/8 (RFC 1122), ::1; names ``localhost``, ``*.localhost`` (RFC 6761).
- ``private``: 10/8, 172.16/12, 192.168/16 (RFC 1918), 100.64/10 shared CGNAT (RFC 6598),
  fc00::/7 ULA (RFC 4193), fec0::/10 site-local (RFC 3879), NAT64 local-use 64:ff9b:1::/48
  (RFC 8215); private-use names (``.internal``, ``.home.arpa`` RFC 8375, ``.local`` RFC 6762...).
- ``link_local``: 169.254/16 (RFC 3927), fe80::/10 (RFC 4291).
- ``multicast``: 224/4 (RFC 5771), ff00::/8.
- ``unspecified``: 0.0.0.0/8 "this network" (RFC 791), ::/128.
- ``reserved``: everything else that is not globally reachable: 192.0.0.0/24 (RFC 6890),
  TEST-NET 192.0.2/24, 198.51.100/24, 203.0.113/24 (RFC 5737), 2001:db8::/32 (RFC 3849),
  3fff::/20 (RFC 9637), benchmarking 198.18/15 (RFC 2544), 6to4 relay 192.88.99/24 (RFC 7526),
  240/4 and 255.255.255.255 (RFC 1112, RFC 919), IPv6 outside 2000::/3 (RFC 4291 section 2.4),
  2001::/23 IETF protocol assignments incl. Teredo 2001::/32 (RFC 4380), discard 100::/64
  (RFC 6666), SRv6 5f00::/16 (RFC 9602), IPv4-compatible ::/96 (RFC 4291 section 2.5.5.1).
- IPv6 that embeds an IPv4 address (IPv4-mapped ::ffff:0:0/96, IPv4-compatible, NAT64
  64:ff9b::/96 RFC 6052, 6to4 2002::/16 RFC 3056, Teredo's client) is refused with the
  category of the embedded address when that one is not public.

Other refusals: ``scheme`` (not http/https), ``userinfo`` (any ``user[:password]@``),
``malformed`` (control characters or whitespace anywhere, a backslash before the query, a host
httpx cannot parse or a resolver would read unpredictably), ``port`` (0, over 65535, not plain
digits, the Fetch standard's bad ports https://fetch.spec.whatwg.org/#port-blocking, or outside
``ports`` when set), ``not_allowed`` (outside a non-empty ``egress_allow``).
"""

from __future__ import annotations

import functools
import ipaddress
import re
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import TypeVar

import httpx
import idna

from seamkit_guardrails_web._numeric import NotNumeric, ends_in_a_number, parse_ipv4
from seamkit_guardrails_web.config import EgressConfig
from seamkit_guardrails_web.errors import EgressRefused
from seamkit_guardrails_web.resolver import IPAddress

__all__ = [
    "BAD_PORTS",
    "METADATA_ADDRESSES",
    "METADATA_NAMES",
    "EgressPolicy",
    "allow_entry",
    "allow_network",
    "allow_port",
    "check_address",
    "check_url",
    "classify",
    "host_address",
    "mask_userinfo",
    "policy_from",
]

IPNetwork = ipaddress.IPv4Network | ipaddress.IPv6Network
_T = TypeVar("_T")
_R = TypeVar("_R")

_V4 = ipaddress.IPv4Network
_V6 = ipaddress.IPv6Network

#: Cloud instance-metadata addresses (refused even inside ``allow_networks``). Sources: AWS IMDS
#: (docs.aws.amazon.com/AWSEC2/latest/UserGuide/instancedata-data-retrieval.html), ECS task
#: metadata v2, EKS Pod Identity agent, GCE/Azure/Oracle/DigitalOcean (169.254.169.254), Alibaba
#: ECS (100.100.100.200), Oracle Cloud Classic (192.0.0.192), Azure WireServer (168.63.129.16,
#: learn.microsoft.com/azure/virtual-network/what-is-ip-address-168-63-129-16).
METADATA_ADDRESSES: frozenset[IPAddress] = frozenset(
    ipaddress.ip_address(a)
    for a in (
        "169.254.169.254", "169.254.170.2", "169.254.170.23", "100.100.100.200", "192.0.0.192",
        "168.63.129.16", "fd00:ec2::254", "fd00:ec2::23",
    )
)

#: Metadata host names (and every name under them). Sources: GCE
#: (cloud.google.com/compute/docs/metadata/querying-metadata: ``metadata.google.internal``,
#: ``metadata.goog``, the short ``metadata``), AWS (``instance-data``,
#: ``instance-data.ec2.internal``), Azure, Tencent Cloud (``metadata.tencentyun.com``), Equinix
#: Metal (``metadata.packet.net``), Rancher (``rancher-metadata``).
METADATA_NAMES: frozenset[str] = frozenset({
    "metadata", "metadata.google.internal", "metadata.goog", "instance-data", "instance-data.ec2.internal",
    "metadata.azure.internal", "metadata.azure.com", "metadata.tencentyun.com", "metadata.packet.net",
    "rancher-metadata",
})

#: Special-use names and suffixes that never name a public host: RFC 6761 (``localhost``),
#: the names Debian/Ubuntu's /etc/hosts gives loopback, RFC 8375 (``home.arpa``), RFC 6762
#: (``local`` for mDNS and its appendix G's private suffixes), ICANN's 2024 reservation of
#: ``internal`` for private use, and RFC 6761's ``invalid``.
_LOOPBACK_NAMES = ("localhost", "localhost.localdomain", "ip6-localhost", "ip6-loopback", "loopback")
_PRIVATE_SUFFIXES = ("internal", "home.arpa", "local", "localdomain", "lan", "intranet", "corp", "private", "invalid")

_NAME_CATEGORY: dict[str, str] = {
    **{n: "metadata" for n in METADATA_NAMES},
    **{n: "loopback" for n in _LOOPBACK_NAMES},
    **{n: "private" for n in _PRIVATE_SUFFIXES},
}

# Ordered most specific first: the first network holding an address names its category.
_V4_TABLE: tuple[tuple[IPNetwork, str], ...] = (
    (_V4("0.0.0.0/8"), "unspecified"),
    (_V4("10.0.0.0/8"), "private"),
    (_V4("100.64.0.0/10"), "private"),
    (_V4("127.0.0.0/8"), "loopback"),
    (_V4("169.254.0.0/16"), "link_local"),
    (_V4("172.16.0.0/12"), "private"),
    (_V4("192.0.0.0/24"), "reserved"),
    (_V4("192.0.2.0/24"), "reserved"),
    (_V4("192.88.99.0/24"), "reserved"),
    (_V4("192.168.0.0/16"), "private"),
    (_V4("198.18.0.0/15"), "reserved"),
    (_V4("198.51.100.0/24"), "reserved"),
    (_V4("203.0.113.0/24"), "reserved"),
    (_V4("224.0.0.0/4"), "multicast"),
    (_V4("240.0.0.0/4"), "reserved"),
)
_V6_TABLE: tuple[tuple[IPNetwork, str], ...] = (
    (_V6("::/128"), "unspecified"),
    (_V6("::1/128"), "loopback"),
    (_V6("64:ff9b:1::/48"), "private"),
    (_V6("100::/64"), "reserved"),
    (_V6("2001::/23"), "reserved"),
    (_V6("2001:db8::/32"), "reserved"),
    (_V6("3fff::/20"), "reserved"),
    (_V6("5f00::/16"), "reserved"),
    (_V6("fc00::/7"), "private"),
    (_V6("fe80::/10"), "link_local"),
    (_V6("fec0::/10"), "private"),
    (_V6("ff00::/8"), "multicast"),
)
_V6_GLOBAL_UNICAST = _V6("2000::/3")
_NAT64_WKP = _V6("64:ff9b::/96")
_NAT64_LOCAL = _V6("64:ff9b:1::/48")
_V4_COMPATIBLE = _V6("::/96")

#: The Fetch standard's bad ports (https://fetch.spec.whatwg.org/#bad-port, as of 2024 incl.
#: 4190 and 6679, whatwg/fetch#1663).
BAD_PORTS: frozenset[int] = frozenset({
    0, 1, 7, 9, 11, 13, 15, 17, 19, 20, 21, 22, 23, 25, 37, 42, 43, 53, 69, 77, 79, 87, 95, 101, 102, 103,
    104, 109, 110, 111, 113, 115, 117, 119, 123, 135, 137, 139, 143, 161, 179, 389, 427, 465, 512, 513,
    514, 515, 526, 530, 531, 532, 540, 548, 554, 556, 563, 587, 601, 636, 989, 990, 993, 995, 1719, 1720,
    1723, 2049, 3659, 4045, 4190, 5060, 5061, 6000, 6566, 6665, 6666, 6667, 6668, 6669, 6679, 6697, 10080,
})
_DEFAULT_PORTS = {"http": 80, "https": 443}

# httpx's own split of the authority (httpx/_urlparse.py URL_REGEX / AUTHORITY_REGEX), used only
# to see the text httpx normalises away: the userinfo (to refuse and mask it) and the port text.
_AUTHORITY = re.compile(r"^(?:[a-zA-Z][a-zA-Z0-9+.-]*:)?//([^/?#]*)")
_PORT_TEXT = re.compile(r"(?:\[.*\]|[^:@]*):?(.*)", re.DOTALL)
_PORT_DIGITS = re.compile(r"[0-9]{1,5}")
# Host names after httpx's IDNA encoding and lower-casing: letters, digits, hyphen, underscore.
_NAME_CHARS = re.compile(r"[a-z0-9_-]+(?:\.[a-z0-9_-]+)*\.?")
# Whitespace and controls refused anywhere (httpx refuses ASCII controls itself, but encodes a
# space in the host as %20 instead of refusing it; a resolver's reading of that is unpredictable).
_BAD_CHARS = re.compile(r"[\x00-\x20\x7f\s]")


@dataclass(frozen=True, slots=True)
class EgressPolicy:
    """A compiled :class:`~seamkit_guardrails_web.config.EgressConfig` (see :func:`policy_from`)."""

    egress_allow: tuple[str, ...] = ()
    """Normalised allowed host suffixes (IDNA ASCII, lower case, no trailing dot); empty: any public host."""
    allow_networks: tuple[IPNetwork, ...] = ()
    """Networks allowed although not public (metadata addresses excepted)."""
    ports: frozenset[int] | None = None
    """Allowed ports; ``None``: any but :data:`BAD_PORTS`."""
    allow_addresses: frozenset[IPAddress] = frozenset()
    """``egress_allow`` entries that are IP literals: each allows exactly that address as a host."""

    allowed_names: frozenset[str] = field(init=False, repr=False, compare=False)
    """``egress_allow`` as a set, for the per-label lookups (derived)."""

    def __post_init__(self) -> None:
        object.__setattr__(self, "allowed_names", frozenset(self.egress_allow))


def allow_entry(entry: str) -> str | IPAddress:
    """One ``egress_allow`` entry as the checks compare it: an IP literal (in any spelling
    :func:`host_address` reads; ``[...]`` around IPv6 allowed) as its address, else the host
    suffix IDNA-encoded (UTS #46), lower case, one leading ``.`` or ``*.`` and one trailing dot
    dropped. The one parser of the entry: :class:`~seamkit_guardrails_web.config.EgressConfig`
    validates with it and :func:`policy_from` compiles with it.

    :raises ValueError: an empty entry, or one that is not a host name or address (a URL, a
        ``host:port``, userinfo, spaces, an over-long label...), the message saying why.
    """
    text = entry.strip()
    if text.startswith("*."):
        text = text[2:]
    elif text.startswith("."):
        text = text[1:]
    if text.startswith("[") and text.endswith("]"):
        text = text[1:-1]
    if not text:
        raise ValueError(f"empty entry {entry!r} (a host name such as 'example.com' or an address)")
    if "://" in text or "/" in text or "@" in text:
        raise ValueError(f"{entry!r} is not a host name or address: give the host only, e.g. 'example.com' "
                         "(no scheme, path or userinfo)")
    try:
        address = host_address(text.lower())
    except EgressRefused as exc:
        port_hint = "; a port belongs in 'ports'" if ":" in text else ""
        raise ValueError(f"{entry!r} is not a host name or address ({exc.reason}{port_hint})") from None
    if address is not None:
        return address
    try:
        ascii_name = idna.encode(text.rstrip("."), uts46=True).decode("ascii")
    except (idna.IDNAError, UnicodeError) as exc:
        raise ValueError(f"{entry!r} is not a valid host name ({exc}); give a host name such as "
                         "'example.com', not a URL") from None
    if not _NAME_CHARS.fullmatch(ascii_name):
        raise ValueError(f"{entry!r} is not a valid host name; give a host name such as 'example.com', "
                         "not a URL or host:port")
    return ascii_name.lower()


def allow_network(cidr: str) -> IPNetwork:
    """One ``allow_networks`` entry (CIDR, e.g. ``127.0.0.0/8``; host bits may be set) as a network.
    The one parser of the entry (config validation and :func:`policy_from`).

    :raises ValueError: not an IPv4 or IPv6 network (a bad address, a prefix length past 32 / 128).
    """
    try:
        return ipaddress.ip_network(cidr.strip(), strict=False)
    except ValueError as exc:
        raise ValueError(f"{cidr!r} is not a network in CIDR notation ({exc})") from None


def allow_port(port: int) -> int:
    """One ``ports`` entry, when it is a TCP port (1..65535). The one check of the entry (config
    validation and :func:`policy_from`).

    :raises ValueError: outside 1..65535.
    """
    if not 1 <= port <= 65535:
        raise ValueError(f"port {port} is outside 1..65535")
    return port


def _each(key: str, values: Iterable[_T], parse: Callable[[_T], _R]) -> Iterator[_R]:
    for i, value in enumerate(values):
        try:
            yield parse(value)
        except ValueError as exc:
            raise ValueError(f"{key}[{i}]: {exc}") from None


def policy_from(config: EgressConfig) -> EgressPolicy:
    """Compile ``config`` once for the checks.

    :param config: the egress configuration (already validated by its model with the same
        parsers: :func:`allow_entry`, :func:`allow_network`, :func:`allow_port`; they run again
        here for a config made without validation, e.g. ``model_construct``).
    :returns: the policy; ``egress_allow`` entries are normalised (:func:`allow_entry`); an
        entry that is an IP literal goes to ``allow_addresses``.
    :raises ValueError: a malformed network, suffix or port, the message naming the key and index.
    """
    suffixes: list[str] = []
    addresses: set[IPAddress] = set()
    for allowed in _each("egress_allow", config.egress_allow, allow_entry):
        if isinstance(allowed, str):
            suffixes.append(allowed)
        else:
            addresses.add(allowed)
    networks = tuple(_each("allow_networks", config.allow_networks, allow_network))
    ports = None if config.ports is None else frozenset(_each("ports", config.ports, allow_port))
    return EgressPolicy(tuple(dict.fromkeys(suffixes)), networks, ports, frozenset(addresses))


def mask_userinfo(url: str) -> str:
    """``url`` with any userinfo (everything before the last ``@`` of the authority, as httpx
    splits it) replaced by ``***``, for messages. A URL without one is returned as is."""
    match = _AUTHORITY.match(url)
    if match is None or "@" not in match.group(1):
        return url
    start, end = match.span(1)
    authority = match.group(1)
    return f"{url[:start]}***{authority[authority.rindex('@'):]}{url[end:]}"


def host_address(host: str) -> IPAddress | None:
    """The address a resolver reads from ``host`` without DNS, or ``None`` for a name.

    :param host: a host as httpx sends it (``httpx.URL.raw_host`` decoded: ASCII, lower case,
        IPv6 without brackets, possibly with a ``%zone``).
    :returns: the IPv6 address (zone dropped) for a host with a ``:``; the IPv4 address spelled by
        a host that ends in a number (every ``inet_aton`` form, per the WHATWG IPv4 parser);
        ``None`` for a host name.
    :raises EgressRefused: (``malformed``) a host that ends in a number but spells no IPv4 address,
        or an unparsable IPv6 literal; a resolver's reading of those is not predictable.
    """
    if ":" in host:
        try:
            address = ipaddress.IPv6Address(host)
        except ValueError:
            raise EgressRefused(host, "not a valid IPv6 address", "malformed") from None
        return ipaddress.IPv6Address(address.packed) if address.scope_id else address
    if not ends_in_a_number(host):
        return None
    try:
        return ipaddress.IPv4Address(parse_ipv4(host))
    except NotNumeric as exc:
        raise EgressRefused(host, f"numeric host that is not an IPv4 address ({exc})", "malformed") from None


def _refuse(url: str, reason: str, category: str) -> EgressRefused:
    return EgressRefused(mask_userinfo(url), reason, category)


def check_url(url: str | httpx.URL, policy: EgressPolicy = EgressPolicy()) -> httpx.URL:
    """``url`` parsed exactly as httpx will send it, when it may go out.

    No DNS: a host name is only checked as a name (allow-list, metadata and special-use names);
    the addresses it resolves to are checked with :func:`check_address` after resolution, so a
    name that resolves to a non-public address (``127.0.0.1.nip.io``, an internal single-label
    name reached through a DNS search domain) passes here and is refused there. A host that is an
    address in any spelling (IPv6, dotted, decimal, hex, octal, short) is checked as that address
    here; :func:`host_address` gives it to a fetcher that wants to skip the lookup.

    :param url: the URL (a string or an ``httpx.URL``).
    :param policy: the compiled policy (:func:`policy_from`).
    :returns: ``httpx.URL(url)``: its ``raw_host``, ``port`` and ``scheme`` are what was checked.
    :raises EgressRefused: with ``category`` one of ``scheme``, ``userinfo``, ``malformed``,
        ``port``, ``not_allowed``, ``metadata``, ``loopback``, ``private``, ``link_local``,
        ``multicast``, ``unspecified``, ``reserved`` (see the module docstring); its ``url``
        never holds userinfo.
    """
    if isinstance(url, httpx.URL):
        parsed = url
        text = str(url)
    else:
        text = url if isinstance(url, str) else repr(url)
        if not isinstance(url, str):
            raise _refuse(text, "not a URL string", "malformed")
        if _BAD_CHARS.search(text):
            raise _refuse(text, "whitespace or a control character in the URL", "malformed")
        try:
            parsed = httpx.URL(text)
        except (httpx.InvalidURL, ValueError, UnicodeError) as exc:
            category = _unparsable_category(text, str(exc))
            raise _refuse(text, f"not a valid URL ({exc})", category) from None
    scheme = parsed.scheme
    if scheme not in _DEFAULT_PORTS:
        raise _refuse(text, f"scheme {scheme!r} is not http or https", "scheme")
    match = _AUTHORITY.match(text)
    if match is None:
        raise _refuse(text, "no host", "malformed")
    authority = match.group(1)
    if "@" in authority or parsed.userinfo:
        raise _refuse(text, "credentials (userinfo) in the URL", "userinfo")
    if "\\" in text and "\\" in text.split("?", 1)[0].split("#", 1)[0]:
        raise _refuse(text, "a backslash before the query (parsers disagree on it)", "malformed")
    if ":" in authority:
        port_text = _PORT_TEXT.fullmatch(authority)
        if port_text is not None and port_text.group(1) and not _PORT_DIGITS.fullmatch(port_text.group(1)):
            raise _refuse(text, f"port {port_text.group(1)!r} is not a number", "port")
    port = parsed.port
    _check_port(text, _DEFAULT_PORTS[scheme] if port is None else port, policy)
    host = parsed.raw_host.decode("ascii")
    if not host:
        raise _refuse(text, "no host", "malformed")
    _check_host(text, host, policy)
    return parsed


def _unparsable_category(url: str, error: str) -> str:
    """For a URL httpx cannot parse (so cannot fetch): ``port`` for a bad port; else the category
    of its host read as a browser would (UTS #46 mapping: fullwidth letters and dots, enclosed
    alphanumerics), when that names a special-use host or address, so that the refusal says what
    was attempted; else ``malformed``."""
    authority = _AUTHORITY.match(url)
    if authority is None or "[" in authority.group(1):
        return "malformed"
    if error.startswith("Invalid port"):
        return "port"
    host = authority.group(1).rpartition("@")[2].partition(":")[0]
    try:
        name = idna.encode(host, uts46=True).decode("ascii") if not host.isascii() else host.lower()
        address = host_address(name)
    except (idna.IDNAError, UnicodeError, ValueError, EgressRefused):
        return "malformed"
    if address is not None:
        return classify(address) or "malformed"
    return _name_category(name.rstrip(".")) or "malformed"


def _check_port(url: str, port: int, policy: EgressPolicy) -> None:
    if not 1 <= port <= 65535:
        raise _refuse(url, f"port {port} outside 1..65535", "port")
    if policy.ports is not None:
        if port not in policy.ports:
            raise _refuse(url, f"port {port} is not in the allowed ports", "port")
    elif port in BAD_PORTS:
        raise _refuse(url, f"port {port} is a bad port (Fetch standard)", "port")


def _check_host(url: str, host: str, policy: EgressPolicy) -> None:
    try:
        address = host_address(host)
    except EgressRefused as exc:
        raise _refuse(url, exc.reason, exc.category) from None
    if address is not None:
        if "%" in host and address.is_global:
            raise _refuse(url, "a zone id on a global IPv6 address", "malformed")
        check_address(address, policy, url=url)
        if host.endswith("."):
            # WHATWG reads "8.8.8.8." as 8.8.8.8; getaddrinfo refuses it as a number and looks it
            # up as a name: the readings disagree (a non-public reading was refused just above).
            reason = f"numeric host {host!r} with a trailing dot (read as a name by the resolver)"
            raise _refuse(url, reason, "malformed")
        if (policy.egress_allow or policy.allow_addresses) and address not in policy.allow_addresses:
            raise _refuse(url, f"address {address} is not in egress_allow", "not_allowed")
        return
    if not _NAME_CHARS.fullmatch(host):
        # Percent-encoded hosts land here: httpx hands them to the resolver undecoded where the
        # WHATWG parser would decode them; the two readings disagree, so neither is trusted.
        raise _refuse(url, f"host {host!r} is not a valid host name", "malformed")
    # httpx's own IDNA encoding of a unicode host is valid by construction; only A-labels the
    # URL spelled out itself need checking.
    if "xn--" in host and "xn--" in url.lower():
        problem = _a_label_problem(host)
        if problem:
            raise _refuse(url, f"host {host!r} has an invalid IDNA label ({problem})", "malformed")
    name = host[:-1] if host.endswith(".") else host
    category = _name_category(name)
    if category == "metadata":
        raise _refuse(url, f"host {name!r} is a cloud metadata name", category)
    allowed = _allow_list_match(name, policy)
    if allowed is False:
        raise _refuse(url, f"host {name!r} is not in egress_allow", "not_allowed")
    if category is not None and not allowed:
        # A special-use name passes only when egress_allow names it; its addresses are still checked.
        raise _refuse(url, f"host {name!r} is a {category} special-use name", category)


@functools.lru_cache(maxsize=1024)
def _a_label_problem(host: str) -> str:
    """Why ``host``'s ``xn--`` labels are not valid IDNA 2008 A-labels (RFC 5891), or ``""``."""
    try:
        idna.decode(host)
    except (idna.IDNAError, UnicodeError) as exc:
        return str(exc) or type(exc).__name__
    return ""


def _suffixes(name: str) -> Iterator[str]:
    """``name`` and each parent: ``a.b.c``, ``b.c``, ``c`` (the dot-boundary suffixes)."""
    start = 0
    while True:
        yield name[start:] if start else name
        dot = name.find(".", start)
        if dot < 0:
            return
        start = dot + 1


def _name_category(name: str) -> str | None:
    """The category of a special-use name: itself or a parent is listed (``a.localhost`` too)."""
    for suffix in _suffixes(name):
        category = _NAME_CATEGORY.get(suffix)
        if category is not None:
            return category
    return None


def _allow_list_match(name: str, policy: EgressPolicy) -> bool | None:
    """``None`` without an allow-list; else whether ``name`` is an entry or under one (dot boundary)."""
    if not policy.egress_allow and not policy.allow_addresses:
        return None
    allowed = policy.allowed_names
    return any(suffix in allowed for suffix in _suffixes(name))


def check_address(address: IPAddress, policy: EgressPolicy = EgressPolicy(), *, url: str = "") -> None:
    """Raise unless ``address`` may be connected to.

    :param address: the address (e.g. one ``getaddrinfo`` answered, or a literal host).
    :param policy: the compiled policy; an address inside ``policy.allow_networks`` passes unless
        it is a metadata address (an IPv6 address embedding an IPv4 one passes when either is inside).
    :param url: the URL being checked, for the error (userinfo is masked).
    :raises EgressRefused: unless ``address`` is public unicast (category as in the module docstring).
    """
    category = classify(address)
    if category is None:
        return
    shown = mask_userinfo(url) if url else str(address)
    if category == "metadata":
        raise EgressRefused(shown, f"address {address} is a cloud metadata address", category)
    embedded = _embedded_ipv4(address) if isinstance(address, ipaddress.IPv6Address) else None
    for network in policy.allow_networks:
        if address in network or (embedded is not None and embedded in network):
            return
    raise EgressRefused(shown, f"address {address} is {_WORDS[category]}", category)


_WORDS = {
    "loopback": "a loopback address", "private": "a private address", "link_local": "a link-local address",
    "multicast": "a multicast address", "unspecified": "the unspecified address or 'this network'",
    "reserved": "a reserved or special-purpose address, not globally reachable", "metadata": "a metadata address",
}


def _embedded_ipv4(address: ipaddress.IPv6Address) -> ipaddress.IPv4Address | None:
    """The IPv4 address an IPv6 address carries: IPv4-mapped (RFC 4291 2.5.5.2), NAT64 well-known
    and local-use prefixes (RFC 6052 /96 form, RFC 8215), IPv4-compatible (RFC 4291 2.5.5.1),
    6to4 (RFC 3056) and Teredo's client (RFC 4380)."""
    if address.ipv4_mapped is not None:
        return address.ipv4_mapped
    if int(address) <= 1:  # :: and ::1 are themselves, not IPv4-compatible 0.0.0.0 / 0.0.0.1
        return None
    if address in _NAT64_WKP or address in _NAT64_LOCAL or address in _V4_COMPATIBLE:
        return ipaddress.IPv4Address(int(address) & 0xFFFFFFFF)
    if address.sixtofour is not None:
        return address.sixtofour
    if address.teredo is not None:
        return address.teredo[1]
    return None


@functools.lru_cache(maxsize=4096)
def classify(address: IPAddress) -> str | None:
    """The refusal category of ``address`` (``None``: public unicast). See the module docstring.

    :param address: an IPv4 or IPv6 address (a zone id is ignored).
    :returns: ``metadata``, ``loopback``, ``private``, ``link_local``, ``multicast``,
        ``unspecified``, ``reserved`` or ``None``.
    """
    if isinstance(address, ipaddress.IPv6Address) and address.scope_id:
        address = ipaddress.IPv6Address(address.packed)
    if address in METADATA_ADDRESSES:
        return "metadata"
    if isinstance(address, ipaddress.IPv4Address):
        for network, category in _V4_TABLE:
            if address in network:
                return category
        return None if address.is_global else "reserved"
    embedded = _embedded_ipv4(address)
    if embedded is not None:
        inner = classify(embedded)
        if inner is not None:
            return inner
        if address.ipv4_mapped is not None or address in _NAT64_WKP or address.sixtofour is not None:
            return None
    for network, category in _V6_TABLE:
        if address in network:
            return category
    if address not in _V6_GLOBAL_UNICAST:
        return "reserved"
    return None if address.is_global else "reserved"
