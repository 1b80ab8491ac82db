"""The plugin through the registry: lazy registration, the three capabilities from YAML compiled onto
the agent, and bad parameters (a custom catalog that is missing or malformed) as located issues."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import seamkit.testing._components as testkit
import seamkit_servicedesk.plugin as servicedesk
from seamkit._plugins.registry import Registry, load_registry
from seamkit._runtime.context import RunContext
from seamkit.capabilities import CompiledAgent, Completed, execute_capability
from seamkit.composition import build_agent, load_composition
from seamkit.errors import ConfigError

DIST = "seamkit-servicedesk"
NAMES = ("search_services", "submit_request", "request_status")


@pytest.fixture
def registry() -> Registry:
    reg = Registry(strict=True)
    reg.register_plugin(testkit, "testkit", distribution="seamkit", version="0.1.0")
    report = reg.register_plugin(servicedesk, "servicedesk", distribution=DIST, version="0.1.0")
    assert report.status == "ok", report.error
    return reg


def write(tmp_path: Path, capabilities: str) -> Path:
    path = tmp_path / "desk.yaml"
    path.write_text("seamkit: 1\nagent:\n  name: desk\n  model: {use: scripted, turns: [hi]}\n  checkpoints: null\n"
                    + textwrap.indent(textwrap.dedent(capabilities), "  "), encoding="utf-8")
    return path


def test_the_installed_plugin_registers_the_three_capabilities_lazily() -> None:
    reg = load_registry()
    report = next(r for r in reg.reports if r.distribution == DIST)
    assert report.status == "ok", report.error
    assert sorted(n for k, n in report.components if k == "capability") == sorted(NAMES)
    for name in NAMES:
        spec = reg.resolve("capability", name, distribution=DIST)
        assert isinstance(spec.factory, str) and isinstance(spec.config, str)  # lazy registration
        assert spec.description
        assert spec.config_model().model_config["extra"] == "forbid"
        assert spec.build().id == name  # the capability id is the registered name


def test_plugin_import_is_cheap() -> None:
    code = ("import sys, json; import seamkit_servicedesk.plugin; "
            "print(json.dumps(sorted(m for m in sys.modules if m.startswith(('seamkit', 'pydantic')))))")
    loaded = json.loads(subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                                       check=True).stdout)
    assert "seamkit_servicedesk.plugin" in loaded
    for heavy in ("pydantic", "seamkit_servicedesk.capabilities", "seamkit_servicedesk.catalog",
                  "seamkit_servicedesk.config", "seamkit.capabilities"):
        assert heavy not in loaded, f"importing the plugin module loaded {heavy}"


async def test_yaml_capabilities_build_onto_the_agent_in_order(tmp_path: Path, registry: Registry) -> None:
    path = write(tmp_path, """\
        capabilities: [{use: request_status}, {use: submit_request}, {use: search_services}]
        """)
    agent = build_agent(load_composition(path, registry=registry, env={}), registry=registry)
    assert isinstance(agent.capabilities, CompiledAgent)
    assert agent.capabilities.order == ("search_services", "submit_request", "request_status")
    result = await execute_capability(agent.capabilities, "search_services", {"query": "vpn"}, ctx=RunContext())
    assert isinstance(result, Completed) and result.output["matches"][0]["id"] == "vpn-access"


async def test_a_custom_catalog_next_to_the_yaml_file(tmp_path: Path, registry: Registry,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "services.json").write_text(json.dumps({"services": [
        {"id": "coffee-machine", "name": "Coffee machine", "team": "Facilities", "keywords": ["coffee", "espresso"],
         "description": "The coffee machine is empty or broken."}]}), encoding="utf-8")
    path = write(tmp_path, """\
        capabilities:
          - {use: search_services, catalog: services.json, max_matches: 1}
          - submit_request
        """)
    monkeypatch.chdir(tmp_path.parent)  # not the YAML's directory: the catalog still resolves next to the file
    agent = build_agent(load_composition(path, registry=registry, env={}), registry=registry)
    assert agent.capabilities is not None
    result = await execute_capability(agent.capabilities, "search_services", {"query": "no espresso"},
                                      ctx=RunContext())
    assert isinstance(result, Completed) and result.output == {
        "matches": [{"id": "coffee-machine", "name": "Coffee machine", "team": "Facilities"}]}
    none = await execute_capability(agent.capabilities, "search_services", {"query": "laptop"}, ctx=RunContext())
    assert none.status == "failed" and none.code == "NO_MATCHING_SERVICE"  # type: ignore[union-attr]


@pytest.mark.parametrize(("catalog", "message"), [
    (None, "cannot read the catalog"),
    ("{not json", "cannot read the catalog"),
    ('{"services": []}', "non-empty 'services'"),
    ('{"services": [{"id": "Bad Id", "name": "n", "description": "d", "team": "t"}]}', "lower-case"),
    ('{"services": [{"id": "a", "name": "n", "description": "d"}]}', "'team'"),
    ('{"services": [{"id": "a", "name": "n", "description": "d", "team": "t"},'
     ' {"id": "a", "name": "m", "description": "e", "team": "t"}]}', "appears twice"),
])
def test_a_bad_catalog_is_a_config_error_when_the_agent_is_built(tmp_path: Path, registry: Registry,
                                                                 catalog: str | None, message: str) -> None:
    if catalog is not None:
        (tmp_path / "services.json").write_text(catalog, encoding="utf-8")
    path = write(tmp_path, """\
        capabilities:
          - {use: search_services, catalog: services.json}
        """)
    with pytest.raises(ConfigError) as info:
        build_agent(load_composition(path, registry=registry, env={}), registry=registry)
    assert message in str(info.value) and "services.json" in str(info.value)


def test_unknown_parameters_are_refused(tmp_path: Path, registry: Registry) -> None:
    path = write(tmp_path, """\
        capabilities:
          - {use: search_services, max_matches: 0}
          - {use: submit_request, port: tickets}
        """)
    with pytest.raises(ConfigError) as info:
        load_composition(path, registry=registry, env={})
    text = str(info.value)
    assert "max_matches" in text and "port" in text
