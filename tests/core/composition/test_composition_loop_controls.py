"""The tool-loop control keys of a composition: ``max_tool_calls``, ``max_tool_rounds``,
``disabled_tools``, ``mode``."""

from __future__ import annotations

import textwrap

import pytest
from seamkit._plugins.registry import Registry
from seamkit.composition import build_agent, loads_composition
from seamkit.errors import ConfigError

BASE = """\
    seamkit: 1
    agent:
      model:
        use: scripted
        turns:
          - tool_calls: [{name: calculator, arguments: {expression: "2 + 3"}}, {name: echo, arguments: {text: hi}}]
          - text: "5"
      tools: [calculator, echo]
"""


def comp(extra: str, registry: Registry):  # type: ignore[no-untyped-def]
    return loads_composition(textwrap.dedent(BASE) + extra, file="a.yaml", registry=registry, env={})


async def test_the_keys_build_an_agent_with_the_controls(registry: Registry) -> None:
    c = comp("  max_tool_calls: 1\n  max_tool_rounds: 3\n  disabled_tools: [echo]\n  checkpoints: null\n", registry)
    agent = build_agent(c, registry=registry)
    assert (agent.max_tool_calls, agent.max_tool_rounds, agent.disabled_tools, agent.mode) == (
        1, 3, frozenset({"echo"}), "answer")
    result = await agent.run("add")
    echo_result = result.transcript[2].tool_results[1]
    assert echo_result.content == "UnknownToolError: unknown tool 'echo'; available tools: calculator"
    assert result.output == "5" and result.stopped_early and result.limit_reached == "max_tool_calls"


async def test_gather_mode_from_yaml_returns_the_block(registry: Registry) -> None:
    agent = build_agent(comp("  mode: gather\n  checkpoints: null\n", registry), registry=registry)
    result = await agent.run("gather")
    assert [g.call.name for g in result.gathered] == ["calculator", "echo"]
    assert result.output.startswith("Gathered context (2 tool calls):")


def test_defaults_leave_the_loop_as_it_was(registry: Registry) -> None:
    a = comp("", registry).agent
    assert (a.max_tool_calls, a.max_tool_rounds, a.disabled_tools, a.mode) == (None, None, [], "answer")


@pytest.mark.parametrize(("extra", "located", "message"), [
    ("  max_tool_calls: 0\n", "a.yaml:9:19: agent.max_tool_calls", "greater than or equal to 1"),
    ("  max_tool_calls: true\n", "a.yaml:9:19: agent.max_tool_calls", "not true/false"),
    ("  max_tool_rounds: 10\n", "a.yaml:9:20: agent.max_tool_rounds",
     "max_tool_rounds (10) must be below max_steps (10)"),
    ("  max_steps: 3\n  max_tool_rounds: 4\n", "a.yaml:10:20: agent.max_tool_rounds", "must be below max_steps (3)"),
    ("  disabled_tools: [echo, calculater]\n", "a.yaml:9:26: agent.disabled_tools[1]",
     "disabled_tools name 'calculater', which is not in agent.tools; did you mean 'calculator'?"),
    ("  disabled_tools: echo\n", "a.yaml:9:19: agent.disabled_tools", "expected a list"),
    ("  disabled_tools: [echo]\n  tool_choice: echo\n", "a.yaml:10:16: agent.tool_choice",
     "tool_choice 'echo' names a tool that disabled_tools disables"),
    ("  mode: gahter\n", "a.yaml:9:9: agent.mode", "'answer' or 'gather'"),
    ("  mode: gather\n  output: {json_schema: {type: object}}\n", "a.yaml:9:9: agent.mode",
     "gather mode returns a context block, not an answer: remove output"),
])
def test_bad_values_are_located(registry: Registry, extra: str, located: str, message: str) -> None:
    with pytest.raises(ConfigError) as info:
        comp(extra, registry)
    text = str(info.value)
    assert located in text and message in text, text
