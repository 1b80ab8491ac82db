"""The agent loop (``seamkit._agent``): tools, output types, streaming, stop reasons."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
from decimal import Decimal
from typing import Any

import pydantic
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from seamkit._agent.agent import Agent
from seamkit._agent.loop import CORRECTIVE_TEMPLATE
from seamkit._agent.output import OutputSpec, output_spec
from seamkit._agent.prompt import Prompt
from seamkit._agent.result import AgentResult
from seamkit._tools import tool
from seamkit.errors import FailureClass, OutputValidationError, ProviderError
from seamkit.testing import ScriptedModel, make_test_ctx
from seamkit.testing._models import ScriptedTurn
from seamkit.testing._transcripts import transcripts
from seamkit.values import Message, StreamEvent, Usage


def calls(*specs: tuple[str, dict[str, Any]]) -> dict[str, Any]:
    return {"tool_calls": [{"name": n, "arguments": a} for n, a in specs]}


@tool(side_effecting=False)
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@tool(side_effecting=False)
def fail(reason: str) -> str:
    """Always fail with the given reason (to test error results)."""
    raise RuntimeError(reason)


# --- tool calling ---------------------------------------------------------------------------


async def test_parallel_tool_calls_run_concurrently_bounded() -> None:
    n_calls, limit = 6, 3
    running = 0
    max_running = 0
    full = asyncio.Event()

    @tool(side_effecting=False)
    async def work(i: int) -> int:
        """Do one unit of work numbered i and return its number."""
        nonlocal running, max_running
        running += 1
        max_running = max(max_running, running)
        if running == limit:
            full.set()
        # Only returns once `limit` calls run at the same time: sequential execution would time out.
        await asyncio.wait_for(full.wait(), 2)
        await asyncio.sleep(0.005)
        running -= 1
        return i

    model = ScriptedModel([calls(*[("work", {"i": i}) for i in range(n_calls)]), "done"])
    result = await Agent(model, tools=[work], max_parallel_tools=limit).run("go")
    assert result.output == "done"
    assert max_running == limit
    tool_msg = model.requests[1].messages[-1]
    assert tool_msg.role == "tool"
    assert [r.content for r in tool_msg.tool_results] == [str(i) for i in range(n_calls)]
    assert not any(r.is_error for r in tool_msg.tool_results)
    assert [r.call_id for r in tool_msg.tool_results] == [c.id for c in model.requests[1].messages[-2].tool_calls]


async def test_tool_failures_become_error_results_and_the_loop_continues() -> None:
    model = ScriptedModel([
        calls(("nope", {})),
        calls(("add", {"a": "x", "b": 1})),
        calls(("fail", {"reason": "disk full"})),
        calls(("add", {"a": 2, "b": 3})),
        "finished",
    ])
    result = await Agent(model, tools=[add, fail]).run("go")
    assert result.output == "finished" and result.steps == 5
    received = [r.messages[-1].tool_results[0] for r in model.requests[1:]]
    unknown, invalid, raised, ok = received
    assert unknown.is_error and "unknown tool 'nope'" in unknown.content and "add, fail" in unknown.content
    assert invalid.is_error and "a:" in invalid.content and "integer" in invalid.content
    assert raised.is_error and "RuntimeError: disk full" == raised.content
    assert not ok.is_error and ok.content == "5"
    # the transcript the model saw grows by an assistant turn and a tool turn each step
    assert [m.role for m in model.requests[-1].messages] == ["user"] + ["assistant", "tool"] * 4


async def test_max_steps_ends_the_run() -> None:
    model = ScriptedModel([calls(("add", {"a": 1, "b": 1}))], repeat=True)
    result = await Agent(model, tools=[add], max_steps=3).run("loop")
    assert result.stop_reason == "max_steps"
    assert result.output is None and result.steps == 3 and model.calls == 3


async def test_tool_choice_resets_to_auto_after_a_tool_batch() -> None:
    model = ScriptedModel([calls(("add", {"a": 1, "b": 2})), calls(("add", {"a": 1, "b": 2})), "3"])
    await Agent(model, tools=[add], tool_choice="required").run("go")
    assert [r.tool_choice for r in model.requests] == ["required", "auto", "auto"]

    model = ScriptedModel([calls(("add", {"a": 1, "b": 2})), "3"])
    await Agent(model, tools=[add], tool_choice="add", reset_tool_choice=False).run("go")
    assert [r.tool_choice for r in model.requests] == ["add", "add"]


async def test_reset_tool_choice_none_answers_without_tools_after_the_forced_call() -> None:
    # the forced call is the only one wanted: the next turn may not call tools (a small model
    # offered them again repeats its call)
    model = ScriptedModel([calls(("add", {"a": 1, "b": 2})), "3"])
    result = await Agent(model, tools=[add], tool_choice="required", reset_tool_choice="none").run("go")
    assert [r.tool_choice for r in model.requests] == ["required", "none"]
    assert result.output == "3" and result.warnings == ()
    with pytest.raises(ValueError, match="reset_tool_choice must be"):
        Agent(ScriptedModel([]), tools=[add], reset_tool_choice="never")  # type: ignore[arg-type]


async def test_tool_choice_must_name_a_tool() -> None:
    with pytest.raises(ValueError, match="names no tool"):
        Agent(ScriptedModel([]), tools=[add], tool_choice="subtract")


def test_duplicate_tool_names_are_refused() -> None:
    @tool(side_effecting=False, name="add")
    def other(x: int) -> int:
        """Return x unchanged; a second tool named add."""
        return x

    with pytest.raises(ValueError, match="duplicate tool name 'add'"):
        Agent(ScriptedModel([]), tools=[add, other])


@pytest.mark.parametrize("field", ["max_steps", "max_parallel_tools"])
def test_limits_must_be_positive(field: str) -> None:
    with pytest.raises(ValueError, match=field):
        Agent(ScriptedModel([]), **{field: 0})


async def test_provider_error_propagates() -> None:
    err = ProviderError("no key", FailureClass.AUTHENTICATION, provider="scripted", status=401)
    with pytest.raises(ProviderError) as info:
        await Agent(ScriptedModel([err])).run("hi")
    assert info.value.failure_class is FailureClass.AUTHENTICATION


# --- typed output ---------------------------------------------------------------------------


class Answer(pydantic.BaseModel):
    answer: int
    unit: str = "none"


@dataclasses.dataclass
class DAnswer:
    answer: int


SCHEMA = {"type": "object", "properties": {"answer": {"type": "integer"}}, "required": ["answer"]}


@pytest.mark.parametrize(
    ("output", "check"),
    [
        (SCHEMA, lambda v: v == {"answer": 42}),
        (Answer, lambda v: isinstance(v, Answer) and v.answer == 42),
        (DAnswer, lambda v: v == DAnswer(42)),
    ],
)
async def test_output_types_are_parsed_and_validated(output: Any, check: Any) -> None:
    model = ScriptedModel(['```json\n{"answer": 42}\n```'])
    result = await Agent(model, output=output).run("q")
    assert check(result.output)
    assert model.requests[0].output_schema is not None
    assert model.requests[0].output_schema["properties"]["answer"]["type"] == "integer"


async def test_invalid_answer_gets_one_corrective_turn() -> None:
    model = ScriptedModel(['{"answer": "many"}', '{"answer": 7}'])
    result = await Agent(model, output=Answer).run("q")
    assert result.output == Answer(answer=7)
    corrective = model.requests[1].messages[-1]
    assert corrective.role == "user"
    assert corrective.text.startswith(CORRECTIVE_TEMPLATE.split("{")[0])
    assert "answer" in corrective.text
    assert model.requests[1].messages[-2].text == '{"answer": "many"}'


async def test_invalid_twice_raises_with_raw_text() -> None:
    model = ScriptedModel(["not json", '{"answer": "x"}'])
    with pytest.raises(OutputValidationError) as info:
        await Agent(model, output=SCHEMA).run("q")
    assert info.value.raw == '{"answer": "x"}'
    assert any("answer" in p for p in info.value.problems)
    assert model.calls == 2


def test_output_spec_normalisation() -> None:
    assert output_spec(None) is None and output_spec(str) is None
    spec = OutputSpec.from_json_schema(SCHEMA)
    assert output_spec(spec) is spec
    with pytest.raises(OutputValidationError, match="not valid JSON"):
        spec.parse("{")
    with pytest.raises(ValueError, match="invalid output JSON Schema at type"):
        OutputSpec.from_json_schema({"type": "no-such-type"})


# --- results --------------------------------------------------------------------------------


async def test_agent_result_carries_output_transcript_usage_and_cost() -> None:
    u1 = Usage(100, 20, requests=1, cost=Decimal("0.0010"), cost_source="reported")
    u2 = Usage(150, 10, requests=1, cost=Decimal("0.0015"), cost_source="reported")
    model = ScriptedModel([
        ScriptedTurn(tool_calls=({"name": "add", "arguments": {"a": 1, "b": 2}},), usage=u1),
        ScriptedTurn(text="3", usage=u2),
    ])
    ctx = make_test_ctx(run_id="run_abc")
    result = await Agent(model, prompt="You add.", tools=[add]).run("1+2?", ctx=ctx)
    assert isinstance(result, AgentResult)
    assert result.output == "3" and result.text == "3"
    assert result.run_id == "run_abc" and result.stop_reason == "completed" and result.steps == 2
    assert [m.role for m in result.transcript] == ["system", "user", "assistant", "tool", "assistant"]
    assert result.usage.input_tokens == 250 and result.usage.output_tokens == 30 and result.usage.requests == 2
    assert result.cost == Decimal("0.0025") and isinstance(result.cost, Decimal)


async def test_unknown_cost_of_any_turn_makes_the_run_cost_unknown() -> None:
    model = ScriptedModel([
        ScriptedTurn(tool_calls=({"name": "add", "arguments": {"a": 1, "b": 2}},),
                     usage=Usage(1, 1, requests=1, cost=Decimal("0.1"), cost_source="reported")),
        ScriptedTurn(text="3", usage=Usage(1, 1, requests=1)),
    ])
    result = await Agent(model, tools=[add]).run("x")
    assert result.cost is None


async def test_history_and_message_tasks() -> None:
    model = ScriptedModel(["a", "b"])
    agent = Agent(model, prompt="sys")
    await agent.run("new", history=[Message.user("old"), Message.assistant("older answer")])
    assert [m.text for m in model.requests[0].messages] == ["sys", "old", "older answer", "new"]
    await agent.run([Message.user("one"), Message.user("two")])
    assert [m.text for m in model.requests[1].messages] == ["sys", "one", "two"]


async def test_prompt_template_variables() -> None:
    prompt = Prompt("You help {{ user }} with {{topic}}. JSON looks like {\"a\": 1}; env ${HOME}.",
                    id="helper", version="1.2.0")
    assert prompt.variables == {"user", "topic"}
    model = ScriptedModel(["ok"])
    await Agent(model, prompt=prompt).run("hi", variables={"user": "Ada", "topic": "maths"})
    assert model.requests[0].messages[0].text == 'You help Ada with maths. JSON looks like {"a": 1}; env ${HOME}.'
    with pytest.raises(KeyError, match="topic"):
        prompt.render({"user": "Ada"})
    with pytest.raises(ValueError, match="colour"):
        prompt.render({"user": "Ada", "topic": "t", "colour": "red"})
    assert Prompt("plain").render() == "plain"


async def test_agent_settings_reach_the_request() -> None:
    model = ScriptedModel(["ok"])
    await Agent(model, temperature=0.0, max_tokens=64, seed=7, model_extra={"top_k": 3}).run("x")
    req = model.requests[0]
    assert (req.temperature, req.max_tokens, req.seed, req.extra) == (0.0, 64, 7, {"top_k": 3})
    assert req.tool_choice == "none" and req.tools == ()


# --- streaming ------------------------------------------------------------------------------


async def test_stream_yields_events_in_order() -> None:
    model = ScriptedModel([
        ScriptedTurn(text="let me add", tool_calls=({"name": "add", "arguments": {"a": 2, "b": 2}},), chunk_size=4),
        ScriptedTurn(text='{"answer": 4}', chunk_size=5),
    ])
    agent = Agent(model, tools=[add], output=Answer)
    events: list[StreamEvent] = [e async for e in agent.stream("2+2", ctx=make_test_ctx(run_id="run_s"))]
    kinds = [e.kind for e in events]
    assert kinds == [
        "run_started",
        "text", "text", "text",
        "model_result", "tool_call", "tool_result",
        "text", "text", "text",
        "model_result", "output", "run_finished",
    ]
    assert "".join(e.text or "" for e in events[1:4]) == "let me add"
    assert events[5].tool_call is not None and events[5].tool_call.name == "add"
    assert events[6].tool_result is not None and events[6].tool_result.content == "4"
    assert events[-2].output == Answer(answer=4)
    assert all(e.run_id == "run_s" for e in events)
    assert [e.step for e in events if e.kind == "model_result"] == [1, 2]
    final = events[-1].data
    assert final["stop_reason"] == "completed"
    assert isinstance(final["result"], AgentResult) and final["result"].output == Answer(answer=4)


async def test_closing_the_stream_early_cancels_the_run() -> None:
    started = asyncio.Event()
    cancelled = asyncio.Event()

    @tool(side_effecting=False)
    async def slow() -> str:
        """Wait a long time, then answer (to test cancellation)."""
        started.set()
        try:
            await asyncio.sleep(30)
        except asyncio.CancelledError:
            cancelled.set()
            raise
        return "late"

    model = ScriptedModel([calls(("slow", {})), "never"])
    agen = Agent(model, tools=[slow]).stream("go")
    async with contextlib.aclosing(agen) as stream:
        async for event in stream:
            if event.kind == "tool_call":
                await asyncio.wait_for(started.wait(), 2)
                break
    await asyncio.wait_for(cancelled.wait(), 2)
    assert model.calls == 1


async def test_stream_raises_what_run_raises() -> None:
    agent = Agent(ScriptedModel([ProviderError("down", FailureClass.SERVER_ERROR)]))
    kinds: list[str] = []
    with pytest.raises(ProviderError):
        async for e in agent.stream("x"):
            kinds.append(e.kind)
    assert kinds == ["run_started"]


async def test_observers_receive_every_event() -> None:
    class Recorder:
        def __init__(self) -> None:
            self.kinds: list[str] = []

        def on_event(self, event: Any) -> None:
            self.kinds.append(event.kind)

    rec = Recorder()
    await Agent(ScriptedModel(["hi"]), observers=[rec]).run("x")
    assert rec.kinds == ["run_started", "text", "model_result", "run_finished"]


def test_strict_mode_nulls_for_absent_optional_properties_are_dropped() -> None:
    """Regression: a strict-mode provider writes null for an optional property it leaves out; the
    canonical schema (optional, not nullable) must still accept the answer."""
    from seamkit._agent.output import OutputSpec, drop_absent_nulls

    schema = {
        "type": "object",
        "properties": {
            "name": {"type": "string"},
            "nick": {"type": "string"},
            "age": {"type": ["integer", "null"]},
            "tags": {"type": "array", "items": {"$ref": "#/$defs/tag"}},
        },
        "required": ["name"],
        "$defs": {"tag": {"type": "object", "properties": {"label": {"type": "string"}, "note": {"type": "string"}},
                          "required": ["label"]}},
    }
    spec = OutputSpec.from_json_schema(schema)
    value = spec.parse('{"name": "a", "nick": null, "age": null, "tags": [{"label": "x", "note": null}]}')
    assert value == {"name": "a", "age": None, "tags": [{"label": "x"}]}
    # a required property written as null is still an error, not silently dropped
    import pytest
    from seamkit.errors import OutputValidationError

    with pytest.raises(OutputValidationError):
        spec.parse('{"name": null}')
    untouched = {"name": "a"}
    assert drop_absent_nulls(untouched, schema) is untouched


def test_strict_mode_nulls_inside_a_union_of_non_objects_are_dropped() -> None:
    """Regression: below ``anyOf``, an array of objects (not only an object) carries strict-mode
    nulls; the branch the value's shape fits is followed, and a value no branch fits is left alone."""
    from seamkit._agent.output import OutputSpec, drop_absent_nulls

    item = {"type": "object", "properties": {"a": {"type": "string"}}}
    schema = {"type": "object", "properties": {"v": {"anyOf": [{"type": "string"},
                                                                {"type": "array", "items": item}]}},
              "required": ["v"]}
    assert OutputSpec.from_json_schema(schema).parse('{"v": [{"a": null}, {"a": "x"}]}') == {"v": [{}, {"a": "x"}]}
    odd = {"v": [1, {"a": None}]}
    assert drop_absent_nulls(odd, schema) is odd


