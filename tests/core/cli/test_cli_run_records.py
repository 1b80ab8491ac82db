"""Run records (issue 18): ``seamkit runs list`` (a header, creation time, duration, tokens, cost,
task), ``seamkit runs show`` (why it failed, the step tree, child runs), a raising tool's warning,
a reader closing stdout early, and ``seamkit resume`` of a finished run (exit 2)."""

from __future__ import annotations

import json
import re
import shlex
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from cli_testlib import CLI

TOOLED = """
seamkit: 1
agent:
  name: adder
  model: {use: scripted, turns: [{tool_calls: [{name: boom, arguments: {reason: kaput}}]}, "all done here"]}
  tools: [{use: add}, {use: boom}]
"""

FAILING = """
seamkit: 1
agent:
  name: failer
  model: {use: scripted, turns: ["not json"]}
  output: {json_schema: {type: object, properties: {count: {type: integer}}, required: [count]}}
"""

LEAD = """
seamkit: 1
agent:
  name: lead
  model: {use: scripted, turns: [{tool_calls: [{name: researcher, arguments: {task: "look it up"}}]}, "it is 10"]}
  tools: [{agent: researcher, description: "Looks facts up and returns them as text."}]
agents:
  researcher:
    model: {use: scripted, turns: ["Plan B costs 10 USD."]}
"""


def _listed(cli: CLI, *extra: str) -> list[dict[str, object]]:
    r = cli("runs", "list", "--json", *extra)
    assert r.returncode == 0, r
    rows: list[dict[str, object]] = json.loads(r.stdout)
    return rows


def _run(cli: CLI, file: str, task: str) -> str:
    """Run ``file`` on ``task``; the new run's id."""
    before = {r["run_id"] for r in _listed(cli)} if (cli.cwd / ".seamkit").exists() else set()
    cli("run", file, task)
    (new,) = [r["run_id"] for r in _listed(cli) if r["run_id"] not in before and r["parent_run_id"] is None]
    return str(new)


def test_runs_list_has_a_header_and_each_runs_creation_time_duration_tokens_cost_and_task(
        cli: CLI, write: Callable[[str, str], Path]) -> None:
    write("a.yaml", TOOLED)
    write("f.yaml", FAILING)
    ok = _run(cli, "a.yaml", "please add   the numbers\none and two")
    failed = _run(cli, "f.yaml", "count the files")
    r = cli("runs", "list")
    assert r.returncode == 0, r
    header, *lines = r.stdout.splitlines()
    assert header.split() == ["RUN", "ID", "STATUS", "CREATED", "(UTC)", "DURATION", "TOKENS", "COST", "AGENT", "TASK"]
    assert [line.split()[:2] for line in lines] == [[failed, "failed"], [ok, "done"]]  # newest first, ids whole
    assert re.search(r"  adder +please add the numbers one and two$", lines[1]), lines  # one line, no padding after
    assert "0 in / 0 out" in lines[1] and "local" in lines[1]

    rows = {str(x["run_id"]): x for x in _listed(cli)}
    row = rows[ok]
    assert row["task"] == "please add the numbers one and two" and row["status"] == "done"
    assert (row["input_tokens"], row["output_tokens"], row["requests"]) == (0, 0, 2)
    assert (row["cost_usd"], row["cost_source"]) == ("0", "local")
    shown = json.loads(cli("runs", "show", ok, "--json").stdout)
    versions = shown["versions"]
    assert len(versions) == 4
    # created_at is the run's first checkpoint, updated_at its latest: not the same
    assert row["created_at"] == versions[0]["created_at"] and row["updated_at"] == versions[-1]["created_at"]
    assert row["created_at"] != row["updated_at"] and isinstance(row["duration_s"], float)
    assert shown["summary"] == row

    # pruning the first versions keeps the creation time (it is kept with every version)
    assert cli("runs", "prune", "--keep-last", "1").returncode == 0
    assert {str(x["run_id"]): x["created_at"] for x in _listed(cli)}[ok] == versions[0]["created_at"]


