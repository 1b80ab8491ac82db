"""The URL and address checks (no DNS): see :func:`check_url` and :func:`check_address`.

OWNED BY the check_url work (helper web1); this file is an interface stub until then.
"""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass

import httpx

from seamkit_guardrails_web.config import EgressConfig
from seamkit_guardrails_web.errors import EgressRefused  # noqa: F401 - raised by the checks

__all__ = ["EgressPolicy", "check_address", "check_url", "policy_from"]

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address


@dataclass(frozen=True, slots=True)
class EgressPolicy:
    """A compiled :class:`~seamkit_guardrails_web.config.EgressConfig`."""

    egress_allow: tuple[str, ...] = ()
    allow_networks: tuple[ipaddress.IPv4Network | ipaddress.IPv6Network, ...] = ()
    ports: frozenset[int] | None = None


def policy_from(config: EgressConfig) -> EgressPolicy:
    """Compile ``config``; raises ``ValueError`` for a malformed network or suffix."""
    raise NotImplementedError


def check_url(url: str | httpx.URL, policy: EgressPolicy = EgressPolicy()) -> httpx.URL:
    """``url`` parsed exactly as httpx will send it, when it may go out; otherwise raises
    :class:`~seamkit_guardrails_web.errors.EgressRefused`. No DNS: a host name is only checked
    as a name (allow-list, metadata names, numeric spellings); its addresses are checked with
    :func:`check_address` after resolution."""
    raise NotImplementedError


def check_address(address: IPAddress, policy: EgressPolicy = EgressPolicy(), *, url: str = "") -> None:
    """Raises :class:`~seamkit_guardrails_web.errors.EgressRefused` unless ``address`` is a
    public unicast address (or inside ``policy.allow_networks`` and not a metadata address)."""
    raise NotImplementedError