class TruncatingModel:
    """First turn: a tool call whose arguments are cut off at max_tokens (finish_reason length),
    as a provider streams it; then whatever ``answer`` says given the request."""

    provider = "fake"
    model = "truncating"

    def __init__(self, raw_arguments: str) -> None:
        self.raw = raw_arguments
        self.requests: list[Any] = []

    async def stream(self, request: Any) -> Any:
        from seamkit.values import Delta, ToolCallDelta

        self.requests.append(request)
        if len(self.requests) == 1:
            yield Delta(tool_call=ToolCallDelta(0, "call_1", "write_note", self.raw[:40]))
            yield Delta(tool_call=ToolCallDelta(0, None, None, self.raw[40:]))
            yield Delta(usage=Usage(requests=1), finish_reason="length")
            return
        yield Delta(text="gave up")
        yield Delta(usage=Usage(requests=1), finish_reason="stop")

    async def chat(self, request: Any) -> Any:
        from seamkit._accumulate import collect_result

        return await collect_result(self.stream(request))


@pytest.mark.parametrize("durable", [False, True])
async def test_a_tool_call_cut_off_at_max_tokens_goes_back_to_the_model_as_an_error(durable: bool) -> None:
    # issue 10 item 9: the truncated arguments raised ProviderError and failed the run
    from seamkit.testing._memory_store import MemoryStore

    written: list[str] = []

    @tool(side_effecting=True)
    def write_note(text: str) -> str:
        """Write a note with the given text to the user's notebook; returns ok."""
        written.append(text)
        return "ok"

    model = TruncatingModel('{"text": "' + "very long note " * 50)  # the closing quote and brace never came
    agent = Agent(model, tools=[write_note], checkpointer=MemoryStore() if durable else None)
    result = await agent.run("write a long note")
    assert result.output == "gave up" and written == []
    answered = model.requests[1].messages[-1].tool_results[0]
    assert answered.call_id == "call_1" and answered.is_error
    assert "not valid JSON" in answered.content and "cut off at max_tokens" in answered.content
    assert "call the tool again" in answered.content
    assert any("call_1" in w and "was not run" in w for w in result.warnings)


