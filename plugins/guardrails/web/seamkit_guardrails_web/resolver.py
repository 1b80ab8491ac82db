"""Name resolution for the egress checks: the :class:`Resolver` port and :class:`SystemResolver`.

The egress checks resolve a host name **once** per fetch (or pre-flight check) and connect only
to the addresses that answer returned and that passed
:func:`~seamkit_guardrails_web.urls.check_address`; a test replaces the resolver with a stub to
prove it (an answer that changes between queries is DNS rebinding).
"""

from __future__ import annotations

import asyncio
import ipaddress
import socket
from typing import Protocol, runtime_checkable

from seamkit_guardrails_web.errors import ResolutionFailed

__all__ = ["IPAddress", "Resolver", "SystemResolver"]

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address


@runtime_checkable
class Resolver(Protocol):
    """Resolves a host name (ASCII, IDNA-encoded: ``xn--...``) to its addresses, in the order a
    client should try them. Raises :class:`~seamkit_guardrails_web.errors.ResolutionFailed`
    (an ``EgressRefused``, category ``resolution``) when the name does not resolve (no answer,
    NXDOMAIN, no address, a timeout): that is a failure, not a policy decision."""

    async def resolve(self, host: str) -> list[IPAddress]: ...


class SystemResolver:
    """The operating system's resolver through :meth:`asyncio.loop.getaddrinfo` (which runs
    :func:`socket.getaddrinfo` in the loop's default executor; Python docs, "Event Loop: DNS").

    No caching here, on purpose: a cached answer outlives its DNS TTL, and the egress checks
    resolve once per fetch anyway (whatever caches the system resolver keeps honour the TTLs of
    RFC 1035 section 3.2.1 / RFC 2181 section 8). The order of the answer is getaddrinfo's
    (destination address selection of RFC 6724 section 6); duplicates are dropped.

    ``timeout``: seconds for one resolution (a hung resolver must not hang the run)."""

    def __init__(self, *, timeout: float = 10.0) -> None:
        self.timeout = timeout

    def __repr__(self) -> str:
        return f"SystemResolver(timeout={self.timeout})"

    async def resolve(self, host: str) -> list[IPAddress]:
        """The addresses of ``host`` (TCP, IPv4 and IPv6), de-duplicated, in getaddrinfo's order.
        Raises :class:`~seamkit_guardrails_web.errors.ResolutionFailed` (category
        ``resolution``) when the name does not resolve or the resolver takes longer than
        ``timeout`` seconds."""
        loop = asyncio.get_running_loop()
        try:
            async with asyncio.timeout(self.timeout):
                infos = await loop.getaddrinfo(host, None, type=socket.SOCK_STREAM, proto=socket.IPPROTO_TCP)
        except TimeoutError:
            raise ResolutionFailed(host, f"resolving the name took longer than {self.timeout:g} s") from None
        except (socket.gaierror, UnicodeError, OSError) as exc:
            raise ResolutionFailed(host, f"the name does not resolve ({exc})") from None
        out: list[IPAddress] = []
        for family, _type, _proto, _canon, sockaddr in infos:
            if family not in (socket.AF_INET, socket.AF_INET6):
                continue
            # an IPv6 link-local answer carries its zone as "fe80::1%eth0"; ipaddress keeps it
            ip = ipaddress.ip_address(str(sockaddr[0]))
            if ip not in out:
                out.append(ip)
        if not out:
            raise ResolutionFailed(host, "the name resolves to no IPv4 or IPv6 address")
        return out
