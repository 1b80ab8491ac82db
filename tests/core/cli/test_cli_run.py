"""``seamkit run``: streaming, tool lines, typed output, summary, --json, --var and exit codes."""

from __future__ import annotations

import json
import re
import signal
import subprocess
import textwrap
import types
from collections.abc import AsyncIterator, Callable
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel, ConfigDict
from seamkit._accumulate import collect_result
from seamkit._cli import main as cli_main
from seamkit._hookspecs import hookimpl
from seamkit.errors import UnsupportedFeature
from seamkit.values import ChatRequest, Delta, LLMResult, Usage

ADDER = """
seamkit: 1
agent:
  name: adder
  model:
    use: scripted
    turns:
      - text: "Let me add. "
        tool_calls: [{name: add, arguments: {a: 2, b: 3}}]
      - text: '{"answer": 5}'
  prompt: "You add numbers."
  tools: [add]
  output: {json_schema: {type: object, properties: {answer: {type: integer}}, required: [answer]}}
"""


def test_run_streams_text_tool_lines_output_and_summary(cli, write):
    path = write("adder.yaml", ADDER)
    r = cli("run", str(path), "what is 2 + 3?")
    assert r.returncode == 0, r
    # typed output: stdout holds only the final output as pretty JSON; the model's text streams
    # to stderr, each turn on its own line
    assert r.stdout == '{\n  "answer": 5\n}\n'
    assert json.loads(r.stdout) == {"answer": 5}
    err = r.stderr.splitlines()
    assert err[0] == "Let me add. " and '{"answer": 5}' in err
    # tool call and result: one line each on stderr; summary last
    assert '-> add {"a": 2, "b": 3}' in err
    assert "<- add: 5" in err
    summary = err[-1]
    assert re.fullmatch(
        r"run [0-9a-zA-Z_-]+: completed in \d+\.\ds, 2 steps, tokens 0 in / 0 out, 2 requests, cost local", summary
    ), summary
    assert "$0" not in r.stderr
    assert "Traceback" not in r.stderr


def test_run_marks_tool_errors_and_truncates(cli, write):
    long = "x" * 500
    path = write("boom.yaml", f"""
        seamkit: 1
        agent:
          name: boomer
          model:
            use: scripted
            turns:
              - tool_calls: [{{name: boom, arguments: {{reason: "{long}"}}}}]
              - text: "it failed"
          tools: [boom]
        """)
    r = cli("run", str(path), "go")
    assert r.returncode == 0, r
    call_line = next(line for line in r.stderr.splitlines() if line.startswith("-> boom"))
    assert call_line.endswith("...") and len(call_line) < 200
    err_line = next(line for line in r.stderr.splitlines() if line.startswith("<- boom"))
    assert "ERROR" in err_line and "boom: xxx" in err_line and len(err_line) < 250
    # free-text output is the streamed text: printed once, not twice
    assert r.stdout == "it failed\n"


def test_run_json_lines(cli, write):
    path = write("adder.yaml", ADDER)
    r = cli("run", "--json", str(path), "what is 2 + 3?")
    assert r.returncode == 0, r
    events = [json.loads(line) for line in r.stdout.splitlines()]
    kinds = [e["kind"] for e in events]
    assert kinds[0] == "run_started" and kinds[-1] == "run_finished"
    assert {"text", "model_result", "tool_call", "tool_result", "output"} <= set(kinds)
    run_ids = {e["run_id"] for e in events}
    assert len(run_ids) == 1
    call = next(e for e in events if e["kind"] == "tool_call")
    assert call["tool_call"]["name"] == "add" and call["tool_call"]["arguments"] == {"a": 2, "b": 3}
    assert call["step"] == 1
    result = next(e for e in events if e["kind"] == "tool_result")
    assert result["tool_result"]["content"] == "5" and result["tool_result"]["is_error"] is False
    text = "".join(e["text"] for e in events if e["kind"] == "text")
    assert text == 'Let me add. {"answer": 5}'
    fin = events[-1]
    assert fin["output"] == {"answer": 5}
    assert fin["stop_reason"] == "completed"
    assert fin["steps"] == 2
    assert fin["usage"]["requests"] == 2
    assert fin["usage"]["cost"] == "0" and fin["usage"]["cost_source"] == "local"
    assert "text" not in fin  # only the fields that are set
    # nothing but the summary-free JSON on stdout; stderr has no run chatter
    assert "run " not in r.stderr


