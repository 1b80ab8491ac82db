"""A finished run leaves nothing behind: after 10,000 runs of one agent the process holds what it
held after the first 1,000 (no per-run object kept by a module-level cache, a registry, a list of
warnings or an event listener list). What makes ``benchmarks/memory_bench.py``'s figures mean
something for a long-lived server.

Each check counts the objects the garbage collector tracks, by type, and the blocks the allocator
holds, before and after 10,000 scripted runs: a per-run leak of even one small object grows a count
by 10,000; a cache filled once does not grow at all."""

from __future__ import annotations

import gc
import sys
import weakref
from collections import Counter
from collections.abc import AsyncIterator
from decimal import Decimal

from seamkit import Agent, tool
from seamkit._runtime.context import RunContext
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
    tool result, then ``5``."""

    provider = "scripted"
    model = "leak-check"

    async def stream(self, request: ChatRequest) -> AsyncIterator[Delta]:
        if not any(m.role == "tool" for m in request.messages):
            yield Delta(tool_call=ToolCallDelta(0, "call_1", "add", '{"a": 2, "b": 3}'))
            yield Delta(usage=FREE, finish_reason="tool_calls")
        else:
            yield Delta(text="5")
            yield Delta(usage=FREE, finish_reason="stop")

    async def chat(self, request: ChatRequest) -> LLMResult:
        raise NotImplementedError


async def _open_marker() -> Marker:
    return Marker()


def _agent(markers: list[weakref.ref[Marker]], checkpointer: object = None) -> Agent:
    @tool(side_effecting=False)
    async def add(a: int, b: int, ctx: RunContext) -> int:
        """Add two integers."""
        marker = await ctx.resource("marker", _open_marker)  # the run holds it until it ends
        markers[:] = [weakref.ref(marker)]
        return a + b

    return Agent(AddThenAnswer(), prompt="Use the add tool.", tools=[add], checkpointer=checkpointer)


def _census() -> tuple[Counter[type], int]:
    """Live gc-tracked objects by type, and the allocator's blocks in use (keyed by the types
    themselves: naming them would allocate hundreds of strings between the two counts)."""
    gc.collect()
    counts = Counter(type(o) for o in gc.get_objects())
    return counts, sys.getallocatedblocks()


async def _runs(agent: Agent, n: int, store: MemoryStore | None = None) -> None:
    for _ in range(n):
        result = await agent.run("What is 2 + 3?")
        assert result.output == "5" and result.stop_reason == "completed"
        assert result.transcript[3].tool_results[0].content == "5"  # the tool ran and did not fail
        if store is not None:  # what the store keeps is kept by design; drop it to see the rest
            assert await store.delete_run(result.run_id)


async def _assert_nothing_left(store: MemoryStore | None = None, runs: int = RUNS) -> None:
    markers: list[weakref.ref[Marker]] = []
    agent = _agent(markers, store)
    await _runs(agent, WARMUP, store)
    before, blocks_before = _census()
    await _runs(agent, runs, store)
    after, blocks_after = _census()
    grown = {f"{t.__module__}.{t.__qualname__}": after[t] - before[t] for t in after
             if after[t] - before[t] > SLACK_OBJECTS}
    assert not grown, f"objects that grew over {runs} runs: {grown}"
    assert after[RunContext] == 0, "a finished run's context is still alive"
    assert markers and markers[0]() is None, "the last run's resource is still alive"
    assert blocks_after - blocks_before < SLACK_BLOCKS, (
        f"{blocks_after - blocks_before} more allocator blocks after {runs} runs")


async def test_ten_thousand_finished_runs_leave_nothing_behind() -> None:
    await _assert_nothing_left()


async def test_checkpointed_runs_leave_nothing_behind_once_the_store_forgets_them() -> None:
    # 2,000 runs: a checkpointed run costs five times a plain one, and a per-run leak still shows
    store = MemoryStore()
    await _assert_nothing_left(store, RUNS // 5)
    assert not await store.list_runs()  # the store really is empty again
