"""Per-step checkpoint cost of a long run: seamkit's stores side by side with LangGraph's savers.

Run: ``bash benchmarks/run.sh checkpoints`` (installs the pinned LangGraph packages of
``benchmarks/requirements-langgraph.txt`` and the PostgreSQL / Redis binaries when missing) or
``.venv/bin/python benchmarks/checkpoints.py [--turns 2000] [--rounds 3] [--only NAME ...]
[--profile NAME] [--json]``. Prints a table, then one line per figure with its target
(``<figure>: <value> <unit>  (target: <target>)``, issue 19 W4); exits 0 (no asserts on speed).

Workload (the same on both sides): a system prompt and a user message, then ``--turns`` steps, each
an assistant message with one tool call (``write_note(path, text)``, a ~200-byte argument) and its
tool result (~200 bytes), then a final assistant text. The transcript grows by two messages a
step. seamkit: ``Agent(ScriptedModel(...), tools=[write_note], checkpointer=<store>)``. LangGraph:
a ``StateGraph`` with ``messages: Annotated[list, add_messages]``, an ``agent`` node adding the
AIMessage with the tool call and a ``tools`` node adding the ToolMessage, looping, compiled with the
saver and run with ``durability="sync"`` (each checkpoint written before the next node runs, as
seamkit does).

What is timed (``time.perf_counter`` around each call, microseconds):
- seamkit, ``checkpointer (encode+store)``: everything the checkpointer does on the event loop:
  ``RunHandle.save`` and ``record_write`` (encoding the state and the new messages, and, for an
  awaited save, the store call that writes the step) plus any background flush of deferred writes
  (``RunHandle._flush_quietly``; none in this workload, whose scripted model answers at once).
  This is the number comparable to LangGraph's ``put``, which serializes the checkpoint inside the
  call, and the one the targets are about.
- seamkit, ``store calls``: the backend's ``save`` / ``put_write`` / ``save_many`` alone;
  ``calls/step`` of this row is the hand-offs to the store per step (target: 1).
- LangGraph: ``put`` + ``put_writes`` (``aput`` + ``aput_writes`` for the async savers).
A step runs from one model call (seamkit) / ``agent`` node (LangGraph) to the next, and its cost
is the sum of the timed calls that started in it; the writes before the first model call (the
run's first checkpoint, connecting) are not part of any step, nor is the final answer's step.

Durability, like for like: seamkit's SQLite store defaults to WAL with ``synchronous=NORMAL``
(a commit survives a crashed process, the last ones may be lost on power loss); LangGraph's
``SqliteSaver`` / ``AsyncSqliteSaver`` run WAL with SQLite's default ``synchronous=FULL`` (commits
survive power loss too). So ``sqlite (sync=FULL)`` is the row to compare with LangGraph's savers at
their default, and ``sqlite`` with LangGraph's at ``synchronous=NORMAL`` (``lg-*-normal``); both
pairs are printed.

Each configuration runs ``--rounds`` times (a fresh run / thread in the same database). The
workload is identical every round, so the table takes, for each step, the lowest time over the
rounds (shared VMs are noisy: other processes steal the CPU for whole milliseconds; the lowest is
the cost) and reports its median, the medians of steps 1-20 and of the last 20 steps, and their
ratio (growth); "typical" is the median over rounds of each round's own median, noise included.

PostgreSQL and Redis are throwaway servers started on loopback by ``seamkit_services``
(its PostgreSQL runs with fsync=off and synchronous_commit=off, the same for both sides); SQLite
files live in a temporary directory on the same disk as the system temp dir.
"""

from __future__ import annotations

import argparse
import asyncio
import bisect
import contextlib
import cProfile
import functools
import gc
import io
import json
import os
import platform
import pstats
import shutil
import sqlite3
import statistics
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass, field
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Annotated, Any, TypedDict

from seamkit import Agent, tool
from seamkit._durability import codec
from seamkit._durability.checkpointer import RunHandle
from seamkit._plugins.registry import get_registry
from seamkit._ports import CheckpointPort
from seamkit.testing import ScriptedModel, ScriptedTurn