@pytest.mark.parametrize("durable", [False, True])
@pytest.mark.parametrize("parallel", [False, True])
async def test_side_effecting_calls_of_one_turn_run_one_after_another(durable: bool, parallel: bool) -> None:
    # issue 10 item 13: side-effecting calls of one turn ran concurrently, racing each other
    from seamkit.testing._memory_store import MemoryStore

    running: set[str] = set()
    overlaps: list[tuple[str, ...]] = []
    order: list[str] = []

    async def busy(name: str, seconds: float) -> None:
        running.add(name)
        overlaps.append(tuple(sorted(running)))
        order.append(name)
        await asyncio.sleep(seconds)
        running.discard(name)

    @tool(side_effecting=True)
    async def transfer(label: str) -> str:
        """Transfer money between two accounts; returns the transfer's label."""
        await busy(label, 0.02)
        return label

    @tool(side_effecting=False)
    async def balance(label: str) -> str:
        """Read the balance of the account with this label; returns the label."""
        await busy(label, 0.05)
        return label

    turn = calls(("transfer", {"label": "t1"}), ("balance", {"label": "b1"}), ("transfer", {"label": "t2"}),
                 ("transfer", {"label": "t3"}))
    model = ScriptedModel([turn, "done"])
    agent = Agent(model, tools=[transfer, balance], parallel_side_effects=parallel,
                  checkpointer=MemoryStore() if durable else None)
    result = await agent.run("move money")
    assert [r.content for r in result.transcript[2].tool_results] == ["t1", "b1", "t2", "t3"]
    transfers_at_once = max(sum(1 for n in o if n.startswith("t")) for o in overlaps)
    if parallel:
        assert transfers_at_once == 3
    else:
        assert transfers_at_once == 1  # one after another
        assert [n for n in order if n.startswith("t")] == ["t1", "t2", "t3"]  # in the model's order
        assert any("b1" in o and any(n.startswith("t") for n in o) for o in overlaps)  # reads stay concurrent


