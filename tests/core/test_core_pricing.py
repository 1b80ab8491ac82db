"""Price tables, dated model ids and the cost of a usage."""

from __future__ import annotations

from datetime import date
from decimal import Decimal

import pytest
from hypothesis import given
from hypothesis import strategies as st
from seamkit._pricing import Price, PriceTable, cost_of, parse_price_table, price_usage
from seamkit.values import Usage

TABLE = parse_price_table({
    "version": "2026-11-30.1",
    "as_of": "2026-11-30",
    "source": "https://example.invalid/pricing",
    "models": {
        "gpt-4o": {"input": "2.50", "output": "10.00", "cache_read": "1.25"},
        "gpt-4o-mini": {"input": "0.15", "output": "0.60"},
        "claude-sonnet-4-5": {"input": "3", "output": "15", "cache_read": "0.30", "cache_write": "3.75"},
    },
})


def test_table_header_is_kept() -> None:
    assert TABLE.version == "2026-11-30.1"
    assert TABLE.as_of == date(2026, 11, 30)
    assert TABLE.lookup("gpt-4o") == Price(Decimal("2.50"), Decimal("10.00"), Decimal("1.25"))


@pytest.mark.parametrize(
    ("model", "family"),
    [
        ("gpt-4o-2024-08-06", "gpt-4o"),
        ("gpt-4o-mini-2024-07-18", "gpt-4o-mini"),
        ("claude-sonnet-4-5-20250929", "claude-sonnet-4-5"),
        ("claude-sonnet-4-5-latest", "claude-sonnet-4-5"),
    ],
)
def test_dated_ids_match_their_family(model: str, family: str) -> None:
    assert TABLE.lookup(model) is TABLE.models[family]


@pytest.mark.parametrize("model", ["gpt-4o-audio", "gpt-4", "claude-opus-9", "gpt-4o-2024", "my-local-model"])
def test_unknown_models_have_no_price(model: str) -> None:
    assert TABLE.lookup(model) is None


def test_cost_counts_cached_tokens_once_at_their_own_price() -> None:
    p = TABLE.models["claude-sonnet-4-5"]
    u = Usage(input_tokens=1_000_000, output_tokens=100_000, cache_read_tokens=600_000, cache_write_tokens=200_000)
    # 200k uncached at $3, 600k read at $0.30, 200k written at $3.75, 100k out at $15
    assert cost_of(u, p) == Decimal("0.6") + Decimal("0.18") + Decimal("0.75") + Decimal("1.5")


def test_missing_cache_prices_fall_back_to_input() -> None:
    p = TABLE.models["gpt-4o-mini"]
    u = Usage(input_tokens=2_000_000, cache_read_tokens=1_000_000)
    assert cost_of(u, p) == Decimal("0.30")


def test_unpriced_usage_is_none_never_zero() -> None:
    u = price_usage(Usage(input_tokens=10, output_tokens=5, requests=1), None)
    assert u.cost is None and u.cost_source == "unpriced"
    priced = price_usage(Usage(input_tokens=1_000_000, requests=1), TABLE.lookup("gpt-4o"))
    assert priced.cost == Decimal("2.5") and priced.cost_source == "estimated"


def test_reported_and_local_costs_are_kept() -> None:
    local = Usage(input_tokens=5, cost=Decimal(0), cost_source="local")
    assert price_usage(local, TABLE.lookup("gpt-4o")) is local


def test_a_cache_hit_is_never_priced() -> None:
    hit = Usage(input_tokens=1_000_000, output_tokens=10, cost=Decimal(0), cost_source="cache")
    assert price_usage(hit, TABLE.lookup("gpt-4o")) is hit
    assert price_usage(hit, None) is hit


@pytest.mark.parametrize(
    ("entry", "message"),
    [
        ({"input": 1.5, "output": "1"}, "floats"),
        ({"input": "x", "output": "1"}, "not a decimal"),
        ({"input": "-1", "output": "1"}, "non-negative"),
        ({"input": "NaN", "output": "1"}, "finite"),
        ({"output": "1"}, "missing 'input'"),
        ({"input": "1", "output": "1", "cached": "1"}, "unknown keys"),
    ],
)
def test_bad_entries_are_refused_by_name(entry: dict[str, object], message: str) -> None:
    with pytest.raises(ValueError, match=message) as info:
        Price.of(entry, "prices.m")
    assert "prices.m" in str(info.value)


def test_overrides_replace_and_add() -> None:
    t = TABLE.with_overrides({"gpt-4o": {"input": "1", "output": "2"}, "local-llm": {"input": "0", "output": "0"}})
    assert t.lookup("gpt-4o-2024-08-06") == Price(Decimal(1), Decimal(2))
    assert t.lookup("local-llm") == Price(Decimal(0), Decimal(0))
    assert TABLE.lookup("local-llm") is None


def test_missing_header_is_named() -> None:
    with pytest.raises(ValueError, match="missing 'as_of'"):
        parse_price_table({"version": "1", "models": {}})


_money = st.decimals(min_value=0, max_value=1000, places=4, allow_nan=False, allow_infinity=False)


@given(_money, _money, st.integers(0, 10**7), st.integers(0, 10**7))
def test_price_entries_round_trip_exactly(inp: Decimal, out: Decimal, ntok: int, nout: int) -> None:
    p = Price.of({"input": str(inp), "output": str(out)})
    assert p == Price(inp, out)
    assert cost_of(Usage(input_tokens=ntok, output_tokens=nout), p) == (ntok * inp + nout * out) / 1_000_000


def test_table_is_a_value() -> None:
    assert isinstance(TABLE, PriceTable)
    with pytest.raises(AttributeError):
        TABLE.version = "2"  # type: ignore[misc]