# seamkit_services (the throwaway PostgreSQL/Redis servers) lives with the test suite, not in the wheel
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

PC = time.perf_counter
_PORT_METHODS = sorted(m for m in vars(CheckpointPort) if not m.startswith("_"))
SYSTEM = "You keep a research log. Write one note per step with write_note, then say done."
TASK = "Write the research log, one note per step."
FLAT_MAX = 1.1  # last-20 / first-20 median at most this to count as flat (issue 19: "flat to 2,000 turns")
# issue 19 (W4), microseconds per step at the default durability, flat to 2,000 turns
TARGET_US = {"sqlite": 200.0, "postgres": 800.0, "redis": 400.0}
HANDOFFS_TARGET = 1  # store calls per step
CHECKPOINTER = "checkpointer (encode+store)"
STORE = "store calls"

# ------------------------------------------------------------------------------------------- workload

_LOREM = (
    "Observed the queue depth at the ingest tier while the batch job ran; latency stayed under the "
    "budget until the compaction window opened, then p99 rose by a factor of three. Next: compare "
    "with yesterday's trace, check whether the retry storm started before or after the failover, "
    "and note which shards were hot. "
)


def note_args(i: int) -> dict[str, str]:
    """Arguments of step ``i``'s tool call (~200 bytes of JSON)."""
    return {"path": f"notes/step-{i:03d}.md", "text": f"Step {i}: " + _LOREM[: 150 + i % 7]}


def assistant_text(i: int) -> str:
    return f"Step {i}: recording what I found so far."


def note_result(path: str, text: str) -> str:
    """The tool's answer (~200 bytes)."""
    return f"Saved {len(text)} characters to {path}. Index updated; {path} is now the latest note. " + text[:100]


@tool(side_effecting=False, blocking=False)
def write_note(path: str, text: str) -> str:
    """Append a note to the research log.

    Args:
        path: where the note goes
        text: the note
    """
    return note_result(path, text)


# ------------------------------------------------------------------------------------------- timing


@dataclass
class Recorder:
    """Start times of step boundaries (``marks``) and timed calls per channel (``calls[name]``:
    list of (start, seconds))."""

    marks: list[float] = field(default_factory=list)
    calls: dict[str, list[tuple[float, float]]] = field(default_factory=dict)

    def mark(self) -> None:
        self.marks.append(PC())

    def marked(self, turn: ScriptedTurn) -> ScriptedTurn:
        """Mark a step boundary and return ``turn`` (a scripted model's callable turn)."""
        self.mark()
        return turn

    def add(self, channel: str, t0: float, dt: float) -> None:
        self.calls.setdefault(channel, []).append((t0, dt))

    def steps(self, channel: str, turns: int) -> tuple[list[float], float]:
        """Per-step totals (µs) of ``channel`` for the first ``turns`` steps, and calls per step."""
        if len(self.marks) < turns + 1:
            raise RuntimeError(f"only {len(self.marks)} step boundaries recorded, expected {turns + 1}")
        bounds = self.marks[: turns + 1]
        totals = [0.0] * turns
        n = 0
        for t0, dt in self.calls.get(channel, ()):
            i = bisect.bisect_right(bounds, t0) - 1
            if 0 <= i < turns:
                totals[i] += dt
                n += 1
        return [t * 1e6 for t in totals], n / turns


def timed_async(rec: Recorder, channel: str, fn: Callable[..., Awaitable[Any]]) -> Callable[..., Awaitable[Any]]:
    async def wrapper(*args: Any, **kwargs: Any) -> Any:
        t0 = PC()
        try:
            return await fn(*args, **kwargs)
        finally:
            rec.add(channel, t0, PC() - t0)

    return wrapper


def timed_sync(rec: Recorder, channel: str, fn: Callable[..., Any]) -> Callable[..., Any]:
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        t0 = PC()
        try:
            return fn(*args, **kwargs)
        finally:
            rec.add(channel, t0, PC() - t0)

    return wrapper