# --- unanswered tool calls (issue 10 item 5) ------------------------------------------------


def rejected_call_ids(messages: Any) -> list[str]:
    """The tool call ids a provider refuses the conversation for, by OpenAI Chat Completions'
    rule (HTTP 400 "An assistant message with 'tool_calls' must be followed by tool messages
    responding to each 'tool_call_id'. The following tool_call_ids did not have response
    messages: ..."): each call needs a result in the tool messages right after its turn."""
    missing: list[str] = []
    for i, m in enumerate(messages):
        if m.role != "assistant" or not m.tool_calls:
            continue
        answered: set[str] = set()
        j = i + 1
        while j < len(messages) and messages[j].role == "tool":
            answered |= {r.call_id for r in messages[j].tool_results}
            j += 1
        missing += [c.id for c in m.tool_calls if c.id not in answered]
    return missing


def interrupted_history() -> list[Message]:
    from seamkit.values import ToolCall

    return [
        Message.user("Book a table for two at 19:00."),
        Message("assistant", (ToolCall("call_book", "book_table", {"time": "19:00"}),)),
        # the process died here: no result was ever recorded
    ]


@tool(side_effecting=True)
def book_table(time: str) -> str:
    """Book a table for two at the restaurant at the given time; returns the booking reference."""
    raise AssertionError("a call from the history must never run again")


