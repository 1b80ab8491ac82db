"""The one local-pricing rule of seamkit's HTTP provider plugins (``seamkit-openai``,
``seamkit-anthropic``): when a model behind a base URL costs nothing.

- :func:`is_loopback`: a base URL whose host is ``localhost`` (or ``*.localhost``) or a loopback
  IP address (127.0.0.0/8, ::1).
- :func:`local_pricing`: ``(local, price)`` from the config's ``local`` and ``price`` settings,
  the price table's entry and whether the base URL is on loopback.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Callable
from decimal import Decimal
from urllib.parse import urlsplit

from seamkit.plugin import Price

__all__ = ["FREE", "is_loopback", "local_pricing"]

FREE = Price(Decimal(0), Decimal(0))
"""The price of a local model: zero (budget middlewares admit it, reserving 0)."""


def is_loopback(url: str) -> bool:
    """``True`` when ``url``'s host is ``localhost`` / ``*.localhost`` or a loopback IP address
    (127.0.0.0/8, ::1); ``False`` for any other host and for a URL that cannot be parsed."""
    try:
        host = (urlsplit(url).hostname or "").lower()
    except ValueError:
        return False
    if host == "localhost" or host.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def local_pricing(local: bool | None, price: Price | None, lookup: Callable[[], Price | None], *,
                  loopback: bool) -> tuple[bool, Price | None]:
    """``(local, price)`` of a provider, by the one local-pricing rule:

    - ``local`` true (config ``local: true``) -> cost 0, ``cost_source: local``, whatever the price;
    - else a configured ``price`` -> priced from it (``estimated``);
    - else ``local`` false -> the price table's price (``lookup()``; ``None``: unpriced);
    - else (``local`` unset) on a ``loopback`` base URL: a model in the price table is priced from
      it (``estimated``: a local proxy such as LiteLLM may forward to the paid API), any other
      model costs 0 (``local``);
    - else the price table's price (``None``: unpriced).

    A local model's price is :data:`FREE`."""
    if local:
        return True, FREE
    if price is not None:
        return False, price
    table = lookup()
    if local is None and loopback and table is None:
        return True, FREE
    return False, table