@dataclass
class Result:
    """One configuration over its rounds. ``steps``: µs of each step, the lowest over the rounds
    at that step (the workload is the same every round, so the lowest is the cost without
    interference from other processes); ``round_medians``: each round's own median µs/step."""

    system: str
    backend: str
    measure: str
    steps: list[float]
    calls_per_step: float
    round_medians: list[float]

    @property
    def median(self) -> float:
        return statistics.median(self.steps)

    @property
    def first(self) -> float:
        return statistics.median(self.steps[:20])

    @property
    def last(self) -> float:
        return statistics.median(self.steps[-20:])

    @property
    def growth(self) -> float:
        return self.last / self.first if self.first else float("nan")

    @property
    def typical(self) -> float:
        """Median over the rounds of each round's median (what one run sees, noise included)."""
        return statistics.median(self.round_medians)

    def as_json(self) -> dict[str, Any]:
        return {
            "system": self.system,
            "backend": self.backend,
            "measure": self.measure,
            "median_us": round(self.median, 1),
            "first20_us": round(self.first, 1),
            "last20_us": round(self.last, 1),
            "growth": round(self.growth, 3),
            "calls_per_step": round(self.calls_per_step, 2),
            "round_medians_us": [round(m, 1) for m in self.round_medians],
        }


def combine(system: str, backend: str, measure: str, rounds: list[tuple[list[float], float]]) -> Result:
    floor = [min(col) for col in zip(*(r[0] for r in rounds), strict=True)]
    return Result(system, backend, measure, floor, rounds[0][1], [statistics.median(r[0]) for r in rounds])


# ------------------------------------------------------------------------------------------- seamkit


@contextlib.contextmanager
def patched_handle(rec: Recorder) -> Iterator[None]:
    """Time ``RunHandle.save`` / ``record_write`` (encode, and for an awaited write the store call)
    and the background flush of deferred writes, for the duration."""
    names = [n for n in ("save", "record_write", "_flush_quietly") if hasattr(RunHandle, n)]
    saved = {n: getattr(RunHandle, n) for n in names}
    for n in names:
        setattr(RunHandle, n, timed_async(rec, "checkpointer", saved[n]))
    try:
        yield
    finally:
        for n in names:
            setattr(RunHandle, n, saved[n])


_STORE_METHODS = ("save", "put_write", "save_many")


def wrap_store(store: Any, rec: Recorder) -> list[str]:
    """Time the store's write calls (instance attributes shadow the methods); the names wrapped."""
    names = [n for n in _STORE_METHODS if callable(getattr(store, n, None))]
    for n in names:
        setattr(store, n, timed_async(rec, "store", getattr(store, n)))
    return names


def seamkit_model(turns: int, rec: Recorder) -> ScriptedModel:
    script: list[Any] = []
    for i in range(1, turns + 1):
        t = ScriptedTurn(text=assistant_text(i), tool_calls=({"name": "write_note", "arguments": note_args(i),
                                                              "id": f"call_{i}"},))
        script.append(lambda _req, t=t: rec.marked(t))
    final = ScriptedTurn(text="done")
    script.append(lambda _req: rec.marked(final))
    return ScriptedModel(script, record=False)


async def seamkit_round(store: Any, turns: int) -> tuple[Recorder, int]:
    """One run on ``store``; returns the recorder and the run's average stored message size (bytes)."""
    rec = Recorder()
    wrapped = wrap_store(store, rec)
    agent = Agent(seamkit_model(turns, rec), tools=(write_note,), prompt=SYSTEM, max_steps=turns + 2,
                  checkpointer=store)
    gc.collect()
    with patched_handle(rec):
        r = await agent.run(TASK)
    for n in wrapped:
        delattr(store, n)
    if r.stop_reason != "completed" or r.steps != turns + 1:
        raise RuntimeError(f"seamkit run ended {r.stop_reason} after {r.steps} steps")
    snap = await agent.checkpointer.latest(r.run_id)
    if snap is None or len(snap.transcript) != len(r.transcript):
        raise RuntimeError("the latest checkpoint does not hold the whole transcript")
    sizes = [len(codec.dumps(m).encode()) for m in r.transcript[2:-1]]
    return rec, round(statistics.mean(sizes))


class Skip(Exception):
    """A configuration that cannot run here; the message says why."""


