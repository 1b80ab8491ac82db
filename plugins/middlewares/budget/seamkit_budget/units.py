"""USD amounts as integers for a shared ledger: one unit is a nano-dollar (``10**-9`` USD).

A store can add integers atomically (``StorePort.increment``) but not ``Decimal`` values, so the
shared ledger keeps its amounts as whole nano-dollars. The conversion is done with integer
arithmetic on the ``Decimal``'s digits (no context precision, so no silent rounding):

- :func:`to_units` rounds **up** (towards +infinity): a reservation or a charge of
  ``$0.0000000001`` counts as one unit, never as zero, so the ledger never under-counts. An amount
  with at most 9 decimal places converts exactly.
- :func:`ceiling_units` converts a ceiling and refuses one with more than 9 decimal places (rounding
  it either way would move the limit the YAML states).
- :func:`from_units` is exact (and drops trailing zeros).
"""

from __future__ import annotations

from decimal import Decimal

__all__ = ["DECIMALS", "UNITS_PER_USD", "ceiling_units", "from_units", "to_units"]

DECIMALS = 9
"""Decimal places one unit resolves: a unit is ``10**-DECIMALS`` USD (a nano-dollar)."""

UNITS_PER_USD = 10**DECIMALS


def to_units(usd: Decimal) -> int:
    """``usd`` in whole units, rounded towards +infinity (never under-counting a positive amount);
    exact when ``usd`` has at most :data:`DECIMALS` decimal places. Raises ``ValueError`` for NaN
    or infinity."""
    if not usd.is_finite():
        raise ValueError(f"{usd} USD cannot be counted in units")
    sign, digits, exponent = usd.as_tuple()
    assert isinstance(exponent, int)  # finite
    magnitude = int("".join(map(str, digits))) if digits else 0
    shift = exponent + DECIMALS
    if shift >= 0:
        scale: int = 10**shift
        units = magnitude * scale
        return -units if sign else units
    divisor: int = 10**-shift
    q, r = divmod(magnitude, divisor)
    if sign:
        return -q  # towards +infinity: drop the fraction of a negative amount
    return q + (1 if r else 0)


def ceiling_units(usd: Decimal) -> int:
    """A ceiling in units, exactly. Raises ``ValueError`` when it has more than :data:`DECIMALS`
    decimal places or is not finite."""
    units = to_units(usd)
    if from_units(units) != usd:
        raise ValueError(f"a shared budget counts whole nano-dollars (9 decimal places); the ceiling {usd} USD "
                         "has more")
    return units


def from_units(units: int) -> Decimal:
    """``units`` as USD, exactly, without trailing zeros (``1_500_000_000`` -> ``Decimal("1.5")``,
    ``0`` -> ``Decimal("0")``), so amounts read back print as the in-process ledger's do."""
    whole, frac = divmod(abs(units), UNITS_PER_USD)
    text = f"{whole}.{frac:0{DECIMALS}d}".rstrip("0").rstrip(".")
    return Decimal(f"-{text}" if units < 0 else text)  # from a string: exact at any precision
