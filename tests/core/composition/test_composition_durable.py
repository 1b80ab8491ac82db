"""The ``checkpoints:`` and ``approvals:`` keys of a composition."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest
from seamkit._durability.checkpointer import Checkpointer
from seamkit._plugins.registry import Registry
from seamkit.composition import build_agent, build_store, load_composition, loads_composition
from seamkit.errors import ConfigError
from seamkit.testing._memory_store import MemoryStore

BASE = """\
    seamkit: 1
    agent:
      model:
        use: scripted
        turns:
          - tool_calls: [{name: calculator, arguments: {expression: "2 + 3"}}]
          - text: "5"
      tools: [calculator]
"""


def comp(extra: str, registry: Registry, env: dict[str, str] | None = None):  # type: ignore[no-untyped-def]
    return loads_composition(textwrap.dedent(BASE) + extra, registry=registry, env=env)


async def test_checkpoints_and_approvals_build_a_durable_agent_that_suspends(registry: Registry) -> None:
    c = comp("  checkpoints: {use: memory}\n  approvals: {calculator: every_call}\n", registry)
    agent = build_agent(c, registry=registry)
    assert isinstance(agent.checkpointer, Checkpointer)
    assert isinstance(agent.checkpointer.port, MemoryStore)
    assert dict(agent.approvals) == {"calculator": "every_call"}
    result = await agent.run("add")
    assert result.stop_reason == "suspended"
    assert [p.tool for p in result.pending_approvals] == ["calculator"]


def test_without_checkpoints_key_and_no_default_store_installed_there_are_none(registry: Registry) -> None:
    agent = build_agent(comp("", registry), registry=registry)
    assert "sqlite" not in registry.names("store")
    assert agent.checkpointer is None
    assert build_store(comp("", registry), registry=registry) is None


def test_checkpoints_null_turns_them_off(registry: Registry) -> None:
    agent = build_agent(comp("  checkpoints: null\n", registry), registry=registry)
    assert agent.checkpointer is None


def test_approval_problems_are_located(tmp_path: Path, registry: Registry) -> None:
    p = tmp_path / "a.yaml"
    p.write_text(textwrap.dedent(BASE) + "  approvals: {calculater: every_call, calculator: always}\n"
                 "  checkpoints: {use: memroy}\n")
    with pytest.raises(ConfigError) as info:
        load_composition(p, registry=registry)
    text = str(info.value)
    assert "a.yaml:9:" in text
    assert "approvals name 'calculater', which is not in agent.tools; did you mean 'calculator'?" in text
    assert "agent.approvals.calculator" in text and "every_call" in text
    assert "agent.checkpoints" in text and "memory" in text


def test_approvals_need_checkpoints(registry: Registry) -> None:
    with pytest.raises(ConfigError, match="approvals need checkpoints"):
        comp("  checkpoints: null\n  approvals: {calculator: once_per_run}\n", registry)


def test_secret_named_component_parameters_hold_the_secrets_the_checkpointer_refuses(registry: Registry) -> None:
    text = (
        "seamkit: 1\nagent:\n  model:\n    use: scripted\n    turns: ['${REPLY}']\n"
        "  tools: [calculator, {use: read_file, root: '${DATA_DIR}'}]\n"
        "  prompt: 'You help the ${TEAM} team'\n  checkpoints: {use: memory}\n"
    )
    env = {"REPLY": "the reply", "TEAM": "accounting", "DATA_DIR": "/tmp"}
    c = loads_composition(text, registry=registry, env=env)
    agent = build_agent(c, registry=registry)
    # regression: a folder name or a reply from the environment made every snapshot 'secret'
    assert agent.checkpointer.secrets == ()
    from seamkit.composition._build import _component_secrets

    secret = loads_composition(
        "seamkit: 1\nagent:\n  model: {use: scripted, turns: [x], model: '${TOKEN_NAME}'}\n"
        "  middlewares: [{use: tag, label: '${API_TOKEN}'}]\n",
        registry=registry, env={"TOKEN_NAME": "plain-model", "API_TOKEN": "sk-abcdef123456"},
    )
    # 'label' is no secret name and 'model' neither: only names and SecretStr fields decide
    assert _component_secrets(secret) == frozenset()
    keyed = loads_composition(
        "seamkit: 1\nagent:\n  model: {use: secretive, api_key: '${API_KEY}', base_url: '${BASE}'}\n",
        registry=registry, env={"API_KEY": "sk-abcdef123456", "BASE": "http://127.0.0.1:9"},
    )
    assert _component_secrets(keyed) == frozenset({"sk-abcdef123456"})


async def test_an_environment_value_in_the_prompt_does_not_stop_checkpoints(registry: Registry) -> None:
    # regression: any ${ENV} value (a team name in the prompt) made every snapshot 'secret'
    extra = "  checkpoints: {use: memory}\n  prompt: 'You help the ${TEAM} team'\n"
    c = comp(extra, registry, env={"TEAM": "accounting"})
    agent = build_agent(c, registry=registry)
    result = await agent.run("add")
    assert result.warnings == ()
    snap = await agent.checkpointer.latest(result.run_id)
    assert snap is not None and snap.status == "done" and "accounting" in snap.transcript[0].text