async def bench_seamkit(name: str, params: dict[str, Any], turns: int, rounds: int,
                        setup: bool = False) -> tuple[list[Result], int]:
    store: Any = get_registry().resolve("store", name).build(params)
    is_port = isinstance(store, CheckpointPort)
    if not is_port:
        missing = [m for m in _PORT_METHODS if not callable(getattr(store, m, None))]
        await store.aclose()
        raise Skip(f"the {name} store does not implement CheckpointPort (missing: {', '.join(missing)})")
    try:
        if setup:
            await store.setup()
        got: dict[str, list[tuple[list[float], float]]] = {"store": [], "checkpointer": []}
        size = 0
        for _ in range(rounds):
            rec, size = await seamkit_round(store, turns)
            for ch in got:
                got[ch].append(rec.steps(ch, turns))
    finally:
        await store.aclose()
    label = name if name != "sqlite" or params.get("synchronous", "NORMAL") == "NORMAL" else f"{name} (sync=FULL)"
    return [
        combine("seamkit", label, STORE, got["store"]),
        combine("seamkit", label, CHECKPOINTER, got["checkpointer"]),
    ], size


# ------------------------------------------------------------------------------------------- LangGraph


def build_graph(turns: int, rec: Recorder, *, is_async: bool) -> Any:
    from langchain_core.messages import AIMessage, AnyMessage, ToolMessage
    from langgraph.graph import END, START, StateGraph
    from langgraph.graph.message import add_messages

    # functional form: the annotation is evaluated here (this module uses postponed annotations)
    State = TypedDict("State", {"messages": Annotated[list[AnyMessage], add_messages]})  # noqa: UP013

    def agent_update() -> dict[str, Any]:
        rec.mark()
        i = len(rec.marks)
        if i > turns:
            return {"messages": [AIMessage(content="done")]}
        call = {"name": "write_note", "args": note_args(i), "id": f"call_{i}", "type": "tool_call"}
        return {"messages": [AIMessage(content=assistant_text(i), tool_calls=[call])]}

    def tools_update(state: Any) -> dict[str, Any]:
        call = state["messages"][-1].tool_calls[0]
        return {"messages": [ToolMessage(content=note_result(**call["args"]), tool_call_id=call["id"],
                                         name=call["name"])]}

    def route(state: Any) -> str:
        return "tools" if getattr(state["messages"][-1], "tool_calls", None) else END

    g = StateGraph(State)
    if is_async:
        async def agent_a(state: Any) -> dict[str, Any]:
            return agent_update()

        async def tools_a(state: Any) -> dict[str, Any]:
            return tools_update(state)

        g.add_node("agent", agent_a)
        g.add_node("tools", tools_a)
    else:
        g.add_node("agent", lambda state: agent_update())
        g.add_node("tools", tools_update)
    g.add_edge(START, "agent")
    g.add_conditional_edges("agent", route, ["tools", END])
    g.add_edge("tools", "agent")
    return g


def _lg_input() -> dict[str, Any]:
    from langchain_core.messages import HumanMessage, SystemMessage

    return {"messages": [SystemMessage(content=SYSTEM), HumanMessage(content=TASK)]}


def _lg_check(state_values: dict[str, Any], turns: int) -> None:
    n = len(state_values["messages"])
    if n != 2 + 2 * turns + 1:
        raise RuntimeError(f"LangGraph run holds {n} messages, expected {2 + 2 * turns + 1}")


def lg_round_sync(saver: Any, turns: int, thread: str) -> Recorder:
    rec = Recorder()
    saver.put = timed_sync(rec, "langgraph", saver.put)
    saver.put_writes = timed_sync(rec, "langgraph", saver.put_writes)
    graph = build_graph(turns, rec, is_async=False).compile(checkpointer=saver)
    cfg = {"configurable": {"thread_id": thread}, "recursion_limit": 4 * turns + 10}
    gc.collect()
    try:
        graph.invoke(_lg_input(), cfg, durability="sync")
    finally:
        del saver.put, saver.put_writes
    _lg_check(graph.get_state(cfg).values, turns)
    return rec


