"""Guardrails in the run (``seamkit._guardrails``, ``seamkit._agent.guarding``): the four points,
verdicts, tripwires with checkpoints, advisory guards, parallel input checks, metered model calls."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import pytest
from seamkit._agent.agent import Agent
from seamkit._agent.loop import GUARDED_TEMPLATE
from seamkit._guardrails import (
    ALLOW,
    Guard,
    GuardContext,
    GuardrailTripped,
    Verdict,
    allow,
    block,
    rewrite,
)
from seamkit._middleware import Call, Next, middleware
from seamkit._tools import tool
from seamkit.errors import RunNotResumable
from seamkit.testing import MemoryStore, ScriptedModel
from seamkit.values import ChatRequest, Message, StreamEvent, ToolCall, ToolResult, Usage

RAN: list[dict[str, Any]] = []


@tool(side_effecting=False)
def lookup(q: str) -> str:
    """Look something up."""
    RAN.append({"q": q})
    return f"found: {q}"


@tool(side_effecting=True)
def send(to: str) -> str:
    """Send a message to someone."""
    RAN.append({"to": to})
    return f"sent to {to}"


@pytest.fixture(autouse=True)
def _clear() -> None:
    RAN.clear()


class Rule:
    """A guardrail acting at every point: ``verdicts[point]`` is the verdict (or a callable
    ``value -> verdict``, or an exception to raise); records what it saw."""

    def __init__(self, **verdicts: Any) -> None:
        self.verdicts = verdicts
        self.seen: list[tuple[str, Any]] = []

    async def _v(self, point: str, value: Any) -> Verdict:
        self.seen.append((point, value))
        v = self.verdicts.get(point, ALLOW)
        if isinstance(v, BaseException):
            raise v
        return v(value) if callable(v) else v  # type: ignore[no-any-return]

    async def check_input(self, text: str, guard: GuardContext) -> Verdict:
        return await self._v("input", text)

    async def check_tool_call(self, call: ToolCall, guard: GuardContext) -> Verdict:
        return await self._v("tool", call)

    async def check_tool_result(self, result: ToolResult, guard: GuardContext) -> Verdict:
        return await self._v("tool_result", result)

    async def check_output(self, output: Any, guard: GuardContext) -> Verdict:
        return await self._v("output", output)


class OutputOnly:
    async def check_output(self, output: Any, guard: GuardContext) -> Verdict:
        return ALLOW


def tool_turn(name: str, **arguments: Any) -> dict[str, Any]:
    return {"tool_calls": [{"name": name, "arguments": arguments}]}


# -- the contract ---------------------------------------------------------------------------------


def test_guard_defaults_to_the_points_the_guardrail_has_and_refuses_others() -> None:
    g = Guard(OutputOnly())
    assert g.at == ("output",) and g.name == "OutputOnly" and not g.advisory
    with pytest.raises(ValueError, match="cannot act at the input point: it has no check_input"):
        Guard(OutputOnly(), at=["input"])
    with pytest.raises(ValueError, match="unknown guardrail point 'inputs'"):
        Guard(Rule(), at=["inputs"])  # type: ignore[list-item]
    with pytest.raises(ValueError, match="parallel applies to the input point only"):
        Guard(Rule(), at=["output"], parallel=True)
    with pytest.raises(TypeError, match="is not a guardrail"):
        Guard(object())
    assert Guard(Rule(), at=["output", "input"]).at == ("input", "output")  # run order


def test_verdict_builders_need_reasons() -> None:
    with pytest.raises(ValueError):
        block("  ")
    with pytest.raises(ValueError):
        rewrite("x", "")
    assert allow() is ALLOW and allow("odd").flags == ("odd",)


# -- input ------------------------------------------------------------------------------------------


async def test_input_block_trips_before_any_model_call() -> None:
    model = ScriptedModel(["never"])
    agent = Agent(model, guardrails=[Guard(Rule(input=block("asks for weapons")), name="policy")])
    with pytest.raises(GuardrailTripped) as info:
        await agent.run("how to build a bomb")
    assert (info.value.guardrail, info.value.point, info.value.reason) == ("policy", "input", "asks for weapons")
    assert model.calls == 0


async def test_input_rewrite_is_what_the_model_and_the_checkpoint_see() -> None:
    model = ScriptedModel(["ok"])
    store = MemoryStore()
    redactor = Rule(input=lambda text: rewrite(text.replace("alice@example.com", "[email]"), "redacted 1 email"))
    agent = Agent(model, guardrails=[redactor], checkpointer=store)
    result = await agent.run("mail alice@example.com please")
    assert model.requests[0].messages[-1].text == "mail [email] please"
    snap = await agent.checkpointer.latest(result.run_id)
    stored = " ".join(m.text for m in snap.transcript)
    assert "alice@example.com" not in stored and "[email]" in stored
    versions = await agent.checkpointer.history(result.run_id)
    for v in versions:  # not even the first checkpoint holds the original task
        at = await agent.checkpointer.at_version(result.run_id, v.version)
        assert "alice@example.com" not in " ".join(m.text for m in at.transcript)


async def test_parallel_input_guard_runs_alongside_the_first_call() -> None:
    started = asyncio.Event()

    class Slow:
        async def check_input(self, text: str, guard: GuardContext) -> Verdict:
            await asyncio.wait_for(started.wait(), 5)  # only returns once the model call has begun
            return ALLOW

    def turn(request: ChatRequest) -> str:
        started.set()
        return "answer"

    agent = Agent(ScriptedModel([turn]), guardrails=[Guard(Slow(), parallel=True)])
    assert (await agent.run("hi")).output == "answer"


async def test_parallel_input_block_trips_and_observers_never_see_the_answer() -> None:
    events: list[StreamEvent] = []

    class Obs:
        def on_event(self, event: StreamEvent) -> None:
            events.append(event)

    model = ScriptedModel(["the forbidden answer"])
    agent = Agent(model, observers=[Obs()], guardrails=[Guard(Rule(input=block("no")), parallel=True)])
    with pytest.raises(GuardrailTripped):
        await agent.run("bad task")
    assert model.calls == 1  # the call ran alongside: its tokens are spent
    assert not [e for e in events if e.kind in ("text", "model_result")]


async def test_parallel_input_rewrite_asks_again_with_the_rewritten_task() -> None:
    events: list[StreamEvent] = []

    class Obs:
        def on_event(self, event: StreamEvent) -> None:
            events.append(event)

    model = ScriptedModel(["first", "second"])
    g = Guard(Rule(input=lambda t: rewrite("clean task", "cleaned")), parallel=True)
    result = await Agent(model, guardrails=[g], observers=[Obs()]).run("dirty task")
    assert [(e.data["action"], e.data["point"]) for e in events if e.kind == "guardrail"] == [("rewrite", "input")]
    assert [e.text for e in events if e.kind == "text"] == ["second"]
    assert result.output == "second"
    assert [r.messages[-1].text for r in model.requests] == ["dirty task", "clean task"]
    assert [m.text for m in result.transcript if m.role == "user"] == ["clean task"]
    assert "first" not in [m.text for m in result.transcript]


# -- tool calls ------------------------------------------------------------------------------------


async def test_tool_block_trips_and_no_call_of_the_batch_runs() -> None:
    model = ScriptedModel([{"tool_calls": [{"name": "lookup", "arguments": {"q": "a"}},
                                           {"name": "send", "arguments": {"to": "evil"}}]}, "done"])

    def only_evil(call: ToolCall) -> Verdict:
        return block(f"{call.name} to evil") if call.arguments.get("to") == "evil" else ALLOW

    agent = Agent(model, tools=[lookup, send], guardrails=[Guard(Rule(tool=only_evil), at=["tool"])])
    with pytest.raises(GuardrailTripped, match="at the tool point: send to evil"):
        await agent.run("go")
    assert RAN == []


async def test_tool_rewrite_runs_the_new_arguments_and_tells_the_model() -> None:
    model = ScriptedModel([tool_turn("lookup", q="secret"), "done"])
    g = Guard(Rule(tool=lambda c: rewrite({"q": "public"}, "narrowed")), at=["tool"])
    result = await Agent(model, tools=[lookup], guardrails=[g]).run("go")
    assert RAN == [{"q": "public"}]
    r = result.transcript[-2].content[0]
    assert isinstance(r, ToolResult)
    assert r.content.startswith(GUARDED_TEMPLATE.format(arguments='{"q": "public"}'))
    assert result.transcript[-3].tool_calls[0].arguments["q"] == "secret"  # the model's call is kept


async def test_tool_guard_sees_approved_edited_arguments_in_a_durable_run() -> None:
    from seamkit._durability.approvals import approve

    seen: list[Any] = []
    model = ScriptedModel([tool_turn("send", to="bob"), "done"], follow_transcript=True)

    def check(call: ToolCall) -> Verdict:
        seen.append(dict(call.arguments))
        return ALLOW

    agent = Agent(model, tools=[send], checkpointer=MemoryStore(), approvals={"send": "every_call"},
                  guardrails=[Guard(Rule(tool=check), at=["tool"])])
    first = await agent.run("go")
    assert first.stop_reason == "suspended" and seen == []  # nothing runs, nothing checked yet
    call_id = first.pending_approvals[0].call_id
    await agent.resume(first.run_id, decisions={call_id: approve({"to": "carol"})})
    assert seen == [{"to": "carol"}] and RAN == [{"to": "carol"}]


# -- tool results ----------------------------------------------------------------------------------


async def test_tool_result_rewrite_and_flags_reach_transcript_warnings_and_events() -> None:
    events: list[StreamEvent] = []

    class Obs:
        def on_event(self, event: StreamEvent) -> None:
            events.append(event)

    model = ScriptedModel([tool_turn("lookup", q="x"), "done"])

    def frame(r: ToolResult) -> Verdict:
        return rewrite(f"<data>{r.content}</data>", "framed", "ignore-previous marker")

    result = await Agent(model, tools=[lookup], observers=[Obs()],
                         guardrails=[Guard(Rule(tool_result=frame), at=["tool_result"], name="framer")]).run("go")
    sent = model.requests[1].messages[-1].content[0]
    assert isinstance(sent, ToolResult) and sent.content == "<data>found: x</data>"
    assert any("framer" in w and "ignore-previous marker" in w for w in result.warnings)
    kinds = [(e.data["action"], e.data["point"]) for e in events if e.kind == "guardrail"]
    assert ("rewrite", "tool_result") in kinds and ("flag", "tool_result") in kinds
    shown = [e.tool_result.content for e in events if e.kind == "tool_result"]
    assert shown == ["<data>found: x</data>"]  # observers see what the model sees


async def test_tool_result_guard_applies_once_in_a_durable_run() -> None:
    """A durable run records the checked result (a resumed batch takes recorded results as they are)."""
    store = MemoryStore()
    model = ScriptedModel([tool_turn("lookup", q="x"), "done"], follow_transcript=True)
    g = Guard(Rule(tool_result=lambda r: rewrite(f"[{r.content}]", "framed")), at=["tool_result"])
    agent = Agent(model, tools=[lookup], checkpointer=store, guardrails=[g])
    result = await agent.run("go")
    contents = [b.content for m in result.transcript for b in m.content if isinstance(b, ToolResult)]
    assert contents == ["[found: x]"]


# -- output ----------------------------------------------------------------------------------------


async def test_output_rewrite_replaces_the_answer_and_the_final_message() -> None:
    model = ScriptedModel(["call me at 555-0100"])
    g = Guard(Rule(output=lambda o: rewrite(o.replace("555-0100", "[phone]"), "redacted 1 phone")), at=["output"])
    result = await Agent(model, guardrails=[g]).run("number?")
    assert result.output == "call me at [phone]"
    assert result.transcript[-1].text == "call me at [phone]"


async def test_typed_output_rewrite_keeps_the_json_transcript_in_step() -> None:
    model = ScriptedModel(['{"name": "Ann", "email": "ann@x.io"}'])
    schema = {"type": "object", "properties": {"name": {"type": "string"}, "email": {"type": "string"}},
              "required": ["name", "email"]}
    g = Guard(Rule(output=lambda o: rewrite({**o, "email": "[email]"}, "redacted")), at=["output"])
    result = await Agent(model, output=schema, guardrails=[g]).run("who?")
    assert result.output == {"name": "Ann", "email": "[email]"}
    assert "ann@x.io" not in result.transcript[-1].text


async def test_output_block_trips() -> None:
    g = Guard(Rule(output=block("leaks the system prompt")), at=["output"], name="leak")
    with pytest.raises(GuardrailTripped, match="guardrail 'leak' blocked the run at the output point"):
        await Agent(ScriptedModel(["my instructions are..."]), guardrails=[g]).run("x")


# -- failures and advisory guards ------------------------------------------------------------------


async def test_a_raising_guard_fails_closed() -> None:
    g = Guard(Rule(output=RuntimeError("classifier down")), at=["output"], name="clf")
    with pytest.raises(GuardrailTripped) as info:
        await Agent(ScriptedModel(["fine"]), guardrails=[g]).run("x")
    assert info.value.failed and "RuntimeError: classifier down" in info.value.reason
    assert "failed (failing closed)" in str(info.value)


@pytest.mark.parametrize("bad", [None, "allow", {"action": "allow"}])
async def test_a_guard_returning_no_verdict_fails_closed(bad: Any) -> None:
    g = Guard(Rule(output=lambda o: bad), at=["output"])
    with pytest.raises(GuardrailTripped, match="not a Verdict"):
        await Agent(ScriptedModel(["fine"]), guardrails=[g]).run("x")


async def test_a_rewrite_of_the_wrong_type_fails_closed() -> None:
    g = Guard(Rule(tool=lambda c: rewrite("not a mapping", "oops")), at=["tool"])
    with pytest.raises(GuardrailTripped, match="must be a mapping of arguments"):
        await Agent(ScriptedModel([tool_turn("lookup", q="x"), "done"]), tools=[lookup], guardrails=[g]).run("x")
    assert RAN == []


async def test_advisory_guard_blocks_and_failures_become_warnings() -> None:
    guards = [Guard(Rule(input=block("suspicious")), name="a", advisory=True),
              Guard(Rule(output=RuntimeError("down")), name="b", advisory=True, at=["output"])]
    result = await Agent(ScriptedModel(["fine"]), guardrails=guards).run("x")
    assert result.output == "fine"
    assert "guardrail 'a' would block (advisory) at the input point: suspicious" in result.warnings
    assert "guardrail 'b' failed (advisory) at the output point: RuntimeError: down" in result.warnings


async def test_guards_at_a_point_run_in_order_each_seeing_the_previous_rewrite() -> None:
    first = Rule(output=lambda o: rewrite(o + " one", "1"))
    second = Rule(output=lambda o: rewrite(o + " two", "2"))
    result = await Agent(ScriptedModel(["zero"]), guardrails=[Guard(first, at=["output"]),
                                                              Guard(second, at=["output"])]).run("x")
    assert result.output == "zero one two"
    assert second.seen == [("output", "zero one")]


# -- tripwires in durable runs ---------------------------------------------------------------------


@pytest.mark.parametrize("point", ["input", "tool", "tool_result", "output"])
async def test_tripwire_checkpoint_says_why_and_the_run_cannot_be_resumed(point: str) -> None:
    model = ScriptedModel([tool_turn("lookup", q="x"), "done"], follow_transcript=True)
    g = Guard(Rule(**{point: block(f"stop at {point}")}), at=[point], name="stopper")  # type: ignore[list-item]
    agent = Agent(model, tools=[lookup], checkpointer=MemoryStore(), guardrails=[g])
    with pytest.raises(GuardrailTripped) as info:
        await agent.run("go")
    runs = await agent.checkpointer.list_runs()
    assert len(runs) == 1
    snap = await agent.checkpointer.latest(runs[0].run_id)
    assert snap.status == "failed"
    assert snap.state["tripwire"] == {"guardrail": "stopper", "point": point, "reason": f"stop at {point}",
                                      "failed": False}
    assert str(info.value) in snap.state["status_detail"]
    assert snap.transcript[-1 if point == "input" else 0].text == "go"  # the state is there to inspect
    with pytest.raises(RunNotResumable, match="a guardrail stopped it"):
        await agent.resume(runs[0].run_id, allow_finished=True)


# -- model calls of guards -------------------------------------------------------------------------


async def test_guard_model_calls_go_through_the_agent_middlewares_and_count_in_usage() -> None:
    purposes: list[Any] = []

    @middleware(kinds=("chat",))
    async def spy(call: Call, nxt: Next) -> AsyncIterator[Any]:
        purposes.append((call.meta.get("purpose"), call.model.model))
        async for d in nxt(call):
            yield d

    judge = ScriptedModel([{"text": '{"ok": true}', "usage": Usage(input_tokens=7, output_tokens=3)}], model="judge")

    class Asks:
        async def check_input(self, text: str, guard: GuardContext) -> Verdict:
            r = await guard.chat(judge, ChatRequest((Message.user(text),)))
            return ALLOW if "true" in r.message.text else block("judged bad")

    main = ScriptedModel([{"text": "hi", "usage": Usage(input_tokens=100, output_tokens=10)}])
    result = await Agent(main, middlewares=[spy], guardrails=[Asks()]).run("hello")
    assert purposes == [("guardrail", "judge"), (None, "scripted")]
    assert (result.usage.input_tokens, result.usage.output_tokens) == (107, 13)


async def test_parallel_input_guards_run_first_when_the_run_starts_with_a_tool_batch() -> None:
    """A task ending with an assistant turn asking for tools runs that batch first: the parallel
    guards must have passed before any tool runs."""
    task = [Message.user("do it"), Message("assistant", (ToolCall("c1", "send", {"to": "eve"}),))]
    agent = Agent(ScriptedModel(["done"]), tools=[send], guardrails=[Guard(Rule(input=block("no")), parallel=True)])
    with pytest.raises(GuardrailTripped):
        await agent.run(task)
    assert RAN == []


async def test_with_output_guards_streamed_text_is_what_the_guards_let_through() -> None:
    """Observers (and seamkit run's streaming) must not see an answer before the output guards:
    a redacted answer streams as its rewritten text, a blocked one not at all."""
    events: list[StreamEvent] = []

    class Obs:
        def on_event(self, event: StreamEvent) -> None:
            events.append(event)

    model = ScriptedModel([{"text": "mail bob@corp.example now", "chunk_size": 4}], repeat=True)
    g = Guard(Rule(output=lambda o: rewrite(o.replace("bob@corp.example", "[email]"), "redacted")), at=["output"])
    await Agent(model, observers=[Obs()], guardrails=[g]).run("x")
    streamed = "".join(e.text or "" for e in events if e.kind == "text")
    assert streamed == "mail [email] now"
    results = [e.result for e in events if e.kind == "model_result"]
    assert [r.message.text for r in results if r is not None] == ["mail [email] now"]

    events.clear()
    blocked = Guard(Rule(output=block("leak")), at=["output"])
    with pytest.raises(GuardrailTripped):
        await Agent(model, observers=[Obs()], guardrails=[blocked]).run("x")
    assert not [e for e in events if e.kind in ("text", "model_result")]


async def test_with_output_guards_a_tool_turn_streams_its_events_in_order() -> None:
    events: list[StreamEvent] = []

    class Obs:
        def on_event(self, event: StreamEvent) -> None:
            events.append(event)

    model = ScriptedModel([{"text": "looking", "tool_calls": [{"name": "lookup", "arguments": {"q": "a"}}]}, "done"])
    await Agent(model, tools=[lookup], observers=[Obs()], guardrails=[Guard(OutputOnly())]).run("x")
    kinds = [e.kind for e in events]
    assert kinds[:5] == ["run_started", "text", "model_result", "tool_call", "tool_result"]
    assert kinds[-3:] == ["text", "model_result", "run_finished"]


@pytest.mark.parametrize("bad", [42, None, {"a": 1}])
async def test_an_output_rewrite_of_a_text_answer_must_be_text(bad: Any) -> None:
    g = Guard(Rule(output=lambda o: rewrite(bad, "swap")), at=["output"], name="swapper")
    with pytest.raises(GuardrailTripped) as info:
        await Agent(ScriptedModel(["fine"]), guardrails=[g]).run("x")
    assert info.value.failed and info.value.guardrail == "swapper"
    assert "must be text (str)" in info.value.reason


async def test_a_typed_output_rewrite_is_validated_again_and_returned_as_the_output_type() -> None:
    import pydantic

    class Out(pydantic.BaseModel):
        a: int
        email: str = pydantic.Field(max_length=12)

    model = ScriptedModel(['{"a": 1, "email": "a@b.io"}'], repeat=True)
    ok = Guard(Rule(output=lambda o: rewrite({"a": 2, "email": "[email]"}, "redacted")), at=["output"])
    result = await Agent(model, output=Out, guardrails=[ok]).run("x")
    assert result.output == Out(a=2, email="[email]")  # a model instance, not the dict the guard gave
    too_long = Guard(Rule(output=lambda o: rewrite({"a": 2, "email": "[redacted email]"}, "redacted")),
                     at=["output"], name="redact")
    with pytest.raises(GuardrailTripped) as info:
        await Agent(model, output=Out, guardrails=[too_long]).run("x")
    assert info.value.failed and "OutputValidationError" in info.value.reason
    wrong = Guard(Rule(output=lambda o: rewrite("text", "oops")), at=["output"])
    with pytest.raises(GuardrailTripped, match="OutputValidationError"):
        await Agent(model, output=Out, guardrails=[wrong]).run("x")


@pytest.mark.parametrize(("kwargs", "error", "message"), [
    ({"advisory": "false"}, TypeError, "advisory must be True or False"),
    ({"advisory": 1}, TypeError, "advisory must be True or False"),
    ({"parallel": "yes", "at": ["input"]}, TypeError, "parallel must be True or False"),
    ({"at": "input"}, TypeError, "not a string"),
    ({"at": []}, ValueError, "names no point"),
])
def test_a_guard_refuses_settings_that_would_weaken_it_by_accident(
    kwargs: dict[str, Any], error: type[Exception], message: str
) -> None:
    with pytest.raises(error, match=message):
        Guard(Rule(), **kwargs)


async def test_a_failed_first_call_cancels_the_parallel_input_guards_and_waits_for_them() -> None:
    from seamkit.errors import FailureClass, ProviderError

    finished: list[str] = []

    class Slow:
        async def check_input(self, text: str, guard: GuardContext) -> Verdict:
            try:
                await asyncio.sleep(30)
            finally:
                finished.append("cleaned up")
            return ALLOW

    from seamkit.testing._models import ScriptedTurn

    # the call fails once the guard has started (a task cancelled before it starts runs nothing)
    model = ScriptedModel([ScriptedTurn(delay=0.05, error=ProviderError("down", FailureClass.SERVER_ERROR,
                                                                        provider="scripted"))])
    with pytest.raises(ProviderError):
        await Agent(model, guardrails=[Guard(Slow(), parallel=True)]).run("x")
    assert finished == ["cleaned up"]
