"""In-process tests of the CLI's rendering and error reporting."""

from __future__ import annotations

import io
import json
import re
from decimal import Decimal

import pytest
from hypothesis import given
from hypothesis import strategies as st
from seamkit._agent.result import AgentResult
from seamkit._cli import main as cli_main
from seamkit._cli.render import (
    HumanRenderer,
    JsonRenderer,
    event_to_json,
    format_cost,
    format_summary,
    jsonable,
    truncate,
)
from seamkit.errors import (
    ComponentNotFound,
    ConfigError,
    ConfigIssue,
    OutputValidationError,
    PluginError,
    ProviderError,
)
from seamkit.values import FrozenDict, LLMResult, Message, StreamEvent, ToolCall, ToolResult, Usage


def test_format_cost_never_prints_zero_for_unknown():
    assert format_cost(Usage(requests=1)) == "unknown"
    assert format_cost(Usage(requests=1, cost=Decimal(0), cost_source="local")) == "local"
    assert format_cost(Usage(requests=0, cost=Decimal(0), cost_source="cache")) == "$0 (cache)"
    assert format_cost(Usage(requests=1, cost=Decimal("0.0012"), cost_source="reported")) == "$0.0012"
    assert format_cost(Usage(requests=1, cost=Decimal("1E-7"), cost_source="reported")) == "$0.0000001"
    assert format_cost(Usage(requests=1, cost=Decimal("0.5"), cost_source="estimated")) == "~$0.5 (estimated)"


def test_format_summary():
    u = Usage(input_tokens=12, output_tokens=3, requests=1)
    assert format_summary("r1", "completed", 1, u) == (
        "run r1: completed, 1 step, tokens 12 in / 3 out, 1 request, cost unknown"
    )
    # with the run's duration (seconds, one decimal) after the stop reason
    assert format_summary("r1", "completed", 2, u, 12.345) == (
        "run r1: completed in 12.3s, 2 steps, tokens 12 in / 3 out, 1 request, cost unknown"
    )


@given(st.text(), st.integers(min_value=3, max_value=300))
def test_truncate_is_one_bounded_line(text, limit):
    out = truncate(text, limit)
    assert len(out) <= limit
    assert "\n" not in out and "\r" not in out
    if len(" ".join(text.split())) <= limit:
        assert out == " ".join(text.split())
    else:
        assert out.endswith("...")


def test_jsonable():
    value = {"d": Decimal("1.10"), "t": (1, 2), "f": FrozenDict(a=[1]), "b": b"xyz", "u": Usage()}
    out = jsonable(value)
    assert out["d"] == "1.10" and out["t"] == [1, 2] and out["f"] == {"a": [1]} and out["b"] == {"bytes": 3}
    assert out["u"]["cost"] is None
    json.dumps(out)


def _finished(output: object = None, usage: Usage | None = None) -> StreamEvent:
    result = AgentResult(output, (), usage or Usage(requests=2, input_tokens=7, output_tokens=2), "completed",
                         "run-1", None, 2, ("model ignored seed",))
    return StreamEvent("run_finished", "run-1", 2, data=FrozenDict(stop_reason="completed", result=result))


def test_event_to_json_fields():
    call = ToolCall("c1", "add", {"a": 1})
    d = event_to_json(StreamEvent("tool_call", "run-1", 1, tool_call=call))
    assert d == {"kind": "tool_call", "run_id": "run-1", "step": 1,
                 "tool_call": {"id": "c1", "name": "add", "arguments": {"a": 1}}}
    usage = Usage(requests=1, input_tokens=3, output_tokens=1, cost=Decimal("0.001"), cost_source="reported")
    mr = StreamEvent("model_result", "run-1", 1,
                     result=LLMResult(Message("assistant", (call,)), usage, "tool_calls", "m"))
    d = event_to_json(mr)
    assert d["result"]["tool_calls"][0]["name"] == "add"
    assert d["result"]["usage"]["cost"] == "0.001"
    fin = event_to_json(_finished({"answer": Decimal("2.5")}))
    assert fin["output"] == {"answer": "2.5"}
    assert fin["stop_reason"] == "completed" and fin["steps"] == 2
    assert fin["usage"]["cost"] is None and fin["usage"]["input_tokens"] == 7
    assert fin["warnings"] == ["model ignored seed"]
    assert "result" not in fin and "text" not in fin
    started = event_to_json(StreamEvent("run_started", "run-1", 0, data=FrozenDict(agent="a")))
    assert started == {"kind": "run_started", "run_id": "run-1", "step": 0, "agent": "a"}


def test_event_to_json_says_when_a_tool_loop_limit_stopped_the_run_early():
    assert "stopped_early" not in event_to_json(_finished("x"))
    result = AgentResult("x", (), Usage(), "completed", "run-1", stopped_early=True, limit_reached="max_tool_calls")
    fin = event_to_json(StreamEvent("run_finished", "run-1", 1, data=FrozenDict(result=result)))
    assert fin["stopped_early"] is True and fin["limit_reached"] == "max_tool_calls"
    condensed = event_to_json(StreamEvent("context_condensed", "run-1", 3,
                                          data=FrozenDict(tokens_before=900, tokens_after=600, condensed=["c1"])))
    assert condensed["tokens_after"] == 600 and condensed["condensed"] == ["c1"]