async def lg_round_async(saver: Any, turns: int, thread: str) -> Recorder:
    rec = Recorder()
    saver.aput = timed_async(rec, "langgraph", saver.aput)
    saver.aput_writes = timed_async(rec, "langgraph", saver.aput_writes)
    graph = build_graph(turns, rec, is_async=True).compile(checkpointer=saver)
    cfg = {"configurable": {"thread_id": thread}, "recursion_limit": 4 * turns + 10}
    gc.collect()
    try:
        await graph.ainvoke(_lg_input(), cfg, durability="sync")
    finally:
        del saver.aput, saver.aput_writes
    _lg_check((await graph.aget_state(cfg)).values, turns)
    return rec


def _lg_result(backend: str, recs: list[Recorder], turns: int) -> Result:
    return combine("langgraph", backend, "put+put_writes", [r.steps("langgraph", turns) for r in recs])


def bench_lg_sqlite_sync(path: str, turns: int, rounds: int, normal: bool = False) -> Result:
    """``SqliteSaver`` as its docs build it (WAL, SQLite's default synchronous=FULL); ``normal``:
    with ``PRAGMA synchronous=NORMAL``, the setting seamkit's sqlite store uses by default."""
    from langgraph.checkpoint.sqlite import SqliteSaver

    conn = sqlite3.connect(path, check_same_thread=False)
    try:
        saver = SqliteSaver(conn)
        saver.setup()
        if normal:
            conn.execute("PRAGMA synchronous=NORMAL")
        recs = [lg_round_sync(saver, turns, f"t{k}") for k in range(rounds)]
    finally:
        conn.close()
    return _lg_result("SqliteSaver" + (" (sync=NORMAL)" if normal else ""), recs, turns)


async def bench_lg_sqlite_async(path: str, turns: int, rounds: int, normal: bool = False) -> Result:
    from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver

    async with AsyncSqliteSaver.from_conn_string(path) as saver:
        await saver.setup()
        if normal:
            await saver.conn.execute("PRAGMA synchronous=NORMAL")
        recs = [await lg_round_async(saver, turns, f"t{k}") for k in range(rounds)]
    return _lg_result("AsyncSqliteSaver" + (" (sync=NORMAL)" if normal else ""), recs, turns)


def bench_lg_postgres_sync(dsn: str, turns: int, rounds: int) -> Result:
    from langgraph.checkpoint.postgres import PostgresSaver

    with PostgresSaver.from_conn_string(dsn) as saver:
        saver.setup()
        recs = [lg_round_sync(saver, turns, f"sync-t{k}") for k in range(rounds)]
    return _lg_result("PostgresSaver", recs, turns)


async def bench_lg_postgres_async(dsn: str, turns: int, rounds: int) -> Result:
    from langgraph.checkpoint.postgres.aio import AsyncPostgresSaver

    async with AsyncPostgresSaver.from_conn_string(dsn) as saver:
        await saver.setup()
        recs = [await lg_round_async(saver, turns, f"async-t{k}") for k in range(rounds)]
    return _lg_result("AsyncPostgresSaver", recs, turns)


# ------------------------------------------------------------------------------------------- host


def _ver(dist: str) -> str:
    try:
        return version(dist)
    except PackageNotFoundError:
        return "-"


def _cpu_model() -> str:
    with contextlib.suppress(OSError):
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    return platform.processor() or "?"


def _pg_version(dsn: str) -> str:
    import psycopg

    with psycopg.connect(dsn) as conn:
        row = conn.execute("SHOW server_version").fetchone()
    return str(row[0]) if row else "?"


def _redis_version(url: str) -> str:
    import redis

    client = redis.Redis.from_url(url)
    try:
        return str(client.info("server")["redis_version"])
    finally:
        client.close()


def host_info(dsn: str | None, url: str | None) -> dict[str, str]:
    info = {
        "cpu": f"{os.cpu_count()} cores, {_cpu_model()}",
        "os": platform.platform(),
        "load average at start": " ".join(f"{x:.2f}" for x in os.getloadavg()),
        "python": platform.python_version(),
        "sqlite": sqlite3.sqlite_version,
        "postgresql": _pg_version(dsn) if dsn else "-",
        "redis-server": _redis_version(url) if url else "-",
    }
    for dist in ("seamkit", "seamkit-sqlite", "seamkit-postgres", "seamkit-redis", "aiosqlite", "psycopg",
                 "redis", "langgraph", "langgraph-checkpoint", "langgraph-checkpoint-sqlite",
                 "langgraph-checkpoint-postgres", "langchain-core", "ormsgpack"):
        info[dist] = _ver(dist)
    return info


