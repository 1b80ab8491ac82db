"""The ``otel`` middleware in process, recorded by the SDK's in-memory exporter: span names, kinds,
parents (runs, tools, child runs, retries), errors with ``error.type``, cancellation, the context
never left attached across a ``yield``, content only when asked for, and metrics."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from decimal import Decimal
from typing import Any

import pytest
from opentelemetry import trace
from opentelemetry.trace import SpanKind, StatusCode
from otel_testlib import Recorder, parent_id
from seamkit import Agent, tool
from seamkit._agent.as_tool import agent_tool
from seamkit._middleware import Call, Next, middleware
from seamkit._plugins.registry import get_registry
from seamkit.errors import FailureClass, ProviderError
from seamkit.testing import FakeClock, ScriptedModel, make_test_ctx
from seamkit.values import ChatRequest, Delta, LLMResult, Scope, ToolOutput, Usage
from seamkit_otel.middleware import Otel, error_type, provider_name

SECRET = "sk-live-0123456789abcdefSECRET"


@tool(side_effecting=False)
def login(user: str, api_key: str) -> str:
    """Log a user in.

    Args:
        user: Who.
        api_key: Their key.
    """
    return f"welcome {user}"


@tool(side_effecting=False)
def broken(x: int) -> str:
    """Always fails.

    Args:
        x: Anything.
    """
    raise RuntimeError(f"boom with {SECRET}")


@tool(side_effecting=False)
def refuse(x: int) -> ToolOutput:
    """Answers with an error result.

    Args:
        x: Anything.
    """
    return ToolOutput("not allowed", is_error=True)


def otel(rec: Recorder, **kw: Any) -> Otel:
    return Otel(rec.tracer_provider, rec.meter_provider, span_processor=rec.processor if rec.lean else None, **kw)


def login_call() -> dict[str, Any]:
    return {"tool_calls": [{"name": "login", "arguments": {"user": "ada", "api_key": SECRET}}]}


async def test_a_run_is_an_invoke_agent_span_parenting_its_chat_and_tool_spans(rec: Recorder) -> None:
    model = ScriptedModel([login_call(), "done"])
    agent = Agent(model, name="desk", tools=[login], middlewares=[otel(rec)])
    result = await agent.run("log ada in", ctx=make_test_ctx(run_id="run_1", scope=Scope("t", thread="th-9")))
    assert result.output == "done"
    run = rec.one("invoke_agent desk")
    chats = rec.named("chat ")
    tool_span = rec.one("execute_tool login")
    assert [s.name for s in chats] == ["chat scripted", "chat scripted"]
    assert run.kind == SpanKind.INTERNAL and tool_span.kind == SpanKind.INTERNAL
    assert all(c.kind == SpanKind.CLIENT for c in chats)
    assert run.parent is None
    assert {parent_id(s) for s in [*chats, tool_span]} == {run.context.span_id}
    assert {s.context.trace_id for s in rec.spans()} == {run.context.trace_id}
    a = run.attributes
    assert a["gen_ai.operation.name"] == "invoke_agent" and a["gen_ai.agent.name"] == "desk"
    assert a["gen_ai.provider.name"] == "scripted" and a["gen_ai.request.model"] == "scripted"
    assert a["seamkit.run.id"] == "run_1" and a["gen_ai.conversation.id"] == "th-9"
    assert a["seamkit.run.stop_reason"] == "completed" and a["seamkit.run.steps"] == 2
    assert "gen_ai.agent.id" not in a
    t = tool_span.attributes
    assert (t["gen_ai.operation.name"], t["gen_ai.tool.name"], t["gen_ai.tool.type"]) == (
        "execute_tool", "login", "function")
    assert t["gen_ai.tool.call.id"] == result.transcript[1].tool_calls[0].id
    c = chats[0].attributes
    assert c["gen_ai.operation.name"] == "chat" and c["gen_ai.response.finish_reasons"] == ("tool_calls",)
    assert chats[1].attributes["gen_ai.response.finish_reasons"] == ("stop",)
    assert {s.attributes["gen_ai.conversation.id"] for s in chats} == {"th-9"}


async def test_a_child_run_is_parented_by_the_execute_tool_span_that_started_it(rec: Recorder) -> None:
    mw = otel(rec)
    child = Agent(ScriptedModel(["found it"]), name="researcher", middlewares=[mw])
    lead_model = ScriptedModel([{"tool_calls": [{"name": "researcher", "arguments": {"task": "look"}}]}, "ok"])
    lead = Agent(lead_model, name="lead", tools=[agent_tool(child)], middlewares=[mw])
    result = await lead.run("go")
    lead_span, child_span = rec.one("invoke_agent lead"), rec.one("invoke_agent researcher")
    tool_span = rec.one("execute_tool researcher")
    assert parent_id(tool_span) == lead_span.context.span_id
    assert parent_id(child_span) == tool_span.context.span_id
    child_chat = [s for s in rec.named("chat ") if parent_id(s) == child_span.context.span_id]
    assert len(child_chat) == 1
    assert child_span.attributes["seamkit.run.parent_id"] == result.run_id


async def test_an_application_span_parents_the_run(rec: Recorder) -> None:
    tracer = rec.tracer_provider.get_tracer("app")
    with tracer.start_as_current_span("handle request") as app_span:
        await Agent(ScriptedModel(["hi"]), name="a", middlewares=[otel(rec)]).run("x")
    assert parent_id(rec.one("invoke_agent a")) == app_span.get_span_context().span_id


async def test_the_context_is_never_left_attached_across_a_yield(rec: Recorder) -> None:
    """What an outer middleware sees while it holds the run's result or a tool's result: its own
    context, not the otel span (an async generator must not leak its context to its consumer)."""
    seen: list[Any] = []

    @middleware(kinds=["run", "tool", "chat"])
    async def outer(call: Call, nxt: Next) -> AsyncIterator[Any]:
        async for item in nxt(call):
            seen.append((call.kind, trace.get_current_span()))
            yield item
        seen.append((call.kind + " after", trace.get_current_span()))

    agent = Agent(ScriptedModel([login_call(), "done"]), name="a", tools=[login], middlewares=[outer, otel(rec)])
    await agent.run("go")
    names = {(k, getattr(span, "name", None)) for k, span in seen}
    # a chat or tool call runs inside its run, so the run's span is current there; never its own
    assert names == {("run", None), ("run after", None), ("chat", "invoke_agent a"), ("chat after", "invoke_agent a"),
                     ("tool", "invoke_agent a"), ("tool after", "invoke_agent a")}
    assert trace.get_current_span() is trace.INVALID_SPAN


def retry_mw() -> Any:
    return get_registry().build("middleware", "retry", {"max_attempts": 3, "base_delay_s": 0.5})


async def test_listed_after_retry_each_try_is_its_own_chat_span_with_its_error(rec: Recorder) -> None:
    model = ScriptedModel([ProviderError("busy", FailureClass.OVERLOADED), "fine"])
    agent = Agent(model, name="a", middlewares=[retry_mw(), otel(rec)])
    result = await agent.run("x", ctx=make_test_ctx(clock=FakeClock()))
    assert result.output == "fine"
    failed, ok = rec.named("chat ")
    run = rec.one("invoke_agent a")
    assert parent_id(failed) == parent_id(ok) == run.context.span_id
    assert failed.status.status_code == StatusCode.ERROR and failed.attributes["error.type"] == "overloaded"
    assert ok.status.status_code == StatusCode.UNSET and "error.type" not in ok.attributes
    assert run.status.status_code == StatusCode.UNSET


async def test_listed_before_retry_one_chat_span_covers_every_try(rec: Recorder) -> None:
    model = ScriptedModel([ProviderError("busy", FailureClass.OVERLOADED), "fine"])
    agent = Agent(model, name="a", middlewares=[otel(rec), retry_mw()])
    await agent.run("x", ctx=make_test_ctx(clock=FakeClock()))
    (chat,) = rec.named("chat ")
    assert chat.status.status_code == StatusCode.UNSET and "error.type" not in chat.attributes


async def test_a_failed_call_sets_error_type_status_and_an_exception_event_without_its_message(rec: Recorder) -> None:
    model = ScriptedModel([ProviderError(f"bad key {SECRET}", FailureClass.AUTHENTICATION)])
    with pytest.raises(ProviderError):
        await Agent(model, name="a", middlewares=[otel(rec)]).run("x")
    (chat,) = rec.named("chat ")
    run = rec.one("invoke_agent a")
    for span in (chat, run):
        assert span.status.status_code == StatusCode.ERROR
        assert span.attributes["error.type"] == "authentication"
        (event,) = [e for e in span.events if e.name == "exception"]
        assert event.attributes["exception.type"] == "seamkit.errors.ProviderError"
        assert "exception.message" not in event.attributes
        assert SECRET not in json.dumps(dict(event.attributes)) and "bad key" not in json.dumps(dict(event.attributes))
    points = rec.metrics()["gen_ai.client.operation.duration"]
    assert {p.attributes.get("error.type") for p in points} == {"authentication"}


async def test_with_content_capture_the_exception_message_is_recorded_masked(rec: Recorder) -> None:
    class Keyed(ScriptedModel):
        def secrets(self) -> list[str]:
            return [SECRET]

    model = Keyed([ProviderError(f"bad key {SECRET}", FailureClass.AUTHENTICATION)])
    with pytest.raises(ProviderError):
        await Agent(model, name="a", middlewares=[otel(rec, capture_content=True)]).run("x")
    (chat,) = rec.named("chat ")
    (event,) = [e for e in chat.events if e.name == "exception"]
    message = event.attributes["exception.message"]
    assert "bad key ***" in message and SECRET not in message


async def test_a_tool_error_marks_the_tool_span_not_the_run(rec: Recorder) -> None:
    model = ScriptedModel([{"tool_calls": [{"name": "broken", "arguments": {"x": 1}},
                                           {"name": "refuse", "arguments": {"x": 1}}]}, "sorry"])
    await Agent(model, name="a", tools=[broken, refuse], middlewares=[otel(rec)]).run("x")
    raised, refused = rec.one("execute_tool broken"), rec.one("execute_tool refuse")
    assert raised.status.status_code == StatusCode.ERROR and raised.attributes["error.type"] == "RuntimeError"
    assert SECRET not in json.dumps([dict(e.attributes) for e in raised.events])
    assert refused.status.status_code == StatusCode.ERROR and refused.attributes["error.type"] == "tool_error"
    assert rec.one("invoke_agent a").status.status_code == StatusCode.UNSET


async def test_a_cancelled_run_ends_its_spans_as_cancelled(rec: Recorder) -> None:
    started = asyncio.Event()

    class Hanging:
        provider, model = "fake", "slow-1"

        async def stream(self, request: ChatRequest) -> AsyncIterator[Delta]:
            started.set()
            await asyncio.Event().wait()
            yield Delta(text="never")

        async def chat(self, request: ChatRequest) -> LLMResult:
            raise NotImplementedError

    agent = Agent(Hanging(), name="a", middlewares=[otel(rec)])
    task = asyncio.create_task(agent.run("x"))
    await started.wait()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    chat, run = rec.one("chat slow-1"), rec.one("invoke_agent a")
    assert chat.attributes["error.type"] == run.attributes["error.type"] == "cancelled"
    assert parent_id(chat) == run.context.span_id
    assert trace.get_current_span() is trace.INVALID_SPAN


async def test_no_content_is_recorded_by_default(rec: Recorder) -> None:
    model = ScriptedModel([login_call(), "the answer"])
    await Agent(model, name="a", prompt="Be terse.", tools=[login], middlewares=[otel(rec)]).run("log ada in")
    content_keys = {"gen_ai.input.messages", "gen_ai.output.messages", "gen_ai.system_instructions",
                    "gen_ai.tool.call.arguments", "gen_ai.tool.call.result"}
    for span in rec.spans():
        assert not content_keys & set(span.attributes), span.name
        text = json.dumps(dict(span.attributes), default=str)
        assert "log ada in" not in text and "the answer" not in text and "Be terse" not in text


async def test_content_capture_records_messages_and_tool_io_with_secrets_masked(rec: Recorder) -> None:
    class Keyed(ScriptedModel):
        def secrets(self) -> list[str]:
            return ["pk-9a8b7c6d5e4f3a2b1c"]

    model = Keyed([login_call(), "your key is pk-9a8b7c6d5e4f3a2b1c"])
    agent = Agent(model, name="a", prompt="Be terse.", tools=[login], middlewares=[otel(rec, capture_content=True)])
    await agent.run("log ada in")
    first, second = rec.named("chat ")
    assert json.loads(first.attributes["gen_ai.system_instructions"]) == [{"type": "text", "content": "Be terse."}]
    assert json.loads(first.attributes["gen_ai.input.messages"]) == [
        {"role": "user", "parts": [{"type": "text", "content": "log ada in"}]}]
    [out] = json.loads(first.attributes["gen_ai.output.messages"])
    assert out["role"] == "assistant" and out["finish_reason"] == "tool_call"
    [call_part] = out["parts"]
    assert call_part["type"] == "tool_call" and call_part["arguments"] == {"user": "ada", "api_key": "***"}
    history = json.loads(second.attributes["gen_ai.input.messages"])
    assert [m["role"] for m in history] == ["user", "assistant", "tool"]
    assert history[2]["parts"][0] == {"type": "tool_call_response", "id": call_part["id"], "response": "welcome ada"}
    [final] = json.loads(second.attributes["gen_ai.output.messages"])
    assert final["parts"] == [{"type": "text", "content": "your key is ***"}]
    tool_span = rec.one("execute_tool login")
    assert json.loads(tool_span.attributes["gen_ai.tool.call.arguments"]) == {"user": "ada", "api_key": "***"}
    assert tool_span.attributes["gen_ai.tool.call.result"] == "welcome ada"
    everything = json.dumps([dict(s.attributes) for s in rec.spans()], default=str)
    assert SECRET not in everything and "pk-9a8b7c6d5e4f3a2b1c" not in everything


async def test_captured_content_with_lone_surrogates_stays_encodable_to_otlp(rec: Recorder) -> None:
    from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans

    odd = b"caf\xe9.txt".decode("utf-8", "surrogateescape")  # a non-UTF-8 file name, as os.listdir gives it

    @tool(side_effecting=False)
    def ls(path: str) -> str:
        """List a folder.

        Args:
            path: Where.
        """
        return f"files: {odd}"

    model = ScriptedModel([{"tool_calls": [{"name": "ls", "arguments": {"path": "/tmp/\udcff"}}]},
                           "done \ud800 \u202e \U0001F600"])
    agent = Agent(model, name="a", tools=[ls], middlewares=[otel(rec, capture_content=True)])
    await agent.run("list /tmp")
    tool_span = rec.one("execute_tool ls")
    assert tool_span.attributes["gen_ai.tool.call.result"] == "files: caf\\udce9.txt"
    assert json.loads(tool_span.attributes["gen_ai.tool.call.arguments"]) == {"path": "/tmp/\udcff"}
    [final] = json.loads(rec.named("chat ")[1].attributes["gen_ai.output.messages"])
    assert final["parts"] == [{"type": "text", "content": "done \ud800 \u202e \U0001F600"}]
    # every captured attribute reaches the exporter's protobuf (an unencodable one is dropped there)
    encoded = encode_spans(rec.spans())
    sent = {a.key for rs in encoded.resource_spans for ss in rs.scope_spans for sp in ss.spans for a in sp.attributes}
    assert {"gen_ai.tool.call.result", "gen_ai.tool.call.arguments", "gen_ai.input.messages",
            "gen_ai.output.messages"} <= sent


async def test_a_huge_captured_text_is_cut_so_the_span_batch_stays_exportable(rec: Recorder) -> None:
    # uncut, a 40 MB tool result (repeated on each later chat span) made the OTLP exporter drop the
    # whole batch, every span of the run
    big = "x" * 300_000

    @tool(side_effecting=False)
    def dump(text: str) -> str:
        """Dump a file.

        Args:
            text: What.
        """
        return big

    model = ScriptedModel([{"tool_calls": [{"name": "dump", "arguments": {"text": big}}]}, big])
    await Agent(model, name="a", tools=[dump], middlewares=[otel(rec, capture_content=True)]).run("dump it")
    note = f"...[{300_000 - 65536} more characters]"
    tool_span = rec.one("execute_tool dump")
    assert tool_span.attributes["gen_ai.tool.call.result"] == "x" * 65536 + note
    assert json.loads(tool_span.attributes["gen_ai.tool.call.arguments"]) == {"text": "x" * 65536 + note}
    history = json.loads(rec.named("chat ")[1].attributes["gen_ai.input.messages"])
    assert history[1]["parts"][0]["arguments"] == {"text": "x" * 65536 + note}
    assert history[2]["parts"][0]["response"] == "x" * 65536 + note
    [final] = json.loads(rec.one("invoke_agent a").attributes["gen_ai.output.messages"])
    assert final["parts"] == [{"type": "text", "content": "x" * 65536 + note}]
    for span in rec.spans():
        assert all(len(str(v)) < 200_000 for v in span.attributes.values()), span.name


async def test_content_max_chars_sets_the_cut(rec: Recorder) -> None:
    model = ScriptedModel(["abcdefghij" * 10])
    await Agent(model, name="a", middlewares=[otel(rec, capture_content=True, content_max_chars=64)]).run("go")
    [final] = json.loads(rec.one("chat scripted").attributes["gen_ai.output.messages"])
    assert final["parts"] == [{"type": "text", "content": ("abcdefghij" * 10)[:64] + "...[36 more characters]"}]


class Priced:
    """A model reporting usage with an exact cost, a response model and a base URL."""

    provider = "openai_chat"
    model = "gpt-4o-mini"
    base_url = "https://api.example.com:8443/v1"

    async def stream(self, request: ChatRequest) -> AsyncIterator[Delta]:
        yield Delta(text="hello")
        yield Delta(finish_reason="stop", model="gpt-4o-mini-2024-07-18",
                    usage=Usage(120, 30, cache_read_tokens=100, reasoning_tokens=5, requests=1,
                                cost=Decimal("0.000123"), cost_source="reported"))

    async def chat(self, request: ChatRequest) -> LLMResult:
        raise NotImplementedError


async def test_chat_attributes_follow_the_conventions_and_cost_is_exact(rec: Recorder) -> None:
    agent = Agent(Priced(), name="a", middlewares=[otel(rec)], temperature=0.2, max_tokens=64, seed=7)
    await agent.run("x")
    chat = rec.one("chat gpt-4o-mini")
    a = chat.attributes
    assert chat.kind == SpanKind.CLIENT
    assert a["gen_ai.provider.name"] == "openai"
    assert (a["gen_ai.request.model"], a["gen_ai.response.model"]) == ("gpt-4o-mini", "gpt-4o-mini-2024-07-18")
    assert (a["gen_ai.request.temperature"], a["gen_ai.request.max_tokens"], a["gen_ai.request.seed"]) == (0.2, 64, 7)
    assert (a["server.address"], a["server.port"]) == ("api.example.com", 8443)
    assert (a["gen_ai.usage.input_tokens"], a["gen_ai.usage.output_tokens"]) == (120, 30)
    assert a["gen_ai.usage.cache_read.input_tokens"] == 100 and a["gen_ai.usage.reasoning.output_tokens"] == 5
    assert a["seamkit.cost.usd"] == "0.000123" and a["seamkit.cost.source"] == "reported"
    assert a["gen_ai.request.stream"] is True and a["gen_ai.response.time_to_first_chunk"] >= 0
    run = rec.one("invoke_agent a").attributes
    assert run["seamkit.cost.usd"] == "0.000123" and run["gen_ai.usage.input_tokens"] == 120
    m = rec.metrics()
    tokens = {p.attributes["gen_ai.token.type"]: p for p in m["gen_ai.client.token.usage"]}
    assert (tokens["input"].sum, tokens["output"].sum) == (120, 30)
    assert tokens["input"].attributes["gen_ai.provider.name"] == "openai"
    assert tokens["input"].attributes["gen_ai.response.model"] == "gpt-4o-mini-2024-07-18"
    assert tokens["input"].explicit_bounds[:3] == (1, 4, 16)
    ops = {p.attributes["gen_ai.operation.name"] for p in m["gen_ai.client.operation.duration"]}
    assert ops == {"chat", "invoke_agent"}
    (cost,) = m["seamkit.client.cost"]
    assert cost.value == pytest.approx(0.000123)


def test_provider_names_map_to_the_conventions_well_known_values() -> None:
    assert [provider_name(p) for p in ("openai", "openai_chat", "anthropic", "llamacpp", None)] == [
        "openai", "openai", "anthropic", "llamacpp", "_OTHER"]


def test_error_type_is_the_failure_class_or_the_class_name() -> None:
    assert error_type(ProviderError("x", FailureClass.RATE_LIMITED)) == "rate_limited"
    assert error_type(asyncio.CancelledError()) == "cancelled"
    assert error_type(KeyError("k")) == "KeyError"


# --- the lean tracer (a provider of its own: seamkit_otel.lean) ---------------------------------


def lean_otel(sampler: Any) -> tuple[Otel, Any]:
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    exp = InMemorySpanExporter()
    tp = TracerProvider(sampler=sampler)
    processor = SimpleSpanProcessor(exp)
    tp.add_span_processor(processor)
    return Otel(tp, metrics=False, span_processor=processor), exp


async def test_the_lean_tracer_asks_the_providers_sampler() -> None:
    from opentelemetry.sdk.trace.sampling import ALWAYS_OFF, ALWAYS_ON

    dropped, none = lean_otel(ALWAYS_OFF)
    kept, some = lean_otel(ALWAYS_ON)
    for mw in (dropped, kept):
        model = ScriptedModel([{"tool_calls": [{"name": "login", "arguments": {"user": "a", "api_key": "k"}}]}, "ok"])
        assert (await Agent(model, name="a", tools=[login], middlewares=[mw]).run("x")).output == "ok"
    assert none.get_finished_spans() == ()
    assert sorted(s.name for s in some.get_finished_spans()) == [
        "chat scripted", "chat scripted", "execute_tool login", "invoke_agent a"]


async def test_the_lean_tracer_follows_an_unsampled_application_parent_and_parents_an_application_span() -> None:
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
    from opentelemetry.sdk.trace.sampling import DEFAULT_ON

    mw, exp = lean_otel(DEFAULT_ON)  # ParentBased(ALWAYS_ON)
    app_exp = InMemorySpanExporter()
    app = TracerProvider()
    app.add_span_processor(SimpleSpanProcessor(app_exp))
    tracer = app.get_tracer("app")

    @tool(side_effecting=False)
    def lookup(q: str) -> str:
        """Look something up.

        Args:
            q: What to look up.
        """
        with tracer.start_as_current_span("db query"):
            return "found"

    model = ScriptedModel([{"tool_calls": [{"name": "lookup", "arguments": {"q": "x"}}]}, "ok"])
    await Agent(model, name="a", tools=[lookup], middlewares=[mw]).run("x")
    (db,) = app_exp.get_finished_spans()
    tool_span = next(s for s in exp.get_finished_spans() if s.name == "execute_tool lookup")
    assert parent_id(db) == tool_span.context.span_id and db.context.trace_id == tool_span.context.trace_id

    exp.clear()
    unsampled = trace.NonRecordingSpan(trace.SpanContext(0x1234, 0x5678, False, trace.TraceFlags(0)))
    with trace.use_span(unsampled):
        await Agent(ScriptedModel(["hi"]), name="a", middlewares=[mw]).run("x")
    assert exp.get_finished_spans() == ()
