"""The plugin through the registry, and the tools inside an agent run."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from seamkit._agent.agent import Agent
from seamkit._plugins.registry import load_registry
from seamkit.errors import ConfigError
from seamkit.testing import ScriptedModel, make_test_ctx
from seamkit.values import ToolResult

DIST = "seamkit-tools-basic"
NAMES = ("calculator", "clock", "read_file", "write_file")


def _results(transcript) -> list[ToolResult]:  # type: ignore[no-untyped-def]
    return [r for m in transcript for r in m.tool_results]


def test_registry_lists_the_four_tools() -> None:
    reg = load_registry()
    report = next(r for r in reg.reports if r.distribution == DIST)
    assert report.status == "ok", report.error
    assert report.plugin == "tools-basic"
    assert sorted(n for k, n in report.components if k == "tool") == sorted(NAMES)
    for name in NAMES:
        spec = reg.resolve("tool", name, distribution=DIST)
        assert spec.distribution == DIST and spec.kind == "tool"
        assert isinstance(spec.factory, str) and isinstance(spec.config, str)  # lazy registration
        assert spec.description
        assert spec.config_model().model_config["extra"] == "forbid"


async def test_specs_build_working_tools(tmp_path: Path) -> None:
    reg = load_registry()
    ctx = make_test_ctx()
    calc = reg.resolve("tool", "calculator", distribution=DIST).build({"max_length": 50})
    assert await calc.invoke(calc.validate({"expression": "6 * 7"}), ctx) == 42
    clock = reg.resolve("tool", "clock", distribution=DIST).build({})
    assert await clock.invoke(clock.validate({}), ctx) == "2026-01-01T00:00:00+00:00"  # FakeClock start
    write = reg.resolve("tool", "write_file", distribution=DIST).build({"root": str(tmp_path)})
    assert write.schema.side_effecting is True
    assert await write.invoke(write.validate({"path": "n.txt", "content": "hi"}), ctx) == 2
    read = reg.resolve("tool", "read_file", distribution=DIST).build({"root": str(tmp_path)})
    assert await read.invoke(read.validate({"path": "n.txt"}), ctx) == "hi"


def test_spec_build_reports_bad_config(tmp_path: Path) -> None:
    reg = load_registry()
    with pytest.raises(ConfigError, match="root"):
        reg.resolve("tool", "read_file", distribution=DIST).build({})
    with pytest.raises(ConfigError, match=r"max_lenght|Extra inputs"):
        reg.resolve("tool", "calculator", distribution=DIST).build({"max_lenght": 3})
    with pytest.raises(ConfigError, match="does not exist"):
        reg.resolve("tool", "read_file", distribution=DIST).build({"root": str(tmp_path / "absent")})


def test_plugin_import_is_cheap() -> None:
    code = (
        "import sys, json; import seamkit_tools_basic.plugin; "
        "print(json.dumps(sorted(m for m in sys.modules if m.startswith(('seamkit', 'pydantic', 'zoneinfo')))))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    loaded = json.loads(out)
    assert "seamkit_tools_basic.plugin" in loaded
    for heavy in ("pydantic", "seamkit_tools_basic.calculator", "seamkit_tools_basic.files",
                  "seamkit_tools_basic.clock", "seamkit_tools_basic.config", "seamkit._tools.decorator"):
        assert heavy not in loaded, f"importing the plugin module loaded {heavy}"


async def test_agent_gets_the_calculator_result_in_its_transcript() -> None:
    calc = load_registry().resolve("tool", "calculator", distribution=DIST).build({})
    model = ScriptedModel([
        {"tool_calls": [{"name": "calculator", "arguments": {"expression": "(2 + 3) * 4 / 8"}}]},
        "The answer is 2.5.",
    ])
    result = await Agent(model=model, tools=[calc]).run("What is (2+3)*4/8?")
    assert result.output == "The answer is 2.5."
    (tr,) = _results(result.transcript)
    assert (tr.name, tr.content, tr.is_error) == ("calculator", "2.5", False)
    # the model saw the tool's schema and, on its second turn, the result
    assert [t.name for t in model.requests[0].tools] == ["calculator"]
    assert tr in _results(model.requests[1].messages)


async def test_bad_calculator_calls_become_error_results_and_the_loop_continues() -> None:
    calc = load_registry().resolve("tool", "calculator", distribution=DIST).build({})
    model = ScriptedModel([
        {"tool_calls": [
            {"name": "calculator", "arguments": {"expr": "1 + 1"}},
            {"name": "calculator", "arguments": {"expression": "1 / 0"}},
        ]},
        {"tool_calls": [{"name": "calculator", "arguments": {"expression": "__import__('os')"}}]},
        {"tool_calls": [{"name": "calculator", "arguments": {"expression": "1 + 1"}}]},
        "2",
    ])
    result = await Agent(model=model, tools=[calc]).run("1+1?")
    assert result.stop_reason == "completed" and result.output == "2"
    bad_args, div0, forbidden, good = _results(result.transcript)
    assert bad_args.is_error and "invalid arguments" in bad_args.content and "expression" in bad_args.content
    assert div0.is_error and "division by zero" in div0.content
    assert forbidden.is_error and "unknown function '__import__'" in forbidden.content
    assert not good.is_error and good.content == "2"
    assert model.calls == 4


async def test_yaml_composition_uses_the_tools_with_roots_relative_to_the_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from seamkit.composition import build_agent, load_composition

    project = tmp_path / "project"
    (project / "data").mkdir(parents=True)
    (project / "data" / "in.txt").write_text("21")
    (project / "agent.yaml").write_text(
        """\
seamkit: 1
agent:
  model:
    use: scripted
    turns:
      - tool_calls: [{name: read_file, arguments: {path: in.txt}}]
      - tool_calls: [{name: calculator, arguments: {expression: "21 * 2"}}, {name: clock, arguments: {}}]
      - tool_calls: [{name: write_file, arguments: {path: result/answer.txt, content: "42"}}]
      - text: done
  tools: [calculator, {use: clock, default_timezone: Asia/Tokyo}, {use: read_file, root: data},
          {use: write_file, root: out, create_dirs: true}]
"""
    )
    monkeypatch.chdir(tmp_path)  # not the YAML's directory: roots still resolve next to the file
    agent = build_agent(load_composition(project / "agent.yaml"))
    try:
        result = await agent.run("go")
    finally:
        await agent.checkpointer.aclose()  # the embedded default store, in ./.seamkit
    assert result.output == "done"
    # write_file is side-effecting: it ran through the effect ledger of the default store
    assert (tmp_path / ".seamkit" / "seamkit.db").is_file()
    contents = [(r.name, r.content, r.is_error) for r in _results(result.transcript)]
    assert contents[0] == ("read_file", "21", False)
    assert contents[1] == ("calculator", "42", False)
    assert contents[2][0] == "clock" and contents[2][2] is False and contents[2][1].endswith("+09:00")
    assert contents[3] == ("write_file", "2", False)
    assert (project / "out" / "result" / "answer.txt").read_text() == "42"


def test_yaml_composition_reports_bad_tool_params(tmp_path: Path) -> None:
    from seamkit.composition import load_composition

    (tmp_path / "bad.yaml").write_text(
        "seamkit: 1\nagent:\n  model: {use: scripted, turns: [hi]}\n"
        "  tools: [{use: calculator, max_length: 0}, {use: clock, default_timezone: Moon/Base}, {use: read_file}]\n"
    )
    with pytest.raises(ConfigError) as info:
        load_composition(tmp_path / "bad.yaml")
    text = str(info.value)
    assert "max_length" in text and "Moon/Base" in text and "root" in text
