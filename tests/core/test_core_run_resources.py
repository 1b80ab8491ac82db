"""Run resources (``seamkit._runtime.resources``), tool outputs with images and errors
(``ToolOutput``), ``ToolUnavailable`` and ``ctx.warn``: the host contract tool sources such as MCP
servers are built on."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from seamkit import Agent
from seamkit._durability.checkpointer import Checkpointer
from seamkit._runtime.context import RunContext
from seamkit._runtime.resources import RunResources
from seamkit._tools import tool
from seamkit.errors import FailureClass, ToolUnavailable
from seamkit.testing import ScriptedModel
from seamkit.values import ImageBlock, ToolOutput, ToolResult

PNG = b"\x89PNG\r\n\x1a\n" + b"\x00" * 16


class Conn:
    """A resource that records its life."""

    def __init__(self, log: list[str], name: str, *, fail_close: bool = False) -> None:
        self.log, self.name, self.fail_close = log, name, fail_close
        log.append(f"open {name}")

    async def aclose(self) -> None:
        self.log.append(f"close {self.name}")
        if self.fail_close:
            raise OSError("already gone")


def _opener(log: list[str], name: str, *, delay: float = 0.0, fail_close: bool = False) -> Any:
    async def open_() -> Conn:
        await asyncio.sleep(delay)
        return Conn(log, name, fail_close=fail_close)

    return open_


async def test_concurrent_first_uses_open_once_and_close_in_reverse_order() -> None:
    log: list[str] = []
    res = RunResources()
    a1, a2 = await asyncio.gather(res.get("a", _opener(log, "a", delay=0.01)), res.get("a", _opener(log, "a2")))
    assert a1 is a2
    await res.get("b", _opener(log, "b"))
    assert res.keys == ("a", "b")
    await res.aclose()
    assert log == ["open a", "open b", "close b", "close a"]
    with pytest.raises(RuntimeError, match="closed"):
        await res.get("a", _opener(log, "again"))


async def test_a_failing_open_leaves_nothing_and_a_failing_close_does_not_stop_the_others(
        caplog: pytest.LogCaptureFixture) -> None:
    log: list[str] = []
    res = RunResources()

    async def broken() -> Conn:
        raise ConnectionRefusedError("no server")

    with pytest.raises(ConnectionRefusedError):
        await res.get("a", broken)
    assert res.keys == ()
    await res.get("a", _opener(log, "a"))
    await res.get("b", _opener(log, "b", fail_close=True))
    await res.aclose()
    assert log == ["open a", "open b", "close b", "close a"]
    assert "closing the run resource 'b' failed" in caplog.text


async def test_discard_closes_one_and_the_next_use_opens_it_again() -> None:
    log: list[str] = []
    res = RunResources()
    await res.get("a", _opener(log, "a"))
    await res.discard("a")
    await res.get("a", _opener(log, "a"))
    await res.aclose()
    assert log == ["open a", "close a", "open a", "close a"]


async def test_ctx_resource_outside_a_run_says_who_would_close_it() -> None:
    with pytest.raises(RuntimeError, match="no run resources"):
        await RunContext().resource("a", _opener([], "a"))


def _session_tool(log: list[str], *, fail: BaseException | None = None) -> Any:
    @tool(side_effecting=False)
    async def lookup(ctx: RunContext) -> str:
        """Look something up in the session the run opened; returns the session's name."""
        conn = await ctx.resource("session", _opener(log, "session"))
        if fail is not None:
            raise fail
        return conn.name

    return lookup


def _calling(n: int = 1, tool_name: str = "lookup") -> ScriptedModel:
    turns: list[Any] = [{"tool_calls": [{"name": tool_name, "arguments": {}}]} for _ in range(n)]
    return ScriptedModel([*turns, "done"])


async def test_an_agent_run_opens_a_resource_once_and_closes_it_when_it_answers() -> None:
    log: list[str] = []
    agent = Agent(model=_calling(3), tools=(_session_tool(log),))
    result = await agent.run("go")
    assert result.output == "done"
    assert log == ["open session", "close session"]
    assert [r.content for m in result.transcript for r in m.tool_results] == ["session"] * 3


async def test_resources_close_when_the_run_fails_or_is_cancelled() -> None:
    log: list[str] = []
    stop = ToolUnavailable("lookup", "the server died", failure_class=FailureClass.SERVER_ERROR, stop_run=True)
    agent = Agent(model=_calling(), tools=(_session_tool(log, fail=stop),))
    with pytest.raises(ToolUnavailable, match="the server died"):
        await agent.run("go")
    assert log == ["open session", "close session"]

    log.clear()
    started = asyncio.Event()

    @tool(side_effecting=False)
    async def slow(ctx: RunContext) -> str:
        """Open the session and wait for a long time; returns nothing useful."""
        await ctx.resource("session", _opener(log, "session"))
        started.set()
        await asyncio.sleep(60)
        return "late"

    task = asyncio.ensure_future(Agent(model=_calling(1, "slow"), tools=(slow,)).run("go"))
    await started.wait()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert log == ["open session", "close session"]


