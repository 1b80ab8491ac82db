"""Capabilities from an installed distribution, as the CLI shows them: ``seamkit plugins`` lists
them and ``seamkit validate`` runs the capability compiler (exit 2, each problem at its line)."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest
from cli_testlib import CLI, make_dist

CAPS_PLUGIN = '''
from seamkit.hookspecs import hookimpl


@hookimpl
def seamkit_register_capabilities(register):
    register("declared", "cli_test_caps_impl:make", config="cli_test_caps_impl:DeclaredConfig",
             description="A capability declared in YAML")
'''

CAPS_IMPL = '''
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field
from seamkit.capabilities import Capability, Completed


class DeclaredConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")
    id: str
    requires: list[str] = Field(default_factory=list)
    provides: list[str] = Field(default_factory=list)
    effect: Literal["none", "read", "write"] = "read"
    confirmation: Literal["none", "required", "capability"] = "none"


async def execute(ctx, data):
    return Completed()


def make(cfg):
    return Capability(id=cfg.id, version=1, description=cfg.id, execute=execute,
                      input={"type": "object", "properties": {"q": {"type": "string"}}},
                      requires=tuple(cfg.requires), provides=tuple(cfg.provides), effect=cfg.effect,
                      confirmation=cfg.confirmation)
'''

CYCLE = """\
seamkit: 1
agent:
  model: {use: scripted, turns: [hi]}
  capabilities:
    - {use: declared, id: lookup, provides: [order.id@1]}
    - {use: declared, id: pay, requires: [invoice@1], provides: [receipt@1]}
    - {use: declared, id: bill, requires: [receipt@1], provides: [invoice@1]}
"""


@pytest.fixture
def caps_cli(tmp_path: Path) -> CLI:
    root = make_dist(tmp_path / "site-caps", "cli-test-caps", "cli_test_caps", CAPS_PLUGIN,
                     extra={"cli_test_caps_impl": CAPS_IMPL})
    return CLI([root], tmp_path)


def test_plugins_lists_a_capability(caps_cli: CLI) -> None:
    r = caps_cli("plugins", "--json")
    assert r.returncode == 0, r
    rows = [x for x in json.loads(r.stdout) if x["distribution"] == "cli-test-caps"]
    assert [(x["kind"], x["name"], x["status"]) for x in rows] == [("capability", "declared", "ok")]
    r = caps_cli("plugins")
    line = next(x for x in r.stdout.splitlines() if x.startswith("cli-test-caps"))
    assert "capability" in line and "declared" in line


def test_validate_reports_compile_problems_at_their_entry(caps_cli: CLI, write: Callable[[str, str], Path]) -> None:
    path = write("cycle.yaml", CYCLE)
    r = caps_cli("validate", str(path))
    assert r.returncode == 2, r
    assert f"{path}:6:7: agent.capabilities[1]: CAPABILITY_DEPENDENCY_CYCLE: " in r.stderr
    assert "also agent.capabilities[2] (line 7)" in r.stderr
    assert "Traceback" not in r.stderr
    good = write("good.yaml", CYCLE.replace("requires: [invoice@1], ", ""))
    r = caps_cli("validate", str(good))
    assert r.returncode == 0, r
    assert r.stdout.startswith(f"ok: {good}")


def test_validate_reports_an_invalid_agent_version(caps_cli: CLI, write: Callable[[str, str], Path]) -> None:
    path = write("v0.yaml", "seamkit: 1\nagent:\n  model: {use: scripted, turns: [hi]}\n  version: 0\n")
    r = caps_cli("validate", str(path))
    assert r.returncode == 2, r
    assert f"{path}:4:12: agent.version: INVALID_AGENT_VERSION: " in r.stderr