def _list_on_terminal(cli: CLI, columns: int) -> str:
    import pexpect

    child = pexpect.spawn(sys.executable, ["-m", "seamkit", "runs", "list"], cwd=str(cli.cwd), env=cli.env(),
                          dimensions=(24, columns), encoding="utf-8", timeout=60)
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 0, child.before
    return re.sub(r"\x1b\[[0-9;]*m", "", child.before).replace("\r\n", "\n")  # its styling left out


def test_runs_list_cuts_only_the_task_on_a_terminal(cli: CLI, write: Callable[[str, str], Path]) -> None:
    write("a.yaml", TOOLED)
    run_id = _run(cli, "a.yaml", "a task with quite a few words in it to be cut on a narrow terminal")
    text = _list_on_terminal(cli, 140)
    # nothing hidden: the id and status whole, the task cut to the room left
    assert re.search(rf"^{run_id}  done  .*  adder  a task with .*…$", text, re.M), text
    assert all(len(line) <= 140 for line in text.splitlines()), text


def test_runs_list_on_a_narrow_terminal_has_short_lines_per_run_none_wider_than_it(
        cli: CLI, write: Callable[[str, str], Path]) -> None:
    """A terminal too narrow for the table (the other columns and 20 characters of the task) gets
    the run id and status on one line, the other columns on the next and the task on a third, cut
    to its width: the terminal never wraps a line mid-word, and run ids stay whole."""
    write("a.yaml", TOOLED)
    run_id = _run(cli, "a.yaml", "a task with quite a few words in it to be cut on a narrow terminal")
    for columns, first in ((60, [f"{run_id}  done"]), (40, [run_id, "done"])):
        lines = _list_on_terminal(cli, columns).splitlines()
        assert lines[:3] == ["RUN ID  STATUS", "  CREATED (UTC)  DURATION  TOKENS  COST  AGENT"[:columns - 1]
                             + ("…" if columns < 46 else ""), "  TASK"], lines
        n = len(first)
        assert lines[3:3 + n] == first, lines
        assert lines[3 + n].startswith("  2") and lines[4 + n].startswith("  a task with quite"), lines
        assert all(len(x) <= columns for x in lines), lines
    assert "0 in / 0 out  local  adder" in _list_on_terminal(cli, 60)


def test_runs_list_reads_runs_stored_before_checkpoints_kept_a_summary(tmp_path: Path) -> None:
    """A run written without the summary keys (an older seamkit) is listed with its oldest
    version's time, its task and its usage, read from its checkpoints."""
    import asyncio
    from decimal import Decimal

    from seamkit._cli.runs_view import list_row, list_rows
    from seamkit._durability import codec
    from seamkit._durability.checkpointer import Checkpointer
    from seamkit._durability.records import CheckpointRecord
    from seamkit.values import Message, Usage
    from seamkit_sqlite.store import SqliteStore

    async def go() -> dict[str, object]:
        store = SqliteStore(path=str(tmp_path / "old.db"))
        usage = Usage(input_tokens=7, output_tokens=3, requests=1, cost=Decimal("0.25"), cost_source="reported")
        state = codec.dumps({"agent": "old", "step": 1, "usage": usage})
        await store.save(CheckpointRecord("run_old", 1, "running", state, (codec.dumps(Message.user("the old task")),),
                                          metadata={"agent": "old"}, created_at=1000.0),
                         expected_version=None)
        await store.save(CheckpointRecord("run_old", 2, "done", state, (codec.dumps(Message.assistant("ok")),),
                                          metadata={"agent": "old"}, created_at=1012.5), expected_version=1)
        cp = Checkpointer(store)
        try:
            ((info, summary),) = await list_rows(cp, status=None, limit=10)
            return list_row(info, summary)
        finally:
            await cp.aclose()

    row = asyncio.run(go())
    assert row["created_at"] == "1970-01-01T00:16:40+00:00" and row["duration_s"] == 12.5
    assert row["task"] == "the old task" and (row["input_tokens"], row["output_tokens"]) == (7, 3)
    assert (row["cost_usd"], row["cost_source"]) == ("0.25", "reported")


