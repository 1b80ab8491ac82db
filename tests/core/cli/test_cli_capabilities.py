"""Capabilities from an installed distribution, as the CLI shows them: ``seamkit plugins`` lists
them and ``seamkit validate`` runs the capability compiler (exit 2, each problem at its line);
conversations with capabilities through ``seamkit run`` / ``resume`` / ``runs show`` / ``runs
settle`` (scripted model, the embedded SQLite store)."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from cli_testlib import CLI, make_dist

CAPS_PLUGIN = '''
from seamkit._hookspecs import hookimpl


@hookimpl
def seamkit_register_capabilities(register):
    register("declared", "cli_test_caps_impl:make", config="cli_test_caps_impl:DeclaredConfig",
             description="A capability declared in YAML")
    register("writer", "cli_test_caps_impl:make_writer", config="cli_test_caps_impl:WriterConfig",
             description="A write that appends a line to a file, or raises while a flag file exists")
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


class WriterConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")
    id: str
    log: str
    fail: str


def make_writer(cfg):
    from pathlib import Path

    async def execute(ctx, data):
        async def op():
            if Path(cfg.fail).exists():
                raise ConnectionError("the line dropped")
            with open(cfg.log, "a") as f:
                f.write(data["q"] + "\\n")
            return {"lines": len(Path(cfg.log).read_text().splitlines())}

        return Completed(output=await ctx.run_effect("post-" + data["q"], op))

    return Capability(id=cfg.id, version=1, description="post a line", execute=execute,
                      input={"type": "object", "properties": {"q": {"type": "string"}}, "required": ["q"]},
                      effect="write", confirmation="capability")


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
    assert [(x["kind"], x["name"], x["status"]) for x in rows] == [("capability", "declared", "ok"),
                                                                    ("capability", "writer", "ok")]
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


DESK = """\
seamkit: 1
agent:
  model:
    use: scripted
    follow_transcript: true
    turns:
      - '{"intentions": [{"capability": "search_services", "input": {"query": "printer"}},
          {"capability": "submit_request", "input": {"summary": "printer jammed"}}], "reply": "shall I?"}'
      - '{"intentions": [], "reply": "done"}'
  capabilities: [search_services, submit_request]
