"""Several agents in one composition file: ``agents:``, agent tools (``tools: [{agent: NAME}]``),
``handoffs:``, their located errors, ``build_agents`` and ``seamkit validate``."""

from __future__ import annotations

import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest
from composition_plugins import make_registry
from seamkit._agent.as_tool import AgentTool
from seamkit._cli.main import main
from seamkit._plugins import registry as registry_module
from seamkit._plugins.registry import Registry
from seamkit.composition import build_agent, build_agents, load_composition
from seamkit.errors import ConfigError


@pytest.fixture
def registry() -> Registry:
    import seamkit_budget.plugin

    reg = make_registry()
    reg.register_plugin(seamkit_budget.plugin, "budget", distribution="seamkit-budget", version="0.1.0")
    return reg


def write(tmp_path: Path, text: str, name: str = "desk.yaml") -> Path:
    p = tmp_path / name
    p.write_text(textwrap.dedent(text))
    return p


DESK = """\
    seamkit: 1
    agent:
      name: triage
      model:
        use: scripted
        turns:
          - tool_calls: [{name: researcher, arguments: {task: "what does plan B cost?"}}]
          - tool_calls: [{name: transfer_to_billing}]
      prompt: You route requests.
      tools:
        - {agent: researcher, description: "Looks facts up in the price list and returns them as text.", max_depth: 2}
      handoffs: [{agent: billing, filter: last_user}]
      middlewares: [{use: budget, max_cost_usd: "1.00"}]
      checkpoints: {use: memory}
    agents:
      researcher:
        model: {use: scripted, turns: ["Plan B costs 10 USD."]}
        middlewares: [{use: budget, max_cost_usd: "1.00"}]
        checkpoints: {use: memory}
      billing:
        model: {use: scripted, turns: ["Your plan B invoice is corrected."]}
        prompt: You handle billing.
        checkpoints: {use: memory}
    """


def issues(tmp_path: Path, text: str, registry: Registry) -> list[str]:
    path = write(tmp_path, text)
    with pytest.raises(ConfigError) as info:
        load_composition(path, registry=registry)
    return [str(i) for i in info.value.issues]


async def test_named_agents_build_and_run_end_to_end(tmp_path: Path, registry: Registry) -> None:
    comp = load_composition(write(tmp_path, DESK), registry=registry)
    agents = build_agents(comp, registry=registry)
    assert list(agents) == ["triage", "researcher", "billing"]
    triage = agents["triage"]
    (tool,) = triage.tools
    assert isinstance(tool, AgentTool) and tool.agent is agents["researcher"]
    assert (tool.schema.name, tool.max_depth) == ("researcher", 2)
    assert tool.schema.description == "Looks facts up in the price list and returns them as text."
    (handoff,) = triage.handoffs
    assert handoff.agent is agents["billing"] and handoff.filter == "last_user"
    # one configuration, one instance: the child's spend counts against the caller's ceiling
    assert triage.middlewares[0] is agents["researcher"].middlewares[0]
    assert triage.checkpointer.port is agents["billing"].checkpointer.port

    result = await triage.run("my plan B invoice is wrong")

    assert result.output == "Your plan B invoice is corrected."
    assert result.answered_by == "billing" and result.handoffs == ("triage", "billing")
    children = await triage.checkpointer.list_runs(parent_run_id=result.run_id)
    assert [c.metadata.get("agent") for c in children] == ["researcher"]


def test_build_agent_builds_the_entry_agent_and_only_the_agents_it_names(tmp_path: Path, registry: Registry) -> None:
    text = DESK.rstrip(" ") + """\
      unused:
        model: {use: failing}
    """
    comp = load_composition(write(tmp_path, text), registry=registry)
    agent = build_agent(comp, registry=registry)
    assert agent.name == "triage"
    with pytest.raises(ConfigError) as info:
        build_agents(comp, registry=registry)
    assert any("agents.unused.model" in str(i) for i in info.value.issues)


def test_an_unknown_agent_is_a_located_error_with_did_you_mean(tmp_path: Path, registry: Registry) -> None:
    text = DESK.replace("agent: researcher,", "agent: researchr,").replace("{agent: billing,", "{agent: biling,")
    found = issues(tmp_path, text, registry)
    assert any(":11:" in i and "agent.tools[0].agent" in i and "no agent 'researchr'" in i
               and "did you mean 'researcher'" in i for i in found), found
    assert any(":12:" in i and "agent.handoffs[0].agent" in i and "did you mean 'billing'" in i for i in found), found