def test_runs_show_says_why_it_failed_first_and_draws_the_steps(cli: CLI, write: Callable[[str, str], Path]) -> None:
    write("f.yaml", FAILING)
    failed = _run(cli, "f.yaml", "count the files")
    r = cli("runs", "show", failed)
    assert r.returncode == 0, r
    lines = r.stdout.splitlines()
    assert lines[0].startswith(f"run {failed}: failed")
    assert lines[1] == "task: count the files" and lines[2].startswith("created: ") and "duration" in lines[2]
    assert lines[3].startswith("tokens: 0 in / 0 out, 1 model request, cost local")
    assert lines[4] == "error: ProviderError: scripted: invalid_request: the script has no turn left (it has 1)"
    assert lines.index("steps:") == 5 and lines[6:8] == ["  task: count the files", "  model #1: not json"]
    doc = json.loads(cli("runs", "show", failed, "--json").stdout)
    assert doc["error"] == lines[4].removeprefix("error: ") and doc["children"] == []


def test_runs_show_draws_tool_calls_under_their_model_call_and_child_runs(
        cli: CLI, write: Callable[[str, str], Path]) -> None:
    write("lead.yaml", LEAD)
    lead = _run(cli, "lead.yaml", "what does plan B cost")
    (child,) = [r for r in _listed(cli) if r["parent_run_id"] == lead]
    r = cli("runs", "show", lead)
    assert r.returncode == 0, r
    steps = r.stdout.split("steps:\n", 1)[1].splitlines()
    assert steps == [
        "  task: what does plan B cost",
        "  model #1",
        '    └─ tool researcher {"task": "look it up"} [call_0_0]',
        "       -> Plan B costs 10 USD.",
        "  model #2: it is 10",
        f"  child run {child['run_id']}: done, agent researcher",
    ], r.stdout
    doc = json.loads(cli("runs", "show", lead, "--json").stdout)
    assert doc["children"] == [{"run_id": child["run_id"], "status": "done", "agent": "researcher"}]
    assert doc["error"] is None


def test_a_raising_tool_leaves_a_warning_in_the_run(cli: CLI, write: Callable[[str, str], Path]) -> None:
    write("a.yaml", TOOLED)
    run = cli("run", "a.yaml", "add them", env={"SECRET_TOKEN": "kaput"})
    assert run.returncode == 0 and run.stdout == "all done here\n", run
    warning = "warning: tool 'boom' (call call_0_0) raised RuntimeError: boom: ***; the model was told the call failed"
    assert warning in run.stderr, run  # a secret-named environment value is masked
    (row,) = _listed(cli)
    shown = cli("runs", "show", str(row["run_id"]))
    assert warning in shown.stdout.splitlines() and "-> ERROR RuntimeError: boom: kaput" in shown.stdout, shown
    state = json.loads(cli("runs", "show", str(row["run_id"]), "--json").stdout)["state"]
    assert state["warnings"] == [warning.removeprefix("warning: ")]


def test_a_raising_tools_warning_has_its_traceback_with_seamkit_debug(
        cli: CLI, write: Callable[[str, str], Path]) -> None:
    write("a.yaml", TOOLED)
    run = cli("run", "a.yaml", "add them", env={"SEAMKIT_DEBUG": "1"})
    assert run.returncode == 0, run
    (row,) = _listed(cli)
    (warning,) = json.loads(cli("runs", "show", str(row["run_id"]), "--json").stdout)["state"]["warnings"]
    assert warning.startswith("tool 'boom' (call call_0_0) raised RuntimeError: boom: kaput")
    assert "Traceback (most recent call last):" in warning and 'raise RuntimeError(f"boom: {reason}")' in warning
    shown = cli("runs", "show", str(row["run_id"])).stdout
    assert '\n      raise RuntimeError(f"boom: {reason}")\n' in shown  # its lines, not escaped newlines


