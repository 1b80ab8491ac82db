"""``seamkit run``: streaming, tool lines, typed output, summary, --json, --var and exit codes."""

from __future__ import annotations

import json
import re
import signal
import textwrap
import types
from collections.abc import AsyncIterator, Callable
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel, ConfigDict
from seamkit.accumulate import collect_result
from seamkit.cli import main as cli_main
from seamkit.errors import CapabilityError
from seamkit.hookspecs import hookimpl
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
        r"run [0-9a-zA-Z_-]+: completed, 2 steps, tokens 0 in / 0 out, 2 requests, cost local", summary
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
            raise CapabilityError("temperature is not supported by this model", provider="capprov",
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
    assert err == "seamkit: error: CapabilityError: capprov:m1: temperature is not supported by this model\n"
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
