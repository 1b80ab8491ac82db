"""Runtime: cancellation token, run context, clocks, concurrency helpers, the invoker."""

from __future__ import annotations

import asyncio
import random
import threading
from datetime import UTC
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from seamkit._agent.agent import Agent
from seamkit._middleware import Call, Next
from seamkit._runtime.clock import SYSTEM_CLOCK, SystemClock
from seamkit._runtime.concurrency import gather_best_effort, gather_bounded, run_sync
from seamkit._runtime.context import CancellationToken, RunContext, new_run_id
from seamkit._runtime.invoker import Invoker, render_tool_value
from seamkit._tools import ToolRegistry, tool
from seamkit.errors import Failure, RunCancelled
from seamkit.testing import ScriptedModel, make_test_ctx
from seamkit.values import Scope, ToolCall

# --- CancellationToken / RunContext ---------------------------------------------------------


def test_cancel_propagates_to_children_not_upward() -> None:
    root = CancellationToken()
    child = root.child()
    grandchild = child.child()
    sibling = root.child()
    child.cancel("child stop")
    assert child.cancelled and grandchild.cancelled
    assert grandchild.reason == "child stop"
    assert not root.cancelled and not sibling.cancelled
    root.cancel("all")
    assert sibling.cancelled and sibling.reason == "all"
    assert child.reason == "child stop"  # first reason wins
    with pytest.raises(RunCancelled, match="child stop"):
        grandchild.raise_if_cancelled()
    with pytest.raises(RunCancelled, match="all"):
        root.raise_if_cancelled()
    late = root.child()
    assert late.cancelled and late.reason == "all"


async def test_wait_returns_once_cancelled() -> None:
    tok = CancellationToken()
    waiter = asyncio.create_task(tok.wait())
    await asyncio.sleep(0.01)
    assert not waiter.done()
    tok.cancel()
    await asyncio.wait_for(waiter, 1)
    await asyncio.wait_for(tok.wait(), 1)  # already cancelled: returns at once


async def test_wait_on_a_child_wakes_when_the_parent_is_cancelled() -> None:
    parent = CancellationToken()
    child = parent.child()
    waiter = asyncio.create_task(child.wait())
    await asyncio.sleep(0)
    parent.cancel("stop")
    await asyncio.wait_for(waiter, 1)
    assert waiter.done() and child.cancelled and child.reason == "stop"


def test_run_context_child_and_services() -> None:
    ctx = RunContext(scope=Scope("t", "u"), services={"store": 1})
    child = ctx.child()
    assert child.parent_run_id == ctx.run_id and child.run_id != ctx.run_id
    assert child.run_id.startswith("run_") and len(new_run_id()) == 36
    assert child.scope == ctx.scope and child.service("store") == 1
    ctx.cancellation.cancel()
    assert child.cancellation.cancelled
    with pytest.raises(KeyError, match="have: \\['store'\\]"):
        ctx.service("tracer")


def test_system_clock() -> None:
    assert SYSTEM_CLOCK.now().tzinfo is UTC
    a = SystemClock().monotonic()
    assert SystemClock().monotonic() >= a


# --- gather_bounded -------------------------------------------------------------------------


@pytest.mark.parametrize("limit", [1, 2, 3, 8])
async def test_gather_bounded_keeps_order_and_limit(limit: int) -> None:
    rng = random.Random(limit)
    running = 0
    max_running = 0

    def factory(i: int) -> Any:
        async def work() -> int:
            nonlocal running, max_running
            running += 1
            max_running = max(max_running, running)
            await asyncio.sleep(rng.random() * 0.01)
            running -= 1
            return i * 10

        return work

    n = 20
    results = await gather_bounded([factory(i) for i in range(n)], limit=limit)
    assert results == [i * 10 for i in range(n)]
    assert max_running == limit


async def test_gather_bounded_failure_cancels_siblings_and_raises_the_original() -> None:
    cancelled: list[int] = []
    started = asyncio.Event()

    def sibling(i: int) -> Any:
        async def work() -> int:
            try:
                started.set()
                await asyncio.sleep(10)
            except asyncio.CancelledError:
                cancelled.append(i)
                raise
            return i

        return work

    async def failing() -> int:
        await started.wait()
        raise KeyError("boom")

    with pytest.raises(KeyError, match="boom"):
        await asyncio.wait_for(gather_bounded([sibling(0), failing, sibling(2)], limit=3), 2)
    assert sorted(cancelled) == [0, 2]


