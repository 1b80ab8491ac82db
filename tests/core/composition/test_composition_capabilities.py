"""``agent.capabilities`` and ``agent.version`` in YAML: capabilities registered through the
``seamkit_register_capabilities`` hook are built, compiled with ``compile_agent`` and kept on the
Agent; every compile problem is a located issue ``CODE: message``."""

from __future__ import annotations

import textwrap
from pathlib import Path
from typing import Any, Literal

import pytest
from pydantic import BaseModel, ConfigDict, Field
from seamkit._hookspecs import hookimpl
from seamkit._plugins.registry import Registry
from seamkit.capabilities import Capability, CompiledAgent, Completed
from seamkit.composition import build_agent, load_composition
from seamkit.composition._build import capability_issues
from seamkit.errors import ConfigError, ConfigIssue, PluginError


class DeclaredConfig(BaseModel):
    """A capability declared entirely in YAML (so a test can write any capability graph)."""

    model_config = ConfigDict(extra="forbid")
    id: str
    version: int = 1
    requires: list[str] = Field(default_factory=list)
    provides: list[str] = Field(default_factory=list)
    effect: Literal["none", "read", "write"] = "read"
    confirmation: Literal["none", "required", "capability"] = "none"


async def _execute(ctx: Any, data: Any) -> Completed:
    return Completed()


def make_declared(cfg: DeclaredConfig) -> Capability:
    return Capability(
        id=cfg.id, version=cfg.version, description=f"{cfg.id} (test capability)", execute=_execute,
        input={"type": "object", "properties": {"q": {"type": "string"}}},
        requires=tuple(cfg.requires), provides=tuple(cfg.provides), effect=cfg.effect,
        confirmation=cfg.confirmation,
    )


def make_not_a_capability() -> dict[str, str]:
    return {"id": "looks-like-one"}


class TestCapabilities:
    @hookimpl
    def seamkit_register_capabilities(self, register: Any) -> None:
        register("declared", make_declared, config=DeclaredConfig, description="A capability declared in YAML")
        register("not_a_capability", make_not_a_capability, description="Its factory returns a dict")


@pytest.fixture
def caps(registry: Registry) -> Registry:
    report = registry.register_plugin(TestCapabilities(), "test-caps", distribution="test-caps", version="0.1")
    assert report.status == "ok" and ("capability", "declared") in report.components
    return registry


def _load(tmp_path: Path, registry: Registry, agent_lines: str) -> Any:
    path = tmp_path / "caps.yaml"
    path.write_text("seamkit: 1\nagent:\n  model: {use: scripted, turns: [hi]}\n"
                    + textwrap.indent(textwrap.dedent(agent_lines), "  "), encoding="utf-8")
    return load_composition(path, registry=registry, env={})


def _issues(tmp_path: Path, registry: Registry, agent_lines: str) -> tuple[ConfigIssue, ...]:
    comp = _load(tmp_path, registry, agent_lines)
    with pytest.raises(ConfigError) as info:
        build_agent(comp, registry=registry)
    assert [str(i) for i in capability_issues(comp, registry=registry)] == [str(i) for i in info.value.issues]
    return info.value.issues


DESK = """\
version: 3
capabilities:
  - {use: declared, id: submit, effect: write, confirmation: required, requires: [request.selected@1]}
  - {use: declared, id: select, requires: [request.candidates@1], provides: [request.selected@1]}
  - {use: declared, id: search, provides: [request.candidates@1]}
"""


def test_capabilities_compile_and_the_agent_keeps_them_in_topological_order(tmp_path: Path, caps: Registry) -> None:
    comp = _load(tmp_path, caps, DESK)
    assert [c.use for c in comp.agent.capabilities] == ["declared"] * 3 and comp.agent.version == 3
    agent = build_agent(comp, registry=caps)
    assert isinstance(agent.capabilities, CompiledAgent)
    assert agent.capabilities.order == ("search", "select", "submit")
    assert agent.capabilities.version == 3
    assert capability_issues(comp, registry=caps) == []


def test_no_capabilities_means_none_on_the_agent(tmp_path: Path, caps: Registry) -> None:
    agent = build_agent(_load(tmp_path, caps, "name: plain\n"), registry=caps)
    assert agent.capabilities is None