# ------------------------------------------------------------------------------------------- main

ALL = ("memory", "sqlite", "sqlite-full", "postgres", "redis",
       "lg-sqlite", "lg-asqlite", "lg-sqlite-normal", "lg-asqlite-normal", "lg-postgres", "lg-apostgres")


@dataclass
class Services:
    workdir: str
    pg: Any = None
    redis: Any = None

    def start(self, need_pg: bool, need_redis: bool) -> None:
        from seamkit_services import start_postgres, start_redis

        if need_pg:
            self.pg = start_postgres(os.path.join(self.workdir, "pg"))
        if need_redis:
            self.redis = start_redis(os.path.join(self.workdir, "redis"))

    def stop(self) -> None:
        for s in (self.pg, self.redis):
            if s is not None:
                with contextlib.suppress(Exception):
                    s.stop()


async def run_all(which: list[str], turns: int, rounds: int, svc: Services, log: Callable[[str], None],
                  skipped: list[str]) -> tuple[list[Result], int]:
    """Run each configuration in ``which``; one that cannot run is noted in ``skipped``."""
    tmp = svc.workdir
    dsn = svc.pg.dsn if svc.pg is not None else ""
    url = svc.redis.url if svc.redis is not None else ""
    db = functools.partial(os.path.join, tmp)
    seamkit: dict[str, Callable[[], Awaitable[tuple[list[Result], int]]]] = {
        "memory": lambda: bench_seamkit("memory", {}, turns, rounds),
        "sqlite": lambda: bench_seamkit("sqlite", {"path": db("seamkit.db")}, turns, rounds),
        "sqlite-full": lambda: bench_seamkit("sqlite", {"path": db("seamkit-full.db"), "synchronous": "FULL"},
                                             turns, rounds),
        "postgres": lambda: bench_seamkit("postgres", {"dsn": dsn, "schema": "seamkit_bench"}, turns, rounds,
                                          setup=True),
        "redis": lambda: bench_seamkit("redis", {"url": url, "prefix": "bench"}, turns, rounds),
    }
    langgraph: dict[str, Callable[[], Awaitable[Result]]] = {
        "lg-sqlite": lambda: asyncio.to_thread(bench_lg_sqlite_sync, db("lg.db"), turns, rounds),
        "lg-asqlite": lambda: bench_lg_sqlite_async(db("lg-async.db"), turns, rounds),
        "lg-sqlite-normal": lambda: asyncio.to_thread(bench_lg_sqlite_sync, db("lg-normal.db"), turns, rounds, True),
        "lg-asqlite-normal": lambda: bench_lg_sqlite_async(db("lg-async-normal.db"), turns, rounds, True),
        "lg-postgres": lambda: asyncio.to_thread(bench_lg_postgres_sync, dsn, turns, rounds),
        "lg-apostgres": lambda: bench_lg_postgres_async(dsn, turns, rounds),
    }
    results: list[Result] = []
    size = 0
    for name in which:
        log(f"  {name} ...")
        t0 = PC()
        try:
            if name in seamkit:
                rs, size = await seamkit[name]()
                results += rs
            else:
                results.append(await langgraph[name]())
        except Skip as exc:
            skipped.append(f"{name}: {exc}")
            log(f"    skipped: {exc}")
            continue
        log(f"    done in {PC() - t0:.1f} s")
    return results, size


