"""With ``--json``, stdout holds JSON whatever happens: a usage or configuration error (exit 2)
of ``run``, ``resume``, ``ask`` and ``plugins show`` is one ``{"error": {type, message},
"exit_code": 2}`` object there (besides the message on stderr), written once; a run refused
before it was stored has no ``run_id`` in its ``run_failed`` line."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest
from cli_testlib import CLI

SCRIPTED = """
seamkit: 1
agent:
  name: demo
  model: {use: scripted, turns: ["ok"]}
"""


def _one_error(stdout: str, kind: str) -> dict[str, object]:
    lines = stdout.splitlines()
    assert len(lines) == 1, stdout
    obj = json.loads(lines[0])
    assert obj["exit_code"] == 2 and obj["error"]["type"] == kind, obj
    return obj


@pytest.mark.parametrize(("args", "kind", "says"), [
    (["run", "demo.yaml", "hi", "--json", "-o", "agent.max_steps=many"], "ConfigError", "-o agent.max_steps"),
    (["run", "demo.yaml", "hi", "--json", "--bogus"], "UsageError", "unrecognized arguments: --bogus"),
    (["run", "missing.yaml", "hi", "--json"], "UsageError", "missing.yaml"),
    (["resume", "run_nope", "--json"], "UsageError", "no runs here"),
    (["ask", "hi", "-m", "scripted", "--json", "--temperature", "hot"], "UsageError", "--temperature"),
    (["ask", "hi", "-m", "nope:x", "--json"], "ComponentNotFound", "no provider named 'nope'"),
    (["plugins", "show", "--json"], "UsageError", "the following arguments are required: NAME"),
    (["plugins", "show", "nope", "--json"], "UsageError", "nope"),
])
def test_a_usage_or_config_error_is_one_json_object_on_stdout(
    cli: CLI, write: Callable[[str, str], Path], args: list[str], kind: str, says: str
) -> None:
    write("demo.yaml", SCRIPTED)
    r = cli(*args)
    assert r.returncode == 2, r
    obj = _one_error(r.stdout, kind)
    assert says in str(obj["error"]["message"]), obj  # type: ignore[index]
    assert says in r.stderr  # still said on stderr


def test_without_json_stdout_stays_empty(cli: CLI, write: Callable[[str, str], Path]) -> None:
    write("demo.yaml", SCRIPTED)
    r = cli("run", "demo.yaml", "hi", "-o", "agent.max_steps=many")
    assert r.returncode == 2 and r.stdout == "", r


def test_a_run_refused_before_it_is_stored_names_no_run(cli: CLI, write: Callable[[str, str], Path]) -> None:
    write("big.yaml", SCRIPTED + "  checkpoints: {use: sqlite, path: big.db}\n")
    r = cli("run", "big.yaml", "-", "--json", input="x" * 30_000_000)
    assert r.returncode == 2, r.stderr
    lines = [json.loads(line) for line in r.stdout.splitlines()]
    assert [o.get("kind") for o in lines] == ["run_failed"], lines  # one object: no second error object
    assert lines[0]["run_id"] is None and lines[0]["error"]["type"] == "TaskTooLarge"


def test_a_huge_config_error_lists_its_first_problems(cli: CLI, write: Callable[[str, str], Path]) -> None:
    write("demo.yaml", SCRIPTED)
    r = cli("run", "demo.yaml", "hi", "--json", "-o", "model.turns=[" + ",".join(["[1]"] * 300) + "]")
    assert r.returncode == 2, r
    message = str(_one_error(r.stdout, "ConfigError")["error"]["message"])  # type: ignore[index]
    lines = message.splitlines()
    assert lines[0] == "600 problems in configuration:" and lines[-1] == "... and 550 more problems (fix these first)"
    assert len(lines) == 52