@pytest.mark.parametrize("path", ["run", "stream", "request_builder"])
async def test_a_history_with_an_unanswered_call_reaches_the_model_answered(path: str) -> None:
    from seamkit._agent.loop import UNANSWERED_TEMPLATE
    from seamkit._request import RequestBuilder

    model = ScriptedModel(["Noted: I will not book anything."])
    builder = RequestBuilder() if path == "request_builder" else None
    agent = Agent(model, tools=[book_table], request_builder=builder)
    task = "Never mind, do not book."
    if path == "stream":
        events = [e async for e in agent.stream(task, history=interrupted_history())]
        result = events[-1].data["result"]
    else:
        result = await agent.run(task, history=interrupted_history())
    sent = model.requests[0].messages
    assert rejected_call_ids(sent) == []
    answer = sent[2].tool_results[0]
    assert (answer.call_id, answer.content, answer.is_error) == ("call_book", UNANSWERED_TEMPLATE, True)
    assert [m.role for m in sent][-2:] == ["tool", "user"]
    assert any("call_book" in w for w in result.warnings)
    assert rejected_call_ids(result.transcript) == ["call_book"]  # the transcript keeps what was handed in


async def test_only_the_calls_of_the_last_message_are_due() -> None:
    from seamkit._agent.loop import UNANSWERED_TEMPLATE
    from seamkit.values import ToolCall, ToolResult

    ran: list[int] = []

    @tool(side_effecting=False)
    def square(n: int) -> int:
        """Square an integer n and return the result as an integer."""
        ran.append(n)
        return n * n

    # a partially answered turn in the middle, then a due turn at the end
    task = [
        Message.user("square 2 and 3"),
        Message("assistant", (ToolCall("a", "square", {"n": 2}), ToolCall("b", "square", {"n": 3}))),
        Message("tool", (ToolResult("a", "square", "4"),)),
        Message.user("and 5?"),
        Message("assistant", (ToolCall("c", "square", {"n": 5}),)),
    ]
    model = ScriptedModel(["4, unknown, 25"])
    await Agent(model, tools=[square]).run(task)
    assert ran == [5]
    sent = model.requests[0].messages
    assert rejected_call_ids(sent) == []
    assert [(r.call_id, r.content) for r in sent[2].tool_results] == [("a", "4"), ("b", UNANSWERED_TEMPLATE)]
    assert sent[-1].tool_results[0].content == "25"