def test_run_output_never_valid_exits_1(cli, write):
    path = write("bad_output.yaml", """
        seamkit: 1
        agent:
          name: stubborn
          model: {use: scripted, turns: ["not json", "still not json"]}
          output: {json_schema: {type: object, properties: {answer: {type: integer}}, required: [answer]}}
        """)
    r = cli("run", str(path), "answer")
    assert r.returncode == 1, r
    assert "OutputValidationError" in r.stderr
    assert "output did not validate" in r.stderr
    assert "still not json" in r.stderr  # the model's last answer is shown
    assert "Traceback" not in r.stderr


def test_run_provider_error_exits_1(cli, write):
    path = write("short.yaml", """
        seamkit: 1
        agent:
          name: short
          model:
            use: scripted
            turns: [{tool_calls: [{name: add, arguments: {a: 1, b: 1}}]}]
          tools: [add]
        """)
    r = cli("run", str(path), "go")
    assert r.returncode == 1, r
    assert "ProviderError" in r.stderr and "no turn left" in r.stderr
    assert "Traceback" not in r.stderr


def test_run_json_failure_keeps_stdout_json(cli, write):
    path = write("short.yaml", """
        seamkit: 1
        agent:
          name: short
          model: {use: scripted, turns: [{tool_calls: [{name: add, arguments: {a: 1, b: 1}}]}]}
          tools: [add]
        """)
    r = cli("run", "--json", str(path), "go")
    assert r.returncode == 1, r
    for line in r.stdout.splitlines():
        json.loads(line)
    assert "no turn left" in r.stderr


def test_run_max_steps_exits_1(cli, write):
    path = write("loop.yaml", """
        seamkit: 1
        agent:
          name: looper
          model:
            use: scripted
            repeat: true
            turns: [{tool_calls: [{name: add, arguments: {a: 1, b: 1}}]}]
          tools: [add]
          max_steps: 2
        """)
    r = cli("run", str(path), "go")
    assert r.returncode == 1, r
    assert "max_steps" in r.stderr


def test_component_failing_at_build_exits_1(cli, write):
    path = write("unbuildable.yaml", """
        seamkit: 1
        agent:
          name: x
          model: {use: scripted, turns: ["hi"]}
          tools: [unbuildable]
        """)
    r = cli("run", str(path), "go")
    assert r.returncode == 1, r
    assert "could not be built" in r.stderr
    assert re.search(r"unbuildable\.yaml:5:\d+: agent\.tools\[0\]: .*cannot be built", r.stderr), r.stderr
    assert "Traceback" not in r.stderr


def test_run_with_vars(cli, write):
    path = write("greeter.yaml", """
        seamkit: 1
        agent:
          name: greeter
          model: {use: scripted, turns: ["hello"]}
          prompt: {id: greet, version: 1.0.0, template: "You greet {{user}} in {{lang}}."}
        """)
    r = cli("run", str(path), "hi", "--var", "user=Ann", "--var", "lang=fr")
    assert r.returncode == 0, r
    assert r.stdout == "hello\n"
    missing = cli("run", str(path), "hi", "--var", "user=Ann")
    assert missing.returncode == 2, missing
    assert "lang" in missing.stderr and "--var" in missing.stderr
    extra = cli("run", str(path), "hi", "--var", "user=Ann", "--var", "lang=fr", "--var", "mood=x")
    assert extra.returncode == 2 and "mood" in extra.stderr
    bad = cli("run", str(path), "hi", "--var", "novalue")
    assert bad.returncode == 2 and "KEY=VALUE" in bad.stderr


def test_run_task_from_stdin(cli, write):
    path = write("echo.yaml", """
        seamkit: 1
        agent:
          name: echo
          model: {use: scripted, turns: ["ok"]}
        """)
    r = cli("run", str(path), "-", input="a task from stdin\n")
    assert r.returncode == 0, r
    assert r.stdout == "ok\n"
    empty = cli("run", str(path), "-", input="")
    assert empty.returncode == 2 and "empty" in empty.stderr


