"""The packaged OpenAI price table."""

from __future__ import annotations

import json
from datetime import date
from decimal import Decimal
from importlib import resources

from seamkit_openai._common import price_table


def test_price_table_is_dated_versioned_and_exact() -> None:
    raw = json.loads(resources.files("seamkit_openai").joinpath("prices.json").read_text())
    for name, entry in raw["models"].items():
        for key, value in entry.items():
            assert isinstance(value, str), f"{name}.{key} must be a decimal string"
    t = price_table()
    assert t.version == "2026-11-30.1" and t.as_of == date(2026, 11, 30)
    assert t.source.startswith("https://platform.openai.com/docs/pricing")
    for model in ("gpt-5", "gpt-5-mini", "gpt-5.4", "gpt-5.5", "gpt-4.1", "gpt-4.1-mini", "gpt-4o", "gpt-4o-mini",
                  "o1", "o3", "o4-mini"):
        assert t.lookup(model) is not None, model


def test_dated_ids_and_exceptions() -> None:
    t = price_table()
    assert t.lookup("gpt-4o-2024-08-06") == t.lookup("gpt-4o")
    p = t.lookup("gpt-4o-2024-05-13")  # the first gpt-4o snapshot has its own price
    assert p is not None and p.input == Decimal("5.00")
    assert t.lookup("gpt-5-chat-latest") == t.lookup("gpt-5-chat")
    mini = t.lookup("gpt-4.1-mini-2025-04-14")
    assert mini is not None and (mini.input, mini.output, mini.cache_read) == (
        Decimal("0.40"), Decimal("1.60"), Decimal("0.10"))
    assert t.lookup("gpt-unknown") is None
