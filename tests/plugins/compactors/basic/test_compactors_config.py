"""Registration of the basic compactors, their config models and YAML parameters."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest
import yaml
from pydantic import ValidationError
from seamkit._compaction import CompactorPort
from seamkit._plugins.registry import get_registry
from seamkit.errors import ConfigError
from seamkit_compactors import (
    SlidingWindowCompactor,
    SlidingWindowConfig,
    ToolResultClearingCompactor,
    ToolResultClearingConfig,
    TruncationCompactor,
    TruncationConfig,
)

EXPECTED = {
    "sliding_window": (SlidingWindowConfig, SlidingWindowCompactor),
    "truncation": (TruncationConfig, TruncationCompactor),
    "tool_result_clearing": (ToolResultClearingConfig, ToolResultClearingCompactor),
}


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_each_compactor_is_registered_lazily_by_the_distribution(name: str) -> None:
    spec = get_registry().resolve("compactor", name)
    assert spec.distribution == "seamkit-compactors"
    assert spec.factory == f"seamkit_compactors.compactors:build_{name}"
    assert spec.config_model() is EXPECTED[name][0]
    built = spec.build({})
    assert type(built) is EXPECTED[name][1] and built.name == name
    assert isinstance(built, CompactorPort)


def test_yaml_parameters_validate_and_configure_the_compactors() -> None:
    slots = yaml.safe_load(textwrap.dedent("""\
        - {use: sliding_window, keep_turns: 5}
        - truncation
        - {use: tool_result_clearing, keep_recent: 0}
        """))
    reg = get_registry()
    built = []
    for slot in slots:
        params = {"use": slot} if isinstance(slot, str) else dict(slot)
        built.append(reg.build("compactor", params.pop("use"), params))
    assert [repr(c) for c in built] == [
        "SlidingWindowCompactor(keep_turns=5)",
        "TruncationCompactor()",
        "ToolResultClearingCompactor(keep_recent=0)",
    ]


@pytest.mark.parametrize(("name", "params", "fragment"), [
    ("sliding_window", {"keep_turns": 0}, "greater than or equal to 1"),
    ("sliding_window", {"keep_turns": "many"}, "valid integer"),
    ("sliding_window", {"keep_turn": 3}, "Extra inputs are not permitted"),
    ("truncation", {"budget": 100}, "Extra inputs are not permitted"),
    ("tool_result_clearing", {"keep_recent": -1}, "greater than or equal to 0"),
])
def test_bad_parameters_are_config_errors_naming_the_field(name: str, params: dict[str, object], fragment: str) -> None:
    with pytest.raises(ConfigError) as info:
        get_registry().build("compactor", name, params)
    assert fragment in str(info.value)
    assert next(iter(params)) in str(info.value)


def test_config_defaults_are_documented_and_frozen() -> None:
    assert SlidingWindowConfig().keep_turns == 20 and ToolResultClearingConfig().keep_recent == 3
    for model in (SlidingWindowConfig, ToolResultClearingConfig):
        assert all(f.description for f in model.model_fields.values())
    with pytest.raises(ValidationError):
        SlidingWindowConfig().keep_turns = 3  # type: ignore[misc]


def test_the_plugin_module_is_cheap_to_import() -> None:
    code = (
        "import sys, seamkit_compactors.plugin\n"
        "heavy = [m for m in ('seamkit_compactors.compactors', 'seamkit_compactors.config', 'seamkit._compaction')"
        " if m in sys.modules]\n"
        "print(heavy)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"