def pairing_problems(messages: Any) -> list[str]:
    """What a provider refuses in ``messages`` besides calls without a result: a tool result
    that is not in the tool messages right after the assistant turn holding its call (OpenAI Chat
    400 "messages with role 'tool' must be a response to a preceding message with 'tool_calls'";
    Anthropic 400 "unexpected `tool_use_id` found in `tool_result` blocks"), and a call answered
    twice."""
    problems: list[str] = []
    calls: set[str] = set()  # the calls of the turn whose tool messages these are
    seen: set[str] = set()
    for m in messages:
        if m.role == "assistant":
            calls, seen = {c.id for c in m.tool_calls}, set()
            continue
        if m.role != "tool":
            calls, seen = set(), set()
        for r in m.tool_results:
            if r.call_id not in calls:
                problems.append(f"{r.call_id}: no call right before it")
            elif r.call_id in seen:
                problems.append(f"{r.call_id}: answered twice")
            seen.add(r.call_id)
    return problems


def _t(*ids: str) -> Message:
    from seamkit.values import ToolResult

    return Message("tool", tuple(ToolResult(i, "book_table", f"booked {i}") for i in ids))


def _a(*ids: str) -> Message:
    from seamkit.values import ToolCall

    return Message("assistant", tuple(ToolCall(i, "book_table", {"time": "19:00"}) for i in ids))


