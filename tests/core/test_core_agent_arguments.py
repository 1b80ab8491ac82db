"""Python API errors are seamkit errors with clear messages: ``Agent(...)`` with an argument of
the wrong type names the argument, what was given and what it accepts (``AgentDefinitionError``,
also a ``TypeError`` and a ``ValueError``); typed output from a value or a type pydantic cannot
describe is ``UnsupportedSchemaType`` naming what is accepted and the installed flavours."""

from __future__ import annotations

from typing import Any

import pytest
from seamkit import Agent, Prompt, tool
from seamkit.errors import AgentDefinitionError, SeamkitError, ToolDefinitionError, UnsupportedSchemaType
from seamkit.plugin import adapt
from seamkit.testing import ScriptedModel


def model() -> ScriptedModel:
    return ScriptedModel(["x"])


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"tools": 5}, "tools must be a list of tools (functions decorated with @seamkit.tool"),
    ({"tools": [5]}, "tools: 5 is not a tool"),
    ({"middlewares": 5}, "middlewares must be a list of middlewares"),
    ({"middlewares": [5]}, "middlewares[0] must be a middleware: an async generator function (call, next)"),
    ({"observers": [5]}, "observers[0] must have an on_event(event) method, got 5 (int)"),
    ({"guardrails": [5]}, "guardrails: int is not a guardrail"),
    ({"checkpointer": 5}, "checkpointer: port must implement CheckpointPort"),
    ({"prompt": 5}, "prompt must be a str, a seamkit.Prompt or None, got 5 (int)"),
    ({"name": 5}, "name must be a non-empty str, got 5 (int)"),
    ({"max_steps": "x"}, "max_steps must be an int, got 'x' (str)"),
    ({"max_steps": 0}, "max_steps must be at least 1, got 0"),
    ({"tool_choice": 5}, "tool_choice must be 'auto', 'required', 'none' or a tool's name (a str), got 5 (int)"),
    ({"temperature": "hot"}, "temperature must be a number or None, got 'hot' (str)"),
    ({"approvals": 5}, "approvals must be a mapping of tool name to policy, got 5 (int)"),
    ({"reset_tool_choice": "always"}, "reset_tool_choice must be True, False, 'auto' or 'none', got 'always'"),
    ({"reset_tool_choice": 1}, "reset_tool_choice must be True, False, 'auto' or 'none', got 1 (int)"),
    ({"parallel_side_effects": "yes"}, "parallel_side_effects must be True or False, got 'yes' (str)"),
])
def test_a_wrong_argument_is_named_with_what_it_accepts(kwargs: dict[str, Any], message: str) -> None:
    with pytest.raises(AgentDefinitionError) as info:
        Agent(model(), **kwargs)
    assert message in str(info.value)
    # a seamkit error, and still what plain Python raises for a wrong type or value
    assert isinstance(info.value, SeamkitError) and isinstance(info.value, TypeError)
    assert isinstance(info.value, ValueError)


def test_a_model_that_is_no_provider_is_named() -> None:
    with pytest.raises(AgentDefinitionError, match=r"model must implement the model port .*int does not"):
        Agent(5)  # type: ignore[arg-type]


@pytest.mark.parametrize("output", [5, "text", [int]])
def test_typed_output_from_a_value_says_what_is_accepted(output: Any) -> None:
    with pytest.raises(UnsupportedSchemaType) as info:
        Agent(model(), output=output)
    message = str(info.value)
    assert "it is a value" in message and "not a type" in message
    assert "a pydantic model, a dataclass" in message and "a JSON Schema (a dict)" in message
    assert "pydantic" in message.split("installed schema flavours:")[1]
    assert "arbitrary_types_allowed" not in message


def test_adapt_of_a_value_names_the_installed_flavours() -> None:
    with pytest.raises(UnsupportedSchemaType) as info:
        adapt(5)
    message = str(info.value)
    assert "none installed" not in message
    assert "installed schema flavours: attrs, dataclass, jsonschema, pydantic" in message


def test_a_type_pydantic_cannot_describe_is_a_seamkit_error() -> None:
    class Opaque:
        pass

    with pytest.raises(UnsupportedSchemaType) as info:
        Agent(model(), output=Opaque)
    assert "pydantic, which cannot describe it" in str(info.value)
    assert "arbitrary_types_allowed" not in str(info.value)  # pydantic's advice does not apply here


@pytest.mark.parametrize(("make", "message"), [
    (lambda: tool(5), "@tool decorates a function (def or async def), got 5 (int)"),
    (lambda: tool(side_effecting=False)(5), "@tool(...) decorates a function (def or async def), got 5 (int)"),
    (lambda: tool(side_effecting="no"), "side_effecting must be True or False, got 'no'"),
    (lambda: tool(lambda: 1), "@tool needs side_effecting=True or False"),
])
def test_tool_misuse_is_a_tool_definition_error(make: Any, message: str) -> None:
    with pytest.raises(ToolDefinitionError) as info:
        make()
    assert message in str(info.value) and isinstance(info.value, TypeError)


def test_a_prompt_that_is_no_text_is_named() -> None:
    with pytest.raises(AgentDefinitionError, match=r"Prompt template must be a str, got 5 \(int\)"):
        Prompt(5)  # type: ignore[arg-type]


@pytest.mark.parametrize("value", [True, False, "auto", "none"])
def test_every_reset_tool_choice_value_is_accepted(value: Any) -> None:
    # regression: the argument check took reset_tool_choice for a bool and refused "none", the
    # quickstart's setting
    assert Agent(model(), reset_tool_choice=value).reset_tool_choice == value