def print_table(results: list[Result], turns: int) -> None:
    head = ("system", "backend", "measured", "median µs/step", "first-20", "last-20", "growth", "calls/step",
            "typical")
    rows = [
        (r.system, r.backend, r.measure, f"{r.median:.0f}", f"{r.first:.0f}", f"{r.last:.0f}", f"{r.growth:.2f}x",
         f"{r.calls_per_step:.2f}", f"{r.typical:.0f}")
        for r in results
    ]
    widths = [max(len(h), *(len(row[i]) for row in rows)) for i, h in enumerate(head)]
    line = "  ".join(f"{{:{'<' if i < 3 else '>'}{w}}}" for i, w in enumerate(widths))
    print(line.format(*head))
    print("  ".join("-" * w for w in widths))
    for row in rows:
        print(line.format(*row))


def figures(results: list[Result], turns: int) -> list[str]:
    """One line per figure: ``<figure>: <value> <unit>  (target: <target>)``."""
    def find(system: str, backend: str, measure: str | None = None) -> Result | None:
        for r in results:
            if r.system == system and r.backend == backend and (measure is None or r.measure == measure):
                return r
        return None

    last = f"{turns - 19:,}-{turns:,}"
    out: list[str] = []
    for backend, label in (("memory", "memory"), ("sqlite", "SQLite (file, WAL, synchronous=NORMAL: default)"),
                           ("sqlite (sync=FULL)", "SQLite (file, WAL, synchronous=FULL)"),
                           ("postgres", "PostgreSQL"), ("redis", "Redis")):
        r = find("seamkit", backend, CHECKPOINTER)
        if r is None:
            continue
        key = backend.split(" ")[0]
        target = f"<= {TARGET_US[key]:.0f} µs" if key in TARGET_US and backend == key else "none (reported)"
        if backend == "sqlite (sync=FULL)":
            target = "none (reported next to LangGraph's SqliteSaver at its default, like for like)"
        out.append(f"W4 {label} per step, turns 1-20: {r.first:.0f} µs  (target: {target})")
        out.append(f"W4 {label} per step, turns {last}: {r.last:.0f} µs  (target: {target})")
        out.append(f"W4 {label} growth, turns {last} / 1-20: {r.growth:.2f} x  (target: <= {FLAT_MAX})")
        st = find("seamkit", backend, STORE)
        if st is not None and key != "memory":
            out.append(f"W4 {label} store calls per step: {st.calls_per_step:.2f} calls  "
                       f"(target: {HANDOFFS_TARGET})")
    full = find("seamkit", "sqlite (sync=FULL)", CHECKPOINTER)
    normal = find("seamkit", "sqlite", CHECKPOINTER)
    pairs = (("SqliteSaver", full, "like for like: both WAL, synchronous=FULL (LangGraph's default)"),
             ("AsyncSqliteSaver", full, "like for like: both WAL, synchronous=FULL (LangGraph's default)"),
             ("SqliteSaver (sync=NORMAL)", normal, "like for like: both WAL, synchronous=NORMAL (seamkit's default)"),
             ("AsyncSqliteSaver (sync=NORMAL)", normal, "like for like: both WAL, synchronous=NORMAL"))
    for lg_name, mine, note in pairs:
        lg = find("langgraph", lg_name)
        if lg is None:
            continue
        out.append(f"W4 LangGraph {lg_name} per step, turns 1-20: {lg.first:.0f} µs  (target: none, reference)")
        out.append(f"W4 LangGraph {lg_name} per step, turns {last}: {lg.last:.0f} µs  (target: none, reference)")
        if mine is not None:
            for span, a, b in (("turns 1-20", mine.first, lg.first), (f"turns {last}", mine.last, lg.last)):
                out.append(f"W4 seamkit {mine.backend} / LangGraph {lg_name}, {span}: "
                           f"{a / b:.3f} x  (target: < 1; {note})")
    pg = find("seamkit", "postgres", CHECKPOINTER)
    lgs = [r for r in (find("langgraph", "PostgresSaver"), find("langgraph", "AsyncPostgresSaver")) if r]
    if pg is not None and lgs:
        cheapest = min(lgs, key=lambda r: r.median)
        out.append(f"W4 seamkit postgres / LangGraph {cheapest.backend}, median step: "
                   f"{pg.median / cheapest.median:.3f} x  (target: <= 0.333)")
    return out


