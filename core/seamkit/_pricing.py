"""Prices of model calls: price tables, dated model ids, and the cost of a :class:`~seamkit.values.Usage`.

A price table is data, not code: each provider plugin ships its own as package data (JSON, see
:func:`load_price_table`), versioned and dated, and YAML may override any entry. Prices are USD
per million tokens as ``Decimal``. An unknown model has no price: its cost is ``None`` with
``cost_source="unpriced"``, never ``0``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from datetime import date
from decimal import Decimal, InvalidOperation
from typing import Any

from seamkit.values import Usage

__all__ = ["Price", "PriceTable", "load_price_table", "parse_price_table", "parse_usd", "cost_of", "price_usage",
           "MILLION"]

MILLION = Decimal(1_000_000)

# Dated snapshots of a model family: gpt-4o-2024-08-06, claude-sonnet-4-5-20250929, o3-mini-2025-01-31,
# and aliases such as claude-3-7-sonnet-latest.
_DATED = re.compile(r"^(?P<family>.+?)(?:-\d{4}-\d{2}-\d{2}|-\d{8}|-latest)$")


def parse_usd(value: Any, what: str = "amount", *, positive: bool = False) -> Decimal:
    """An exact USD amount (or price) from a string, an integer or a ``Decimal``. Raises
    ``ValueError`` naming ``what`` for a float (binary floats are inexact: ``0.1`` is
    ``0.1000000000000000055...``), a boolean, text that is not a number, NaN or infinity, a
    negative amount, and zero when ``positive``."""
    if isinstance(value, bool):
        raise ValueError(f"{what}: {value!r} is a boolean, not an amount; write it as a string such as \"0.50\"")
    if isinstance(value, float):
        raise ValueError(f"{what}: write prices and amounts as strings or integers (e.g. \"{value!r}\" in quotes), "
                         f"not floats ({value!r} is inexact)")
    if not isinstance(value, str | int | Decimal):
        raise ValueError(f"{what}: a {type(value).__name__} is not a USD amount; write it as a string such as \"0.50\"")
    try:
        d = Decimal(value.strip() if isinstance(value, str) else value)
    except InvalidOperation:
        raise ValueError(f"{what}: {value!r} is not a decimal number") from None
    if not d.is_finite():
        raise ValueError(f"{what}: {value!r} must be a finite number")
    if d < 0 or (positive and d == 0):
        need = "greater than 0" if positive else "a finite, non-negative number"
        raise ValueError(f"{what}: {value!r} must be {need}")
    return d


_dec = parse_usd


@dataclass(frozen=True, slots=True)
class Price:
    """USD per million tokens: ``input`` (uncached prompt tokens), ``output`` (completion tokens,
    reasoning included), ``cache_read`` (prompt tokens served from a cache) and ``cache_write``
    (prompt tokens written to a cache); a missing cache price means the input price."""

    input: Decimal
    output: Decimal
    cache_read: Decimal | None = None
    cache_write: Decimal | None = None

    @classmethod
    def of(cls, entry: Mapping[str, Any], what: str = "price") -> Price:
        """From a mapping with ``input``, ``output`` and optional ``cache_read`` / ``cache_write``
        (strings or integers: floats are refused as inexact). Raises ``ValueError`` naming the key."""
        unknown = set(entry) - {"input", "output", "cache_read", "cache_write"}
        if unknown:
            allowed = "input, output, cache_read, cache_write"
            raise ValueError(f"{what}: unknown keys {sorted(unknown)} (allowed: {allowed})")
        for k in ("input", "output"):
            if k not in entry:
                raise ValueError(f"{what}: missing {k!r}")
        cr, cw = entry.get("cache_read"), entry.get("cache_write")
        return cls(
            _dec(entry["input"], f"{what}.input"),
            _dec(entry["output"], f"{what}.output"),
            None if cr is None else _dec(cr, f"{what}.cache_read"),
            None if cw is None else _dec(cw, f"{what}.cache_write"),
        )


@dataclass(frozen=True, slots=True)
class PriceTable:
    """A dated price list: ``version`` (of the table), ``as_of`` (the date the prices were read),
    ``source`` (where: the provider's pricing page) and ``models`` (model id or family -> Price).

    :meth:`lookup` matches an exact id first, then the family of a dated id
    (``gpt-4o-2024-08-06`` -> ``gpt-4o``, ``claude-sonnet-4-5-20250929`` -> ``claude-sonnet-4-5``,
    ``...-latest`` -> its family)."""

    version: str
    as_of: date
    source: str = ""
    models: Mapping[str, Price] = field(default_factory=dict)

    def lookup(self, model: str) -> Price | None:
        """The price of ``model``, or ``None`` when the table does not know it."""
        p = self.models.get(model)
        if p is not None:
            return p
        m = _DATED.match(model)
        if m is not None:
            return self.models.get(m.group("family"))
        return None

    def with_overrides(self, overrides: Mapping[str, Mapping[str, Any] | Price]) -> PriceTable:
        """A copy where ``overrides`` (model -> Price or price mapping) replace or add entries.
        Raises ``ValueError`` naming a bad entry."""
        if not overrides:
            return self
        models = dict(self.models)
        for name, entry in overrides.items():
            models[name] = entry if isinstance(entry, Price) else Price.of(entry, f"prices.{name}")
        return replace(self, models=models)


def parse_price_table(data: Mapping[str, Any], what: str = "price table") -> PriceTable:
    """A :class:`PriceTable` from decoded JSON ``{"version", "as_of": "YYYY-MM-DD", "source",
    "models": {id: {input, output, cache_read?, cache_write?}}}``. Raises ``ValueError``."""
    try:
        as_of = date.fromisoformat(str(data["as_of"]))
        version = str(data["version"])
        models = data["models"]
    except KeyError as exc:
        raise ValueError(f"{what}: missing {exc.args[0]!r}") from None
    if not isinstance(models, Mapping):
        raise ValueError(f"{what}: 'models' must be a mapping")
    return PriceTable(
        version, as_of, str(data.get("source", "")),
        {str(k): Price.of(v, f"{what}: models.{k}") for k, v in models.items()},
    )


def load_price_table(package: str, resource: str = "prices.json") -> PriceTable:
    """Read a price table shipped as package data (``importlib.resources``). Raises ``ValueError``
    when it is malformed, ``FileNotFoundError`` when it is missing."""
    from importlib import resources

    text = resources.files(package).joinpath(resource).read_text(encoding="utf-8")
    return parse_price_table(json.loads(text, parse_float=Decimal), f"{package}/{resource}")


def cost_of(usage: Usage, price: Price) -> Decimal:
    """USD cost of ``usage`` at ``price``: uncached input (``input_tokens - cache_read_tokens -
    cache_write_tokens``) at the input price, cache reads and writes at their own prices (input
    price when absent), output tokens at the output price."""
    uncached = max(usage.input_tokens - usage.cache_read_tokens - usage.cache_write_tokens, 0)
    cr = price.cache_read if price.cache_read is not None else price.input
    cw = price.cache_write if price.cache_write is not None else price.input
    micro = (
        uncached * price.input
        + usage.cache_read_tokens * cr
        + usage.cache_write_tokens * cw
        + usage.output_tokens * price.output
    )
    return micro / MILLION


def price_usage(usage: Usage, price: Price | None) -> Usage:
    """``usage`` with its cost filled from ``price`` (``cost_source="estimated"``), or marked
    ``unpriced`` (cost ``None``) when ``price`` is ``None``. A usage that already carries a
    reported, local or cache cost is returned unchanged (a cache hit is free: pricing its tokens
    would charge the original call twice)."""
    if usage.cost is not None and usage.cost_source in ("reported", "local", "cache"):
        return usage
    if price is None:
        return replace(usage, cost=None, cost_source="unpriced")
    return replace(usage, cost=cost_of(usage, price), cost_source="estimated")
