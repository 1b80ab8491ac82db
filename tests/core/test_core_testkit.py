"""The test kit (``seamkit.testing``) and the runtime-checkable ports (``seamkit._ports``)."""

from __future__ import annotations

import asyncio
import socket
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from typing import Any

import pydantic
import pytest
from seamkit._agent.agent import Agent
from seamkit._ports import ClockPort, LLMPort, StorePort, ToolPort
from seamkit._runtime.clock import SYSTEM_CLOCK, SystemClock
from seamkit._runtime.context import RunContext
from seamkit._tools import tool
from seamkit.errors import FailureClass, ProviderError
from seamkit.testing import (
    FakeClock,
    NetworkBlocked,
    SchemaDrivenModel,
    ScriptedModel,
    ScriptedTurn,
    block_network,
    example_for_schema,
    make_test_ctx,
)
from seamkit.values import ChatRequest, Message, Scope, Usage


def req(text: str = "hi") -> ChatRequest:
    return ChatRequest((Message.user(text),))


# --- ScriptedModel --------------------------------------------------------------------------


async def test_scripted_model_plays_turns_and_records_requests() -> None:
    model = ScriptedModel(["first", {"text": "second", "reasoning": "hmm"}])
    r1 = await model.chat(req("a"))
    r2 = await model.chat(req("b"))
    assert (r1.text, r2.text) == ("first", "second")
    assert r2.message.content[0].text == "hmm"  # type: ignore[union-attr]
    assert [r.messages[0].text for r in model.requests] == ["a", "b"]
    assert model.calls == 2
    assert r1.usage.cost == Decimal(0) and r1.usage.cost_source == "local"
    with pytest.raises(ProviderError) as info:
        await model.chat(req())
    assert info.value.failure_class is FailureClass.INVALID_REQUEST and "no turn left" in str(info.value)


async def test_scripted_model_repeat() -> None:
    model = ScriptedModel(["a", "b"], repeat=True)
    texts = [(await model.chat(req())).text for _ in range(5)]
    assert texts == ["a", "b", "a", "b", "a"]


async def test_scripted_model_errors_and_computed_turns() -> None:
    err = ProviderError("slow", FailureClass.RATE_LIMITED, retry_after=1.0)
    model = ScriptedModel([err, lambda r: f"echo {r.messages[-1].text}", ScriptedTurn(text="x" * 40, chunk_size=10)])
    with pytest.raises(ProviderError) as info:
        await model.chat(req())
    assert info.value is err
    assert (await model.chat(req("ping"))).text == "echo ping"
    deltas = [d async for d in model.stream(req())]
    assert [d.text for d in deltas if d.text] == ["x" * 10] * 4
    assert deltas[-1].finish_reason == "stop" and deltas[-1].usage is not None


async def test_scripted_tool_calls_and_usage() -> None:
    u = Usage(5, 6, requests=1, cost=Decimal("0.2"), cost_source="reported")
    model = ScriptedModel([ScriptedTurn(tool_calls=({"name": "t", "arguments": {"a": [1]}, "id": "fixed"},
                                                    {"name": "u"}), usage=u)])
    r = await model.chat(req())
    assert [(c.id, c.name, c.arguments) for c in r.tool_calls] == [("fixed", "t", {"a": [1]}), ("call_0_1", "u", {})]
    assert r.finish_reason == "tool_calls" and r.usage == u


async def test_scripted_model_delay_and_record_switch() -> None:
    model = ScriptedModel([{"text": "late", "delay": 0.02}], record=False)
    loop = asyncio.get_running_loop()
    t0 = loop.time()
    assert (await model.chat(req())).text == "late"
    assert loop.time() - t0 >= 0.015
    assert model.requests == []


def test_scripted_turn_validation() -> None:
    with pytest.raises(ValueError, match="unknown scripted-turn keys"):
        ScriptedModel([{"txt": "typo"}])
    with pytest.raises(ValueError, match="needs a 'name'"):
        ScriptedModel([{"tool_calls": [{"arguments": {}}]}])
    with pytest.raises(TypeError, match="cannot script"):
        ScriptedModel([42])  # type: ignore[list-item]


# --- SchemaDrivenModel ----------------------------------------------------------------------


class Address(pydantic.BaseModel):
    street: str
    number: int


async def test_schema_driven_model_calls_every_tool_with_valid_arguments() -> None:
    received: dict[str, dict[str, Any]] = {}

    @tool(side_effecting=False)
    def lookup(city: str, limit: int = 5, tags: list[str] | None = None) -> str:
        """Look up places in a city, at most limit of them, filtered by tags."""
        received["lookup"] = {"city": city, "limit": limit, "tags": tags}
        return "found"

    @tool(side_effecting=True)
    def ship(to: Address, express: bool, weight_kg: float) -> str:
        """Ship a parcel of weight_kg to an address, express or standard."""
        received["ship"] = {"to": to, "express": express, "weight_kg": weight_kg}
        return "shipped"

    model = SchemaDrivenModel(final="all done")
    result = await Agent(model, tools=[lookup, ship]).run("go")
    assert result.output == "all done"
    assert set(received) == {"lookup", "ship"}
    assert isinstance(received["ship"]["to"], Address)
    tool_results = model.requests[1].messages[-1].tool_results
    assert [(r.name, r.is_error) for r in tool_results] == [("lookup", False), ("ship", False)]


async def test_schema_driven_model_answers_the_output_schema() -> None:
    model = SchemaDrivenModel()
    result = await Agent(model, output=Address).run("where?")
    assert isinstance(result.output, Address)