def test_malformed_yaml_exits_2_with_location(cli, write):
    path = write("broken.yaml", """
        seamkit: 1
        agent:
          name: [unclosed
          model: {use: scripted, turns: ["x"]}
        """)
    for cmd in ("run", "validate"):
        args = [cmd, str(path)] + (["task"] if cmd == "run" else [])
        r = cli(*args)
        assert r.returncode == 2, r
        assert re.search(r"broken\.yaml:\d+:\d+: ", r.stderr), r.stderr
        assert "Traceback" not in r.stderr
        assert r.stdout == ""


def test_missing_file_exits_2(cli, tmp_path):
    r = cli("run", str(tmp_path / "nope.yaml"), "task")
    assert r.returncode == 2, r
    assert "no such file" in r.stderr and "nope.yaml" in r.stderr
    assert cli("validate", str(tmp_path / "nope.yaml")).returncode == 2
    assert cli("validate", str(tmp_path)).returncode == 2  # a directory


def test_unknown_component_exits_2_with_suggestion(cli, write):
    path = write("typo.yaml", """
        seamkit: 1
        agent:
          name: typo
          model: {use: scriptd, turns: ["x"]}
        """)
    r = cli("run", str(path), "task")
    assert r.returncode == 2, r
    assert "scriptd" in r.stderr and "scripted" in r.stderr
    assert "Traceback" not in r.stderr


def test_secret_values_are_not_printed(cli, write):
    path = write("secret.yaml", """
        seamkit: 1
        agent:
          name: secretive
          model: {use: scripted, turns: ["x"], api_key: "${CLI_TEST_SECRET}"}
        """)
    r = cli("run", str(path), "task", env={"CLI_TEST_SECRET": "sk-verysecret-123"})
    assert r.returncode == 2, r  # scripted has no api_key parameter
    assert "sk-verysecret-123" not in r.stderr + r.stdout


def test_keyboard_interrupt_exits_130(cli, write):
    path = write("slow.yaml", """
        seamkit: 1
        agent:
          name: slow
          model: {use: scripted, turns: [{text: "late", delay: 30}]}
        """)
    proc = cli.popen("run", "--json", str(path), "task")
    assert proc.stdout is not None
    first = proc.stdout.readline()  # the run has started: the interrupt lands inside the run
    assert json.loads(first)["kind"] == "run_started"
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=30)
    assert proc.returncode == 130, (out, err)
    assert "interrupted" in err
    assert "Traceback" not in err


# -- in process: a provider that refuses the request before sending it, or is cut off by max_tokens --


class _CapConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")
    model: str = "m1"
    mode: str = "capability"


class _CapProvider:
    provider = "capprov"

    def __init__(self, cfg: _CapConfig) -> None:
        self.cfg = cfg
        self.model = cfg.model

    async def stream(self, request: ChatRequest) -> AsyncIterator[Delta]:
        if self.cfg.mode == "capability":
            raise UnsupportedFeature("temperature is not supported by this model", provider="capprov",
                                  model=self.model, feature="temperature")
        yield Delta(text="The answer is")
        yield Delta(usage=Usage(3, 2, requests=1, cost=Decimal(0), cost_source="local"), finish_reason="length")

    async def chat(self, request: ChatRequest) -> LLMResult:
        return await collect_result(self.stream(request), provider=self.provider, model=self.model)