async def profile_one(name: str, turns: int, svc: Services) -> None:
    params: dict[str, Any] = {
        "memory": {},
        "sqlite": {"path": os.path.join(svc.workdir, "profile.db")},
        "postgres": {"dsn": svc.pg.dsn if svc.pg else "", "schema": "seamkit_profile"},
        "redis": {"url": svc.redis.url if svc.redis else "", "prefix": "profile"},
    }[name]
    store: Any = get_registry().resolve("store", name).build(params)
    if name == "postgres":
        await store.setup()
    prof = cProfile.Profile()
    try:
        await seamkit_round(store, 5)  # warm up: connect, create tables
        prof.enable()
        await seamkit_round(store, turns)
        prof.disable()
    finally:
        await store.aclose()
    buf = io.StringIO()
    stats = pstats.Stats(prof, stream=buf)
    stats.sort_stats("tottime").print_stats(25)
    print(buf.getvalue())


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--turns", type=int, default=2000, help="tool-call steps per run (default 2000; >= 40)")
    ap.add_argument("--rounds", type=int, default=3, help="runs per configuration (default 3)")
    ap.add_argument("--only", nargs="+", choices=ALL, metavar="NAME",
                    help=f"configurations to run (default all): {' '.join(ALL)}")
    ap.add_argument("--profile", choices=("memory", "sqlite", "postgres", "redis"),
                    help="instead of the table: cProfile one seamkit run on this backend (top 25 by own time)")
    ap.add_argument("--json", action="store_true", help="also print the results as one JSON line")
    args = ap.parse_args(argv)
    if args.turns < 40:
        ap.error("--turns must be at least 40 (first-20 and last-20 must not overlap)")
    if args.rounds < 1:
        ap.error("--rounds must be at least 1")
    which = list(args.only or ALL)
    have = set(get_registry().names("store"))
    missing = sorted({w for w in which if not w.startswith("lg-")} - have - {"sqlite-full"}
                     | ({"sqlite"} - have if "sqlite-full" in which else set()))
    if missing:
        print(f"skipping seamkit stores not installed: {', '.join(missing)}", file=sys.stderr)
        which = [w for w in which if w not in missing and not (w == "sqlite-full" and "sqlite" in missing)]
    if any(w.startswith("lg-") for w in which):
        try:
            import langgraph.checkpoint.postgres
            import langgraph.checkpoint.sqlite  # noqa: F401
        except ImportError as exc:
            print(f"LangGraph is not installed ({exc}); run `bash benchmarks/run.sh checkpoints` or "
                  "`.venv/bin/pip install -r benchmarks/requirements-langgraph.txt`", file=sys.stderr)
            return 2

    def log(msg: str) -> None:
        print(msg, file=sys.stderr, flush=True)

    workdir = tempfile.mkdtemp(prefix="seamkit-bench-")
    svc = Services(workdir)
    try:
        need_pg = any(w in ("postgres", "lg-postgres", "lg-apostgres") for w in which) or args.profile == "postgres"
        need_redis = "redis" in which or args.profile == "redis"
        log("starting throwaway services ..." if need_pg or need_redis else "no services needed")
        svc.start(need_pg, need_redis)
        if args.profile:
            asyncio.run(profile_one(args.profile, args.turns, svc))
            return 0
        info = host_info(svc.pg.dsn if svc.pg else None, svc.redis.url if svc.redis else None)
        log(f"running {len(which)} configurations x {args.rounds} rounds x {args.turns} steps")
        skipped: list[str] = []
        results, size = asyncio.run(run_all(which, args.turns, args.rounds, svc, log, skipped))
    finally:
        svc.stop()
        shutil.rmtree(workdir, ignore_errors=True)

    print(f"Checkpoint cost per step: {args.turns}-step run (tool call + tool result per step, "
          f"~{size} bytes per stored message), per step the lowest of {args.rounds} rounds")
    for k, v in info.items():
        print(f"  {k:<30} {v}")
    print()
    print_table(results, args.turns)
    print()
    for line in figures(results, args.turns):
        print(line)
    for why in skipped:
        print(f"not measured: {why}")
    if args.json:
        print(json.dumps({"turns": args.turns, "rounds": args.rounds, "message_bytes": size, "host": info,
                          "results": [r.as_json() for r in results], "skipped": skipped}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
