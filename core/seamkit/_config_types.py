"""Configuration field types that provider and middleware plugins share (light: pydantic only).

- :class:`PriceOverride`: a model's price in YAML, USD per million tokens, exact.
- :func:`check_base_url`: an ``http``/``https`` base URL with a host, checked without any network.
- :class:`HTTPProviderConfig`: the fields every HTTP provider's config shares (extra headers,
  timeouts, HTTP/2, price override, local cost) and the checks of ``base_url`` and header names.
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any
from urllib.parse import urlsplit

from pydantic import BaseModel, ConfigDict, Field, SecretStr, field_validator

from seamkit._pricing import Price, parse_usd

__all__ = ["HTTPProviderConfig", "PriceOverride", "check_base_url"]


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
        """The :class:`~seamkit._pricing.Price` this override describes."""
        return Price(self.input, self.output, self.cache_read, self.cache_write)


def check_base_url(value: str, *, field: str = "base_url", echo: bool = True) -> str:
    """``value`` stripped of spaces and trailing slashes when it is an ``http``/``https`` URL with a
    host that :func:`urllib.parse.urlsplit` can parse (port included); else ``ValueError`` whose
    message names ``field``. The message repeats the URL only when ``echo`` is true and the URL
    holds no credentials (``user:password@``): a validation error must not carry a secret."""
    v = value.strip()
    try:
        parts = urlsplit(v)
        parts.port  # noqa: B018 - raises ValueError for a port that is not a number in 0-65535
        shown = f" {v!r}" if echo and "@" not in parts.netloc else ""
    except ValueError as exc:
        shown = f" {v!r}" if echo and "@" not in v else ""
        raise ValueError(f"{field}{shown} is not a valid URL ({exc})") from None
    if parts.scheme.lower() not in ("http", "https"):
        raise ValueError(f"{field} must start with http:// or https://" + (f" (got{shown})" if shown else ""))
    if not parts.hostname:
        raise ValueError(f"{field}{shown} has no host")
    return v.rstrip("/")


class HTTPProviderConfig(BaseModel):
    """Fields shared by the configs of providers that speak HTTP (subclass it; a subclass declares
    ``model``, ``base_url`` and its credentials). ``base_url`` is checked with
    :func:`check_base_url`; header names must be non-empty tokens without spaces, colons or line
    breaks."""

    model_config = ConfigDict(extra="forbid")

    headers: dict[str, SecretStr] = Field(
        default_factory=dict, description="Extra HTTP headers sent with every request (values masked in reprs)"
    )
    timeout_s: float = Field(default=600.0, gt=0, description="Read/write/pool timeout per request, seconds")
    connect_timeout_s: float = Field(default=10.0, gt=0, description="Connect timeout, seconds")
    http2: bool | None = Field(default=None, description="Use HTTP/2 (default: when the h2 package is installed)")
    price: PriceOverride | None = Field(
        default=None, description="Price of this model, USD per 1M tokens (overrides the packaged price table)"
    )
    local: bool | None = Field(
        default=None,
        description="true: a model on this machine, usage cost 0 (cost_source 'local'), whatever price is set; "
        "false: priced from price: or the price table (unpriced otherwise). Default: for a loopback base URL "
        "(127.0.0.0/8, ::1, localhost) a model in the price table is priced from it (a local proxy such as "
        "LiteLLM may forward to the paid API) and any other model costs 0 'local'; elsewhere, priced",
    )

    @field_validator("base_url", check_fields=False)
    @classmethod
    def _check_url(cls, v: str | None) -> str | None:
        return None if v is None else check_base_url(v)

    @field_validator("headers")
    @classmethod
    def _check_headers(cls, v: dict[str, SecretStr]) -> dict[str, SecretStr]:
        for name in v:
            if not name or any(c in name for c in " \t\r\n:"):
                raise ValueError(f"invalid header name {name!r}")
        return v