async def test_a_resource_is_closed_when_a_run_suspends_for_approval_and_reopened_on_resume() -> None:
    from seamkit.testing import MemoryStore

    log: list[str] = []

    @tool(side_effecting=True)
    async def write(ctx: RunContext) -> str:
        """Write through the session; returns the session's name."""
        return (await ctx.resource("session", _opener(log, "session"))).name

    model = ScriptedModel([{"tool_calls": [{"name": "lookup", "arguments": {}}]},
                           {"tool_calls": [{"name": "write", "arguments": {}}]}, "done"])
    agent = Agent(model=model, tools=(_session_tool(log), write), checkpointer=Checkpointer(MemoryStore()),
                  approvals={"write": "every_call"})
    first = await agent.run("go")
    assert first.stop_reason == "suspended"
    assert log == ["open session", "close session"]
    from seamkit._durability.approvals import approve

    done = await agent.resume(first.run_id, decisions={c.call_id: approve() for c in first.pending_approvals})
    assert done.output == "done"
    assert log == ["open session", "close session", "open session", "close session"]


async def test_a_child_run_shares_its_parents_resources() -> None:
    from seamkit._agent.as_tool import agent_tool

    log: list[str] = []
    inner = Agent(model=_calling(), name="inner", tools=(_session_tool(log),))
    outer = Agent(model=ScriptedModel([{"tool_calls": [{"name": "lookup", "arguments": {}}]},
                                       {"tool_calls": [{"name": "inner", "arguments": {"task": "x"}}]}, "ok"]),
                  tools=(_session_tool(log), agent_tool(inner, description="Ask the inner agent; returns its answer.")))
    await outer.run("go")
    assert log == ["open session", "close session"]


async def test_tool_output_keeps_images_and_marks_errors() -> None:
    @tool(side_effecting=False)
    async def snapshot(fail: bool) -> ToolOutput:
        """Take a snapshot; returns a caption and the image, or an error the model should see."""
        if fail:
            return ToolOutput({"error": "camera offline"}, is_error=True)
        return ToolOutput({"caption": "a cat"}, images=(ImageBlock("image/png", data=PNG),))

    model = ScriptedModel([{"tool_calls": [{"name": "snapshot", "arguments": {"fail": False}},
                                           {"name": "snapshot", "arguments": {"fail": True}}]}, "done"])
    result = await Agent(model=model, tools=(snapshot,)).run("go")
    ok, err = [r for m in result.transcript for r in m.tool_results]
    assert (ok.content, ok.is_error, ok.images) == ('{"caption":"a cat"}', False, (ImageBlock("image/png", data=PNG),))
    assert (err.content, err.is_error, err.images) == ('{"error":"camera offline"}', True, ())


async def test_images_in_a_tool_result_survive_a_checkpoint() -> None:
    from seamkit._durability.codec import dumps, loads

    r = ToolResult("c1", "snapshot", "{}", False, images=(ImageBlock("image/png", data=PNG),))
    assert loads(dumps(r)) == r
    # a checkpoint written before images existed decodes with none
    old = dumps(ToolResult("c1", "snapshot", "{}")).replace(',"images":[]', "").replace('"images":[],', "")
    assert loads(old) == ToolResult("c1", "snapshot", "{}")


async def test_tool_unavailable_becomes_a_classified_error_result_unless_it_stops_the_run() -> None:
    log: list[str] = []
    hung = ToolUnavailable("lookup", "no answer within 5 s", failure_class=FailureClass.TIMEOUT)
    result = await Agent(model=_calling(), tools=(_session_tool(log, fail=hung),)).run("go")
    (r,) = [r for m in result.transcript for r in m.tool_results]
    assert r.is_error and r.content == "ToolUnavailable (timeout): no answer within 5 s"
    assert result.output == "done"


async def test_tool_unavailable_with_stop_run_stops_a_durable_side_effecting_call_that_was_not_applied() -> None:
    from seamkit.errors import EffectNotApplied
    from seamkit.testing import MemoryStore

    @tool(side_effecting=True)
    async def write() -> str:
        """Write through a server that is down; returns never."""
        down = ToolUnavailable("write", "the server is not running", stop_run=True)
        raise EffectNotApplied(str(down)) from down

    store = MemoryStore()
    agent = Agent(model=_calling(1, "write"), tools=(write,), checkpointer=Checkpointer(store))
    with pytest.raises(ToolUnavailable, match="not running"):
        await agent.run("go", ctx=RunContext(run_id="run_stop"))
    snap = await Checkpointer(store).latest("run_stop")
    assert snap is not None and snap.status == "failed"


