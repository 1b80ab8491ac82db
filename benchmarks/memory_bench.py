"""Resident memory per concurrent run: 1,000 scripted W1 runs alive at once in one process.

Run: ``bash benchmarks/run.sh memory`` or ``.venv/bin/python benchmarks/memory_bench.py [--runs 1000]
[--rounds 3] [--json]``. Prints numbers; never asserts on size.

Each run is W1 of ``benchmarks/run.py`` (one agent, a scripted model building ``Delta`` objects, an
``async def`` tool ``add(2, 3)``, no checkpointer): the model asks for the tool, the tool runs, and
the model's second call waits on one ``asyncio.Event`` before answering ``5``. ``--runs`` runs are
started with ``asyncio.gather``; once every one of them is waiting (each has a run context, a
transcript of four messages, its model stream and its task), memory is read, the event is set and
every run must complete with ``5``.

Figures (each the median over ``--rounds`` rounds):

- ``RSS per concurrent run``: (resident set while all runs wait - resident set before they start) /
  runs, KiB, each round in a fresh interpreter after a warm-up of 10 runs (in a process that already
  held 1,000 runs the freed memory is reused and the growth reads as almost 0). The resident set is
  read from ``/proc/self/statm`` (Linux); it includes the allocator's slack, so it is what the
  operating system sees.
- ``Python heap per concurrent run``: the same difference measured by ``tracemalloc`` (bytes
  Python allocated and has not freed), KiB: the objects a run keeps alive, without allocator slack.
  It runs in a separate pass (tracing slows allocation) and also reports what stays allocated after
  every run finished (``left after the runs``, bytes per run: should be about 0; the test
  ``tests/core/test_core_run_leaks.py`` checks it).

The peer harness has no memory workload (it records the peak RSS of each W1/W2 process only).
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import os
import resource
import statistics
import subprocess
import sys
import tracemalloc
from collections.abc import AsyncIterator
from decimal import Decimal
from typing import Any

from seamkit import Agent, collect_result, tool
from seamkit.values import ChatRequest, Delta, LLMResult, ToolCallDelta, Usage

FREE = Usage(requests=1, cost=Decimal(0), cost_source="local")
PAGE = os.sysconf("SC_PAGE_SIZE") if hasattr(os, "sysconf") else 4096


def rss_bytes() -> int:
    """Current resident set size in bytes (``/proc/self/statm``; the peak from ``getrusage`` where
    there is no /proc, which overstates nothing here since memory only grows during a round)."""
    try:
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * PAGE
    except OSError:
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * (1 if sys.platform == "darwin" else 1024)


class GatedLLM:
    """An LLMPort: the first call of a run asks for ``add(2, 3)``; the second (the transcript holds
    the tool result) counts itself as waiting, waits for ``gate``, then answers ``5``."""

    provider = "bench"
    model = "bench"

    def __init__(self) -> None:
        self.gate = asyncio.Event()
        self.waiting = 0
        self.all_waiting = asyncio.Event()
        self.expect = 0

    async def stream(self, request: ChatRequest) -> AsyncIterator[Delta]:
        if not any(m.role == "tool" for m in request.messages):
            yield Delta(tool_call=ToolCallDelta(0, "call_1", "add", json.dumps({"a": 2, "b": 3})))
            yield Delta(usage=FREE, finish_reason="tool_calls")
            return
        self.waiting += 1
        if self.waiting == self.expect:
            self.all_waiting.set()
        await self.gate.wait()
        yield Delta(text="5")
        yield Delta(usage=FREE, finish_reason="stop")

    async def chat(self, request: ChatRequest) -> LLMResult:
        return await collect_result(self.stream(request), provider=self.provider, model=self.model)


@tool(side_effecting=False)
async def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


async def one_round(runs: int, measure: Any) -> tuple[int, int]:
    """Start ``runs`` runs, read ``measure()`` while all wait, release them, check them; returns
    (during - before, after - before) of ``measure()``."""
    llm = GatedLLM()
    llm.expect = runs
    agent = Agent(llm, prompt="Use the add tool.", tools=[add])
    gc.collect()
    before = measure()
    tasks = [asyncio.ensure_future(agent.run("What is 2 + 3?")) for _ in range(runs)]
    await llm.all_waiting.wait()
    gc.collect()
    during = measure()
    llm.gate.set()
    results = await asyncio.gather(*tasks)
    bad = [r for r in results if r.stop_reason != "completed" or r.output != "5"]
    if bad:
        raise AssertionError(f"{len(bad)} runs did not answer 5: {bad[0].stop_reason} {bad[0].output!r}")
    del tasks, results
    # the loop's handle that resumed this coroutine holds gather()'s future (every task and result)
    # until this step ends: yield once so that "after" measures what the runs left, not asyncio
    await asyncio.sleep(0)
    gc.collect()
    return during - before, measure() - before


async def rss_round(runs: int) -> int:
    """RSS growth of one round in this (fresh) process, after a warm-up round of 10 runs (imports,
    caches): a second round of ``runs`` in the same process would reuse the first one's freed
    memory and show almost nothing."""
    await one_round(10, rss_bytes)
    return (await one_round(runs, rss_bytes))[0]


def rss_rounds(runs: int, rounds: int) -> list[int]:
    """``rss_round`` in ``rounds`` fresh interpreters, one after the other."""
    out = []
    for _ in range(rounds):
        proc = subprocess.run([sys.executable, __file__, "--runs", str(runs), "--rss-round"],
                              check=True, capture_output=True, text=True)
        out.append(int(proc.stdout.split()[-1]))
    return out


async def bench(runs: int, rounds: int) -> dict[str, Any]:
    rss = rss_rounds(runs, rounds)
    tracemalloc.start()
    try:
        await one_round(runs, lambda: tracemalloc.get_traced_memory()[0])
        heap = [await one_round(runs, lambda: tracemalloc.get_traced_memory()[0]) for _ in range(rounds)]
    finally:
        tracemalloc.stop()
    return {
        "runs": runs,
        "rounds": rounds,
        "rss_kib_per_run": statistics.median(rss) / runs / 1024,
        "rss_kib_per_run_all": [round(x / runs / 1024, 2) for x in rss],
        "heap_kib_per_run": statistics.median(d for d, _ in heap) / runs / 1024,
        "heap_left_bytes_per_run": statistics.median(a for _, a in heap) / runs,
        "rss_after_mib": rss_bytes() / 2**20,
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=1000, help="concurrent runs per round (default 1000)")
    ap.add_argument("--rounds", type=int, default=3, help="measured rounds (default 3; the median is shown)")
    ap.add_argument("--json", action="store_true", help="print one JSON line at the end")
    ap.add_argument("--rss-round", action="store_true", help=argparse.SUPPRESS)  # one fresh-process round
    a = ap.parse_args()
    if a.runs < 1 or a.rounds < 1:
        ap.error("--runs and --rounds must be at least 1")
    if a.rss_round:
        print(asyncio.run(rss_round(a.runs)))
        return
    r = asyncio.run(bench(a.runs, a.rounds))
    print(f"load average {os.getloadavg()[0]:.2f}; {a.runs} concurrent W1 runs, median of {a.rounds} rounds "
          f"(RSS per round: {r['rss_kib_per_run_all']} KiB/run)")
    print(f"RSS per concurrent run: {r['rss_kib_per_run']:.1f} KiB  (target: reported; the issue sets no bound)")
    print(f"Python heap per concurrent run: {r['heap_kib_per_run']:.1f} KiB  (target: reported; tracemalloc)")
    print(f"Python heap left after the runs: {r['heap_left_bytes_per_run']:.0f} bytes/run  "
          "(target: about 0; tests/core/test_core_run_leaks.py checks 10,000 runs)")
    if a.json:
        print(json.dumps(r))


if __name__ == "__main__":
    main()
