"""A worker process for the cross-process durability tests (run as a script, not a test module).

Usage: ``python durable_worker.py '<json spec>'``. The spec:

- ``mode``: ``run`` (start a payment run), ``resume`` (continue a crashed run),
  ``approve_run`` (start a run whose model asks for two payments needing approval),
  ``approve_resume`` (resume a suspended run with ``decisions``).
- ``backend`` / ``params``: the store's registered name and its config (built via the registry).
- ``run_id``: the run's id. ``effects``: path of the SQLite file the ``record_payment`` tool writes
  one row to per real execution (its own ``sqlite3`` connection, a commit per insert).
- ``steps``: scripted payment steps (``run`` / ``resume``). ``crash_after``: in ``run`` mode,
  SIGKILL this process right after the k-th successful checkpoint save.
- ``decisions``: ``{call_id: {"approve": true, "arguments": {...}?} | {"approve": false, "reason": ...}}``.
- ``effect_run`` / ``effect_resume``: a run of ``steps`` turns, each one ``record_payment`` call
  (``pay_<i>``), whose tool SIGKILLs this process while it runs payment ``kill_in_call`` in
  ``effect_run`` mode (after its write, or before it with ``kill_before_write``); ``idempotent``
  declares the tool idempotent. The tool records ``ctx.idempotency_key`` with each write.

On success prints one JSON line on stdout: ``{"ok": true, "output", "usage", "stop_reason",
"saves", "transcript": [...summary...], "pending": [...]}``. A seamkit error prints
``{"ok": false, "error": "<Type>: <message>"}`` on stdout, the same text on stderr, and exits 3.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sqlite3
import sys
import threading
from collections.abc import Mapping
from typing import Any

from seamkit import tool
from seamkit._agent.agent import Agent
from seamkit._durability.approvals import Decision, approve, reject
from seamkit._durability.checkpointer import Checkpointer
from seamkit._durability.records import CheckpointRecord
from seamkit._plugins.registry import get_registry
from seamkit._runtime.context import RunContext
from seamkit.errors import SeamkitError
from seamkit.testing import ScriptedModel
from seamkit.values import ChatRequest, Message, Usage

EXIT_SEAMKIT_ERROR = 3
MAX_STEPS = 50


def effects_table(path: str) -> sqlite3.Connection:
    conn = sqlite3.connect(path, timeout=30, isolation_level=None, check_same_thread=False)
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute(
        "CREATE TABLE IF NOT EXISTS effects (run_id TEXT NOT NULL, payment_id INTEGER NOT NULL, pid INTEGER NOT NULL,"
        " idem_key TEXT)"
    )
    return conn


def payment_tool(effects: str, run_id: str) -> Any:
    conn = effects_table(effects)
    lock = threading.Lock()  # sync tools run in worker threads

    @tool(side_effecting=True)
    def record_payment(payment_id: int) -> str:
        """Record one payment (a real write to the effects table).

        Args:
            payment_id: the payment's number
        """
        with lock:
            conn.execute("BEGIN IMMEDIATE")
            conn.execute(
                "INSERT INTO effects (run_id, payment_id, pid) VALUES (?, ?, ?)", (run_id, payment_id, os.getpid())
            )
            conn.execute("COMMIT")
        return f"recorded payment {payment_id}"

    return record_payment


def killing_payment_tool(effects: str, run_id: str, *, kill_in_call: int | None, before_write: bool,
                         idempotent: bool) -> Any:
    """``record_payment`` that SIGKILLs this process while it runs payment ``kill_in_call`` (a
    process killed mid-call), and records the idempotency key it was given."""
    conn = effects_table(effects)

    def kill() -> None:
        sys.stdout.flush()
        os.kill(os.getpid(), signal.SIGKILL)

    declared = {"idempotent": True} if idempotent else {}  # (a plain side-effecting tool declares nothing)

    @tool(side_effecting=True, **declared)
    def record_payment(payment_id: int, ctx: RunContext) -> str:
        """Record one payment (a real write to the effects table).

        Args:
            payment_id: the payment's number
        """
        if payment_id == kill_in_call and before_write:
            kill()
        conn.execute("BEGIN IMMEDIATE")
        conn.execute("INSERT INTO effects (run_id, payment_id, pid, idem_key) VALUES (?, ?, ?, ?)",
                     (run_id, payment_id, os.getpid(), getattr(ctx, "idempotency_key", None)))
        conn.execute("COMMIT")
        if payment_id == kill_in_call:
            kill()
        return f"recorded payment {payment_id}"

    return record_payment


def summarize_results(request: ChatRequest) -> str:
    """The final answer: every tool result the model was shown, in order (so the output depends on
    the whole transcript the resumed run sends)."""
    parts = []
    for m in request.messages:
        for r in m.tool_results:
            parts.append(f"{r.call_id}={'ERROR ' if r.is_error else ''}{r.content}")
    return "done: " + "; ".join(parts)


def payment_script(steps: int) -> list[Any]:
    """``steps`` model turns each calling ``record_payment`` once (unique call ids, token usage that
    differs per turn), then a final text computed from the tool results."""
    turns: list[Any] = [
        {
            "tool_calls": [{"id": f"pay_{i}", "name": "record_payment", "arguments": {"payment_id": i}}],
            "usage": Usage(input_tokens=100 + i, output_tokens=10 + i, requests=1),
        }
        for i in range(1, steps + 1)
    ]
    turns.append(lambda request: {"text": summarize_results(request), "usage": Usage(input_tokens=7, output_tokens=3,
                                                                                    requests=1)})
    return turns


def approval_script() -> list[Any]:
    return [
        {
            "tool_calls": [
                {"id": "ask_a", "name": "record_payment", "arguments": {"payment_id": 1}},
                {"id": "ask_b", "name": "record_payment", "arguments": {"payment_id": 2}},
            ],
        },
        lambda request: {"text": summarize_results(request)},
    ]


class SaveCounter:
    """Counts the store calls that stored checkpoint versions (``save``, or ``save_many`` with
    records: one durability point each) of a store instance, and the version stored last after
    each (``versions``); with ``crash_after`` the process dies (SIGKILL, nothing runs after it)
    right after that many calls."""

    def __init__(self, crash_after: int | None) -> None:
        self.saves = 0
        self.versions: list[int] = []
        self.crash_after = crash_after

    def _stored(self, version: int) -> None:
        self.saves += 1
        self.versions.append(version)
        if self.crash_after is not None and self.saves >= self.crash_after:
            sys.stdout.flush()
            os.kill(os.getpid(), signal.SIGKILL)

    def install(self, store: Any) -> Any:
        counter = self
        base = type(store)

        async def save(self: Any, record: CheckpointRecord, *, expected_version: int | None) -> None:
            await base.save(self, record, expected_version=expected_version)
            counter._stored(record.version)

        attrs: dict[str, Any] = {"__slots__": (), "save": save}
        if hasattr(base, "save_many"):
            async def save_many(self: Any, records: Any, *, expected_version: int | None, writes: Any = ()) -> None:
                await base.save_many(self, records, expected_version=expected_version, writes=writes)
                if records:
                    counter._stored(records[-1].version)

            attrs["save_many"] = save_many
        # a subclass with the same layout: isinstance checks against the ports still hold
        store.__class__ = type(f"Counting{base.__name__}", (base,), attrs)
        return store


def summarize_transcript(transcript: tuple[Message, ...]) -> list[Any]:
    out: list[Any] = []
    for m in transcript:
        out.append({
            "role": m.role,
            "text": m.text,
            "calls": [[c.id, c.name, dict(c.arguments)] for c in m.tool_calls],
            "results": [[r.call_id, r.content, r.is_error] for r in m.tool_results],
        })
    return out


def usage_json(u: Usage) -> dict[str, Any]:
    return {"input_tokens": u.input_tokens, "output_tokens": u.output_tokens, "requests": u.requests}


def decision(spec: Mapping[str, Any]) -> Decision:
    if spec.get("approve"):
        return approve(spec.get("arguments"))
    return reject(spec.get("reason"))


async def main(spec: Mapping[str, Any]) -> dict[str, Any]:
    store = get_registry().resolve("store", spec["backend"]).build(spec["params"])
    counter = SaveCounter(spec.get("crash_after"))
    counter.install(store)
    run_id = spec["run_id"]
    tools = [payment_tool(spec["effects"], run_id)]
    resumed_from: int | None = None
    try:
        mode = spec["mode"]
        if mode in ("run", "resume"):
            script = payment_script(int(spec["steps"]))
            if mode == "run":
                agent = Agent(ScriptedModel(script), tools=tools, checkpointer=store, max_steps=MAX_STEPS)
                result = await agent.run("make the payments", ctx=RunContext(run_id=run_id), metadata={"test": "crash"})
            else:
                snap = await Checkpointer(store).latest(run_id)
                done = sum(1 for m in snap.transcript if m.role == "assistant") if snap is not None else 0
                resumed_from = snap.version if snap is not None else None
                agent = Agent(ScriptedModel(script[done:]), tools=tools, checkpointer=store, max_steps=MAX_STEPS)
                result = await agent.resume(run_id)
        elif mode in ("effect_run", "effect_resume"):
            script = payment_script(int(spec["steps"]))
            tools = [killing_payment_tool(
                spec["effects"], run_id, kill_in_call=spec.get("kill_in_call") if mode == "effect_run" else None,
                before_write=bool(spec.get("kill_before_write")), idempotent=bool(spec.get("idempotent")),
            )]
            # the model continues from the transcript, as a real one would
            agent = Agent(ScriptedModel(script, follow_transcript=True), tools=tools, checkpointer=store,
                          max_steps=MAX_STEPS)
            if mode == "effect_run":
                result = await agent.run("make the payments", ctx=RunContext(run_id=run_id))
            else:
                result = await agent.resume(run_id)
        elif mode in ("approve_run", "approve_resume"):
            script = approval_script()
            approvals = {"record_payment": "every_call"}
            if mode == "approve_run":
                agent = Agent(ScriptedModel(script), tools=tools, checkpointer=store, approvals=approvals,
                              max_steps=MAX_STEPS)
                result = await agent.run("pay twice", ctx=RunContext(run_id=run_id))
            else:
                snap = await Checkpointer(store).latest(run_id)
                done = sum(1 for m in snap.transcript if m.role == "assistant") if snap is not None else 0
                agent = Agent(ScriptedModel(script[done:]), tools=tools, checkpointer=store, approvals=approvals,
                              max_steps=MAX_STEPS)
                decisions = {k: decision(v) for k, v in (spec.get("decisions") or {}).items()}
                result = await agent.resume(run_id, decisions=decisions)
        else:
            raise SystemExit(f"unknown mode {mode!r}")
        return {
            "ok": True,
            "run_id": result.run_id,
            "output": result.output,
            "stop_reason": result.stop_reason,
            "usage": usage_json(result.usage),
            "saves": counter.saves,
            "versions": counter.versions,
            "resumed_from": resumed_from,
            "transcript": summarize_transcript(result.transcript),
            "pending": [[p.call_id, p.tool, dict(p.arguments)] for p in result.pending_approvals],
            "uncertain": [[e.call_id, e.tool, e.waits] for e in result.uncertain_effects],
            "warnings": list(result.warnings),
        }
    finally:
        await store.aclose()


if __name__ == "__main__":
    try:
        out = asyncio.run(main(json.loads(sys.argv[1])))
    except SeamkitError as exc:
        message = f"{type(exc).__name__}: {exc}"
        print(json.dumps({"ok": False, "error": message}), flush=True)
        print(f"durable_worker: error: {message}", file=sys.stderr, flush=True)
        sys.exit(EXIT_SEAMKIT_ERROR)
    print(json.dumps(out), flush=True)