def test_example_for_schema_subset() -> None:
    schema = {
        "type": "object",
        "properties": {
            "n": {"type": "integer", "minimum": 3},
            "s": {"type": "string", "minLength": 4},
            "xs": {"type": "array", "items": {"const": 1}, "minItems": 2},
            "maybe": {"type": ["null", "number"]},
            "choice": {"oneOf": [{"type": "null"}, {"$ref": "#/$defs/E"}]},
        },
        "$defs": {"E": {"enum": ["e1", "e2"]}},
    }
    assert example_for_schema(schema) == {"n": 3, "s": "xxxx", "xs": [1, 1], "maybe": 0.0, "choice": "e1"}
    with pytest.raises(ValueError, match="local"):
        example_for_schema({"$ref": "https://example.com/s.json"})


# --- contexts and clocks --------------------------------------------------------------------


async def test_make_test_ctx_and_fake_clock() -> None:
    ctx = make_test_ctx(services={"x": 1})
    assert ctx.run_id == "run_test" and ctx.scope == Scope(tenant="test") and ctx.service("x") == 1
    clock = ctx.clock
    assert isinstance(clock, FakeClock)
    start = clock.now()
    assert start.tzinfo is not None
    await clock.sleep(90)
    clock.advance(10)
    assert clock.now() - start == timedelta(seconds=100)
    assert clock.monotonic() == 100 and clock.sleeps == [90]
    fixed = FakeClock(datetime(2030, 5, 1, tzinfo=UTC))
    assert make_test_ctx(clock=fixed).clock is fixed


def test_seamkit_ctx_fixture(seamkit_ctx: RunContext) -> None:
    assert isinstance(seamkit_ctx, RunContext) and seamkit_ctx.run_id == "run_test"


# --- block_network --------------------------------------------------------------------------


def test_block_network_refuses_non_loopback() -> None:
    with block_network():
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
            with pytest.raises(NetworkBlocked, match=r"192\.0\.2\.1"):
                s.connect(("192.0.2.1", 80))  # TEST-NET-1: never routed
            with pytest.raises(NetworkBlocked):
                s.connect_ex(("198.51.100.7", 443))
        with pytest.raises(NetworkBlocked):
            socket.getaddrinfo("example.com", 443)
        with pytest.raises(NetworkBlocked):
            socket.create_connection(("example.com", 80), timeout=0.1)
    # restored afterwards
    assert socket.socket.connect.__name__ == "connect" and socket.getaddrinfo.__module__ == "socket"


def _loopback_round_trip() -> bytes:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as server:
        server.bind(("127.0.0.1", 0))
        server.listen(1)
        port = server.getsockname()[1]
        with socket.create_connection(("127.0.0.1", port), timeout=2) as client:
            conn, _ = server.accept()
            with conn:
                client.sendall(b"ping")
                return conn.recv(4)


def test_block_network_allows_loopback() -> None:
    with block_network():
        assert _loopback_round_trip() == b"ping"
        assert socket.getaddrinfo("localhost", 80)


def test_block_network_can_refuse_loopback_too() -> None:
    with block_network(allow_loopback=False), pytest.raises(NetworkBlocked):
        _loopback_round_trip()


def test_no_network_fixture(no_network: None) -> None:
    with pytest.raises(NetworkBlocked):
        socket.create_connection(("203.0.113.5", 80), timeout=0.1)
    assert _loopback_round_trip() == b"ping"


# --- ports ----------------------------------------------------------------------------------


def test_test_kit_models_are_llm_ports() -> None:
    assert isinstance(ScriptedModel([]), LLMPort)
    assert isinstance(SchemaDrivenModel(), LLMPort)
    assert not isinstance(object(), LLMPort)


def test_function_tools_are_tool_ports() -> None:
    @tool(side_effecting=False)
    def f(x: int) -> int:
        """Return x unchanged (a tool for port checks)."""
        return x

    assert isinstance(f, ToolPort)
    assert not isinstance(lambda x: x, ToolPort)


def test_clocks_are_clock_ports() -> None:
    assert isinstance(SystemClock(), ClockPort)
    assert isinstance(SYSTEM_CLOCK, ClockPort)
    assert isinstance(FakeClock(), ClockPort)
    assert not isinstance(FakeClock(), StorePort)


async def test_an_empty_repeating_script_raises_provider_error() -> None:
    with pytest.raises(ProviderError, match="no turn left"):
        await ScriptedModel([], repeat=True).chat(req())


async def test_scripted_model_following_the_transcript_continues_a_resumed_script() -> None:
    from seamkit.testing import ScriptedModel
    from seamkit.values import ChatRequest, Message

    turns = ["first", "second", "third"]
    history = [Message.user("q"), Message.assistant("first"), Message.user("more")]
    fresh = ScriptedModel(turns, follow_transcript=True)
    assert (await fresh.chat(ChatRequest(tuple(history)))).text == "second"
    assert (await fresh.chat(ChatRequest((Message.user("q"),)))).text == "first"
    plain = ScriptedModel(turns)
    assert (await plain.chat(ChatRequest(tuple(history)))).text == "first"


async def test_scripted_model_calls_counts_requests_when_following_the_transcript() -> None:
    # issue 10 item 24: with follow_transcript the turn index was also the call count, so a
    # request resumed mid-script (or a repeated one) was miscounted
    history = (Message.user("q"), Message.assistant("first"), Message.user("more"))
    model = ScriptedModel(["first", "second", "third"], follow_transcript=True)
    await model.chat(ChatRequest(history))
    assert model.calls == 1
    await model.chat(ChatRequest(history))
    await model.chat(ChatRequest((Message.user("q"),)))
    assert model.calls == 3 == len(model.requests)
