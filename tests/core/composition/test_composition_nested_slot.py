"""``seamkit._slots.NestedSlot`` / ``build_nested``: a component named inside another's config."""

from __future__ import annotations

import pytest
from seamkit._slots import NestedSlot, build_nested
from seamkit.errors import ConfigError


def test_secret_named_parameters_are_masked_in_repr_and_str() -> None:
    slot = NestedSlot.model_validate({"use": "openai", "api_key": "sk-SECRET-123456", "model": "gpt",
                                      "headers": {"Authorization": "Bearer tok-987654"}, "n": [1, 2]})
    for shown in (repr(slot), str(slot), repr({"wrapped": slot})):
        assert "sk-SECRET-123456" not in shown and "tok-987654" not in shown
        assert "'gpt'" in shown and "[1, 2]" in shown
    assert slot.params["api_key"] == "sk-SECRET-123456"  # the component gets the real value


def test_build_nested_locates_an_unknown_name_and_refused_parameters() -> None:
    with pytest.raises(ConfigError) as info:
        build_nested("provider", NestedSlot(use="no-such-provider"), at="model")
    assert info.value.issues[0].path == "model.use"
    with pytest.raises(ConfigError) as info:
        build_nested("provider", NestedSlot.model_validate({"use": "scripted", "turns": []}), at="judge")
    assert info.value.issues[0].path.startswith("judge")
    model = build_nested("provider", NestedSlot.model_validate({"use": "scripted", "turns": ["hi"]}), at="m")
    assert model.provider == "scripted"
