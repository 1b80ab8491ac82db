"""``Binding.parse``, ``Binding``, ``CallLimits`` and ``Session`` as values."""

from __future__ import annotations

import dataclasses
from decimal import Decimal

import pytest
from hypothesis import given
from hypothesis import strategies as st
from seamkit import Binding, CallLimits, Session
from seamkit.values import FrozenDict, Message

PROVIDERS = st.from_regex(r"[a-z][a-z0-9_-]{0,20}", fullmatch=True)
MODELS = st.text(st.characters(blacklist_categories=("Cs",)), min_size=1, max_size=40).filter(
    lambda m: m.strip() == m and m != ""
)


@given(PROVIDERS, MODELS)
def test_parse_splits_on_the_first_colon(provider: str, model: str) -> None:
    b = Binding.parse(f"{provider}:{model}")
    assert (b.provider, b.model) == (provider, model)
    assert b.label == f"{provider}:{model}"


@pytest.mark.parametrize("spec", ["", "openai", ":gpt-4o", "openai:", "  :  ", "openai: "])
def test_parse_refuses_specs_without_both_parts(spec: str) -> None:
    with pytest.raises(ValueError, match=r"PROVIDER:MODEL \(e\.g\. openai_chat:gpt-4o-mini\)"):
        Binding.parse(spec)


@pytest.mark.parametrize("provider", ["OpenAI", "open ai", "1openai", "open.ai", ""])
def test_provider_must_be_a_component_name(provider: str) -> None:
    with pytest.raises(ValueError, match="component name"):
        Binding(provider, "m")


def test_examples() -> None:
    assert Binding.parse("openai_chat:gpt-4o-mini") == Binding("openai_chat", "gpt-4o-mini")
    assert Binding.parse("ollama:llama3.1:8b").model == "llama3.1:8b"
    assert Binding.parse(" anthropic : claude-sonnet-4-5 ").provider == "anthropic"


def test_options_are_deeply_frozen_copies() -> None:
    headers = {"X-Title": "app"}
    b = Binding("openai_chat", "m", options={"base_url": "http://127.0.0.1:8080/v1", "headers": headers})
    headers["X-Title"] = "changed"
    assert type(b.options) is FrozenDict
    assert b.options["headers"] == {"X-Title": "app"}
    with pytest.raises(TypeError):
        b.options["headers"]["X-Title"] = "x"  # type: ignore[index]
    with pytest.raises(dataclasses.FrozenInstanceError):
        b.model = "other"  # type: ignore[misc]
    assert hash(b) == hash(Binding("openai_chat", "m", options={"base_url": "http://127.0.0.1:8080/v1",
                                                                 "headers": {"X-Title": "app"}}))


def test_model_in_options_is_refused() -> None:
    with pytest.raises(ValueError, match="Binding\\(model="):
        Binding("openai_chat", options={"model": "gpt-4o"})


def test_call_limits_accept_exact_amounts_only() -> None:
    assert CallLimits(max_cost_usd="0.50").max_cost_usd == Decimal("0.50")
    assert CallLimits(max_cost_usd=1).max_cost_usd == Decimal(1)
    with pytest.raises(ValueError, match="floats are inexact"):
        CallLimits(max_cost_usd=0.5)  # type: ignore[arg-type]
    for bad in ("0", "-1", "abc", "NaN", "Infinity"):
        with pytest.raises(ValueError, match="max_cost_usd"):
            CallLimits(max_cost_usd=bad)  # type: ignore[arg-type]


@pytest.mark.parametrize("kwargs", [
    {"wall_clock_s": 0}, {"wall_clock_s": -1}, {"wall_clock_s": float("inf")}, {"wall_clock_s": True},
    {"max_tokens": 0}, {"max_tokens": 1.5}, {"max_tokens": True},
])
def test_call_limits_refuse_non_positive_limits(kwargs: dict[str, object]) -> None:
    with pytest.raises(ValueError):
        CallLimits(**kwargs)  # type: ignore[arg-type]


def test_session_repr_is_short_and_transcript_a_tuple() -> None:
    s = Session(Binding("openai_chat", "m"), [Message.user("hi")])  # type: ignore[arg-type]
    assert s.transcript == (Message.user("hi"),)
    assert repr(s) == "Session(Binding('openai_chat', model='m'), messages=1)"