@pytest.mark.parametrize(("history", "result_of", "left_out"), [
    # the result comes later, after another user turn: moved to its call, not answered as unknown
    ([Message.user("book"), _a("c1"), Message.user("and?"), _t("c1")], {"c1": "booked c1"}, []),
    # a result that answers no call, next to a real one
    ([Message.user("book"), _a("c1"), _t("c1", "cX")], {"c1": "booked c1"}, ["cX"]),
    # a result before its call
    ([Message.user("book"), _t("c9"), _a("c9")], {"c9": None}, ["c9"]),
    # a call answered twice: the first result is kept
    ([Message.user("book"), _a("c1"), _t("c1"), _t("c1")], {"c1": "booked c1"}, ["c1"]),
], ids=["result_later", "result_for_no_call", "result_before_call", "duplicate_result"])
@pytest.mark.parametrize("path", ["run", "stream"])
async def test_a_history_pairs_each_call_with_one_result_right_after_it(
    history: list[Message], result_of: dict[str, str | None], left_out: list[str], path: str
) -> None:
    from seamkit._agent.loop import UNANSWERED_TEMPLATE

    model = ScriptedModel(["Noted."])
    agent = Agent(model, tools=[book_table])
    if path == "stream":
        events = [e async for e in agent.stream("go on", history=history)]
        result = events[-1].data["result"]
    else:
        result = await agent.run("go on", history=history)
    sent = model.requests[0].messages
    assert rejected_call_ids(sent) == [] and pairing_problems(sent) == []
    got = {r.call_id: r.content for m in sent for r in m.tool_results}
    assert got == {cid: content or UNANSWERED_TEMPLATE for cid, content in result_of.items()}
    texts = [(m.role, m.text) for m in sent if m.role in ("user", "assistant") and m.text]
    assert texts == [(m.role, m.text) for m in [*history, Message.user("go on")] if m.text]
    for cid in left_out:
        assert any("left out" in w and cid in w for w in result.warnings)
    assert list(result.transcript[: len(history)]) == history  # the transcript keeps what was handed in


@st.composite
def _mangled(draw: st.DrawFn) -> list[Message]:
    """A random transcript whose tool messages were dropped, moved (before or after their turn),
    duplicated, or joined by results for calls that do not exist."""
    from seamkit.values import ToolResult

    messages = list(draw(transcripts(max_units=8)))
    for _ in range(draw(st.integers(0, 4))):
        tools = [i for i, m in enumerate(messages) if m.role == "tool"]
        op = draw(st.sampled_from(["drop", "move", "copy", "orphan"]))
        if op == "orphan":
            at = draw(st.integers(0, len(messages)))
            messages.insert(at, Message("tool", (ToolResult(f"ghost_{at}", "search", "?"),)))
            continue
        if not tools:
            continue
        i = draw(st.sampled_from(tools))
        m = messages[i] if op == "copy" else messages.pop(i)
        if op != "drop":
            messages.insert(draw(st.integers(0, len(messages))), m)
    return messages


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_mangled())
def test_answering_unanswered_calls_pairs_every_call_with_one_result(handed_in: list[Message]) -> None:
    """Every call is answered exactly once right after its turn (by its first result that comes
    after it, else as unknown), no result is left without its call, the other messages stay in
    order, and a second pass changes nothing."""
    from seamkit._agent.loop import UNANSWERED_TEMPLATE, answer_unanswered_calls

    out, added, left_out = answer_unanswered_calls(handed_in, last_is_due=False)
    assert rejected_call_ids(out) == [] and pairing_problems(out) == []
    assert [m for m in out if m.role != "tool"] == [m for m in handed_in if m.role != "tool"]
    # transcripts() makes call ids unique, so a call's own result is the first one after its turn
    expected: dict[str, Any] = {}
    for i, m in enumerate(handed_in):
        for c in m.tool_calls:
            later = [r for n in handed_in[i + 1:] for r in n.tool_results if r.call_id == c.id]
            expected[c.id] = later[0] if later else _unknown(c)
    got = {r.call_id: r for m in out for r in m.tool_results}
    assert got == expected
    assert {c.id for c in added} == {cid for cid, r in expected.items() if r.content == UNANSWERED_TEMPLATE}
    results_in = [r for m in handed_in for r in m.tool_results]
    assert len(left_out) == len(results_in) - (len(expected) - len(added))  # each result kept or left out
    again = answer_unanswered_calls(out, last_is_due=False)
    assert again == (out, [], [])
    if rejected_call_ids(handed_in) == [] and pairing_problems(handed_in) == []:
        assert out == handed_in  # a well-formed conversation goes out as it is


def _unknown(call: Any) -> Any:
    from seamkit._agent.loop import UNANSWERED_TEMPLATE
    from seamkit.values import ToolResult

    return ToolResult(call.id, call.name, UNANSWERED_TEMPLATE, is_error=True)


# --- issue 10: a provider's standing warning is said once per run ----------------------------------


class _Unpriced:
    """Wraps a ScriptedModel; every call first warns that the model has no price (as providers do)."""

    provider = "scripted"
    model = "unpriced-1"

    def __init__(self, inner: ScriptedModel) -> None:
        self.inner = inner

    async def stream(self, request: Any) -> Any:
        from seamkit.values import Delta

        yield Delta(warning="model 'unpriced-1' has no price; cost unknown")
        async for d in self.inner.stream(request):
            yield d

    async def chat(self, request: Any) -> Any:
        from seamkit._accumulate import collect_result

        return await collect_result(self.stream(request), provider=self.provider, model=self.model)