def test_duplicate_agent_names_name_both(tmp_path: Path, registry: Registry) -> None:
    text = DESK.replace("  name: triage", "  name: billing").replace("agent: billing", "agent: researcher")
    text = text.replace("tools:\n        - {agent: researcher, description: \"Looks facts up in the price list "
                        "and returns them as text.\", max_depth: 2}", "tools: []")
    found = issues(tmp_path, text, registry)
    assert any("agents.billing" in i and "duplicate agent name 'billing'" in i and "agent.name (line 3)" in i
               for i in found), found


def test_the_entry_agents_default_name_counts_too(tmp_path: Path, registry: Registry) -> None:
    text = """\
        seamkit: 1
        agent: {model: {use: scripted, turns: ["x"]}}
        agents:
          desk: {model: {use: scripted, turns: ["y"]}}
        """
    found = issues(tmp_path, text, registry)
    assert any("agents.desk" in i and "the file name 'desk'" in i for i in found), found


def test_a_name_under_agents_must_be_its_key(tmp_path: Path, registry: Registry) -> None:
    text = DESK.replace("  billing:\n        model:", "  billing:\n        name: invoices\n        model:")
    found = issues(tmp_path, text, registry)
    assert any("agents.billing.name" in i and "its key 'billing'" in i for i in found), found


def test_cycles_between_agents_are_reported_at_validation(tmp_path: Path, registry: Registry) -> None:
    text = DESK.replace("        prompt: You handle billing.\n",
                        "        prompt: You handle billing.\n        handoffs: [triage]\n")
    found = issues(tmp_path, text, registry)
    assert any("agents.billing.handoffs[0]" in i and "triage -> billing -> triage" in i for i in found), found
    self_ref = DESK.replace("      researcher:\n        model:",
                            "      researcher:\n        tools: [{agent: researcher}]\n        model:")
    found = issues(tmp_path, self_ref, registry)
    assert any("agents.researcher.tools[0].agent" in i and "researcher -> researcher" in i for i in found), found


def test_agent_tool_and_handoff_entries_are_checked_like_the_rest(tmp_path: Path, registry: Registry) -> None:
    text = (DESK.replace("max_depth: 2}", "max_dept: 2}").replace("filter: last_user", "filter: lastuser"))
    found = issues(tmp_path, text, registry)
    assert any("agent.tools[0].max_dept" in i and "did you mean 'max_depth'" in i
               and "(allowed: agent, name, description, max_depth, max_steps, input, middlewares, queue)" in i
               for i in found), found
    assert any("agent.handoffs[0].filter" in i and "last_user" in i for i in found), found
    zero = DESK.replace("max_depth: 2}", "max_depth: 0}")
    assert any("agent.tools[0].max_depth" in i for i in issues(tmp_path, zero, registry))


def test_problems_inside_named_agents_are_located_under_agents(tmp_path: Path, registry: Registry) -> None:
    text = DESK.replace("        prompt: You handle billing.\n",
                        "        prompt: You handle billing.\n        tools: [calculater]\n"
                        "        tool_choice: refund\n")
    found = issues(tmp_path, text, registry)
    assert any("agents.billing.tools[0]" in i and "did you mean 'calculator'" in i for i in found), found
    assert any("agents.billing.tool_choice" in i and "'refund'" in i for i in found), found


def test_tool_names_are_unique_across_components_and_agent_tools(tmp_path: Path, registry: Registry) -> None:
    text = DESK.replace("max_depth: 2}", "max_depth: 2, name: calculator}\n        - calculator")
    found = issues(tmp_path, text, registry)
    assert any("agent.tools[1]" in i and "duplicate tool 'calculator'" in i for i in found), found


CLASH = """\
    seamkit: 1
    agent:
      name: main
      model: {use: scripted, turns: [hi]}
      tools: TOOLS
      handoffs: HANDOFFS
    agents:
      "h 1": {model: {use: scripted, turns: [one]}}
      h_1: {model: {use: scripted, turns: [two]}}
      b: {model: {use: scripted, turns: [bee]}}
      c: {model: {use: scripted, turns: [sea]}}
    """


def clash(tools: str, handoffs: str) -> str:
    return CLASH.replace("TOOLS", tools).replace("HANDOFFS", handoffs)