async def test_ctx_warn_reaches_the_result_once() -> None:
    @tool(side_effecting=False)
    async def flaky(ctx: RunContext) -> str:
        """Answer after a restart of the server behind it; returns ok."""
        ctx.warn("the server behind 'flaky' restarted")
        return "ok"

    result = await Agent(model=_calling(2, "flaky"), tools=(flaky,)).run("go")
    assert result.warnings.count("the server behind 'flaky' restarted") == 1


class _Prepared:
    """A tool whose prepare() answers ``reason`` (or raises it, when it is an exception)."""

    def __init__(self, name: str, reason: Any, log: list[str]) -> None:
        from seamkit.values import ToolSchema, freeze

        self.schema = ToolSchema(name, f"The {name} tool; returns its name.",
                                 freeze({"type": "object", "properties": {}}), False)
        self.reason, self.log = reason, log

    def validate(self, arguments: Any) -> dict[str, Any]:
        return dict(arguments)

    async def prepare(self, ctx: RunContext) -> str | None:
        self.log.append(f"prepare {self.schema.name}")
        if isinstance(self.reason, Exception):
            raise self.reason
        return self.reason  # type: ignore[no-any-return]

    async def invoke(self, arguments: Any, ctx: RunContext) -> str:
        self.log.append(f"invoke {self.schema.name}")
        return self.schema.name


async def test_a_tool_whose_prepare_gives_a_reason_is_never_offered_and_the_run_says_why() -> None:
    log: list[str] = []
    ok = _Prepared("ok", None, log)
    changed = _Prepared("changed", "its definition changed since it was approved", log)
    broken = _Prepared("broken", OSError("server down"), log)
    model = ScriptedModel([{"tool_calls": [{"name": "changed", "arguments": {}}, {"name": "ok", "arguments": {}},
                                           {"name": "broken", "arguments": {}}]}, "done"])
    result = await Agent(model=model, tools=(ok, changed, broken)).run("go")
    assert [t.name for t in model.requests[0].tools] == ["ok", "broken"]  # never shown to the model
    assert sorted(x for x in log if x.startswith("prepare")) == ["prepare broken", "prepare changed", "prepare ok"]
    assert "invoke changed" not in log and "invoke ok" in log and "invoke broken" in log
    refused = next(r for m in result.transcript for r in m.tool_results if r.name == "changed")
    assert refused.is_error and "unknown tool" in refused.content
    assert "tool 'changed' is not offered in this run: its definition changed since it was approved" in result.warnings
    assert log.count("prepare ok") == 1  # once per run, not per turn


async def test_prepare_is_asked_again_when_a_run_resumes() -> None:
    from seamkit._durability.approvals import approve
    from seamkit.testing import MemoryStore

    log: list[str] = []

    @tool(side_effecting=True)
    async def write() -> str:
        """Write something; returns ok."""
        return "ok"

    gate = _Prepared("gated", None, log)
    model = ScriptedModel([{"tool_calls": [{"name": "write", "arguments": {}}]}, "done"])
    agent = Agent(model=model, tools=(write, gate), checkpointer=Checkpointer(MemoryStore()),
                  approvals={"write": "every_call"})
    first = await agent.run("go")
    assert first.stop_reason == "suspended" and log == ["prepare gated"]
    gate.reason = "withdrawn by its server"
    done = await agent.resume(first.run_id, decisions={c.call_id: approve() for c in first.pending_approvals})
    assert log == ["prepare gated", "prepare gated"]
    assert [t.name for t in model.requests[-1].tools] == ["write"]
    assert "tool 'gated' is not offered in this run: withdrawn by its server" in done.warnings


async def test_a_call_waiting_for_approval_whose_tool_is_not_offered_on_resume_waits_no_more() -> None:
    from seamkit._durability.approvals import approve
    from seamkit.testing import MemoryStore
    from seamkit.values import ToolSchema

    log: list[str] = []
    gated = _Prepared("gated", None, log)
    gated.schema = ToolSchema("gated", gated.schema.description, gated.schema.parameters, True)

    @tool(side_effecting=True)
    async def write() -> str:
        """Write something; returns ok."""
        return "ok"

    model = ScriptedModel([{"tool_calls": [{"name": "gated", "arguments": {}}]},
                           {"tool_calls": [{"name": "write", "arguments": {}}]}, "done"])
    agent = Agent(model=model, tools=(gated, write), checkpointer=Checkpointer(MemoryStore()),
                  approvals={"gated": "every_call", "write": "every_call"})
    first = await agent.run("go")
    assert [p.tool for p in first.pending_approvals] == ["gated"]
    gated.reason = "its definition changed"
    second = await agent.resume(first.run_id, decisions={c.call_id: approve() for c in first.pending_approvals})
    # the refused call waits no more; the next call needing approval is asked for, not taken as rejected
    assert second.stop_reason == "suspended"
    assert [p.tool for p in second.pending_approvals] == ["write"]
    done = await agent.resume(first.run_id, decisions={c.call_id: approve() for c in second.pending_approvals})
    assert (done.stop_reason, done.output, done.pending_approvals) == ("completed", "done", ())
    assert "invoke gated" not in log