@pytest.fixture
def capprov(register_plugin: Callable[..., Any], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    @hookimpl
    def seamkit_register_providers(register: Any) -> None:
        register("capprov", _CapProvider, config=_CapConfig)

    register_plugin(types.SimpleNamespace(seamkit_register_providers=seamkit_register_providers), name="capprov-p")
    monkeypatch.chdir(tmp_path)  # the default checkpoint store goes under ./.seamkit
    return tmp_path


def _agent_file(root: Path, mode: str) -> Path:
    path = root / "agent.yaml"
    path.write_text(f"seamkit: 1\nagent:\n  model: {{use: capprov, mode: {mode}}}\n"
                    "  settings: {temperature: 0.2, max_tokens: 3}\n")
    return path


def test_run_capability_error_exits_2_without_a_resume_hint(capprov: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rc = cli_main.main(["run", str(_agent_file(capprov, "capability")), "go"])
    out, err = capsys.readouterr()
    assert rc == 2, err
    assert out == ""
    assert err == "seamkit: error: UnsupportedFeature: capprov:m1: temperature is not supported by this model\n"
    assert "resume" not in err and "Traceback" not in err


def test_run_warns_about_an_answer_cut_off_by_max_tokens(capprov: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rc = cli_main.main(["run", str(_agent_file(capprov, "length")), "go"])
    out, err = capsys.readouterr()
    assert rc == 0, err
    assert out.startswith("The answer is")
    assert "warning: the answer was cut off at max_tokens (finish_reason length)" in err


# -- printed resume commands work as printed (issue 10, item 18) -------------------------------------

OWN_STORE = """
seamkit: 1
agent:
  name: own-store
  model:
    use: scripted
    follow_transcript: true
    turns: [{{tool_calls: [{{name: add, arguments: {{a: 1, b: 1}}}}]}}{more}]
  tools: [add]
  checkpoints: {{use: sqlite, path: own/runs.db}}{approvals}
"""


def _printed_resume(text: str) -> list[str]:
    """The words of each ``seamkit resume`` command printed on a line of ``text``, shell-split."""
    import shlex

    return [shlex.split(line[line.index("seamkit resume"):]) for line in text.splitlines()
            if "seamkit resume" in line]


def test_the_failure_hint_of_a_composition_with_its_own_store_resumes_as_printed(cli, write, tmp_path):
    path = write("own.yaml", OWN_STORE.format(more="", approvals=""))
    failed = cli("run", path.name, "go")  # the script runs out of turns after the tool call
    assert failed.returncode == 1, failed
    (hint,) = _printed_resume(failed.stderr)
    assert not (tmp_path / ".seamkit").exists()  # the runs are in own/runs.db, not the default store
    path.write_text(textwrap.dedent(OWN_STORE.format(more=', "two"', approvals="")))  # the cause is fixed
    resumed = cli(*hint[1:])
    assert resumed.returncode == 0, resumed
    assert resumed.stdout == "two\n"


def test_the_approval_and_interrupt_hints_of_a_composition_with_its_own_store_resume_as_printed(cli, write):
    path = write("own.yaml", OWN_STORE.format(more=', {text: "two", delay: 30}',
                                              approvals="\n  approvals: {add: every_call}"))
    waiting = cli("run", path.name, "go")
    assert waiting.returncode == 3, waiting
    approve, reject = _printed_resume(waiting.stderr)
    assert "--approve" in approve and "--reject" in reject, waiting.stderr
    shown = cli("runs", "show", approve[2], "--agent", path.name)  # runs show prints the same commands
    assert _printed_resume(shown.stdout) == [approve, reject], shown

    proc = cli.popen(*approve[1:])  # approved: the tool runs, then the slow turn starts
    assert proc.stderr is not None
    line = proc.stderr.readline()
    while line and not line.startswith("<- add"):
        line = proc.stderr.readline()
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=30)
    assert proc.returncode == 130, err
    (again,) = _printed_resume(err)
    assert again == ["seamkit", "resume", approve[2], "--agent", "own.yaml"], err
    path.write_text(textwrap.dedent(OWN_STORE.format(more=', "two"', approvals="\n  approvals: {add: every_call}")))
    resumed = cli(*again[1:])
    assert resumed.returncode == 0, resumed
    assert resumed.stdout == "two\n"


# -- side effects whose outcome is unknown, and cancellation from a tool (issue 10, items 10, 15, 18) --

EFFECT_PLUGIN = '''
from seamkit._hookspecs import hookimpl


@hookimpl
def seamkit_register_tools(register):
    register("pay", "effect_tools_impl:make_pay", description="Pay (side-effecting; EFFECT_MODE steers it)")
    register("halt", "effect_tools_impl:make_halt", description="Cancels the run the first time it runs")
    register("stall", "effect_tools_impl:make_stall", description="Hangs the first time, ignoring cancellation")
'''

EFFECT_IMPL = '''
import asyncio
import os
import signal
from pathlib import Path

from seamkit import tool
from seamkit._runtime.context import RunContext


@tool(side_effecting=True)
def pay(amount: int) -> str:
    """Pay an amount to the supplier and return the payment service's confirmation text.

    Args:
        amount: the amount in euros
    """
    mode = os.environ.get("EFFECT_MODE", "")
    if mode == "raise":
        raise RuntimeError("the payment service timed out")
    if mode == "kill":  # the process dies while the call runs: its outcome is unknown
        os.kill(os.getpid(), signal.SIGKILL)
    with open("paid.log", "a") as f:
        f.write(f"{amount}\\n")
    return f"paid {amount}"


@tool(side_effecting=False)
async def halt(ctx: RunContext) -> str:
    """Cancel the run through its cancellation token the first time it runs; later, say it went on.
    """
    marker = Path("halted")
    if not marker.exists():
        marker.write_text("1")
        ctx.cancellation.cancel("the tool asked to stop")
        await asyncio.sleep(30)  # cancelled in flight
    return "went on"


@tool(side_effecting=False)
def stall() -> str:
    """Hang for two minutes the first time (a sync tool that ignores the cancellation token); later,
    answer at once."""
    import time

    marker = Path("stalling")
    if not marker.exists():
        marker.write_text("1")
        time.sleep(120)
    return "done stalling"


def make_stall():
    return stall


def make_pay():
    return pay


def make_halt():
    return halt
'''

PAY = """
seamkit: 1
agent:
  name: book
  model:
    use: scripted
    follow_transcript: true
    turns: [{tool_calls: [{name: pay, arguments: {amount: 5}}]}, "booked"]
  tools: [pay]
  checkpoints: {use: sqlite, path: own/runs.db}
"""


@pytest.fixture
def effect_cli(cli: Any, tmp_path: Path) -> Any:
    from cli_testlib import CLI, make_dist

    dist = make_dist(tmp_path / "site-effects", "effect-tools", "effect_tools", EFFECT_PLUGIN,
                     extra={"effect_tools_impl": EFFECT_IMPL})
    return CLI([*cli.paths, dist], cli.cwd)


def _printed(text: str, command: str) -> list[list[str]]:
    """The words of each ``seamkit <command>`` printed in ``text``, shell-split to the end of its line
    as a shell reads a pasted line (so a note after it must be a comment)."""
    import shlex

    out = []
    for line in text.splitlines():
        if f"seamkit {command} " in line:
            out.append(shlex.split(line[line.index(f"seamkit {command} "):], comments=True))
    return out


def _book_agent(tmp_path: Path) -> str:
    folder = tmp_path / "dir with space"
    folder.mkdir()
    (folder / "book agent.yaml").write_text(PAY)
    return "dir with space/book agent.yaml"


def test_a_side_effect_that_raised_ends_the_run_with_settle_commands_that_work_as_printed(effect_cli, tmp_path):
    agent = _book_agent(tmp_path)
    r = effect_cli("run", agent, "go", env={"EFFECT_MODE": "raise"})
    assert r.returncode == 0, r
    run_id = re.search(r"run (\S+): completed", r.stderr).group(1)  # type: ignore[union-attr]
    settles = _printed(r.stderr, "runs settle")
    assert settles, r.stderr  # the warning names no command; the CLI prints runnable ones
    assert all(words[-2:] == ["--agent", agent] for words in settles), r.stderr
    assert "applied|not-applied" not in r.stderr
    applied = next(w for w in settles if "applied" in w)
    assert applied[:5] == ["seamkit", "runs", "settle", run_id, "call_0_0"]
    settled = effect_cli(*applied[1:])
    assert settled.returncode == 0, settled
    # the model was told the outcome is unknown and the run is done: nothing runs again, and it says so
    assert "recorded only" in settled.stderr and "nothing runs again" in settled.stderr, settled
    assert "runs again" not in settled.stderr.replace("nothing runs again", "")
    shown = effect_cli("runs", "show", run_id, "--agent", agent)
    assert shown.returncode == 0 and "outcome unknown" not in shown.stdout, shown


@pytest.mark.parametrize("outcome", ["applied", "not-applied"])
def test_a_call_killed_mid_run_is_listed_and_settled_before_any_resume_with_commands_that_work(
        effect_cli, tmp_path, outcome):
    agent = _book_agent(tmp_path)
    killed = effect_cli("run", agent, "go", env={"EFFECT_MODE": "kill"})
    assert killed.returncode == -signal.SIGKILL, killed
    (run_id,) = [r["run_id"] for r in json.loads(effect_cli("runs", "list", "--agent", agent, "--json").stdout)]

    shown = effect_cli("runs", "show", run_id, "--agent", agent)  # before any resume
    assert shown.returncode == 0, shown
    assert "call call_0_0: pay" in shown.stdout and "the process stopped while the call ran" in shown.stdout, shown
    settles = _printed(shown.stdout, "runs settle")
    assert [w[:7] for w in settles] == [["seamkit", "runs", "settle", run_id, "call_0_0", o, "--agent"]
                                        for o in ("applied", "not-applied")], shown.stdout
    command = next(w for w in settles if w[5] == outcome)
    settled = effect_cli(*command[1:])
    assert settled.returncode == 0, settled
    (resume,) = _printed(settled.stderr, "resume")
    assert resume == ["seamkit", "resume", run_id, "--agent", agent], settled.stderr

    resumed = effect_cli(*resume[1:])
    assert resumed.returncode == 0, resumed
    assert resumed.stdout == "booked\n"
    paid = (tmp_path / "paid.log").read_text() if (tmp_path / "paid.log").exists() else ""
    assert paid == ("" if outcome == "applied" else "5\n")  # applied: not run again; not applied: run once


def test_a_run_resumed_after_a_kill_waits_with_settle_commands_that_work_as_printed(effect_cli, tmp_path):
    agent = _book_agent(tmp_path)
    killed = effect_cli("run", agent, "go", env={"EFFECT_MODE": "kill"})
    assert killed.returncode == -signal.SIGKILL, killed
    (run_id,) = [r["run_id"] for r in json.loads(effect_cli("runs", "list", "--agent", agent, "--json").stdout)]
    waiting = effect_cli("resume", run_id, "--agent", agent)
    assert waiting.returncode == 3, waiting
    settles = _printed(waiting.stderr, "runs settle")
    assert settles and all(w[-2:] == ["--agent", agent] for w in settles), waiting.stderr
    assert "applied|not-applied" not in waiting.stderr
    settled = effect_cli(*next(w for w in settles if w[5] == "not-applied")[1:])
    assert settled.returncode == 0, settled
    (resume,) = _printed(settled.stderr, "resume")
    resumed = effect_cli(*resume[1:])
    assert resumed.returncode == 0 and resumed.stdout == "booked\n", resumed
    assert (tmp_path / "paid.log").read_text() == "5\n"


HALT = """
seamkit: 1
agent:
  name: halting
  model:
    use: scripted
    follow_transcript: true
    turns: [{tool_calls: [{name: halt, arguments: {}}]}, "finished"]
  tools: [halt]
  checkpoints: {use: sqlite, path: own/runs.db}
"""


def test_a_run_cancelled_from_a_tool_is_reported_as_cancelled_and_resumes_as_printed(effect_cli, write):
    path = write("halt.yaml", HALT)
    r = effect_cli("run", path.name, "go")
    assert r.returncode == 130, r  # interrupted, as Ctrl-C: not a failure
    assert "failed" not in r.stderr and "--allow-finished" not in r.stderr and "error" not in r.stderr, r.stderr
    assert "cancelled" in r.stderr and "the tool asked to stop" in r.stderr, r.stderr
    (resume,) = _printed(r.stderr, "resume")
    assert resume[-2:] == ["--agent", "halt.yaml"] and len(resume) == 5, resume
    listed = json.loads(effect_cli("runs", "list", "--agent", path.name, "--json").stdout)
    assert [x["status"] for x in listed] == ["running"]
    resumed = effect_cli(*resume[1:])
    assert resumed.returncode == 0, resumed
    assert resumed.stdout == "finished\n"


def test_runs_show_of_a_failed_run_prints_its_error_and_a_resume_command_that_works(cli, write):
    path = write("own.yaml", OWN_STORE.format(more="", approvals=""))
    failed = cli("run", path.name, "go")  # the script runs out of turns after the tool call
    assert failed.returncode == 1, failed
    (hint,) = _printed_resume(failed.stderr)
    shown = cli("runs", "show", hint[2], "--agent", path.name)
    assert shown.returncode == 0, shown
    assert re.search(r"^error: \w+Error: .+", shown.stdout, re.M), shown.stdout
    assert _printed_resume(shown.stdout) == [hint], shown.stdout
    path.write_text(textwrap.dedent(OWN_STORE.format(more=', "two"', approvals="")))
    resumed = cli(*hint[1:])
    assert resumed.returncode == 0 and resumed.stdout == "two\n", resumed


def test_resume_runs_show_and_runs_settle_say_the_same_about_a_run_the_store_lacks(cli, write):
    path = write("own.yaml", OWN_STORE.format(more=', "two"', approvals=""))
    plain = write("plain.yaml", OWN_STORE.format(more=', "two"', approvals="").replace(
        "  checkpoints: {use: sqlite, path: own/runs.db}\n", ""))
    for file in (path, plain):  # both stores exist now
        assert cli("run", file.name, "go").returncode == 0
    for agent in ([], ["--agent", path.name]):
        said = set()
        for command in (["resume", "run_nope"], ["runs", "show", "run_nope"],
                        ["runs", "settle", "run_nope", "c1", "applied"], ["runs", "delete", "run_nope"]):
            r = cli(*command, *agent)
            assert r.returncode == 2, r
            said.add(r.stderr)
        (text,) = said
        store = "the store of own.yaml" if agent else "the default store (.seamkit/seamkit.db"
        assert f"no run 'run_nope' in {store}" in text and "--agent FILE" in text, text


STALL = """
seamkit: 1
agent:
  name: stuck
  model:
    use: scripted
    follow_transcript: true
    turns: [{tool_calls: [{name: stall, arguments: {}}]}, "unstuck"]
  tools: [stall]
  checkpoints: {use: sqlite, path: own/runs.db}
"""


def test_sigterm_during_a_sync_tool_that_ignores_cancellation_exits_promptly_with_a_resume_hint(
        effect_cli, tmp_path):
    # regression (outside testing of issue 10): the process stayed alive until the tool's thread
    # returned (asyncio.run and interpreter exit join it), and only then printed the hint, so a
    # supervisor's SIGKILL (docker stop: 10 s) left no hint at all
    import time

    (tmp_path / "stuck.yaml").write_text(STALL)
    proc = effect_cli.popen("run", "stuck.yaml", "go")
    deadline = time.monotonic() + 60
    while not (tmp_path / "stalling").exists():
        assert proc.poll() is None and time.monotonic() < deadline, proc.communicate()
        time.sleep(0.05)
    proc.send_signal(signal.SIGTERM)
    try:
        _out, err = proc.communicate(timeout=30)  # the tool would hold it for 120 s
    except subprocess.TimeoutExpired:
        proc.kill()
        pytest.fail("seamkit run waited for a sync tool after SIGTERM")
    assert proc.returncode == 143, err
    (resume,) = _printed(err, "resume")
    assert resume[:3] == ["seamkit", "resume", resume[2]] and resume[-2:] == ["--agent", "stuck.yaml"], err
    resumed = effect_cli(*resume[1:])
    assert resumed.returncode == 0, resumed
    assert resumed.stdout == "unstuck\n"


def test_a_gather_mode_run_prints_the_gathered_block_on_stdout(cli, write):
    # the block is the run's output but streams as no text: stdout was empty without --json
    path = write("g.yaml", """
        seamkit: 1
        agent:
          name: gatherer
          mode: gather
          model:
            use: scripted
            turns:
              - tool_calls: [{name: add, arguments: {a: 2, b: 3}}]
          tools: [add]
          checkpoints: null
        """)
    r = cli("run", str(path), "go")
    assert r.returncode == 0, r
    block = json.loads(cli("run", str(path), "go", "--json").stdout.splitlines()[-1])["output"]
    assert block.startswith("Gathered context (1 tool call):")
    assert r.stdout == block + "\n"
    assert "gathered:" in r.stderr and "Traceback" not in r.stderr