def test_json_renderer_writes_lines():
    out = io.StringIO()
    r = JsonRenderer(out)
    r.event(StreamEvent("text", "run-1", 1, text="hé"))
    r.event(_finished("hé"))
    lines = out.getvalue().splitlines()
    assert [json.loads(x)["kind"] for x in lines] == ["text", "run_finished"]
    assert "hé" in lines[0]  # not escaped


def test_human_renderer_streams_and_breaks_lines():
    out, err = io.StringIO(), io.StringIO()
    r = HumanRenderer(out, err)
    r.event(StreamEvent("text", "run-1", 1, text="Let me "))
    r.event(StreamEvent("text", "run-1", 1, text="check."))
    assert out.getvalue() == "Let me check."  # streamed, no newline yet
    r.event(StreamEvent("tool_call", "run-1", 1, tool_call=ToolCall("c1", "lookup", {"q": "[bold]x[/]"})))
    assert out.getvalue() == "Let me check.\n"  # the line is ended before the tool line
    r.event(StreamEvent("tool_result", "run-1", 1, tool_result=ToolResult("c1", "lookup", "a\nb")))
    r.event(StreamEvent("tool_result", "run-1", 1, tool_result=ToolResult("c1", "lookup", "bad", is_error=True)))
    r.event(StreamEvent("output", "run-1", 2, output={"answer": 5}))
    r.event(_finished({"answer": 5}))
    r.close()
    assert out.getvalue() == 'Let me check.\n{\n  "answer": 5\n}\n'
    lines = err.getvalue().splitlines()
    assert lines[0] == '-> lookup {"q": "[bold]x[/]"}'  # rich markup is not interpreted
    assert lines[1] == "<- lookup: a b"
    assert lines[2] == "<- lookup ERROR: bad"
    # stdout is no terminal: no "output:" label on stderr (it would stand alone, the answer elsewhere)
    assert re.fullmatch(r"run run-1: completed in \d+\.\ds, 2 steps, tokens 7 in / 2 out, 2 requests, cost unknown",
                        lines[3]), lines[3]
    assert lines[4] == "warning: model ignored seed"


def test_the_output_label_is_shown_when_the_answer_goes_to_the_terminal():
    class Terminal(io.StringIO):
        def isatty(self) -> bool:
            return True

    out, err = Terminal(), io.StringIO()
    r = HumanRenderer(out, err)
    r.event(StreamEvent("output", "run-1", 1, output={"answer": 5}))
    r.close()
    assert err.getvalue().splitlines()[0] == "output:"
    assert out.getvalue() == '{\n  "answer": 5\n}\n'


@pytest.mark.parametrize(
    ("exc", "code"),
    [
        (ConfigError([ConfigIssue("bad", "agent.x", "f.yaml", 3, 4)]), 2),
        (ComponentNotFound("provider", "x", ["y"]), 2),
        (cli_main.UsageError("nope"), 2),
        (ProviderError("down"), 1),
        (OutputValidationError(["not json"], "raw"), 1),
        (PluginError("factory raised"), 1),
        (cli_main.BuildFailed([ConfigIssue("factory raised", "agent.tools[0]", "f.yaml", 5, 11)]), 1),
        (RuntimeError("?"), 1),
    ],
)
def test_exit_codes(exc, code):
    assert cli_main.exit_code_for(exc) == code


def test_report_config_error_lists_each_issue(capsys, monkeypatch):
    monkeypatch.delenv("SEAMKIT_DEBUG", raising=False)
    exc = ConfigError([ConfigIssue("unknown key", "agent.modle", "a.yaml", 3, 3),
                       ConfigIssue("must be >= 1", "agent.max_steps", "a.yaml", 7, 14)])
    assert cli_main.report_error(exc) == 2
    err = capsys.readouterr().err.splitlines()
    assert err[0] == "seamkit: error: ConfigError: 2 problems in configuration:"
    assert err[1] == "a.yaml:3:3: agent.modle: unknown key"
    assert err[2] == "a.yaml:7:14: agent.max_steps: must be >= 1"


def test_unexpected_error_without_and_with_debug(capsys, monkeypatch):
    monkeypatch.delenv("SEAMKIT_DEBUG", raising=False)
    try:
        raise ValueError("kaput")
    except ValueError as exc:
        assert cli_main.report_error(exc) == 1
    err = capsys.readouterr().err
    assert "unexpected ValueError: kaput" in err and "SEAMKIT_DEBUG=1" in err and "Traceback" not in err
    monkeypatch.setenv("SEAMKIT_DEBUG", "1")
    try:
        raise ValueError("kaput")
    except ValueError as exc:
        cli_main.report_error(exc)
    assert "Traceback" in capsys.readouterr().err