@pytest.mark.parametrize(("tools", "handoffs", "at", "both"), [
    ('[{agent: "h 1"}, {agent: h_1}]', "[]", "agent.tools[1].agent",
     ("'h_1'", "agent.tools[1] (agent 'h_1')", "agent.tools[0] (agent 'h 1')")),
    ("[]", '["h 1", h_1]', "agent.handoffs[1]",
     ("'transfer_to_h_1'", "agent.handoffs[1] (handoff to 'h_1')", "agent.handoffs[0] (handoff to 'h 1')")),
    ("[{agent: c, name: transfer_to_b}]", "[b]", "agent.handoffs[0]",
     ("'transfer_to_b'", "agent.handoffs[0] (handoff to 'b')", "agent.tools[0] (agent tool 'transfer_to_b')")),
])
def test_tool_names_clash_after_normalisation_at_validation(tmp_path: Path, registry: Registry, tools: str,
                                                            handoffs: str, at: str, both: tuple[str, ...]) -> None:
    # the Agent normalises agent tool and transfer tool names; validation must see the same names
    # (it said ok and the run failed at 'agent:' with "duplicate tool name")
    found = issues(tmp_path, clash(tools, handoffs), registry)
    assert len(found) == 1, found
    assert f" {at}: duplicate tool " in found[0], found
    assert "duplicate tool " + both[0] in found[0] and all(b in found[0] for b in both[1:]), found


def test_normalised_agent_tool_names_can_be_approved_and_chosen(tmp_path: Path, registry: Registry) -> None:
    text = clash('[{agent: "h 1"}]', '["h_1"]').replace(
        "      handoffs:", "      approvals: {h_1: every_call}\n      tool_choice: h_1\n"
                        "      checkpoints: {use: memory}\n      handoffs:")
    main = build_agent(load_composition(write(tmp_path, text), registry=registry), registry=registry)
    assert "h_1" in {t.schema.name for t in main.tools}
    assert dict(main.approvals) == {"h_1": "every_call"}


def test_agent_tool_input_must_be_an_object_schema(tmp_path: Path, registry: Registry) -> None:
    text = DESK.replace("max_depth: 2}", "max_depth: 2, input: {type: string}}")
    found = issues(tmp_path, text, registry)
    assert any("agent.tools[0].input" in i and "type: object" in i for i in found), found


def test_a_handoff_target_with_prompt_variables_is_refused(tmp_path: Path, registry: Registry) -> None:
    text = DESK.replace("prompt: You handle billing.", "prompt: 'You handle billing for {{team}}.'")
    found = issues(tmp_path, text, registry)
    assert any("agent.handoffs[0].agent" in i and "variables (team)" in i for i in found), found


def test_approvals_may_name_agent_tools_and_transfer_tools(tmp_path: Path, registry: Registry) -> None:
    text = DESK.replace("      checkpoints: {use: memory}\n    agents:",
                        "      checkpoints: {use: memory}\n      approvals: {researcher: every_call, "
                        "transfer_to_billing: once_per_run}\n    agents:")
    comp = load_composition(write(tmp_path, text), registry=registry)
    triage = build_agent(comp, registry=registry)
    assert dict(triage.approvals) == {"researcher": "every_call", "transfer_to_billing": "once_per_run"}


@pytest.fixture
def cli_registry(registry: Registry) -> Iterator[None]:
    previous = registry_module._REGISTRY
    registry_module.reset_registry(registry)
    yield
    registry_module.reset_registry(previous)


def test_seamkit_validate_checks_every_agent(tmp_path: Path, cli_registry: None,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    path = write(tmp_path, DESK)
    assert main(["validate", str(path)]) == 0
    out, _ = capsys.readouterr()
    assert "handoffs: billing" in out and "more agents: researcher, billing" in out
    bad = write(tmp_path, DESK.replace("agent: researcher,", "agent: researchr,"), "bad.yaml")
    assert main(["validate", str(bad)]) == 2
    _, err = capsys.readouterr()
    assert f"{bad}:11:" in err and "agent.tools[0].agent" in err and "Traceback" not in err


def test_seamkit_run_json_reports_the_handoff_and_who_answered(tmp_path: Path, cli_registry: None,
                                                               capsys: pytest.CaptureFixture[str]) -> None:
    import json

    path = write(tmp_path, DESK)
    assert main(["run", str(path), "my plan B invoice is wrong", "--json"]) == 0
    out, _ = capsys.readouterr()
    lines = [json.loads(line) for line in out.splitlines() if line.strip()]
    (handoff,) = [e for e in lines if e["kind"] == "handoff"]
    assert (handoff["from"], handoff["to"], handoff["filter"]) == ("triage", "billing", "last_user")
    finished = lines[-1]
    assert finished["kind"] == "run_finished" and finished["answered_by"] == "billing"
    assert finished["handoffs"] == ["triage", "billing"]
    assert finished["output"] == "Your plan B invoice is corrected."