"""


def _run_id(cli: CLI) -> str:
    r = cli("runs", "list", "--json")
    assert r.returncode == 0, r
    run_id: str = json.loads(r.stdout)[0]["run_id"]
    return run_id


def test_resume_of_a_conversation_refuses_what_it_cannot_do_as_usage_errors(
        caps_cli: CLI, write: Callable[[str, str], Path]) -> None:
    path = write("desk.yaml", DESK)
    r = caps_cli("run", str(path), "my printer is broken")
    assert r.returncode == 3, r
    run_id = _run_id(caps_cli)
    for bad in ("", " ", "x" * 201):
        r = caps_cli("resume", run_id, "--answer", "yes", "--turn-id", bad)
        assert r.returncode == 2, r
        assert "--turn-id must be non-blank text of at most 200 characters" in r.stderr
        assert "unexpected" not in r.stderr
    # no answer to a conversation that waits for one: what is asked, and the command that answers
    r = caps_cli("resume", run_id)
    assert r.returncode == 2, r
    assert f"run {run_id} waits for the person's answer" in r.stderr
    assert "\n  confirm: run submit_request with" in r.stderr
    assert f"\nanswer with: seamkit resume {run_id} --answer yes" in r.stderr
    assert "answer=" not in r.stderr
    r = caps_cli("resume", run_id, "--answer", "yes")
    assert r.returncode == 0, r
    for extra in ((), ("--steal",)):
        r = caps_cli("resume", run_id, *extra)
        assert r.returncode == 2, r
        assert f"run {run_id} is done: its next turn needs the person's message: " \
               f"seamkit resume {run_id} --answer TEXT" in r.stderr
        assert "answer=" not in r.stderr
    assert caps_cli("resume", run_id, "--allow-finished").returncode == 0


def test_runs_show_of_a_conversation_shows_its_facts_agenda_questions_and_last_turn(
        caps_cli: CLI, write: Callable[[str, str], Path]) -> None:
    path = write("desk.yaml", DESK)
    assert caps_cli("run", str(path), "my printer is broken").returncode == 3
    run_id = _run_id(caps_cli)
    r = caps_cli("runs", "show", run_id, "--json")
    assert r.returncode == 0, r
    kernel = json.loads(r.stdout)["kernel"]
    turn = kernel["last_turn"]
    assert kernel["turns"] == [turn] and kernel["turn_in_progress"] is None
    assert kernel["facts"]["service.match@1"]["id"] == "printer-issue"
    [item] = kernel["agenda"]
    assert (item["kind"], item["capability"], item["input"]) == ("confirmation", "submit_request@1",
                                                                 {"summary": "printer jammed"})
    [asked] = kernel["interactions"]
    assert asked["kind"] == "confirmation" and asked["agenda_item"] == item["id"]
    r = caps_cli("runs", "show", run_id)
    assert r.returncode == 0, r
    assert f"turns: last turn {turn} (1 committed)" in r.stdout
    assert '  service.match@1 = {"id": "printer-issue", ' in r.stdout
    assert (f'agenda {item["id"]}: submit_request@1 {{"summary": "printer jammed"}} '
            f"(waits for confirmation, turn {turn})") in r.stdout
    assert f"answer with: seamkit resume {run_id} --answer yes" in r.stdout


def test_unknown_capability_lists_the_installed_capabilities(caps_cli: CLI, write: Callable[[str, str], Path]) -> None:
    path = write("typo.yaml", "seamkit: 1\nagent:\n  model: {use: scripted, turns: [hi]}\n  capabilities: [nope]\n")
    r = caps_cli("validate", str(path))
    assert r.returncode == 2, r
    assert "(installed capabilities: " in r.stderr and "capabilitys" not in r.stderr


WRITER = """\
seamkit: 1
agent:
  model:
    use: scripted
    repeat: true
    turns: ['{{"intentions": [{{"capability": "post", "input": {{"q": "x"}}}}], "reply": "posted"}}']
  max_steps: 1
  capabilities:
    - {{use: writer, id: post, log: {log}, fail: {fail}}}
