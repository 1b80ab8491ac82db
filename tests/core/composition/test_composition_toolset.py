"""A tool component that is a toolset (``register(..., toolset=True)``; its factory returns a
:class:`~seamkit._ports.ToolsetPort`): each of its tools joins the agent, and the names it makes
are checked once built."""

from __future__ import annotations

import textwrap
from pathlib import Path
from typing import Any

import pytest
from composition_plugins import make_registry
from pydantic import BaseModel, ConfigDict
from seamkit._hookspecs import hookimpl
from seamkit._plugins.registry import Registry
from seamkit._tools import tool
from seamkit.composition import build_agent, load_composition
from seamkit.errors import ConfigError


class UnitsConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")
    prefix: str = ""


class Toolset:
    def __init__(self, tools: tuple[Any, ...]) -> None:
        self.tools = tools


def make_units(cfg: UnitsConfig) -> Toolset:
    @tool(side_effecting=False, name=f"{cfg.prefix}to_celsius")
    def to_celsius(fahrenheit: float) -> float:
        """Convert a temperature from Fahrenheit to Celsius; returns degrees Celsius."""
        return round((fahrenheit - 32) * 5 / 9, 2)

    @tool(side_effecting=True, name=f"{cfg.prefix}set_thermostat")
    def set_thermostat(celsius: float) -> str:
        """Set the thermostat to a temperature in Celsius; returns a confirmation."""
        return f"set to {celsius}"

    return Toolset((to_celsius, set_thermostat))


def make_not_tools(cfg: UnitsConfig) -> Toolset:
    return Toolset(("not a tool",))


class UnitsPlugin:
    @hookimpl
    def seamkit_register_tools(self, register: Any) -> None:
        register("units", make_units, config=UnitsConfig, description="Unit conversions", toolset=True)
        register("not_tools", make_not_tools, config=UnitsConfig, description="A broken toolset", toolset=True)


@pytest.fixture
def reg() -> Registry:
    r = make_registry()
    r.register_plugin(UnitsPlugin(), "units", distribution="seamkit-units", version="1.0")
    return r


def _load(tmp_path: Path, body: str, reg: Registry) -> Any:
    path = tmp_path / "agent.yaml"
    path.write_text("seamkit: 1\nagent:\n  model: {use: scripted, turns: [done]}\n" + textwrap.indent(
        textwrap.dedent(body), "  "))
    return load_composition(path, registry=reg)


def test_each_tool_of_a_toolset_joins_the_agent_and_approvals_name_them(tmp_path: Path, reg: Registry) -> None:
    comp = _load(tmp_path, """\
        tools: [units, {use: units, prefix: b_}, calculator]
        checkpoints: {use: memory}
        approvals: {set_thermostat: every_call, b_set_thermostat: never}
        disabled_tools: [b_to_celsius]
        tool_choice: to_celsius
    """, reg)
    agent = build_agent(comp, registry=reg)
    assert [t.schema.name for t in agent.tools] == [
        "to_celsius", "set_thermostat", "b_to_celsius", "b_set_thermostat", "calculator"]
    assert agent.approvals == {"set_thermostat": "every_call", "b_set_thermostat": "never"}


def test_tool_choice_required_is_satisfied_by_a_toolset(tmp_path: Path, reg: Registry) -> None:
    agent = build_agent(_load(tmp_path, "tools: [units]\ntool_choice: required\n", reg), registry=reg)
    assert agent.tool_choice == "required" and len(agent.tools) == 2


def test_names_a_toolset_does_not_make_are_reported_when_it_is_built(tmp_path: Path, reg: Registry) -> None:
    comp = _load(tmp_path, """\
        tools: [units]
        checkpoints: {use: memory}
        approvals: {set_thermostatt: every_call}
    """, reg)
    with pytest.raises(ConfigError, match="set_thermostatt"):
        build_agent(comp, registry=reg)


def test_a_name_clash_between_toolsets_is_reported_when_built(tmp_path: Path, reg: Registry) -> None:
    comp = _load(tmp_path, "tools: [units, {use: units}]\n", reg)  # two toolsets may share the name `use`
    with pytest.raises(ConfigError, match="duplicate tool name 'to_celsius'"):
        build_agent(comp, registry=reg)


def test_without_a_toolset_unknown_names_are_still_refused_at_load(tmp_path: Path, reg: Registry) -> None:
    with pytest.raises(ConfigError, match=r"approvals name 'nope', which is not in agent\.tools"):
        _load(tmp_path, "tools: [calculator]\ncheckpoints: {use: memory}\napprovals: {nope: every_call}\n", reg)


def test_a_toolset_whose_members_are_not_tools_is_refused_at_its_slot(tmp_path: Path, reg: Registry) -> None:
    comp = _load(tmp_path, "tools: [not_tools]\n", reg)
    with pytest.raises(ConfigError) as info:
        build_agent(comp, registry=reg)
    (issue,) = info.value.issues
    assert "toolset whose tools do not satisfy the tool port" in issue.message
    assert issue.path == "agent.tools[0]"


def test_only_a_tool_can_register_as_a_toolset() -> None:
    class Bad:
        @hookimpl
        def seamkit_register_providers(self, register: Any) -> None:
            register("x", make_units, toolset=True)

    r = Registry()
    report = r.register_plugin(Bad(), "bad", distribution="seamkit-bad", version="1")
    assert report.status == "failed" and "only a tool can be a toolset" in (report.error or "")


def test_short_descriptions_of_a_toolset_make_one_warning(tmp_path: Path, reg: Registry) -> None:
    from seamkit.composition._build import tool_description_issues

    class Terse:
        @hookimpl
        def seamkit_register_tools(self, register: Any) -> None:
            register("terse", make_terse, config=UnitsConfig, description="Terse tools", toolset=True)

    def make_terse(cfg: UnitsConfig) -> Toolset:
        def mk(i: int) -> Any:
            @tool(side_effecting=False, name=f"t{i}", description="Does it.")
            def f() -> str:
                return "ok"
            return f
        return Toolset(tuple(mk(i) for i in range(12)))

    reg.register_plugin(Terse(), "terse", distribution="seamkit-terse", version="1.0")
    comp = _load(tmp_path, "tools: [terse, calculator]\n", reg)
    errors, warnings = tool_description_issues(comp, registry=reg)
    assert errors == []
    (one,) = [w for w in warnings if w.path == "agent.tools[0]"]
    assert one.message.startswith("12 tools of this toolset have very short descriptions (t0, t1, t2")
    assert "and 2 more" in one.message
