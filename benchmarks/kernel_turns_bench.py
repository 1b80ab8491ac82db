"""Capability kernel per-turn overhead: a scripted 50-turn conversation, next to the same work as
plain tool calls.

Run: ``bash benchmarks/run.sh kernel``. Options: ``--rounds 5``, ``--turns 50``, ``--stores
sqlite,memory``, ``--json`` (one JSON line), ``--profile`` (cProfile of the kernel's early and
late turns per store: its phases in ms per turn, and cProfile's top functions by own time).

The model is a :class:`~seamkit.testing._models.ScriptedModel` with zero latency, so every
millisecond is framework overhead. Each turn costs both sides two model calls:

- ``kernel``: an :class:`~seamkit._agent.agent.Agent` with ``turns`` + 1 read capabilities,
  ``note_k`` (provides the fact type ``topic_k.note@1``, with one piece of evidence) and ``recall``
  (reads a known fact from ``ctx.facts``), and a durable checkpointer. Turn ``k`` is
  ``agent.run`` (turn 1) or ``agent.resume(run_id, answer=..., turn_id=...)``: the model proposes
  ``note_k`` (and ``recall`` of an earlier topic every third turn), the planner disposes, the
  capabilities run, the reducer adds the fact, the model replies citing the evidence, the turn
  result and the whole kernel state are checkpointed. Facts and evidence grow by one per turn.
- ``plain``: an agent with the equivalent ``turns`` + 1 ``@tool`` functions (``note_k`` returns
  the same output; ``recall`` reads what the notes recorded), the same checkpointer and store. Turn
  ``k`` is ``agent.run(text, history=...)`` continuing the conversation: the model calls the same
  tools as tool calls, then replies.

Kernel and plain conversations alternate (A/B/A/B) within each round, per store (the SQLite
store of ``plugins/stores/sqlite`` on a fresh temporary file per conversation, its schema created
before turn 1; and the in-memory store), after one warm-up conversation per side. Reported per
side and store: per-turn wall time (median and p95, ms) of turns 1-10 and of the last ten turns,
their ratio (late/early: 1.0 is flat), the conversation's total, the kernel/plain ratio of the
medians, and the checkpoint's size (the state and the transcript, codec bytes) after turn 10 and
after the last turn. Numbers only, no thresholds.
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import gc
import io
import json
import os
import pstats
import statistics
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from typing import Any

from pydantic import BaseModel
from seamkit._agent.agent import Agent
from seamkit._durability import codec
from seamkit._durability.checkpointer import Checkpointer
from seamkit._tools import tool
from seamkit.capabilities import Capability, Completed, Evidence, Fact, compile_agent
from seamkit.testing._memory_store import MemoryStore
from seamkit.testing._models import ScriptedModel
from seamkit.values import Scope

PROMPT = "You keep notes on the topics the person raises."
WINDOW = 10


class NoteInput(BaseModel):
    text: str


class RecallInput(BaseModel):
    topic: int


def _text(k: int) -> str:
    return f"note on topic {k}: the customer mentioned item {k * 7} and a delivery window of {k % 5 + 1} days"


def _output(k: int, text: str) -> dict[str, Any]:
    return {"topic": k, "words": len(text.split()), "summary": text[:40]}


def _recalls(k: int) -> int | None:
    """The earlier topic recalled in turn ``k`` (1-based), or ``None``."""
    return (k - 1) // 2 if k % 3 == 0 else None


# -- the kernel side ----------------------------------------------------------------------------

def _note_capability(k: int) -> Capability:
    async def execute(ctx: Any, inp: NoteInput) -> Completed:
        ev = Evidence(f"notes:topic-{k}", inp.text[:60])
        return Completed(_output(k, inp.text), facts=(Fact(f"topic_{k}.note@1", {"text": inp.text},
                                                           evidence=(ev.id,)),), evidence=(ev,))

    return Capability(f"note_{k}", 1, f"Record a note on topic {k}", execute, input=NoteInput,
                      provides=(f"topic_{k}.note@1",), effect="read")


async def _recall(ctx: Any, inp: RecallInput) -> Completed:
    fact = ctx.facts.get(f"topic_{inp.topic}.note@1")
    return Completed({"topic": inp.topic, "text": fact.value["text"] if fact is not None else None})


def kernel_agent(turns: int, store: Any) -> Agent:
    caps = [_note_capability(k) for k in range(1, turns + 1)]
    caps.append(Capability("recall", 1, "Read back the note on a topic", _recall, input=RecallInput, effect="read"))
    script: list[str] = []
    for k in range(1, turns + 1):
        intentions: list[dict[str, Any]] = [{"capability": f"note_{k}", "input": {"text": _text(k)}}]
        earlier = _recalls(k)
        if earlier is not None:
            intentions.append({"capability": "recall", "input": {"topic": earlier}})
        script.append(json.dumps({"intentions": intentions, "reply": ""}))
        cite = Evidence(f"notes:topic-{k}").id
        script.append(json.dumps({"intentions": [], "reply": f"Noted topic {k} [{cite}]."}))
    model = ScriptedModel(script, record=False)
    return Agent(model, prompt=PROMPT, capabilities=compile_agent(caps), checkpointer=Checkpointer(store))


async def kernel_conversation(turns: int, store: Any, on_turn: Callable[[int, str], Awaitable[None]] | None = None
                              ) -> list[float]:
    agent = kernel_agent(turns, store)
    times: list[float] = []
    run_id = ""
    for k in range(1, turns + 1):
        text = f"please note topic {k}"
        t0 = time.perf_counter()
        if k == 1:
            r = await agent.run(text, turn_id=f"turn-{k}")
            run_id = r.run_id
        else:
            r = await agent.resume(run_id, answer=text, turn_id=f"turn-{k}")
        times.append(time.perf_counter() - t0)
        assert r.turn is not None and not r.warnings, (r.warnings, r.turn and r.turn.codes())
        assert [e.outcome for e in r.turn.executions] == ["completed"] * (1 + (_recalls(k) is not None)), r.turn
        if on_turn is not None:
            await on_turn(k, run_id)
    return times


# -- the plain side -----------------------------------------------------------------------------

def plain_agent(turns: int, store: Any) -> Agent:
    notes: dict[int, str] = {}

    def note_tool(k: int) -> Any:
        async def note(text: str) -> dict[str, Any]:
            notes[k] = text
            return _output(k, text)

        return tool(side_effecting=False, name=f"note_{k}", description=f"Record a note on topic {k}")(note)

    @tool(side_effecting=False)
    async def recall(topic: int) -> dict[str, Any]:
        """Read back the note on a topic."""
        return {"topic": topic, "text": notes.get(topic)}

    script: list[dict[str, Any]] = []
    for k in range(1, turns + 1):
        calls: list[dict[str, Any]] = [{"name": f"note_{k}", "arguments": {"text": _text(k)}, "id": f"c{k}a"}]
        earlier = _recalls(k)
        if earlier is not None:
            calls.append({"name": "recall", "arguments": {"topic": earlier}, "id": f"c{k}b"})
        script.append({"tool_calls": calls})
        script.append({"text": f"Noted topic {k}."})
    model = ScriptedModel(script, record=False)
    tools = [note_tool(k) for k in range(1, turns + 1)] + [recall]
    return Agent(model, prompt=PROMPT, tools=tools, checkpointer=Checkpointer(store))


async def plain_conversation(turns: int, store: Any, on_turn: Callable[[int, str], Awaitable[None]] | None = None
                             ) -> list[float]:
    agent = plain_agent(turns, store)
    times: list[float] = []
    history: tuple[Any, ...] = ()
    for k in range(1, turns + 1):
        text = f"please note topic {k}"
        t0 = time.perf_counter()
        r = await agent.run(text, history=history)
        times.append(time.perf_counter() - t0)
        assert r.stop_reason == "completed" and r.output == f"Noted topic {k}.", (r.stop_reason, r.output)
        history = tuple(m for m in r.transcript if m.role != "system")
        if on_turn is not None:
            await on_turn(k, r.run_id)
    return times


# -- measuring ----------------------------------------------------------------------------------

class Stores:
    """Fresh stores per conversation: SQLite on a temporary file, or in memory."""

    def __init__(self, tmp: str) -> None:
        self.tmp = tmp
        self.n = 0

    async def open(self, kind: str) -> Any:
        if kind == "memory":
            return MemoryStore()
        from seamkit_sqlite.store import SqliteStore

        self.n += 1
        store = SqliteStore(os.path.join(self.tmp, f"bench-{self.n}.db"))
        # the file and its schema are created on first use: before the conversation, not in turn 1
        await store.set(Scope(), "bench:warm", "1")
        await Checkpointer(store).latest("bench-warm")
        return store

    @staticmethod
    async def close(store: Any) -> None:
        close = getattr(store, "aclose", None)
        if close is not None:
            await close()


def _p95(xs: list[float]) -> float:
    s = sorted(xs)
    return s[min(len(s) - 1, round(0.95 * (len(s) - 1)))]


def _window(samples: list[list[float]], lo: int, hi: int) -> dict[str, float]:
    xs = [t for conv in samples for t in conv[lo:hi]]
    return {"median_ms": statistics.median(xs) * 1e3, "p95_ms": _p95(xs) * 1e3}


async def _sizes(store: Any, turns: int, conversation: Callable[..., Awaitable[list[float]]]) -> dict[str, Any]:
    """Checkpoint size (codec bytes of the latest snapshot's state and transcript) after turn 10
    and after the last turn; measured on a separate conversation so no timing includes it."""
    cp = Checkpointer(store)
    out: dict[str, Any] = {}

    async def on_turn(k: int, run_id: str) -> None:
        if k in (min(WINDOW, turns), turns):
            snap = await cp.latest(run_id)
            assert snap is not None
            out[f"turn_{k}"] = {"state_bytes": len(codec.dumps(dict(snap.state)).encode()),
                                "transcript_bytes": sum(len(codec.dumps(m).encode()) for m in snap.transcript),
                                "messages": len(snap.transcript)}

    await conversation(turns, store, on_turn)
    return out


async def measure(rounds: int, turns: int, stores: list[str]) -> dict[str, Any]:
    sides: dict[str, Callable[..., Awaitable[list[float]]]] = {"kernel": kernel_conversation,
                                                               "plain": plain_conversation}
    out: dict[str, Any] = {"turns": turns, "rounds": rounds, "window": WINDOW, "python": sys.version.split()[0]}
    with tempfile.TemporaryDirectory() as tmp:
        st = Stores(tmp)
        for kind in stores:
            samples: dict[str, list[list[float]]] = {"kernel": [], "plain": []}
            for conv in sides.values():  # warm-up, not counted
                s = await st.open(kind)
                await conv(turns, s)
                await st.close(s)
            for r in range(rounds):
                order = ["kernel", "plain"] if r % 2 == 0 else ["plain", "kernel"]
                for side in order:
                    s = await st.open(kind)
                    gc.collect()
                    samples[side].append(await sides[side](turns, s))
                    await st.close(s)
            res: dict[str, Any] = {}
            for side in sides:
                early = _window(samples[side], 0, WINDOW)
                late = _window(samples[side], turns - WINDOW, turns)
                s = await st.open(kind)
                sizes = await _sizes(s, turns, sides[side])
                await st.close(s)
                res[side] = {"early": early, "late": late, "late_over_early": late["median_ms"] / early["median_ms"],
                             "total_ms": statistics.median(sum(c) for c in samples[side]) * 1e3,
                             "checkpoint": sizes}
            res["kernel_over_plain"] = {
                "early": res["kernel"]["early"]["median_ms"] / res["plain"]["early"]["median_ms"],
                "late": res["kernel"]["late"]["median_ms"] / res["plain"]["late"]["median_ms"],
                "total": res["kernel"]["total_ms"] / res["plain"]["total_ms"],
            }
            out[kind] = res
    return out


# the kernel's phases --profile times (wall clock, no profiler): (label, owner, attribute, async)
def _phases() -> list[tuple[str, Any, str, bool]]:
    from seamkit._agent import kernel
    from seamkit._durability import checkpointer

    k = kernel.KernelRun
    return [
        ("resume: the whole turn", Agent, "resume", True),
        ("load: Checkpointer.latest (state + transcript)", checkpointer.Checkpointer, "latest", True),
        ("save: RunHandle.save, every checkpoint", checkpointer.RunHandle, "save", True),
        ("prompt: KernelRun._system_text", k, "_system_text", False),
        ("prompt: planner.proposal_schema", kernel, "proposal_schema", False),
        ("plan: planner.select", kernel, "select", False),
        ("plan: KernelRun._dispose (planner.plan)", k, "_dispose", False),
        ("run: KernelRun._execute (reducer)", k, "_execute", True),
        ("model: KernelRun._model_step (prompt, call)", k, "_model_step", True),
        ("commit: KernelRun._store_turn", k, "_store_turn", True),
        ("commit: KernelRun._commit (its save)", k, "_commit", True),
    ]


def _timed(fn: Any, label: str, acc: dict[str, float], is_async: bool) -> Any:
    if is_async:
        async def timed_async(*args: Any, **kwargs: Any) -> Any:
            t0 = time.perf_counter()
            try:
                return await fn(*args, **kwargs)
            finally:
                acc[label] = acc.get(label, 0.0) + time.perf_counter() - t0

        return timed_async

    def timed(*args: Any, **kwargs: Any) -> Any:
        t0 = time.perf_counter()
        try:
            return fn(*args, **kwargs)
        finally:
            acc[label] = acc.get(label, 0.0) + time.perf_counter() - t0

    return timed


async def profile(turns: int, kind: str, rounds: int, top: int = 15) -> str:
    """Where a resumed kernel turn's time goes, turns 2-11 vs the last ten, on ``kind``'s store:
    the phases above in ms per turn (median over ``rounds`` conversations; wrappers, no profiler),
    then cProfile's top functions by own time over the last ten turns of one conversation."""
    buf = io.StringIO()
    windows = ((1, WINDOW + 1), (turns - WINDOW, turns))  # 0-based turn indices; turn 1 is agent.run
    acc: dict[str, float] = {}
    saved = [(owner, attr, getattr(owner, attr)) for _, owner, attr, _ in _phases()]
    per_window: list[list[dict[str, float]]] = [[], []]
    with tempfile.TemporaryDirectory() as tmp:
        st = Stores(tmp)
        try:
            for label, owner, attr, is_async in _phases():
                setattr(owner, attr, _timed(getattr(owner, attr), label, acc, is_async))
            for _ in range(rounds):
                s = await st.open(kind)

                async def on_turn(k: int, run_id: str) -> None:
                    for w, (lo, hi) in enumerate(windows):
                        if k == lo:
                            acc.clear()
                        if k == hi:
                            per_window[w].append(dict(acc))

                await kernel_conversation(turns, s, on_turn)
                await st.close(s)
        finally:
            for owner, attr, fn in saved:
                setattr(owner, attr, fn)
        buf.write(f"kernel on {kind}: ms per turn, median of {rounds} conversations\n")
        buf.write(f"  {'phase':<48} {'turns 2-11':>10} {f'turns {turns - WINDOW + 1}-{turns}':>12} {'growth':>8}\n")
        for label, *_ in _phases():
            e = statistics.median(r.get(label, 0.0) for r in per_window[0]) / WINDOW * 1e3
            la = statistics.median(r.get(label, 0.0) for r in per_window[1]) / WINDOW * 1e3
            buf.write(f"  {label:<48} {e:10.3f} {la:12.3f} {la - e:+8.3f}\n")
        s = await st.open(kind)
        prof = cProfile.Profile()

        async def profile_late(k: int, run_id: str) -> None:
            if k == turns - WINDOW:
                prof.enable()

        await kernel_conversation(turns, s, profile_late)
        prof.disable()
        await st.close(s)
    buf.write(f"\ncProfile, turns {turns - WINDOW + 1}-{turns}: top {top} by own time (seconds over {WINDOW} turns)\n")
    pstats.Stats(prof, stream=buf).strip_dirs().sort_stats("tottime").print_stats(top)
    return buf.getvalue()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--turns", type=int, default=50)
    parser.add_argument("--stores", default="sqlite,memory", help="comma-separated: sqlite, memory")
    parser.add_argument("--json", action="store_true", help="print one JSON line")
    parser.add_argument("--profile", action="store_true", help="cProfile the kernel's early and late turns")
    args = parser.parse_args()
    if args.turns < 2 * WINDOW:
        parser.error(f"--turns must be at least {2 * WINDOW}")
    if args.profile:
        for kind in [s.strip() for s in args.stores.split(",") if s.strip()]:
            print(asyncio.run(profile(args.turns, kind, args.rounds)))
        return
    stores = [s.strip() for s in args.stores.split(",") if s.strip()]
    result = asyncio.run(measure(args.rounds, args.turns, stores))
    if args.json:
        print(json.dumps(result))
        return
    n, w = result["turns"], WINDOW
    print(f"{n}-turn conversation, zero-latency scripted model, {result['rounds']} rounds (kernel/plain alternating)")
    for kind in stores:
        r = result[kind]
        print(f"{kind}:")
        for side in ("kernel", "plain"):
            s = r[side]
            cp = s["checkpoint"]
            e, la = s["early"], s["late"]
            print(f"  {side:<6} turns 1-{w}: {e['median_ms']:7.2f} ms median {e['p95_ms']:7.2f} p95 | "
                  f"turns {n - w + 1}-{n}: {la['median_ms']:7.2f} ms median {la['p95_ms']:7.2f} p95 | "
                  f"late/early {s['late_over_early']:.2f} | total {s['total_ms']:8.1f} ms")
            a, b = cp[f"turn_{w}"], cp[f"turn_{n}"]
            print(f"         checkpoint after turn {w}: state {a['state_bytes']} B, "
                  f"transcript {a['transcript_bytes']} B "
                  f"({a['messages']} messages); after turn {n}: state {b['state_bytes']} B, transcript "
                  f"{b['transcript_bytes']} B ({b['messages']} messages)")
        k = r["kernel_over_plain"]
        print(f"  kernel/plain: turns 1-{w} {k['early']:.2f}x, turns {n - w + 1}-{n} {k['late']:.2f}x, "
              f"total {k['total']:.2f}x")


if __name__ == "__main__":
    main()