async def test_gather_bounded_edge_cases() -> None:
    assert await gather_bounded([]) == []

    async def one() -> int:
        return 1

    assert await gather_bounded([one]) == [1]
    with pytest.raises(ValueError):
        await gather_bounded([one], limit=0)


# --- gather_best_effort ---------------------------------------------------------------------


async def test_gather_best_effort_holds_failures_per_slot() -> None:
    def ok(i: int) -> Any:
        async def work() -> int:
            await asyncio.sleep(0.001 * i)
            return i

        return work

    async def bad() -> int:
        raise ValueError("nope")

    results = await gather_best_effort([ok(0), bad, ok(2), bad], limit=2)
    assert results[0] == 0 and results[2] == 2
    for r in (results[1], results[3]):
        assert isinstance(r, Failure) and r.type == "ValueError" and r.message == "nope"


async def test_gather_best_effort_does_not_swallow_cancellation() -> None:
    entered = asyncio.Event()

    async def forever() -> int:
        entered.set()
        await asyncio.Event().wait()
        return 0

    async def fine() -> int:
        return 1

    task = asyncio.create_task(gather_best_effort([forever, fine, forever]))
    await entered.wait()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert task.cancelled()


# --- run_sync -------------------------------------------------------------------------------


async def _answer(x: int) -> tuple[int, int]:
    await asyncio.sleep(0)
    return x * 2, threading.get_ident()


def test_run_sync_without_a_running_loop() -> None:
    value, ident = run_sync(_answer(21))
    assert value == 42 and ident == threading.get_ident()


async def test_run_sync_inside_a_running_loop() -> None:
    value, ident = run_sync(_answer(5))
    assert value == 10 and ident != threading.get_ident()


async def test_run_sync_reraises_in_the_caller() -> None:
    async def boom() -> None:
        raise LookupError("inner")

    with pytest.raises(LookupError, match="inner"):
        run_sync(boom())


def test_agent_run_sync() -> None:
    result = Agent(ScriptedModel(["hello"])).run_sync("hi")
    assert result.output == "hello" and result.stop_reason == "completed"


async def test_agent_run_sync_inside_a_loop() -> None:
    result = Agent(ScriptedModel(["hello"])).run_sync("hi")
    assert result.output == "hello"


# --- Invoker --------------------------------------------------------------------------------


@tool(side_effecting=False)
async def hang() -> str:
    """Never returns."""
    await asyncio.Event().wait()
    return "never"


@tool(side_effecting=False)
def explode(x: int) -> str:
    """Always raise, naming x (to test error results)."""
    raise RuntimeError(f"bad {x}")


async def test_invoker_tool_failures_become_error_results() -> None:
    inv = Invoker(ScriptedModel([]), ToolRegistry([explode]))
    ctx = make_test_ctx()
    unknown = await inv.call_tool(ToolCall("c1", "nope", {}), ctx)
    assert unknown.is_error and "UnknownToolError" in unknown.content and "explode" in unknown.content
    invalid = await inv.call_tool(ToolCall("c2", "explode", {"x": "a"}), ctx)
    assert invalid.is_error and "ToolArgumentError" in invalid.content and "x:" in invalid.content
    raised = await inv.call_tool(ToolCall("c3", "explode", {"x": 3}), ctx)
    assert raised.is_error and raised.content == "RuntimeError: bad 3" and raised.call_id == "c3"


async def test_invoker_call_tool_does_not_swallow_cancellation() -> None:
    inv = Invoker(ScriptedModel([]), ToolRegistry([hang]))
    task = asyncio.create_task(inv.call_tool(ToolCall("c", "hang", {}), make_test_ctx()))
    await asyncio.sleep(0.01)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task


async def test_invoker_chat_collects_through_middlewares() -> None:
    async def tag(call: Call, nxt: Next) -> Any:
        assert call.meta == {"step": 7}
        async for d in nxt(call):
            yield d

    inv = Invoker(ScriptedModel(["hi there"]), ToolRegistry(), [tag])
    from seamkit.values import ChatRequest, FrozenDict, Message

    result = await inv.chat(ChatRequest((Message.user("x"),)), make_test_ctx(), FrozenDict(step=7))
    assert result.text == "hi there" and result.finish_reason == "stop"


