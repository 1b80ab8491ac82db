"""MCP overhead: one tool call through an MCP server next to the same work as a native tool.

Run: ``bash benchmarks/run.sh mcp``. Options: ``--calls 300`` (calls per kind per round),
``--rounds 5``, ``--transports stdio,http``, ``--json`` (one JSON line). Numbers only, no thresholds.

The work is examples/mcp/orders_server.py's ``order_status`` (a dict lookup returning a pydantic
model: structured content plus its JSON text). Three ways, interleaved round by round so that
machine noise hits them alike:

- ``native``: the same lookup as a seamkit ``@tool`` (async), called through the agent's
  :class:`~seamkit._runtime.invoker.Invoker` (``call_tool``: validation, the tool, the result).
- ``mcp``: the ``use: mcp`` tool (seamkit-mcp) through the same ``Invoker.call_tool``: argument
  validation with jsonschema, the MCP ``tools/call`` round trip to the server (a subprocess over
  stdio, or streamable HTTP on loopback), the result converted into a ``ToolOutput``.
- ``sdk``: the bare SDK, ``ClientSession.call_tool`` on an open session: the protocol's own cost,
  so ``mcp - sdk`` is what seamkit adds.

Per transport: median and p90 of the per-call time (µs) over every call of every round, after a
warm-up of 20 calls; and the session's start (subprocess or HTTP connection, ``initialize``,
``tools/list`` and the pin check: what a run pays on its first MCP call), median ms over the
rounds.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import socket
import statistics
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from seamkit._runtime.context import RunContext
from seamkit._runtime.invoker import Invoker
from seamkit._runtime.resources import RunResources
from seamkit._tools import ToolRegistry, tool
from seamkit.testing._models import ScriptedModel
from seamkit.values import ToolCall

ROOT = Path(__file__).resolve().parents[1]
SERVER = ROOT / "examples" / "mcp" / "orders_server.py"
ORDERS = {"A-1002": {"status": "shipped", "eta": "2026-12-09"}}
ARGS = {"order_id": "A-1002"}


@tool(side_effecting=False, blocking=False)
async def order_status(order_id: str) -> dict[str, str]:
    """Look up one order by its id; returns its status and estimated delivery date."""
    order = ORDERS[order_id]
    return {"order_id": order_id, "status": order["status"], "eta": order["eta"]}


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _wait_port(port: int, proc: subprocess.Popen[bytes], timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"the HTTP server exited with {proc.returncode}")
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            return
        except OSError:
            time.sleep(0.05)
    raise RuntimeError(f"the HTTP server did not listen on {port} within {timeout} s")


def _server_config(transport: str, port: int | None) -> dict[str, Any]:
    if transport == "stdio":
        return {"command": sys.executable, "args": [str(SERVER)]}
    return {"url": f"http://127.0.0.1:{port}/mcp"}


async def _timed(n: int, call: Callable[[], Awaitable[Any]]) -> list[float]:
    out = []
    for _ in range(n):
        t0 = time.perf_counter()
        await call()
        out.append((time.perf_counter() - t0) * 1e6)
    return out


async def _bench_transport(transport: str, calls: int, rounds: int, port: int | None) -> dict[str, Any]:
    from mcp import ClientSession
    from seamkit_mcp.config import McpConfig
    from seamkit_mcp.toolset import build_toolset

    toolset = build_toolset(McpConfig.model_validate({"server": _server_config(transport, port), "name": "orders",
                                                      "resources": False, "prompts": False}))
    mcp_tool = next(t for t in toolset.tools if t.schema.name == "order_status")
    native = Invoker(ScriptedModel(["x"]), ToolRegistry([order_status]))
    via_mcp = Invoker(ScriptedModel(["x"]), ToolRegistry([mcp_tool]))
    call = ToolCall("c1", "order_status", ARGS)
    times: dict[str, list[float]] = {"native": [], "mcp": [], "sdk": []}
    starts: list[float] = []
    for _ in range(rounds):
        ctx = RunContext(resources=RunResources())
        t0 = time.perf_counter()
        first = await via_mcp.call_tool(call, ctx)  # opens the run's session: start, initialize, list, pins
        starts.append((time.perf_counter() - t0) * 1e3)
        assert not first.is_error, first.content
        (session,) = [ctx.resources._open[k] for k in ctx.resources.keys]  # the bench peeks at the session
        client: ClientSession = session.client

        async def native_call(ctx: RunContext = ctx) -> None:
            r = await native.call_tool(call, ctx)
            assert not r.is_error

        async def mcp_call(ctx: RunContext = ctx) -> None:
            r = await via_mcp.call_tool(call, ctx)
            assert not r.is_error, r.content

        async def sdk_call(client: ClientSession = client) -> None:
            r = await client.call_tool("order_status", ARGS)
            assert not r.is_error

        for fn in (native_call, mcp_call, sdk_call):
            await _timed(20, fn)  # warm-up
        for name, fn in (("native", native_call), ("mcp", mcp_call), ("sdk", sdk_call)):
            times[name] += await _timed(calls, fn)
        await ctx.resources.aclose()

    def stats(xs: list[float]) -> dict[str, float]:
        xs = sorted(xs)
        return {"median_us": round(statistics.median(xs), 1), "p90_us": round(xs[int(len(xs) * 0.9)], 1)}

    out: dict[str, Any] = {name: stats(xs) for name, xs in times.items()}
    out["session_start_ms"] = round(statistics.median(starts), 1)
    out["mcp_over_native"] = round(out["mcp"]["median_us"] / out["native"]["median_us"], 1)
    out["seamkit_over_sdk_us"] = round(out["mcp"]["median_us"] - out["sdk"]["median_us"], 1)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--calls", type=int, default=300)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--transports", default="stdio,http")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    results: dict[str, Any] = {}
    for transport in args.transports.split(","):
        proc = None
        port = None
        if transport == "http":
            port = _free_port()
            proc = subprocess.Popen([sys.executable, str(SERVER), "--http", str(port)],
                                    stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            _wait_port(port, proc)
        try:
            results[transport] = asyncio.run(_bench_transport(transport, args.calls, args.rounds, port))
        finally:
            if proc is not None:
                proc.terminate()
                proc.wait(10)
    meta = {"python": sys.version.split()[0], "cpus": os.cpu_count(), "calls": args.calls, "rounds": args.rounds}
    if args.json:
        print(json.dumps({"meta": meta, "results": results}))
        return
    print(f"MCP tool call overhead ({args.rounds} rounds x {args.calls} calls per kind; Python {meta['python']}, "
          f"{meta['cpus']} CPUs)")
    print(f"{'transport':<10}{'native µs':>12}{'mcp µs':>12}{'mcp p90':>10}{'sdk µs':>10}{'mcp/native':>12}"
          f"{'seamkit +µs':>13}{'session ms':>12}")
    for transport, r in results.items():
        print(f"{transport:<10}{r['native']['median_us']:>12}{r['mcp']['median_us']:>12}{r['mcp']['p90_us']:>10}"
              f"{r['sdk']['median_us']:>10}{r['mcp_over_native']:>12}{r['seamkit_over_sdk_us']:>13}"
              f"{r['session_start_ms']:>12}")


if __name__ == "__main__":
    main()
