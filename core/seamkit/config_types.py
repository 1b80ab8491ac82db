"""Configuration field types that provider and middleware plugins share (light: pydantic only).

- :class:`PriceOverride`: a model's price in YAML, USD per million tokens, exact.
- :func:`check_base_url`: an ``http``/``https`` base URL with a host, checked without any network.
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any
from urllib.parse import urlsplit

from pydantic import BaseModel, ConfigDict, Field, field_validator

from seamkit.pricing import Price, parse_usd

__all__ = ["PriceOverride", "check_base_url"]


class PriceOverride(BaseModel):
    """A model's price, USD per million tokens, as strings (``"2.50"``) or integers: floats are
    refused as inexact. Missing cache prices default to ``input``; ``cache_write`` is the price of
    a token written to a prompt cache (Anthropic: the 5-minute cache)."""

    model_config = ConfigDict(extra="forbid")

    input: Decimal = Field(description="USD per 1M uncached input tokens")
    output: Decimal = Field(description="USD per 1M output tokens (reasoning included)")
    cache_read: Decimal | None = Field(default=None, description="USD per 1M input tokens read from a prompt cache")
    cache_write: Decimal | None = Field(default=None, description="USD per 1M input tokens written to a prompt cache")

    @field_validator("input", "output", "cache_read", "cache_write", mode="before")
    @classmethod
    def _exact(cls, v: Any) -> Any:
        return None if v is None else parse_usd(v, "price")

    def to_price(self) -> Price:
        """The :class:`~seamkit.pricing.Price` this override describes."""
        return Price(self.input, self.output, self.cache_read, self.cache_write)


def check_base_url(value: str) -> str:
    """``value`` stripped of spaces and trailing slashes when it is an ``http``/``https`` URL with a
    host that :func:`urllib.parse.urlsplit` can parse (port included); else ``ValueError``."""
    v = value.strip()
    try:
        parts = urlsplit(v)
        parts.port  # noqa: B018 - raises ValueError for a port that is not a number in 0-65535
    except ValueError as exc:
        raise ValueError(f"base_url {v!r} is not a valid URL ({exc})") from None
    if parts.scheme.lower() not in ("http", "https"):
        raise ValueError(f"base_url must start with http:// or https:// (got {v!r})")
    if not parts.hostname:
        raise ValueError(f"base_url {v!r} has no host")
    return v.rstrip("/")