def test_render_tool_value() -> None:
    import dataclasses
    from decimal import Decimal

    @dataclasses.dataclass
    class P:
        x: int

    assert render_tool_value("plain") == "plain"
    assert render_tool_value({"a": [1, None]}) == '{"a":[1,null]}'
    assert render_tool_value(P(1)) == '{"x":1}'
    assert render_tool_value(Decimal("1.5")) == '"1.5"'


PNG = b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR"


@pytest.mark.parametrize(
    ("value", "media_type"),
    [(PNG, "image/png"), (b"\xff\xfe\x00\x01", "application/octet-stream"), (b"a\x00b", "application/octet-stream"),
     (bytearray(b"%PDF-1.7\n\xe2\xe3"), "application/pdf"),
     (memoryview(b"RIFF\x00\x00\x00\x00WEBPVP8 "), "image/webp")],
)
async def test_a_tool_returning_binary_bytes_ran_and_its_result_says_what_it_returned(
    value: Any, media_type: str
) -> None:
    # issue 10 item 14: bytes that are not UTF-8 text were reported as the tool failing
    import base64
    import json

    @tool(side_effecting=True)
    def snapshot() -> Any:
        """Take a snapshot of the screen and return the encoded image."""
        return value

    inv = Invoker(ScriptedModel([]), ToolRegistry([snapshot]))
    result = await inv.call_tool(ToolCall("c1", "snapshot", {}), make_test_ctx())
    assert not result.is_error
    shown = json.loads(result.content)
    assert shown["media_type"] == media_type and shown["size_bytes"] == len(bytes(value))
    assert base64.b64decode(shown["base64"], validate=True) == bytes(value)


@pytest.mark.parametrize("value", [b"caf\xc3\xa9 \xe2\x82\xac", bytearray(b"line 1\nline 2\t."), memoryview(b"plain")])
def test_utf8_bytes_render_as_their_text(value: Any) -> None:
    assert render_tool_value(value) == bytes(value).decode("utf-8")


@given(st.binary(max_size=64) | st.text(max_size=32).map(str.encode))
def test_rendered_bytes_lose_nothing(data: bytes) -> None:
    import base64
    import json

    shown = render_tool_value(data)
    if shown.startswith('{"media_type": '):
        assert base64.b64decode(json.loads(shown)["base64"]) == data
    else:
        assert shown.encode("utf-8") == data


async def test_a_value_that_cannot_be_shown_says_the_tool_ran() -> None:
    @tool(side_effecting=True)
    def pay(amount: int) -> Any:
        """Pay the amount to the merchant and return the payment handle."""
        return {"nested": object(), "bytes": b"\xff"}

    inv = Invoker(ScriptedModel([]), ToolRegistry([pay]))
    result = await inv.call_tool(ToolCall("c1", "pay", {"amount": 3}), make_test_ctx())
    assert result.is_error and result.content.startswith("The tool ran and returned a dict value")
    assert render_tool_value({"bytes": b"\xff", "text": b"ok"}) == '{"bytes":"_w==","text":"b2s="}'


async def test_cancelling_a_running_agent_ends_the_task_cancelled() -> None:
    model = ScriptedModel([{"tool_calls": [{"name": "hang", "arguments": {}}]}, "never reached"])
    task = asyncio.create_task(Agent(model, tools=[hang]).run("go"))
    for _ in range(50):
        await asyncio.sleep(0.001)
        if model.calls:
            break
    await asyncio.sleep(0.01)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert task.cancelled()
    assert model.calls == 1


async def test_cancelling_a_running_agent_with_parallel_tools() -> None:
    model = ScriptedModel([{"tool_calls": [{"name": "hang", "arguments": {}}] * 3}, "never reached"])
    task = asyncio.create_task(Agent(model, tools=[hang]).run("go"))
    await asyncio.sleep(0.05)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert task.cancelled()


async def test_cancelled_token_stops_the_run() -> None:
    ctx = make_test_ctx()
    ctx.cancellation.cancel("user pressed stop")
    with pytest.raises(RunCancelled, match="user pressed stop"):
        await Agent(ScriptedModel(["x"])).run("go", ctx=ctx)


