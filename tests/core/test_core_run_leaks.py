"""A finished run leaves nothing behind: after 10,000 runs of one agent the process holds what it
held after the first 1,000 (no per-run object kept by a module-level cache, a registry, a list of
warnings or an event listener list). What makes ``benchmarks/memory_bench.py``'s figures mean
something for a long-lived server.

Plain runs, checkpointed ones (the store told to forget each run), failed and cancelled ones. Each
check counts the objects the garbage collector tracks, by type, and the blocks the allocator holds,
before and after thousands of scripted runs: a per-run leak of even one small object grows a count by
thousands; a cache filled once does not grow at all."""

from __future__ import annotations

import asyncio
import gc
import sys
import weakref
from collections import Counter
from collections.abc import AsyncIterator, Awaitable, Callable
from decimal import Decimal

import pytest
from seamkit import Agent, tool
from seamkit._runtime.context import RunContext
from seamkit.errors import FailureClass, ProviderError
from seamkit.testing import MemoryStore
from seamkit.values import ChatRequest, Delta, LLMResult, ToolCallDelta, Usage

WARMUP, RUNS = 1_000, 10_000
# Growth allowed over RUNS runs, whatever the type: caches that fill once, the test's own frames.
# A leak of one object per run is 10,000; of one per hundred runs still 100.
SLACK_OBJECTS = 50
SLACK_BLOCKS = 300  # allocator blocks (every object, tracked or not: strings, ints, Decimals)

FREE = Usage(requests=1, cost=Decimal(0), cost_source="local")


class Marker:
    """A weakly referenceable object a run holds until it ends (a run resource)."""

    async def aclose(self) -> None:
        pass


class AddThenAnswer:
    """An LLMPort building fresh Deltas on every call: ``add(2, 3)`` until the transcript holds a
    tool result, then (``then``) ``"answer"`` ``5``, ``"fail"`` with a server error, or ``"hang"``:
    set ``waiting`` and wait until cancelled."""

    provider = "scripted"
    model = "leak-check"

    def __init__(self, then: str = "answer") -> None:
        self.then = then
        self.waiting = asyncio.Event()

    async def stream(self, request: ChatRequest) -> AsyncIterator[Delta]:
        if not any(m.role == "tool" for m in request.messages):
            yield Delta(tool_call=ToolCallDelta(0, "call_1", "add", '{"a": 2, "b": 3}'))
            yield Delta(usage=FREE, finish_reason="tool_calls")
            return
        if self.then == "fail":
            raise ProviderError("the server fell over", FailureClass.SERVER_ERROR, provider=self.provider)
        if self.then == "hang":
            self.waiting.set()
            await asyncio.Event().wait()
        yield Delta(text="5")
        yield Delta(usage=FREE, finish_reason="stop")

    async def chat(self, request: ChatRequest) -> LLMResult:
        raise NotImplementedError


async def _open_marker() -> Marker:
    return Marker()


def _agent(model: AddThenAnswer, markers: list[weakref.ref[Marker]], checkpointer: object = None) -> Agent:
    @tool(side_effecting=False)
    async def add(a: int, b: int, ctx: RunContext) -> int:
        """Add two integers."""
        marker = await ctx.resource("marker", _open_marker)  # the run holds it until it ends
        markers[:] = [weakref.ref(marker)]
        return a + b

    return Agent(model, prompt="Use the add tool.", tools=[add], checkpointer=checkpointer)


def _census() -> tuple[Counter[type], int]:
    """Live gc-tracked objects by type, and the allocator's blocks in use (keyed by the types
    themselves: naming them would allocate hundreds of strings between the two counts)."""
    gc.collect()
    counts = Counter(type(o) for o in gc.get_objects())
    return counts, sys.getallocatedblocks()


async def _assert_nothing_left(one_run: Callable[[], Awaitable[None]], markers: list[weakref.ref[Marker]],
                               runs: int = RUNS) -> None:
    """``one_run()`` WARMUP times, a census, ``runs`` times more, a census: nothing grew."""
    # run contexts alive before any of these runs (an earlier test's, kept by whatever it left
    # behind) are not these runs' to answer for
    gc.collect()
    earlier = sum(1 for o in gc.get_objects() if type(o) is RunContext)
    for _ in range(WARMUP):
        await one_run()
    before, blocks_before = _census()
    for _ in range(runs):
        await one_run()
    # the loop's handle that resumed this coroutine holds the future it awaited last (a cancelled
    # run's task, with its traceback) until this step ends: yield once, asyncio's and not a leak
    await asyncio.sleep(0)
    after, blocks_after = _census()
    grown = {f"{t.__module__}.{t.__qualname__}": after[t] - before[t] for t in after
             if after[t] - before[t] > SLACK_OBJECTS}
    assert not grown, f"objects that grew over {runs} repetitions: {grown}"
    assert after[RunContext] == earlier, "a finished run's context is still alive"
    assert markers and markers[0]() is None, "the last run's resource is still alive"
    assert blocks_after - blocks_before < SLACK_BLOCKS, (
        f"{blocks_after - blocks_before} more allocator blocks after {runs} repetitions")


async def test_ten_thousand_finished_runs_leave_nothing_behind() -> None:
    markers: list[weakref.ref[Marker]] = []
    agent = _agent(AddThenAnswer(), markers)

    async def one_run() -> None:
        result = await agent.run("What is 2 + 3?")
        assert result.output == "5" and result.stop_reason == "completed"
        assert result.transcript[3].tool_results[0].content == "5"  # the tool ran and did not fail

    await _assert_nothing_left(one_run, markers)


async def test_checkpointed_runs_leave_nothing_behind_once_the_store_forgets_them() -> None:
    markers: list[weakref.ref[Marker]] = []
    store = MemoryStore()
    agent = _agent(AddThenAnswer(), markers, store)

    async def one_run() -> None:
        result = await agent.run("What is 2 + 3?")
        assert result.output == "5"
        assert await store.delete_run(result.run_id)  # what the store keeps is kept by design

    # 2,000 runs: a checkpointed run costs five times a plain one, and a per-run leak still shows
    await _assert_nothing_left(one_run, markers, RUNS // 5)
    assert not await store.list_runs()  # the store really is empty again


async def test_runs_that_fail_or_are_cancelled_leave_nothing_behind() -> None:
    markers: list[weakref.ref[Marker]] = []
    failing = _agent(AddThenAnswer("fail"), markers)
    hanging_model = AddThenAnswer("hang")
    hanging = _agent(hanging_model, markers)

    async def one_run() -> None:
        with pytest.raises(ProviderError, match="fell over"):
            await failing.run("What is 2 + 3?")
        hanging_model.waiting.clear()
        run = asyncio.ensure_future(hanging.run("What is 2 + 3?"))
        await hanging_model.waiting.wait()  # the tool ran; the run waits in its second model call
        run.cancel()
        with pytest.raises(asyncio.CancelledError):
            await run

    await _assert_nothing_left(one_run, markers, RUNS // 10)  # two runs each: 2,000 runs