"""


def _post_outcome(r: Any) -> dict[str, Any]:
    """The execution of ``post`` in a ``--json`` event stream."""
    events = [json.loads(line) for line in r.stdout.splitlines() if line.strip()]
    turn = events[-1]["turn"]
    [execution] = [e for e in turn["executions"] if e["capability"] == "post@1"]
    result: dict[str, Any] = execution
    return result


@pytest.mark.parametrize("outcome", ["applied", "not-applied"])
def test_a_capability_effect_whose_outcome_is_unknown_is_settled_by_a_person(
        caps_cli: CLI, write: Callable[[str, str], Path], tmp_path: Path, outcome: str) -> None:
    log, fail = tmp_path / "log.txt", tmp_path / "fail"
    fail.touch()  # the write's operation raises: its outcome is unknown
    path = write("writer.yaml", WRITER.format(log=log, fail=fail))
    r = caps_cli("run", str(path), "post x", "--json")
    assert r.returncode == 0, r
    run_id = _run_id(caps_cli)
    key = "capability:post:post-x"
    failed = _post_outcome(r)
    assert failed["code"] == "EFFECT_UNCERTAIN", failed
    assert f"seamkit runs settle {run_id} {key} applied|not-applied" in failed["message"]  # runnable as printed
    fail.unlink()
    # not settled: the effect is not run again, whatever the model proposes
    r = caps_cli("resume", run_id, "--answer", "again", "--json")
    assert _post_outcome(r)["code"] == "EFFECT_UNCERTAIN" and not log.exists()
    assert caps_cli("runs", "settle", run_id, "capability:post:nope", outcome).returncode == 2
    if outcome == "applied":  # the recorded value is what the operation returns: JSON
        r = caps_cli("runs", "settle", run_id, key, outcome, "--result", "seven lines")
        assert r.returncode == 2 and "is not JSON" in r.stderr, r
    extra = ("--result", '{"lines": 7}') if outcome == "applied" else ()
    r = caps_cli("runs", "settle", run_id, key, outcome, *extra)
    assert r.returncode == 0, r
    assert f"settled capability effect {key} of run {run_id} as {outcome}" in r.stderr
    r = caps_cli("runs", "settle", run_id, key, outcome)  # settled already
    assert r.returncode == 2 and "whose outcome is unknown" in r.stderr, r
    r = caps_cli("resume", run_id, "--answer", "again", "--json")
    assert r.returncode == 0, r
    done = _post_outcome(r)
    if outcome == "applied":  # the recorded value, the operation not run
        assert (done["outcome"], done["output"], log.exists()) == ("completed", {"lines": 7}, False), done
    else:  # it ran again, once
        assert (done["outcome"], done["output"], log.read_text()) == ("completed", {"lines": 1}, "x\n"), done


def test_runs_show_of_a_failed_conversation_prints_commands_that_work(
        caps_cli: CLI, write: Callable[[str, str], Path]) -> None:
    path = write("desk.yaml", DESK)
    assert caps_cli("run", str(path), "my printer is broken").returncode == 3
    run_id = _run_id(caps_cli)
    assert caps_cli("resume", run_id, "--answer", "yes").returncode == 0
    r = caps_cli("resume", run_id, "--answer", "and my scanner?")  # the script has no third turn
    assert r.returncode == 1, r
    r = caps_cli("runs", "show", run_id, "--json")
    kernel = json.loads(r.stdout)["kernel"]
    failed_turn = kernel["turn_in_progress"]
    assert failed_turn is not None and len(kernel["turns"]) == 2
    r = caps_cli("runs", "show", run_id)
    assert r.returncode == 0, r
    rerun = f"once the cause is fixed, run turn {failed_turn} again with: seamkit resume {run_id} --allow-finished"
    assert rerun in r.stdout and f"or take the next turn with: seamkit resume {run_id} --answer TEXT" in r.stdout
    assert "waiting for the person" not in r.stdout and "answer with:" not in r.stdout
    # each printed command is taken: the turn runs again (and fails again: same cause), or a new one starts
    r = caps_cli("resume", run_id)
    assert r.returncode == 2 and f"turn {failed_turn} failed" in r.stderr and "--allow-finished" in r.stderr, r
    r = caps_cli("resume", run_id, "--allow-finished")
    assert r.returncode == 1 and "script" in r.stderr, r
    r = caps_cli("runs", "show", run_id, "--json")
    assert json.loads(r.stdout)["kernel"]["turn_in_progress"] == failed_turn  # the same turn, run again


def test_runs_show_lists_an_uncertain_capability_effect_until_it_is_settled(
        caps_cli: CLI, write: Callable[[str, str], Path], tmp_path: Path) -> None:
    log, fail = tmp_path / "log.txt", tmp_path / "fail"
    fail.touch()
    path = write("writer.yaml", WRITER.format(log=log, fail=fail))
    assert caps_cli("run", str(path), "post x", "--json").returncode == 0
    run_id = _run_id(caps_cli)
    key = "capability:post:post-x"
    doc = json.loads(caps_cli("runs", "show", run_id, "--json").stdout)
    assert doc["kernel"]["uncertain_effects"] == [key]
    # the kernel's raw checkpoint form (facts as codec texts) is not repeated next to the readable one
    assert not {"kernel", "kernel_facts", "kernel_evidence"} & set(doc["state"])
    r = caps_cli("runs", "show", run_id)
    assert f"outcome unknown: {key}; check the outside system, then settle it with: " \
           f"seamkit runs settle {run_id} {key} applied  or: seamkit runs settle {run_id} {key} not-applied" \
           in r.stdout, r
    # another conversation's effect key (the ledger is the tenant's) is not settled through this run
    assert caps_cli("run", str(path), "post x again", "--json").returncode == 0
    r = caps_cli("runs", "settle", run_id, "capability:post:post-y", "not-applied")
    assert r.returncode == 2 and f"unsettled: {key}" in r.stderr, r
    assert caps_cli("runs", "settle", run_id, key, "not-applied").returncode == 0
    r = caps_cli("runs", "show", run_id)
    assert "outcome unknown" not in r.stdout, r
    assert json.loads(caps_cli("runs", "show", run_id, "--json").stdout)["kernel"]["uncertain_effects"] == []
