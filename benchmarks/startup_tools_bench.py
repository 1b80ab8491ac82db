"""Start-up of a usable agent, and the cost of a sync tool next to an async one (issue 19).

Run: ``python benchmarks/startup_tools_bench.py [--runs N] [--rounds R] [--skip-import]``.
Prints one line per figure, ``<figure>: <value> <unit>  (target: <target>)``:

- ``usable agent import``: wall time of a fresh ``python -c`` that runs
  ``from seamkit import Agent, tool`` and defines one ``@tool`` (an ``async def add(a: int, b: int)``),
  median of 10 after one unmeasured run (which also writes the ``.pyc`` files); ``bare python
  start`` is ``python -c pass`` measured the same way, so the difference is seamkit's.
  ``... + Agent()`` adds building an ``Agent`` with that tool: the tool's argument model and JSON
  Schema are built there (on first use, not at decoration), so that figure shows where the
  deferred cost lands; it has no target.
- ``sync tool run`` / ``async tool run``: one W1 run as in the peer harness
  (``../shared/bench``): a scripted model that builds and streams seamkit ``Delta`` objects on each
  call asks for ``add(2, 3)``, the tool runs, the model answers ``5``; microseconds per run, median
  over ``--runs`` runs after 200 warm-up runs, rounds interleaved (sync, async, sync, ...) and
  the median of the rounds' medians reported. The sync tool is a plain ``def`` with the default
  ``@tool(side_effecting=False)``; ``sync tool run (blocking=False)`` is the same function declared
  non-blocking (it runs on the event loop) and has no target.

Differences from the peer harness: it reports the median of interleaved rounds in one process
rather than one 2,000-run median per process, and checks each result (output ``5``, one tool
run) on the first run of a round only.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Callable
from decimal import Decimal
from typing import Any

USABLE = (
    "from seamkit import Agent, tool\n"
    "@tool(side_effecting=False)\n"
    "async def add(a: int, b: int) -> int:\n"
    '    """Add two integers."""\n'
    "    return a + b\n"
)
WITH_AGENT = USABLE + (
    "class M:\n"
    "    provider = model = 'bench'\n"
    "    async def stream(self, request):\n"
    "        yield None\n"
    "    async def chat(self, request):\n"
    "        raise NotImplementedError\n"
    "Agent(M(), tools=[add])\n"
)


def _wall_ms(code: str, n: int) -> float:
    """Median wall milliseconds of ``python -c code`` over ``n`` fresh processes, after one
    unmeasured run that fills the page cache and writes ``.pyc`` files."""
    env = dict(os.environ)
    env.pop("PYTHONDONTWRITEBYTECODE", None)  # any non-empty value (even "0") turns .pyc writing off
    cmd = [sys.executable, "-c", code]
    subprocess.run(cmd, check=True, env=env)
    times = []
    for _ in range(n):
        t0 = time.perf_counter_ns()
        subprocess.run(cmd, check=True, env=env)
        times.append((time.perf_counter_ns() - t0) / 1e6)
    return statistics.median(times)


def _agent(sync: bool, blocking: bool = True) -> Any:
    from seamkit import Agent, tool
    from seamkit.values import Delta, ToolCallDelta, Usage

    free = Usage(requests=1, cost=Decimal(0), cost_source="local")
    runs = [0]

    class ScriptedLLM:
        """Like the peer harness's: each call builds its reply and streams it as Deltas."""

        provider = "bench"
        model = "bench"

        def __init__(self) -> None:
            self.calls = 0

        async def stream(self, request: Any) -> AsyncIterator[Any]:
            self.calls += 1
            if self.calls % 2:
                yield Delta(tool_call=ToolCallDelta(0, f"call_{self.calls}", "add", json.dumps({"a": 2, "b": 3})))
                yield Delta(usage=free, finish_reason="tool_calls")
            else:
                yield Delta(text="5")
                yield Delta(usage=free, finish_reason="stop")

        async def chat(self, request: Any) -> Any:
            raise NotImplementedError

    if sync:
        def add(a: int, b: int) -> int:
            """Add two integers."""
            runs[0] += 1
            return a + b

        t = tool(side_effecting=False, blocking=blocking)(add)
    else:
        async def add_async(a: int, b: int) -> int:
            """Add two integers."""
            runs[0] += 1
            return a + b

        t = tool(side_effecting=False, name="add")(add_async)
    agent = Agent(ScriptedLLM(), prompt="Use the add tool.", tools=[t])
    return agent, runs


async def _w1_round(agent: Any, runs: list[int], n: int) -> float:
    """Median microseconds per run over ``n`` runs (after 200 warm-up runs)."""
    before = runs[0]
    result = await agent.run("What is 2 + 3?")
    if result.output != "5" or runs[0] != before + 1:
        raise AssertionError(f"dishonest run: output={result.output!r} tool runs={runs[0] - before}")
    for _ in range(200):
        await agent.run("What is 2 + 3?")
    times = []
    pc = time.perf_counter_ns
    for _ in range(n):
        t0 = pc()
        await agent.run("What is 2 + 3?")
        times.append(pc() - t0)
    return statistics.median(times) / 1e3


def _tool_runs(n: int, rounds: int) -> dict[str, float]:
    cases: dict[str, Callable[[], Any]] = {
        "sync": lambda: _agent(sync=True),
        "async": lambda: _agent(sync=False),
        "inline": lambda: _agent(sync=True, blocking=False),
    }
    built = {k: make() for k, make in cases.items()}
    medians: dict[str, list[float]] = {k: [] for k in cases}

    async def main() -> None:
        for _ in range(rounds):
            for k, (agent, runs) in built.items():
                medians[k].append(await _w1_round(agent, runs, n))

    asyncio.run(main())
    return {k: statistics.median(v) for k, v in medians.items()}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=2000, help="W1 runs per round (default 2000)")
    ap.add_argument("--rounds", type=int, default=3, help="interleaved rounds per tool kind (default 3)")
    ap.add_argument("--processes", type=int, default=10, help="fresh processes per start-up figure (default 10)")
    ap.add_argument("--skip-import", action="store_true", help="only the tool-run figures")
    a = ap.parse_args()
    print(f"load average (1 min): {os.getloadavg()[0]:.2f}  (target: none, shown to spot a busy machine; python "
          f"{sys.version.split()[0]})")
    if not a.skip_import:
        bare = _wall_ms("pass", a.processes)
        usable = _wall_ms(USABLE, a.processes)
        with_agent = _wall_ms(WITH_AGENT, a.processes)
        print(f"usable agent import: {usable:.1f} ms  (target: <= 100 ms)")
        print(f"bare python start: {bare:.1f} ms  (target: none, the floor)")
        print(f"usable agent import + Agent(): {with_agent:.1f} ms  (target: none, the tool schema is built here)")
    got = _tool_runs(a.runs, a.rounds)
    print(f"sync tool run: {got['sync']:.1f} µs/run  (target: <= 2x async)")
    print(f"async tool run: {got['async']:.1f} µs/run  (target: none, the reference)")
    print(f"sync tool run (blocking=False): {got['inline']:.1f} µs/run  (target: none)")
    print(f"sync/async: {got['sync'] / got['async']:.2f}  (target: <= 2.0)")


if __name__ == "__main__":
    main()