# issue 10 item 10: ctx.cancellation.cancel() did not stop tools in flight (only checked between steps)


def _cancel_soon(ctx: RunContext, started: asyncio.Event, reason: str = "user pressed stop") -> asyncio.Task[None]:
    async def cancel() -> None:
        await started.wait()
        await asyncio.sleep(0.01)
        ctx.cancellation.cancel(reason)

    return asyncio.create_task(cancel())


@pytest.mark.parametrize("durable", [False, True])
async def test_cancelling_the_token_stops_async_tools_in_flight_and_checkpoints(durable: bool) -> None:
    from seamkit.testing._memory_store import MemoryStore

    started = asyncio.Event()
    cleaned: list[str] = []

    @tool(side_effecting=False)
    async def crawl(site: str) -> str:
        """Crawl every page of a web site and return how many pages it has."""
        try:
            started.set()
            await asyncio.sleep(30)
            return "never"
        finally:
            cleaned.append(site)

    model = ScriptedModel([{"tool_calls": [{"name": "crawl", "arguments": {"site": s}} for s in ("a", "b")]}, "x"])
    agent = Agent(model, tools=[crawl], checkpointer=MemoryStore() if durable else None)
    ctx = make_test_ctx()
    canceller = _cancel_soon(ctx, started)
    with pytest.raises(RunCancelled, match="user pressed stop"):
        await asyncio.wait_for(agent.run("crawl both", ctx=ctx), 5)
    await canceller
    assert sorted(cleaned) == ["a", "b"]  # both cancelled, their cleanup ran
    assert model.calls == 1
    if durable:
        snap = await agent.checkpointer.latest(ctx.run_id)
        assert snap is not None and snap.status == "running"  # resumable, lease released
        assert "RunCancelled: user pressed stop" in snap.state["interrupted"]


async def test_cancelling_the_token_reaches_thread_tools_which_see_it_and_clean_up() -> None:
    import time

    started = asyncio.Event()
    loop = asyncio.get_running_loop()
    seen: list[str] = []

    @tool(side_effecting=False)
    def index(path: str, ctx: RunContext) -> str:
        """Index every file under the path for search and return how many were indexed."""
        loop.call_soon_threadsafe(started.set)
        try:
            while not ctx.cancellation.cancelled:
                time.sleep(0.005)
            seen.append(f"stopped: {ctx.cancellation.reason}")
            return "stopped"
        finally:
            seen.append("cleanup")

    model = ScriptedModel([{"tool_calls": [{"name": "index", "arguments": {"path": "/"}}]}, "x"])
    ctx = make_test_ctx()
    canceller = _cancel_soon(ctx, started)
    began = time.monotonic()
    with pytest.raises(RunCancelled):
        await Agent(model, tools=[index]).run("index", ctx=ctx)
    await canceller
    assert seen == ["stopped: user pressed stop", "cleanup"]  # the run waited for the cleanup
    assert time.monotonic() - began < 2  # not the grace period: the tool returned at once


async def test_a_thread_tool_that_ignores_the_token_is_not_waited_on_forever() -> None:
    import time

    started = asyncio.Event()
    release = threading.Event()
    loop = asyncio.get_running_loop()

    @tool(side_effecting=False)
    def stubborn() -> str:
        """Compute a long report without ever checking for cancellation; returns the report."""
        loop.call_soon_threadsafe(started.set)
        release.wait(10)
        return "late"

    stubborn.cancel_grace = 0.2
    ctx = make_test_ctx()
    canceller = _cancel_soon(ctx, started)
    began = time.monotonic()
    try:
        with pytest.raises(RunCancelled):
            await Agent(ScriptedModel([{"tool_calls": [{"name": "stubborn"}]}, "x"]), tools=[stubborn]).run(
                "go", ctx=ctx)
        assert 0.2 <= time.monotonic() - began < 2
    finally:
        release.set()
        await canceller