async def test_a_warning_repeated_on_every_call_is_kept_once_per_run() -> None:
    model = _Unpriced(ScriptedModel([calls(("add", {"a": 1, "b": 2})), calls(("add", {"a": 3, "b": 4})), "7",
                                     "again"]))
    agent = Agent(model, tools=[add])
    first = await agent.run("add")
    second = await agent.run("again")  # the same model object serves the next run
    assert first.steps == 3 and second.steps == 1
    assert first.warnings == ("model 'unpriced-1' has no price; cost unknown",)
    assert second.warnings == first.warnings


# --- issue 10 item 21: a provider's stream that raises is a classified error naming it -------------


class _BrokenWire:
    """A provider whose stream fails on a wire format it did not expect, as a plugin does."""

    provider = "acme"
    model = "acme-large-2"

    async def stream(self, request: Any) -> Any:
        from seamkit.values import Delta

        yield Delta(text="Hel")
        raise KeyError("choices")

    async def chat(self, request: Any) -> Any:
        from seamkit._accumulate import collect_result

        return await collect_result(self.stream(request), provider=self.provider, model=self.model)


@pytest.mark.parametrize("path", ["direct", "middleware", "stream"])
async def test_a_provider_stream_raising_a_plain_exception_is_a_provider_error_naming_it(path: str) -> None:
    async def passthrough(call: Any, nxt: Any) -> Any:
        async for d in nxt(call):
            yield d

    agent = Agent(_BrokenWire(), middlewares=[passthrough] if path == "middleware" else [])
    with pytest.raises(ProviderError) as info:
        if path == "stream":
            async for _ in agent.stream("hi"):
                pass
        else:
            await agent.run("hi")
    err = info.value
    assert (err.failure_class, err.provider) == (FailureClass.UNKNOWN, "acme")
    assert "acme-large-2" in str(err) and "KeyError: 'choices'" in str(err)
    assert isinstance(err.__cause__, KeyError)


async def test_an_observer_raising_is_not_blamed_on_the_provider() -> None:
    class Nosy:
        def on_event(self, event: Any) -> None:
            if event.kind == "text":
                raise LookupError("observer bug")

    with pytest.raises(LookupError, match="observer bug"):
        await Agent(ScriptedModel(["hello"]), observers=[Nosy()]).run("hi")


def test_a_model_missing_a_member_is_refused_naming_it() -> None:
    class NoProvider:
        model = "m"

        async def stream(self, request: Any) -> Any:
            yield None

        async def chat(self, request: Any) -> Any:
            return None

    with pytest.raises(TypeError, match=r"model must implement the model port \(LLMPort\).*NoProvider does not: "
                                        r"missing provider$"):
        Agent(NoProvider())  # type: ignore[arg-type]


def test_agent_keeps_a_compiled_agent_and_refuses_anything_else() -> None:
    from seamkit.capabilities import Capability, Completed, compile_agent

    async def execute(ctx: Any, data: Any) -> Completed:
        return Completed()

    cap = Capability(id="search", version=1, description="search", execute=execute, input={"type": "object"})
    compiled = compile_agent([cap])
    agent = Agent(model=ScriptedModel(["hi"]), capabilities=compiled)
    assert agent.capabilities is compiled and agent.run_sync("go").output == "hi"  # no loop behaviour yet
    with pytest.raises(TypeError, match="CompiledAgent"):
        Agent(model=ScriptedModel(["hi"]), capabilities=[cap])  # type: ignore[arg-type]


async def test_middlewares_see_the_step_and_the_agent_name_in_meta() -> None:
    seen: list[tuple[str, Any, Any]] = []

    async def spy(call: Any, nxt: Any) -> Any:
        seen.append((call.kind, call.meta.get("step"), call.meta.get("agent")))
        async for item in nxt(call):
            yield item

    model = ScriptedModel([ScriptedTurn(tool_calls=({"name": "add", "arguments": {"a": 1, "b": 2}},)), "3"])
    agent = Agent(model, name="adder", tools=[add], middlewares=[spy])
    result = await agent.run("1+2?")
    assert result.output == "3"
    assert seen == [("chat", 1, "adder"), ("tool", 1, "adder"), ("chat", 2, "adder")]