def test_main_returns_codes_in_process(capsys, monkeypatch):
    assert cli_main.main(["--version"]) == 0
    assert capsys.readouterr().out.startswith("seamkit ")
    assert cli_main.main(["nonsense"]) == 2

    def interrupted(argv):
        raise KeyboardInterrupt

    monkeypatch.setattr(cli_main, "_main", interrupted)
    assert cli_main.main([]) == 130
    assert "interrupted" in capsys.readouterr().err


async def test_drive_real_agent_with_human_renderer():
    from seamkit import Agent, tool
    from seamkit._cli.commands import _drive
    from seamkit.testing import ScriptedModel

    @tool(side_effecting=False)
    def add(a: int, b: int) -> int:
        """Add.

        Args:
            a: first
            b: second
        """
        return a + b

    model = ScriptedModel([{"text": "Adding. ", "tool_calls": [{"name": "add", "arguments": {"a": 2, "b": 3}}]},
                           '{"answer": 5}'])
    agent = Agent(model, name="adder", tools=[add],
                  output={"type": "object", "properties": {"answer": {"type": "integer"}}, "required": ["answer"]})
    out, err = io.StringIO(), io.StringIO()
    result = await _drive(agent, "2+3?", {}, HumanRenderer(out, err), {})
    assert result is not None and result.output == {"answer": 5}
    assert out.getvalue() == 'Adding. \n{"answer": 5}\n{\n  "answer": 5\n}\n'
    lines = err.getvalue().splitlines()
    assert lines[:2] == ['-> add {"a": 2, "b": 3}', "<- add: 5"]
    assert re.search(r"completed in \d+\.\ds, 2 steps, tokens 0 in / 0 out, 2 requests, cost local$", lines[2])


# -- printed commands read back by the real parser (outside testing of issue 10, item 18) --------

# argparse reads a word that is exactly "--" as its separator wherever it stands: not an id anyone has
_WORD = st.text(st.characters(blacklist_categories=("Cs", "Cc")), min_size=1, max_size=12).filter(lambda w: w != "--")


@given(run_id=_WORD, call_id=_WORD, agent=st.none() | _WORD, outcome=st.sampled_from(["applied", "not-applied"]))
def test_printed_settle_and_resume_commands_parse_back_to_what_they_name(run_id, call_id, agent, outcome):
    # regression: an agent file or a call id starting with "-" (call ids are the provider's) made
    # argparse read it as an option, so the printed command failed when pasted
    import shlex

    from seamkit._cli.render import resume_command, settle_command

    parser, _ = cli_main.build_parser()
    settle = parser.parse_args(shlex.split(settle_command(run_id, call_id, outcome, agent_file=agent))[1:])
    assert (settle.run_id, settle.call_id, settle.outcome, settle.agent) == (run_id, call_id, outcome, agent)
    resume = parser.parse_args(shlex.split(resume_command(run_id, ("--approve", call_id), agent_file=agent))[1:])
    assert (resume.run_id, resume.approve, resume.agent) == (run_id, [call_id], agent)
    finished = parser.parse_args(shlex.split(resume_command(run_id, "--allow-finished", agent_file=agent))[1:])
    assert (finished.run_id, finished.allow_finished, finished.agent) == (run_id, True, agent)


def test_every_unsettled_call_gets_its_settle_commands():
    from seamkit._cli.render import uncertain_text
    from seamkit._durability.ledger import UncertainEffect

    effects = [UncertainEffect(call_id, "pay", f"run-1:1:{call_id}", "it raised", FrozenDict(amount=1))
               for call_id in ("call_1", "-call 2")]
    text = uncertain_text("run-1", effects, agent_file="a b.yaml")
    # regression: only the first call had commands
    for outcome in ("applied", "not-applied"):
        assert f"seamkit runs settle run-1 call_1 {outcome} --agent 'a b.yaml'" in text, text
        assert f"seamkit runs settle --agent 'a b.yaml' -- run-1 '-call 2' {outcome}" in text, text


def test_secret_named_tool_arguments_are_never_printed():
    secret = "sk-live-0123456789abcdef"
    call = ToolCall("c1", "login", {"user": "ada", "api_key": secret, "opts": {"headers": {"Authorization": secret}},
                                    "items": [{"password": secret}]})
    out, err = io.StringIO(), io.StringIO()
    human = HumanRenderer(out, err)
    human.event(StreamEvent("tool_call", "run-1", 1, tool_call=call))
    human.close()
    as_json = io.StringIO()
    JsonRenderer(as_json).event(StreamEvent("tool_call", "run-1", 1, tool_call=call))
    for shown in (err.getvalue(), as_json.getvalue()):
        assert secret not in shown and "ada" in shown and "***" in shown
    assert json.loads(as_json.getvalue())["tool_call"]["arguments"] == {
        "user": "ada", "api_key": "***", "opts": {"headers": {"Authorization": "***"}}, "items": [{"password": "***"}]}