async def test_the_token_cancelled_from_a_worker_thread_stops_the_batch() -> None:
    cancelled = asyncio.Event()

    @tool(side_effecting=False)
    async def wait_for_mail() -> str:
        """Wait until a new mail arrives and return its subject."""
        try:
            await asyncio.sleep(30)
        except asyncio.CancelledError:
            cancelled.set()
            raise
        return "never"

    @tool(side_effecting=False)
    def give_up(ctx: RunContext) -> str:
        """Decide that the task cannot be done and stop the whole run; returns nothing useful."""
        import time

        time.sleep(0.02)
        ctx.cancellation.cancel("nothing to wait for")
        return "stopping"

    model = ScriptedModel([{"tool_calls": [{"name": "wait_for_mail"}, {"name": "give_up"}]}, "x"])
    with pytest.raises(RunCancelled, match="nothing to wait for"):
        await asyncio.wait_for(Agent(model, tools=[wait_for_mail, give_up]).run("go"), 5)
    assert cancelled.is_set()


async def test_a_token_cancelled_from_another_thread_wakes_its_waiters_and_callbacks() -> None:
    token = CancellationToken()
    fired: list[str] = []
    token.add_callback(lambda: fired.append(threading.current_thread().name))
    removed = lambda: fired.append("removed")  # noqa: E731
    token.add_callback(removed)
    token.remove_callback(removed)
    waiter = asyncio.create_task(token.wait())
    await asyncio.sleep(0.01)
    canceller = threading.Thread(target=token.cancel, args=("from a thread",), name="canceller")
    canceller.start()
    await asyncio.wait_for(waiter, 2)
    canceller.join(2)
    assert token.reason == "from a thread" and fired == ["canceller"]
    late: list[int] = []
    token.add_callback(lambda: late.append(1))  # already cancelled: called at once
    assert late == [1]


async def test_a_cancelled_error_raised_by_a_tool_itself_is_that_tools_error() -> None:
    @tool(side_effecting=False)
    async def fetch_quote() -> str:
        """Fetch today's quote from the quote service and return its text."""
        inner = asyncio.get_running_loop().create_future()
        inner.cancel()
        return await inner  # a library's operation cancelled under the tool: CancelledError

    model = ScriptedModel([{"tool_calls": [{"name": "fetch_quote"}]}, "no quote today"])
    result = await Agent(model, tools=[fetch_quote]).run("quote?")
    assert result.output == "no quote today"
    r = result.transcript[2].tool_results[0]
    assert r.is_error and r.content.startswith("CancelledError") and "run was not cancelled" in r.content


async def test_gather_bounded_several_failures_raise_a_group() -> None:
    started = asyncio.Event()

    async def fails_on_cancel() -> int:
        try:
            started.set()
            await asyncio.sleep(10)
        except asyncio.CancelledError:
            raise ValueError("cleanup failed") from None
        return 0

    async def fails() -> int:
        await started.wait()
        raise KeyError("first")

    with pytest.raises(BaseExceptionGroup) as info:
        await gather_bounded([fails_on_cancel, fails])
    assert sorted(type(e).__name__ for e in info.value.exceptions) == ["KeyError", "ValueError"]


# --- issue 10: an iterator returned by a tool is read once, on every path ---------------------------

ITEMS: list[Any] = [0, b"\x89PNG\r\n\x1a\n", "two"]  # not-UTF-8 bytes make pydantic serialise twice


@pytest.mark.parametrize("make", [
    lambda: (x for x in ITEMS),
    lambda: iter(ITEMS),
    lambda: map(lambda x: x, ITEMS),
], ids=["generator", "iter", "map"])
@pytest.mark.parametrize("side_effecting", [False, True])
async def test_a_tool_returning_an_iterator_shows_its_items_on_every_path(make: Any, side_effecting: bool) -> None:
    from seamkit.testing._memory_store import MemoryStore

    @tool(side_effecting=side_effecting)
    def scan(n: int) -> Any:
        """Scan n records and return them as they are read."""
        return make()

    model = ScriptedModel([{"tool_calls": [{"name": "scan", "arguments": {"n": 3}}]}, "done"])
    # with a checkpointer, the side-effecting call goes through the effect ledger (call_effect)
    await Agent(model, tools=[scan], checkpointer=MemoryStore()).run("scan")
    shown = model.requests[1].messages[-1].tool_results[0]
    assert not shown.is_error
    assert shown.content == render_tool_value(list(ITEMS)) == '[0,"iVBORw0KGgo=","two"]'
