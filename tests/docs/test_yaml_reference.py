"""docs/yaml-reference.md and the YAML of docs/getting-started.md match the composition code.

The file blocks are written to a temporary directory, the ``console`` commands run there with the
shared environment's ``seamkit`` (their shown output must appear in what they print), and the
rules the reference states are checked through ``loads_composition``.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml
from docs_testlib import Command, console_commands, fenced_blocks, file_blocks, missing_lines
from seamkit._hookspecs import hookimpl
from seamkit.composition import composition_json_schema, load_composition, loads_composition
from seamkit.errors import ConfigError

ROOT = Path(__file__).resolve().parents[2]
REF = ROOT / "docs" / "yaml-reference.md"
START = ROOT / "docs" / "getting-started.md"
BLOCKS = fenced_blocks(REF)
FILES = file_blocks(REF, BLOCKS)
COMMANDS = console_commands(REF, BLOCKS)
START_FILES = file_blocks(START, fenced_blocks(START))
@pytest.fixture
def workdir(tmp_path: Path) -> Path:
    for rel, body in FILES.items():
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(body, encoding="utf-8")
    (tmp_path / "data").mkdir()
    return tmp_path


def _shell(line: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("SEAMKIT_")}
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    return subprocess.run(["bash", "-c", line], cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=120, check=False)


@pytest.mark.parametrize("command", COMMANDS, ids=lambda c: c.line)
def test_console_command_prints_what_the_reference_shows(workdir: Path, command: Command) -> None:
    done = _shell(command.line, workdir)
    fails = any(line.startswith("seamkit: error") for line in command.expected)
    assert done.returncode == (2 if fails else 0), done.stdout + done.stderr
    missing = missing_lines(command.expected, done.stdout + "\n" + done.stderr)
    assert not missing, f"{missing} not in:\n{done.stdout}{done.stderr}"
    if fails:
        shown = [ln for ln in command.expected if re.match(r"^\S+\.yaml:\d+:\d+: ", ln)]
        actual = [ln for ln in done.stderr.splitlines() if re.match(r"^\S+\.yaml:\d+:\d+: ", ln)]
        assert len(shown) == len(actual), done.stderr


def test_the_example_validates_and_builds(workdir: Path) -> None:
    comp = load_composition(workdir / "analyst.yaml", env={})
    agent = comp.agent
    assert agent.name == "analyst" and agent.model.use == "llamacpp"
    assert [t.use for t in agent.tools] == ["calculator", "read_file"]
    assert agent.prompt is not None and agent.prompt.version == "1.0.0"
    assert agent.settings.seed == 7 and agent.max_steps == 6


def test_the_quickstart_of_getting_started_validates() -> None:
    text = START_FILES["quickstart.yaml"]
    comp = loads_composition(text, file="quickstart.yaml", env={})
    assert comp.agent.model.use == "llamacpp"
    assert [t.use for t in comp.agent.tools] == ["calculator"]


def test_the_slot_forms_shown_load(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)  # the snippet's read_file root (./data) must exist
    (tmp_path / "data").mkdir()
    snippet = next(b.body for b in BLOCKS if b.info == "yaml" and b.body.startswith("tools:"))
    tools = yaml.safe_load(snippet)["tools"]
    data = {"seamkit": 1, "agent": {"model": {"use": "scripted", "turns": ["hi"]}, "tools": tools}}
    comp = loads_composition(yaml.safe_dump(data), env={})
    assert [(t.use, t.distribution) for t in comp.agent.tools] == [
        ("calculator", None), ("read_file", None), ("clock", "seamkit-tools-basic"),
    ]


def _compose(agent_lines: str, env: dict[str, str] | None = None) -> object:
    text = "seamkit: 1\nagent:\n  model: {use: scripted, turns: [hi]}\n" + agent_lines
    return loads_composition(text, file="t.yaml", env=env or {})


def test_environment_references_defaults_and_masking() -> None:
    comp = _compose('  prompt: "${GREETING:-Hello} $${LITERAL}"\n')
    assert comp.agent.prompt.template == "Hello ${LITERAL}"  # type: ignore[attr-defined]
    comp = _compose('  prompt: "${GREETING:-Hello}"\n', {"GREETING": ""})
    assert comp.agent.prompt.template == "Hello"  # type: ignore[attr-defined]
    secret = "s3cr3t-value"
    text = "seamkit: 1\nagent:\n  model:\n    use: scripted\n    turns: [hi]\n    model: ${KEY}\n"
    comp = loads_composition(text, env={"KEY": secret})
    assert secret not in repr(comp) and "***" in repr(comp.agent.model)
    with pytest.raises(ConfigError) as err:
        _compose("  tool_choice: ${KEY}\n", {"KEY": secret})
    assert secret not in str(err.value)
    assert "tool_choice (from the environment) names no configured tool" in str(err.value)
    with pytest.raises(ConfigError, match="environment variable 'UNSET_VAR' is not set"):
        _compose('  prompt: "${UNSET_VAR}"\n')
    with pytest.raises(ConfigError, match="YAML syntax"):
        _compose('  prompt: {template: ${KEY}}\n', {"KEY": "x"})


def test_yaml_11_values_never_change_type() -> None:
    comp = _compose("  prompt: {template: t, version: 3.10}\n")
    assert comp.agent.prompt.version == "3.10"  # type: ignore[attr-defined]
    comp = _compose("  prompt: {template: t, version: 1}\n")
    assert comp.agent.prompt.version == "1"  # type: ignore[attr-defined]
    for word in ("NO", "on", "Yes", "off", "y"):
        with pytest.raises(ConfigError, match=r"is a boolean in YAML 1\.1"):
            _compose(f"  name: {word}\n")
    with pytest.raises(ConfigError, match=r"agent\.model\.n_ctx"):
        loads_composition("seamkit: 1\nagent:\n  model: {use: llamacpp, n_ctx: 1e3}\n", env={})
    for bad, what in (("  name: a\n  name: b\n", "duplicate key"), ("  name: !!python/object:os.system x\n", "tag"),
                      ("  <<: {name: x}\n", "merge keys")):
        with pytest.raises(ConfigError, match=what):
            _compose(bad)


def test_schema_command_writes_a_schema_the_examples_satisfy(workdir: Path) -> None:
    done = _shell("seamkit schema -o seamkit.schema.json", workdir)
    assert done.returncode == 0, done.stderr
    schema = json.loads((workdir / "seamkit.schema.json").read_text(encoding="utf-8"))
    assert schema == json.loads(json.dumps(composition_json_schema()))
    assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    validator = jsonschema.Draft202012Validator(schema)
    modeline = next(b.body for b in BLOCKS if b.info == "yaml" and "yaml-language-server" in b.body)
    assert modeline.startswith("# yaml-language-server: $schema=./seamkit.schema.json\n")
    for text in (FILES["analyst.yaml"], modeline, START_FILES["quickstart.yaml"]):
        errors = list(validator.iter_errors(yaml.safe_load(text)))
        assert not errors, [e.message for e in errors]
    assert list(validator.iter_errors(yaml.safe_load(FILES["bad.yaml"].replace("name: NO", "name: x"))))


def test_getting_started_validate_prints_what_it_shows(tmp_path: Path) -> None:
    (tmp_path / "quickstart.yaml").write_text(START_FILES["quickstart.yaml"], encoding="utf-8")
    commands = [c for c in console_commands(START, fenced_blocks(START)) if c.line.startswith("seamkit validate")]
    assert [c.line for c in commands] == ["seamkit validate quickstart.yaml"]
    done = _shell(commands[0].line, tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == list(commands[0].expected)


class _DeskCapabilities:
    """The capabilities docs/yaml-reference.md's desk example uses (``pay`` and ``bill`` need each
    other's facts)."""

    @staticmethod
    def _make(cid: str, requires: tuple[str, ...], provides: tuple[str, ...]) -> object:
        from seamkit.capabilities import Capability, Completed

        async def execute(ctx: object, data: object) -> Completed:
            return Completed()

        return Capability(id=cid, version=1, description=cid, execute=execute, input={"type": "object"},
                          requires=requires, provides=provides)

    @hookimpl
    def seamkit_register_capabilities(self, register: Any) -> None:
        register("lookup_order", lambda: self._make("lookup_order", (), ("order.id@1",)))
        register("pay", lambda: self._make("pay", ("invoice@1",), ("receipt@1",)))
        register("bill", lambda: self._make("bill", ("receipt@1",), ("invoice@1",)))


def test_the_capabilities_example_reports_what_the_reference_shows(register_plugin: Any) -> None:
    from seamkit.composition._build import capability_issues

    assert register_plugin(_DeskCapabilities(), "docs-desk").status == "ok"
    text = next(b.body for b in BLOCKS if b.info == "yaml" and "capabilities:" in b.body)
    shown = next(b.body for b in BLOCKS if b.info == "text" and b.body.startswith("$ seamkit validate desk.yaml"))
    comp = loads_composition(text, file="desk.yaml", env={})
    issues = capability_issues(comp)
    assert [str(i) for i in issues] == [ln for ln in shown.splitlines() if ln.startswith("desk.yaml:")]
    assert f"ConfigError: {len(issues)} problem in configuration:" in shown
