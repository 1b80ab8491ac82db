"""The capability table (prefix-matched model ids) and the packaged price table."""

from __future__ import annotations

from datetime import date
from decimal import Decimal

import pytest
from seamkit_anthropic.capabilities import DEFAULT, TABLE, capabilities_for
from seamkit_anthropic.provider import long_prompt_prices, price_table


@pytest.mark.parametrize(
    ("model", "prefix"),
    [
        ("claude-sonnet-4-5-20250929", "claude-sonnet-4-5"),
        ("claude-sonnet-4-20250514", "claude-sonnet-4"),
        ("claude-sonnet-4-0", "claude-sonnet-4"),
        ("claude-opus-4-1-20250805", "claude-opus-4-1"),
        ("claude-opus-4-7", "claude-opus-4-7"),
        ("claude-opus-5-5", "claude-opus-5-5"),
        ("claude-opus-5-20260724", "claude-opus-5"),
        ("claude-haiku-4-5@20251001", "claude-haiku-4-5"),
        ("claude-3-7-sonnet-latest", "claude-3-7-sonnet"),
        ("claude-3-haiku-20240307", "claude-3-haiku"),
    ],
)
def test_longest_prefix_wins(model: str, prefix: str) -> None:
    assert capabilities_for(model) is TABLE[prefix]


def test_unknown_models_get_defaults_and_overrides_apply() -> None:
    assert capabilities_for("claude-next-1") is DEFAULT
    # a prefix ends at a '-' boundary: claude-sonnet-4-5x is not claude-sonnet-4-5 (but is claude-sonnet-4)
    assert capabilities_for("claude-sonnet-4-5x") is TABLE["claude-sonnet-4"]
    caps = capabilities_for("claude-opus-4-7", {"sampling": True, "thinking_modes": frozenset({"enabled"})})
    assert caps.sampling is True and caps.thinking_modes == {"enabled"}
    with pytest.raises(TypeError):
        capabilities_for("claude-opus-4-7", {"no_such_field": True})


def test_documented_model_differences() -> None:
    assert not capabilities_for("claude-opus-4-7").sampling
    assert capabilities_for("claude-opus-4-7").thinking_modes == {"adaptive"}
    assert capabilities_for("claude-opus-4-6").thinking_modes == {"enabled", "adaptive"}
    assert not capabilities_for("claude-sonnet-5-5").forced_tool_choice
    assert capabilities_for("claude-sonnet-4-5").native_structured_output
    assert not capabilities_for("claude-opus-4-1").native_structured_output
    assert not capabilities_for("claude-3-5-haiku").thinking_modes


def test_price_table_is_dated_and_consistent() -> None:
    table = price_table()
    assert table.as_of == date(2026, 11, 30) and "platform.claude.com" in table.source
    for model in ("claude-opus-4-7", "claude-sonnet-4-6", "claude-haiku-4-5", "claude-opus-5-5", "claude-sonnet-5-5",
                  "claude-haiku-5-5", "claude-opus-4-1", "claude-3-haiku"):
        assert table.lookup(model) is not None, model
    for name, price in table.models.items():
        assert price.cache_read is not None and price.cache_write is not None, name
        assert price.cache_read < price.input < price.output, name
        if name != "claude-3-haiku":  # Haiku 3 is listed at $0.30, not 1.25 x $0.25
            assert price.cache_write == price.input * Decimal("1.25"), name
    threshold, long = long_prompt_prices()["claude-haiku-5-5"]
    assert threshold == 100_000 and long.input == Decimal("0.50")
    assert table.lookup("claude-sonnet-4-5-20250929") == table.models["claude-sonnet-4-5"]