def test_each_compile_problem_is_located_at_its_entry_with_the_code_first(tmp_path: Path, caps: Registry) -> None:
    issues = _issues(tmp_path, caps, """\
        capabilities:
          - {use: declared, id: lookup, provides: [order.id@1]}
          - {use: declared, id: refund, effect: write, confirmation: none}
          - {use: declared, id: ship, requires: [address@1]}
          - {use: declared, id: pay, requires: [invoice@1], provides: [receipt@1]}
          - {use: declared, id: bill, requires: [receipt@1], provides: [invoice@1]}
        """)
    by_code = {i.message.split(":")[0]: i for i in issues}
    assert set(by_code) == {"WRITE_CONFIRMATION_REQUIRED", "MISSING_FACT_PROVIDER", "CAPABILITY_DEPENDENCY_CYCLE"}
    assert len(issues) == 3
    for code, index, line in (("WRITE_CONFIRMATION_REQUIRED", 1, 6), ("MISSING_FACT_PROVIDER", 2, 7),
                              ("CAPABILITY_DEPENDENCY_CYCLE", 3, 8)):
        issue = by_code[code]
        assert (issue.file, issue.path, issue.line, issue.column) == (
            str(tmp_path / "caps.yaml"), f"agent.capabilities[{index}]", line, 7), issue
        assert issue.message.startswith(f"{code}: ")
    cycle = by_code["CAPABILITY_DEPENDENCY_CYCLE"].message
    assert "bill@1" in cycle and "pay@1" in cycle and "also agent.capabilities[4] (line 9)" in cycle
    assert "address@1" in by_code["MISSING_FACT_PROVIDER"].message


def test_a_problem_naming_two_entries_names_the_second_in_the_message(tmp_path: Path, caps: Registry) -> None:
    issues = _issues(tmp_path, caps, """\
        capabilities:
          - {use: declared, id: first, provides: [order.id@1]}
          - {use: declared, id: second, provides: [order.id@1]}
        """)
    assert [(i.path, i.line) for i in issues] == [("agent.capabilities[0]", 5)]
    assert issues[0].message.startswith("AMBIGUOUS_FACT_PROVIDER: ")
    assert "also agent.capabilities[1] (line 6)" in issues[0].message


def test_agent_version_0_is_invalid_agent_version_at_agent_version(tmp_path: Path, caps: Registry) -> None:
    for lines in ("version: 0\n", "version: 0\n" + DESK.split("\n", 1)[1]):
        issues = _issues(tmp_path, caps, lines)
        assert [(i.path, i.line, i.column) for i in issues] == [("agent.version", 4, 12)]
        assert issues[0].message.startswith("INVALID_AGENT_VERSION: ")


def test_agent_version_must_be_an_integer(tmp_path: Path, caps: Registry) -> None:
    for bad in ('"2"', "true", "1.5"):
        with pytest.raises(ConfigError) as info:
            _load(tmp_path, caps, f"version: {bad}\n")
        assert [i.path for i in info.value.issues] == ["agent.version"]


def test_a_factory_returning_no_capability_is_a_located_error(tmp_path: Path, caps: Registry) -> None:
    issues = _issues(tmp_path, caps, """\
        capabilities:
          - {use: declared, id: search}
          - not_a_capability
        """)
    assert [(i.path, i.line, i.column) for i in issues] == [("agent.capabilities[1]", 6, 7)]
    assert "Capability" in issues[0].message and "dict" in issues[0].message, issues[0].message
    spec = caps.resolve("capability", "not_a_capability")
    with pytest.raises(PluginError, match="Capability"):
        spec.build()


def test_what_a_capability_agent_cannot_have_is_a_located_issue_for_validate_and_run(
        tmp_path: Path, caps: Registry) -> None:
    issues = _issues(tmp_path, caps, """\
        tools: [calculator]
        output: {json_schema: {type: object}}
        capabilities:
          - {use: declared, id: search, provides: [request.candidates@1]}
        """)
    assert [(i.path, i.line) for i in issues] == [("agent.tools", 4), ("agent.output", 5)]
    assert all("an agent with capabilities has no" in i.message for i in issues)