SLOW_SECOND_TURN = """
seamkit: 1
agent:
  name: talker
  model:
    use: scripted
    turns:
      - {text: "a first answer that is longer than twenty bytes", tool_calls: [{name: add, arguments: {a: 1, b: 2}}]}
      - {text: "the second part, written after the reader has gone", delay: 0.5,
         tool_calls: [{name: add, arguments: {a: 3, b: 4}}]}
      - {text: "the end", delay: 0.3}
  tools: [{use: add}]
"""


def _read_then_close(cli: CLI, *args: str) -> tuple[bytes, int]:
    """Run the CLI with stdout a pipe this process closes after reading 20 bytes (as ``| head -c
    20``); what was read and the exit code."""
    proc = subprocess.Popen([sys.executable, "-m", "seamkit", *args], cwd=cli.cwd, env=cli.env(),
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    assert proc.stdout is not None
    got = proc.stdout.read(20)
    proc.stdout.close()
    return got, proc.wait(timeout=60)


def test_closing_stdout_early_leaves_the_run_done(cli: CLI, write: Callable[[str, str], Path]) -> None:
    write("a.yaml", SLOW_SECOND_TURN)
    got, code = _read_then_close(cli, "run", "a.yaml", "talk")
    assert got == b"a first answer that "
    (row,) = _listed(cli)
    assert (row["status"], code) == ("done", 0), row  # the run went on to its end, the exit code says so
    shown = cli("runs", "show", str(row["run_id"]))
    assert "model #2: the second part, written after the reader has gone" in shown.stdout, shown
    assert "model #3: the end" in shown.stdout, shown


def test_closing_stdout_early_in_json_mode_leaves_the_run_done(cli: CLI, write: Callable[[str, str], Path]) -> None:
    write("a.yaml", SLOW_SECOND_TURN)
    got, code = _read_then_close(cli, "run", "a.yaml", "talk", "--json")
    assert got.startswith(b'{"kind": ')
    (row,) = _listed(cli)
    assert (row["status"], code) == ("done", 0), row


def test_closing_stdout_of_runs_show_is_quiet(cli: CLI, write: Callable[[str, str], Path]) -> None:
    """Any command: a reader that stops reading gets no traceback and no error (the output is
    larger than a pipe's buffer, so the command does write into the closed pipe)."""
    write("a.yaml", TOOLED)
    assert cli("run", "a.yaml", "-", input="many words " * 20_000).returncode == 0
    (row,) = _listed(cli)
    proc = subprocess.Popen([sys.executable, "-m", "seamkit", "runs", "show", str(row["run_id"]), "--json"],
                            cwd=cli.cwd, env=cli.env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert proc.stdout is not None and proc.stderr is not None
    assert proc.stdout.read(10) == b'{\n  "run_i'
    proc.stdout.close()
    err = proc.stderr.read()
    assert proc.wait(timeout=60) == 0 and err == b"", err


def test_resume_of_a_finished_run_is_a_usage_error_with_the_command_that_works(
        cli: CLI, write: Callable[[str, str], Path], tmp_path: Path) -> None:
    write("a.yaml", TOOLED)
    write("f.yaml", FAILING)
    done = _run(cli, "a.yaml", "add them")
    failed = _run(cli, "f.yaml", "count")
    r = cli("resume", done)
    assert r.returncode == 2 and f"run {done} cannot be resumed: it is done" in r.stderr, r
    hint = r.stderr.rsplit("to print its result: ", 1)[1].strip()
    assert hint == f"seamkit resume {done} --allow-finished"
    again = cli(*shlex.split(hint)[1:])
    assert again.returncode == 0 and again.stdout == "all done here\n", again
    r = cli("resume", failed)
    assert r.returncode == 2 and f"run {failed} failed (ProviderError: " in r.stderr, r
    assert r.stderr.rstrip().endswith(f"continue it with: seamkit resume {failed} --allow-finished"), r


def test_only_an_unexpected_exception_becomes_a_run_warning() -> None:
    """A ``ToolError`` is a tool's way of saying that it failed: the model reads it, and the run
    keeps no warning; any other exception is also a warning. Both give the model an error result."""
    import asyncio

    from seamkit._agent.agent import Agent
    from seamkit._tools import tool
    from seamkit.errors import ToolError
    from seamkit.testing import ScriptedModel

    @tool(side_effecting=False)
    def lookup(key: str) -> str:
        """Look a key up in the table and return its value."""
        raise ToolError(f"no key {key!r}")

    @tool(side_effecting=False)
    def crash(key: str) -> str:
        """Crash while looking a key up in the table."""
        raise KeyError(key)

    model = ScriptedModel([{"tool_calls": [{"name": "lookup", "arguments": {"key": "a"}, "id": "c1"},
                                           {"name": "crash", "arguments": {"key": "b"}, "id": "c2"}]}, "done"])
    result = asyncio.run(Agent(model, tools=[lookup, crash]).run("go"))
    results = model.requests[1].messages[-1].tool_results
    assert [(r.content, r.is_error) for r in results] == [("ToolError: no key 'a'", True), ("KeyError: 'b'", True)]
    assert result.warnings == ("tool 'crash' (call c2) raised KeyError: 'b'; the model was told the call failed",)


LOOPER = """
seamkit: 1
agent:
  name: looper
  max_steps: 2
  model: {use: scripted, turns: [{tool_calls: [{name: add, arguments: {a: 1, b: 2}}]},
                                 {tool_calls: [{name: add, arguments: {a: 1, b: 2}}]}, "never reached"]}
  tools: [{use: add}]
"""

LIMITED = """
seamkit: 1
agent:
  name: limited
  max_tool_calls: 1
  model: {use: scripted, turns: [{tool_calls: [{name: add, arguments: {a: 1, b: 2}}]}, "it is 3"]}
  tools: [{use: add}]
"""


def test_a_run_that_stopped_without_an_answer_says_why_in_runs_list_and_show(
        cli: CLI, write: Callable[[str, str], Path]) -> None:
    """A run stopped by max_steps is ``done`` but has no answer: the listing's status and ``runs
    show`` say why (as ``seamkit run``'s exit code 1 promises), read from the summary metadata."""
    write("a.yaml", LOOPER)
    run = cli("run", "a.yaml", "loop please")
    assert run.returncode == 1 and "stopped without an answer (max_steps)" in run.stderr, run
    (row,) = _listed(cli)
    assert (row["status"], row["stopped"], row["limit_reached"]) == ("done", "max_steps", None)
    listed = cli("runs", "list").stdout.splitlines()[1]
    assert listed.split("  ")[:2] == [row["run_id"], "done (max_steps)"], listed
    shown = cli("runs", "show", str(row["run_id"])).stdout.splitlines()
    assert "stopped: max_steps (2 model turns) without an answer" in shown[:6], shown
    assert "once the cause is fixed" not in "\n".join(shown)
    # what to do next: a new run with more steps (a resume cannot give it more)
    assert "start a new run with more (-o agent.max_steps=N)" in run.stderr, run
    resumed = cli("resume", str(row["run_id"]))
    assert resumed.returncode == 2, resumed
    assert "stopped at max_steps without an answer; it cannot be continued" in resumed.stderr, resumed
    assert "-o agent.max_steps=N" in resumed.stderr and "to print its result" not in resumed.stderr


def test_a_run_that_reached_a_tool_limit_says_so_and_is_not_stopped(
        cli: CLI, write: Callable[[str, str], Path]) -> None:
    write("a.yaml", LIMITED)
    assert cli("run", "a.yaml", "add").returncode == 0
    (row,) = _listed(cli)
    assert (row["status"], row["stopped"], row["limit_reached"]) == ("done", None, "max_tool_calls")
    assert cli("runs", "list").stdout.splitlines()[1].split("  ")[1] == "done"
    shown = cli("runs", "show", str(row["run_id"])).stdout
    assert "tool limit: max_tool_calls reached; the model answered without further tools" in shown
    assert "stopped:" not in shown


def test_a_stop_is_read_from_the_checkpoint_of_a_run_stored_without_the_summary() -> None:
    """A run stored before the summary kept its stop still shows it (read from its state)."""
    from seamkit._durability.summary import run_summary, summary_metadata
    from seamkit.values import Usage

    s = run_summary({}, 5.0, first_version_at=1.0, state={"stop_reason": "max_steps", "step": 10, "usage": Usage()})
    assert (s.stopped, s.steps, s.limit_reached) == ("max_steps", 10, None)
    # every version writes the keys: a later answered version does not keep an earlier stop
    meta = summary_metadata({"stopped": "max_steps"}, {"stop_reason": "completed", "step": 3}, (), 1.0)
    assert (meta["stopped"], meta["steps"]) == (None, 3)


ESCAPING = """
seamkit: 1
agent:
  name: "evil\\e[31mRED"
  model: {use: scripted, turns: [{tool_calls: [{name: "to\\e[5mol", arguments: {"k\\e[2J": "v\\e[2J"}},
                                              {name: helper, arguments: {task: "x\\e]0;title\\a"}}]},
                                 "the end\\e[0m"]}
  tools: [{agent: helper, description: "Helps with things."}]
agents:
  helper:
    model: {use: scripted, turns: ["helped\\e[7m"]}
"""


def test_runs_list_and_show_never_write_a_control_character_from_a_stored_text(
        cli: CLI, write: Callable[[str, str], Path]) -> None:
    """An agent name, a task, tool names and arguments, results, child runs' agents: every text
    ``runs list`` and ``runs show`` print goes through ``visible`` (an ESC is shown as ``\\u001b``)."""
    write("e.yaml", ESCAPING)
    cli("run", "e.yaml", "task\x1b[31m red")
    listed = cli("runs", "list")
    assert listed.returncode == 0 and listed.stdout.count("\n") >= 2, listed
    assert "\x1b" not in listed.stdout and "\x07" not in listed.stdout
    assert "evil\\u001b[31mRED" in listed.stdout and "task\\u001b[31m red" in listed.stdout
    for row in _listed(cli):
        shown = cli("runs", "show", str(row["run_id"]))
        assert shown.returncode == 0, shown
        assert "\x1b" not in shown.stdout and "\x07" not in shown.stdout, shown.stdout
    top = next(r for r in _listed(cli) if r["parent_run_id"] is None)
    text = cli("runs", "show", str(top["run_id"])).stdout
    assert text.splitlines()[0].endswith("agent evil\\u001b[31mRED"), text
    assert "tool to\\u001b[5mol" in text and "x\\u001b]0;title\\u0007" in text, text


@pytest.mark.parametrize("stored", ["CancelledError: ", "KeyboardInterrupt", "Terminated: "])
def test_runs_show_says_in_words_what_an_interruption_with_no_message_was(stored: str) -> None:
    # regression: it printed "interrupted: CancelledError: " and nothing after
    import io
    from types import SimpleNamespace

    from seamkit._cli.runs_cmd import _show_ending

    out = io.StringIO()
    _show_ending(out, SimpleNamespace(run_id="run_x", status="running", state={"interrupted": stored}), None)
    words = "interrupted: stopped before it finished (Ctrl-C, SIGTERM, or its task cancelled)"
    assert out.getvalue().splitlines()[0] == words
    out = io.StringIO()
    _show_ending(out, SimpleNamespace(run_id="run_x", status="running", state={"interrupted": "RunCancelled: budget"}),
                 None)
    assert out.getvalue().splitlines()[0] == "interrupted: RunCancelled: budget"
