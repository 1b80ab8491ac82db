"""Workflow overhead: per step next to one agent run doing the same work, start-up validation as the
graph grows, and a fan-out with bounded concurrency as the branches grow.

Run: ``bash benchmarks/run.sh workflows``. Options: ``--rounds 5``, ``--steps 25,50,100,200``,
``--graphs 100,250,500,1000``, ``--branches 25,50,100,200``, ``--stores none,memory,sqlite``,
``--json`` (one JSON line). Numbers only, no thresholds.

(a) **Per step.** ``N`` steps of the same work (``x + 1``) two ways:

- ``workflow``: a pipeline of ``N`` function steps (step ``i`` consumes ``e{i-1}``, emits
  ``e{i}``), each an activation (a child run context, ``started``/``finished`` events, a
  checkpoint when it starts and after it finishes when the workflow has a checkpointer);
- ``agent``: one agent run whose scripted model (zero latency) makes ``N`` tool calls of an async
  ``inc`` tool, one per turn, then answers (a checkpoint per turn when it has a checkpointer).

Per store (``none``: no checkpointer; ``memory``: a checkpointer on the in-memory store, the codec
without I/O; ``sqlite``: the SQLite store of ``plugins/stores/sqlite`` on a fresh temporary file
per run, its schema created before the run): the run's median wall time over ``--rounds`` runs
(after one warm-up), divided by ``N`` (µs per step); the median interval between steps 2-11 and
between the last ten steps (late/early: 1.0 is flat); and, with a checkpointer, the last
checkpoint's state in codec bytes and the number of versions written.

(b) **Validation.** ``validate(workflow)`` (what ``run_workflow`` does before any step runs) on
graphs of ``--graphs`` steps, median ms over ``--rounds`` (at least 5) runs: ``layered`` (layers of
10 steps, each consuming one event of the previous layer and, for half of them, a second one;
steps declared in a shuffled order, seeded) and ``chain-reversed`` (a pipeline declared last step
first: the fixed point's worst case, one step resolved per pass).

(c) **Fan-out.** ``plan`` returns ``B`` items, ``branch`` runs once per item (``max_concurrency``
8; it yields to the loop once and returns a 256-character text), ``join`` receives every branch.
Per store and ``B``: median wall time over ``--rounds`` runs, µs per branch, peak Python memory
of one more run under ``tracemalloc`` (above what was allocated before it), the last checkpoint's
state bytes, the versions written and (SQLite) the database file's size.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import itertools
import json
import os
import random
import statistics
import sys
import tempfile
import time
import tracemalloc
from collections.abc import Awaitable, Callable
from typing import Any

from seamkit._agent.agent import Agent
from seamkit._durability import codec
from seamkit._durability.checkpointer import Checkpointer
from seamkit._tools import tool
from seamkit.testing._memory_store import MemoryStore
from seamkit.testing._models import ScriptedModel
from seamkit.values import Scope, StreamEvent
from seamkit.workflows import START, Step, StepContext, Workflow, WorkflowResult, run_workflow, validate

WINDOW = 10
FAN_CONCURRENCY = 8
BRANCH_TEXT = 256


# -- stores -------------------------------------------------------------------------------------

class Stores:
    """A fresh store per run: ``none`` (no checkpointer), ``memory`` or SQLite on a temporary file
    (schema created before the run)."""

    def __init__(self, tmp: str) -> None:
        self.tmp = tmp
        self.n = 0
        self.path: str | None = None

    async def open(self, kind: str) -> Any:
        self.path = None
        if kind == "none":
            return None
        if kind == "memory":
            return MemoryStore()
        from seamkit_sqlite.store import SqliteStore

        self.n += 1
        self.path = os.path.join(self.tmp, f"bench-{self.n}.db")
        store = SqliteStore(self.path)
        await store.set(Scope(), "bench:warm", "1")
        await Checkpointer(store).latest("bench-warm")
        return store

    @staticmethod
    async def close(store: Any) -> None:
        close = getattr(store, "aclose", None)
        if close is not None:
            await close()

    def file_bytes(self) -> int | None:
        if self.path is None:
            return None
        return sum(os.path.getsize(p) for p in (self.path, self.path + "-wal") if os.path.exists(p))


async def _checkpoint(store: Any, run_id: str) -> dict[str, int]:
    cp = Checkpointer(store)
    snap = await cp.latest(run_id)
    assert snap is not None
    return {"state_bytes": len(codec.dumps(dict(snap.state)).encode()), "versions": snap.version}


# -- (a) per step -------------------------------------------------------------------------------

class Stamps:
    """An observer timing each ``finished`` step event."""

    def __init__(self) -> None:
        self.at: list[float] = []

    def on_event(self, event: StreamEvent) -> None:
        if event.kind == "step" and event.data["event"] == "finished":
            self.at.append(time.perf_counter())


async def _inc(ctx: StepContext, x: int) -> int:
    return x + 1


def pipeline(n: int, store: Any, stamps: Stamps) -> Workflow:
    steps = tuple(Step(f"s{i}", _inc, (START if i == 0 else f"e{i - 1}",), (f"e{i}",)) for i in range(n))
    return Workflow("pipeline", steps, outcomes=(f"e{n - 1}",), observers=(stamps,),
                    checkpointer=Checkpointer(store) if store is not None else None)


async def workflow_steps(n: int, store: Any) -> tuple[float, list[float], str]:
    stamps = Stamps()
    w = pipeline(n, store, stamps)
    t0 = time.perf_counter()
    r = await run_workflow(w, 0)
    total = time.perf_counter() - t0
    assert r.output == n and len(stamps.at) == n, (r.output, len(stamps.at))
    return total, stamps.at, r.run_id


@tool(side_effecting=False, blocking=False)
async def inc(x: int) -> int:
    """Add one.

    Args:
        x: the number
    """
    return x + 1


async def agent_steps(n: int, store: Any) -> tuple[float, list[float], str]:
    at: list[float] = []

    def call(i: int) -> Callable[[Any], dict[str, Any]]:
        def turn(request: Any) -> dict[str, Any]:
            at.append(time.perf_counter())
            return {"tool_calls": [{"name": "inc", "arguments": {"x": i}, "id": f"c{i}"}]}

        return turn

    script: list[Any] = [call(i) for i in range(n)]
    script.append(lambda request: {"text": str(n)})
    agent = Agent(ScriptedModel(script, record=False), tools=(inc,), max_steps=n + 2,
                  checkpointer=Checkpointer(store) if store is not None else None)
    t0 = time.perf_counter()
    r = await agent.run("count")
    total = time.perf_counter() - t0
    assert r.output == str(n) and r.stop_reason == "completed", (r.output, r.stop_reason)
    return total, at, r.run_id


def _intervals(at: list[float]) -> tuple[float, float]:
    d = [b - a for a, b in itertools.pairwise(at)]
    return statistics.median(d[:WINDOW]), statistics.median(d[-WINDOW:])


async def per_step(rounds: int, sizes: list[int], stores: list[str], st: Stores) -> dict[str, Any]:
    sides: dict[str, Callable[[int, Any], Awaitable[tuple[float, list[float], str]]]] = {
        "workflow": workflow_steps, "agent": agent_steps}
    out: dict[str, Any] = {}
    for kind in stores:
        out[kind] = {}
        for n in sizes:
            row: dict[str, Any] = {}
            for fn in sides.values():  # warm-up
                s = await st.open(kind)
                await fn(n, s)
                await st.close(s)
            totals: dict[str, list[float]] = {s: [] for s in sides}
            early: dict[str, list[float]] = {s: [] for s in sides}
            late: dict[str, list[float]] = {s: [] for s in sides}
            sizes_: dict[str, dict[str, int]] = {}
            for r in range(rounds):
                for side in (list(sides) if r % 2 == 0 else list(sides)[::-1]):
                    s = await st.open(kind)
                    gc.collect()
                    total, at, run_id = await sides[side](n, s)
                    totals[side].append(total)
                    e, la = _intervals(at)
                    early[side].append(e)
                    late[side].append(la)
                    if s is not None and side not in sizes_:
                        sizes_[side] = await _checkpoint(s, run_id)
                    await st.close(s)
            for side in sides:
                med = statistics.median(totals[side])
                e, la = statistics.median(early[side]), statistics.median(late[side])
                row[side] = {"total_ms": med * 1e3, "us_per_step": med / n * 1e6, "early_us": e * 1e6,
                             "late_us": la * 1e6, "late_over_early": la / e, **sizes_.get(side, {})}
            row["workflow_over_agent"] = row["workflow"]["total_ms"] / row["agent"]["total_ms"]
            out[kind][str(n)] = row
    return out


# -- (b) validation -----------------------------------------------------------------------------

async def _noop(ctx: StepContext, x: Any) -> Any:
    return x


def layered(n: int, seed: int = 7) -> Workflow:
    rng = random.Random(seed)
    width = 10
    steps: list[Step] = []
    prev: list[str] = [START]
    layers = max(1, n // width)
    for layer in range(layers):
        here = [f"l{layer}s{j}" for j in range(width)]
        for j, name in enumerate(here):
            consumes = [prev[j % len(prev)]]
            if j % 2 and len(prev) > 1:
                consumes.append(rng.choice([p for p in prev if p != consumes[0]]))
            steps.append(Step(name, _noop, tuple(consumes), (f"ev_{name}",)))
        prev = [f"ev_{name}" for name in here]
    rng.shuffle(steps)
    return Workflow("layered", tuple(steps), outcomes=tuple(prev))


def chain_reversed(n: int) -> Workflow:
    steps = [Step(f"s{i}", _noop, (START if i == 0 else f"e{i - 1}",), (f"e{i}",)) for i in range(n)]
    return Workflow("chain", tuple(reversed(steps)), outcomes=(f"e{n - 1}",))


def validation(rounds: int, sizes: list[int]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for shape, build in (("layered", layered), ("chain-reversed", chain_reversed)):
        out[shape] = {}
        for n in sizes:
            w = build(n)
            assert validate(w) == [], validate(w)[:3]
            times = []
            for _ in range(max(5, rounds)):
                t0 = time.perf_counter()
                validate(w)
                times.append(time.perf_counter() - t0)
            out[shape][str(n)] = {"steps": len(w.steps), "median_ms": statistics.median(times) * 1e3,
                                  "best_ms": min(times) * 1e3}
    return out


# -- (c) fan-out --------------------------------------------------------------------------------

def fan_out(b: int, store: Any) -> Workflow:
    async def plan(ctx: StepContext, n: int) -> list[int]:
        return list(range(n))

    async def branch(ctx: StepContext, i: int) -> str:
        await asyncio.sleep(0)
        return f"{i:08d}" + "x" * (BRANCH_TEXT - 8)

    async def join(ctx: StepContext, texts: list[str]) -> int:
        return len(texts)

    return Workflow("fan", (Step("plan", plan, (START,), ("item",)), Step("branch", branch, ("item",), ("text",)),
                            Step("join", join, ("text",), ("done",), join=True)),
                    outcomes=("done",), max_concurrency=FAN_CONCURRENCY,
                    checkpointer=Checkpointer(store) if store is not None else None)


async def _fan(b: int, store: Any) -> tuple[float, WorkflowResult]:
    w = fan_out(b, store)
    t0 = time.perf_counter()
    r = await run_workflow(w, b)
    total = time.perf_counter() - t0
    assert r.output == b, r.output
    return total, r


async def fan(rounds: int, sizes: list[int], stores: list[str], st: Stores) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for kind in stores:
        out[kind] = {}
        for b in sizes:
            s = await st.open(kind)
            await _fan(b, s)  # warm-up
            await st.close(s)
            times = []
            for _ in range(rounds):
                s = await st.open(kind)
                gc.collect()
                t, r = await _fan(b, s)
                times.append(t)
                await st.close(s)
            s = await st.open(kind)
            gc.collect()
            tracemalloc.start()
            base = tracemalloc.get_traced_memory()[0]
            _, r = await _fan(b, s)
            peak = tracemalloc.get_traced_memory()[1] - base
            tracemalloc.stop()
            row: dict[str, Any] = {"median_ms": statistics.median(times) * 1e3,
                                   "us_per_branch": statistics.median(times) / b * 1e6, "peak_kib": peak / 1024}
            if s is not None:
                row.update(await _checkpoint(s, r.run_id))
            await st.close(s)
            size = st.file_bytes()
            if size is not None:
                row["file_kib"] = size / 1024
            out[kind][str(b)] = row
    return out


# -- output -------------------------------------------------------------------------------------

def _ints(text: str) -> list[int]:
    return [int(x) for x in text.split(",") if x.strip()]


def report(result: dict[str, Any]) -> None:
    print(f"(a) per step: N steps of x+1, a workflow pipeline vs one agent run with N scripted tool calls; "
          f"median of {result['rounds']} runs")
    print(f"  {'store':<7} {'N':>5} {'side':<9} {'µs/step':>9} {'steps 2-11':>11} {'last 10':>9} {'late/early':>10} "
          f"{'state B':>9} {'versions':>8}   wf/agent")
    for kind, rows in result["per_step"].items():
        for n, row in rows.items():
            for side in ("workflow", "agent"):
                r = row[side]
                extra = f"{r['state_bytes']:>9} {r['versions']:>8}" if "state_bytes" in r else f"{'-':>9} {'-':>8}"
                ratio = f"   {row['workflow_over_agent']:.2f}x" if side == "workflow" else ""
                print(f"  {kind:<7} {n:>5} {side:<9} {r['us_per_step']:9.1f} {r['early_us']:11.1f} "
                      f"{r['late_us']:9.1f} {r['late_over_early']:10.2f} {extra}{ratio}")
    print("(b) validate(workflow), median ms")
    print(f"  {'shape':<15} " + " ".join(f"{n + ' steps':>11}" for n in next(iter(result["validation"].values()))))
    for shape, rows in result["validation"].items():
        print(f"  {shape:<15} " + " ".join(f"{r['median_ms']:11.3f}" for r in rows.values()))
    print(f"(c) fan-out, max_concurrency {FAN_CONCURRENCY}, {BRANCH_TEXT}-character branch results; "
          f"median of {result['rounds']} runs, peak memory of one run (tracemalloc)")
    print(f"  {'store':<7} {'B':>5} {'wall ms':>9} {'µs/branch':>10} {'peak KiB':>9} {'state B':>9} {'versions':>8} "
          f"{'file KiB':>9}")
    for kind, rows in result["fan_out"].items():
        for b, r in rows.items():
            cp = (f"{r['state_bytes']:>9} {r['versions']:>8}" if "state_bytes" in r else f"{'-':>9} {'-':>8}")
            f = f"{r['file_kib']:9.0f}" if "file_kib" in r else f"{'-':>9}"
            print(f"  {kind:<7} {b:>5} {r['median_ms']:9.1f} {r['us_per_branch']:10.1f} {r['peak_kib']:9.0f} {cp} {f}")


async def measure(args: argparse.Namespace) -> dict[str, Any]:
    stores = [s.strip() for s in args.stores.split(",") if s.strip()]
    out: dict[str, Any] = {"rounds": args.rounds, "python": sys.version.split()[0]}
    with tempfile.TemporaryDirectory() as tmp:
        st = Stores(tmp)
        out["per_step"] = await per_step(args.rounds, _ints(args.steps), stores, st)
        out["validation"] = validation(args.rounds, _ints(args.graphs))
        out["fan_out"] = await fan(args.rounds, _ints(args.branches), stores, st)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--steps", default="25,50,100,200", help="pipeline lengths for (a)")
    parser.add_argument("--graphs", default="100,250,500,1000", help="graph sizes for (b)")
    parser.add_argument("--branches", default="25,50,100,200", help="fan-out sizes for (c)")
    parser.add_argument("--stores", default="none,memory,sqlite", help="comma-separated: none, memory, sqlite")
    parser.add_argument("--json", action="store_true", help="print one JSON line")
    args = parser.parse_args()
    if min(_ints(args.steps)) < 2 * WINDOW + 1:
        parser.error(f"--steps must each be at least {2 * WINDOW + 1}")
    result = asyncio.run(measure(args))
    if args.json:
        print(json.dumps(result))
        return
    report(result)


if __name__ == "__main__":
    main()
