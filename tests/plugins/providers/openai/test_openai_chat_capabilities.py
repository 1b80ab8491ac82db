"""The capability table, effort mapping and the shared configuration model."""

from __future__ import annotations

from decimal import Decimal

import pytest
from pydantic import ValidationError
from seamkit_openai.capabilities import COMPATIBLE_DEFAULT, OPENAI_DEFAULT, capabilities_for, nearest_effort
from seamkit_openai.config import OpenAIChatConfig, OpenAIResponsesConfig


@pytest.mark.parametrize(
    ("model", "reasoning", "temperature", "param"),
    [
        ("gpt-4o-mini-2024-07-18", False, True, "max_completion_tokens"),
        ("gpt-4.1", False, True, "max_completion_tokens"),
        ("gpt-5", True, False, "max_completion_tokens"),
        ("gpt-5-mini-2025-08-07", True, False, "max_completion_tokens"),
        ("gpt-5-chat-latest", False, True, "max_completion_tokens"),
        ("o3-2025-04-16", True, False, "max_completion_tokens"),
        ("o4-mini", True, False, "max_completion_tokens"),
        ("openai/o1", True, False, "max_completion_tokens"),
    ],
)
def test_table_prefix_matching(model: str, reasoning: bool, temperature: bool, param: str) -> None:
    c = capabilities_for(model)
    assert (c.reasoning, c.temperature, c.max_tokens_param) == (reasoning, temperature, param)
    assert c.developer_role == reasoning


def test_specific_entries() -> None:
    assert capabilities_for("gpt-5").reasoning_efforts == ("minimal", "low", "medium", "high")
    assert capabilities_for("o3").reasoning_efforts == ("low", "medium", "high")
    assert capabilities_for("gpt-5.1").reasoning_efforts == ("none", "low", "medium", "high")
    assert capabilities_for("gpt-5-pro").reasoning_efforts == ("high",)
    assert capabilities_for("o3-mini").images is False and capabilities_for("o3").images is True
    assert capabilities_for("gpt-4o-2024-05-13").json_schema is False
    assert capabilities_for("gpt-4o-2024-08-06").json_schema is True
    assert capabilities_for("o1-mini").system_role is False
    assert capabilities_for("gpt-3.5-turbo").json_schema is False


def test_unknown_models() -> None:
    assert capabilities_for("o10") == OPENAI_DEFAULT  # 'o1' must not match 'o10'
    assert capabilities_for("gemma-3-270m", openai_host=False) == COMPATIBLE_DEFAULT
    assert COMPATIBLE_DEFAULT.max_tokens_param == "max_tokens" and not COMPATIBLE_DEFAULT.strict_schema


def test_overrides() -> None:
    c = capabilities_for("llama", openai_host=False, overrides={"json_schema": False, "reasoning_efforts": ["low"]})
    assert c.json_schema is False and c.reasoning_efforts == ("low",)
    with pytest.raises(ValueError, match="unknown capability"):
        capabilities_for("gpt-4o", overrides={"jsonschema": True})


@pytest.mark.parametrize(
    ("requested", "supported", "chosen"),
    [
        ("minimal", ("low", "medium", "high"), "low"),
        ("high", ("low", "medium", "high"), "high"),
        ("xhigh", ("low", "medium", "high"), "high"),
        ("minimal", ("none", "low", "medium", "high"), "low"),
        ("none", ("minimal", "low"), "minimal"),
        ("low", ("high",), "high"),
        ("medium", (), None),
    ],
)
def test_nearest_effort(requested: str, supported: tuple[str, ...], chosen: str | None) -> None:
    assert nearest_effort(requested, supported) == chosen


def test_config_validation() -> None:
    cfg = OpenAIChatConfig(model="m", base_url="http://127.0.0.1:8080/v1/", price={"input": "2.5", "output": 10},
                           capabilities={"stream_options": False})
    assert cfg.base_url == "http://127.0.0.1:8080/v1"
    assert cfg.price is not None and cfg.price.input == Decimal("2.5") and cfg.price.output == Decimal("10")
    assert cfg.capabilities is not None and cfg.capabilities.as_changes() == {"stream_options": False}
    for bad in ({"model": ""}, {"model": "m", "base_url": "ftp://x"}, {"model": "m", "reasoning_effort": "max"},
                {"model": "m", "price": {"input": "-1", "output": "1"}}, {"model": "m", "price": {"input": "1"}},
                {"model": "m", "headers": {"Bad Name": "v"}}, {"model": "m", "capabilities": {"vision": True}},
                {"model": "m", "timeout_s": 0}, {"model": "m", "price": {"input": 2.5, "output": "10"}}):
        with pytest.raises(ValidationError):
            OpenAIChatConfig(**bad)
    assert OpenAIResponsesConfig(model="gpt-5").store is False
