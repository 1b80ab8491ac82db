"""Properties of the shared ledger's unit conversion (USD ``Decimal`` <-> whole nano-dollars):
never under-counts, exact for amounts with at most 9 decimal places, exact back again."""

from __future__ import annotations

from decimal import Decimal, localcontext

import pytest
from hypothesis import given
from hypothesis import strategies as st
from seamkit_budget.units import UNITS_PER_USD, ceiling_units, from_units, to_units

amounts = st.decimals(allow_nan=False, allow_infinity=False, min_value=Decimal(0), max_value=Decimal(10) ** 12,
                      places=None)
nine_places = st.integers(min_value=0, max_value=10**21).map(from_units)


@given(amounts)
def test_to_units_never_under_counts_and_is_within_one_unit(usd: Decimal) -> None:
    units = to_units(usd)
    back = from_units(units)
    assert back >= usd  # never under-counted
    with localcontext() as ctx:
        ctx.prec = 100
        assert back - usd < Decimal(1) / UNITS_PER_USD  # by less than one unit


@given(nine_places)
def test_amounts_with_at_most_nine_decimal_places_convert_exactly(usd: Decimal) -> None:
    assert from_units(to_units(usd)) == usd
    assert ceiling_units(usd) == to_units(usd)


@given(st.integers(min_value=-(10**40), max_value=10**40))
def test_from_units_is_exact_at_any_size(units: int) -> None:
    # a string conversion, not context arithmetic: no rounding at 28 significant digits
    assert to_units(from_units(units)) == units


@given(st.integers(min_value=0, max_value=10**30), st.integers(min_value=10, max_value=40))
def test_more_places_round_up_to_the_next_unit(mantissa: int, places: int) -> None:
    with localcontext() as ctx:
        ctx.prec = 100  # the test's own arithmetic exact
        usd = Decimal(mantissa).scaleb(-places)
        exact_units = Decimal(mantissa).scaleb(9 - places)
    units = to_units(usd)
    assert units == -(-mantissa // 10 ** (places - 9))  # the ceiling of the exact quotient
    assert units >= exact_units


def test_examples() -> None:
    assert to_units(Decimal("0.0000000001")) == 1  # a tenth of a unit counts as one
    assert to_units(Decimal("1.5")) == 1_500_000_000
    assert to_units(Decimal("1E+3")) == 1000 * UNITS_PER_USD
    assert to_units(Decimal("-0.0000000015")) == -1  # towards +infinity
    assert from_units(1) == Decimal("0.000000001")
    with pytest.raises(ValueError, match="more"):
        ceiling_units(Decimal("0.0000000005"))
    with pytest.raises(ValueError, match="cannot be counted"):
        to_units(Decimal("NaN"))
