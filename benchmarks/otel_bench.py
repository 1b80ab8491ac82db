"""Overhead of the ``otel`` middleware (seamkit-otel) on W1 and W2 of ``benchmarks/run.py``.

Run: ``bash benchmarks/run.sh otel``. Options: ``--runs 2000`` (W1 runs per variant per round),
``--rounds 5``, ``--json`` (one JSON line at the end).

Variants, interleaved run by run so that a noisy neighbour hits all of them alike:

- ``off``: no middleware (W1 as in ``run.py``).
- ``spans``: ``otel`` with an SDK ``TracerProvider`` + ``BatchSpanProcessor`` +
  ``InMemorySpanExporter`` of its own, as an exporter in the YAML builds it (spans ended into the
  processor by the lean tracer, :mod:`seamkit_otel.lean`), metrics off.
- ``spans_sdk``: the same provider as an application's own (SDK spans through its tracer).
- ``spans+metrics``: as ``spans``, plus an SDK ``MeterProvider`` with an ``InMemoryMetricReader``
  (``otel``'s default: metrics on).
- ``noop``: ``otel`` listed, no exporter, and no global provider set by the application (the API's
  no-op: the middleware passes calls straight through).
- ``off+sdk_floor``: ``off``, then the same 4 spans with the same attributes made by hand with the
  SDK (as ``spans`` sets it up): the floor of any SDK-based tracing of W1. ``W1_otel_beyond_sdk_floor_us``
  is what ``otel`` costs above it.

W1: median microseconds per run (a scripted model: a tool call ``add(2, 3)`` then ``"5"``; 4 spans
per run: invoke_agent, 2 chat, execute_tool); the lowest median over the rounds is reported (shared
machines drift), with the ratio to ``off``. W2: per-turn microseconds of one 200-turn run, turns
1-20 and 181-200 (each turn a chat span and a tool span under one run span). Target (issue 15): at
most +50 % on W1 with the in-memory exporter. Prints numbers, never asserts.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import statistics
import time
from typing import Any

from _prebuilt import W1Model, W2Model, add
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from seamkit import Agent
from seamkit_otel.middleware import Otel

_PROVIDERS: list[Any] = []  # flushed before the exported spans are counted or cleared


def _flush() -> None:
    for tp in _PROVIDERS:
        tp.force_flush()


def _variants() -> dict[str, tuple[list[Any], InMemorySpanExporter | None]]:
    out: dict[str, tuple[list[Any], InMemorySpanExporter | None]] = {"off": ([], None)}
    exp = InMemorySpanExporter()
    tp = TracerProvider()
    processor = BatchSpanProcessor(exp, max_queue_size=1 << 17)
    tp.add_span_processor(processor)
    out["spans"] = ([Otel(tp, metrics=False, span_processor=processor)], exp)
    _PROVIDERS.append(tp)
    exp_sdk = InMemorySpanExporter()
    tp_sdk = TracerProvider()
    tp_sdk.add_span_processor(BatchSpanProcessor(exp_sdk, max_queue_size=1 << 17))
    out["spans_sdk"] = ([Otel(tp_sdk, metrics=False)], exp_sdk)
    _PROVIDERS.append(tp_sdk)
    exp2 = InMemorySpanExporter()
    tp2 = TracerProvider()
    processor2 = BatchSpanProcessor(exp2, max_queue_size=1 << 17)
    tp2.add_span_processor(processor2)
    mp = MeterProvider(metric_readers=[InMemoryMetricReader()])
    out["spans+metrics"] = ([Otel(tp2, mp, span_processor=processor2)], exp2)
    _PROVIDERS.append(tp2)
    out["noop"] = ([Otel()], None)
    return out


async def w1(runs: int, rounds: int) -> dict[str, float]:
    variants = _variants()
    agents = {k: Agent(W1Model(), tools=[add], prompt="You add numbers.", middlewares=mws)
              for k, (mws, _) in variants.items()}
    for agent in agents.values():  # warm up
        for _ in range(200):
            r = await agent.run("What is 2 + 3?")
        assert r.output == "5", r.output
    _flush()
    spans_seen = len(variants["spans"][1].get_finished_spans())  # type: ignore[union-attr]
    assert spans_seen == 200 * 4, spans_seen
    for _, exp in variants.values():
        if exp is not None:
            exp.clear()
    best: dict[str, float] = {}
    pc = time.perf_counter
    floor = floor_spans()
    plain = agents["off"]
    for _ in range(rounds):
        times: dict[str, list[float]] = {k: [] for k in [*agents, "off+sdk_floor"]}
        for _ in range(runs):
            for k, agent in agents.items():
                t0 = pc()
                await agent.run("What is 2 + 3?")
                times[k].append(pc() - t0)
            t0 = pc()  # the same run, and the 4 spans made by hand with the SDK: no instrumentation can do less
            await plain.run("What is 2 + 3?")
            floor()
            times["off+sdk_floor"].append(pc() - t0)
        _flush()
        for _, exp in variants.values():
            if exp is not None:
                assert len(exp.get_finished_spans()) == runs * 4, "spans were dropped"
                exp.clear()
        for k, ts in times.items():
            med = statistics.median(ts) * 1e6
            best[k] = min(best.get(k, med), med)
        gc.collect()
    return best


async def w2(turns: int = 200, repeats: int = 5) -> dict[str, tuple[float, float]]:
    out: dict[str, tuple[float, float]] = {}
    for k, (mws, exp) in _variants().items():
        firsts, lasts = [], []
        for _ in range(repeats):
            model = W2Model(turns)
            agent = Agent(model, tools=[add], prompt="You add numbers.", max_steps=turns + 1, middlewares=mws)
            r = await agent.run("Keep adding.")
            assert r.stop_reason == "completed" and r.steps == turns, (r.stop_reason, r.steps)
            d = [b - a for a, b in zip(model.stamps, model.stamps[1:], strict=False)]
            firsts.append(statistics.median(d[:20]))
            lasts.append(statistics.median(d[-20:]))
            _flush()
            if exp is not None:
                exp.clear()
        out[k] = (statistics.median(firsts) * 1e6, statistics.median(lasts) * 1e6)
    return out


def floor_spans() -> Any:
    """A function creating and ending, with the SDK alone (same provider setup as ``spans``), the 4
    spans of one W1 run with the attributes ``otel`` gives them, parented as ``otel`` parents them:
    the part of the overhead that is the OpenTelemetry SDK's own, whoever instruments."""
    from opentelemetry import context, trace
    from opentelemetry.trace import SpanKind

    exp = InMemorySpanExporter()
    tp = TracerProvider()
    tp.add_span_processor(SimpleSpanProcessor(exp))
    tracer = tp.get_tracer("floor")
    run_start = {"gen_ai.operation.name": "invoke_agent", "gen_ai.provider.name": "bench", "gen_ai.agent.name": "agent",
                 "seamkit.run.id": "run_0123456789abcdef", "gen_ai.request.model": "bench"}
    usage = {"gen_ai.usage.input_tokens": 0, "gen_ai.usage.output_tokens": 0, "seamkit.cost.usd": "0",
             "seamkit.cost.source": "local"}
    chat_start = {"gen_ai.operation.name": "chat", "gen_ai.provider.name": "bench", "gen_ai.request.stream": True,
                  "gen_ai.request.model": "bench"}
    tool_start = {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "add", "gen_ai.tool.call.id": "call_1",
                  "gen_ai.tool.type": "function", "gen_ai.tool.description": "Add two integers."}

    def spans() -> None:
        run = tracer.start_span("invoke_agent agent", kind=SpanKind.INTERNAL, attributes=run_start)
        token = context.attach(trace.set_span_in_context(run))
        for finish in ("tool_calls", "stop"):
            chat = tracer.start_span("chat bench", kind=SpanKind.CLIENT, attributes=chat_start)
            chat.set_attributes({"gen_ai.response.finish_reasons": [finish],
                                 "gen_ai.response.time_to_first_chunk": 1e-5, **usage})
            chat.end()
            if finish == "tool_calls":
                tool_span = tracer.start_span("execute_tool add", kind=SpanKind.INTERNAL, attributes=tool_start)
                tool_span.end()
        context.detach(token)
        run.set_attributes({"seamkit.run.stop_reason": "completed", "seamkit.run.steps": 2, **usage})
        run.end()
        if len(exp.get_finished_spans()) > 4000:
            exp.clear()

    return spans


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=2000)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    one = asyncio.run(w1(args.runs, args.rounds))
    two = asyncio.run(w2())
    result: dict[str, Any] = {}
    for k, us in one.items():
        result[f"W1_{k}_us"] = round(us, 1)
        result[f"W1_{k}_ratio"] = round(us / one["off"], 3)
    result["W1_otel_beyond_sdk_floor_us"] = round(one["spans"] - one["off+sdk_floor"], 1)
    for k, (a, b) in two.items():
        result[f"W2_{k}_turns_1_20_us"] = round(a, 1)
        result[f"W2_{k}_turns_181_200_us"] = round(b, 1)
    width = max(len(k) for k in result)
    for k, v in result.items():
        print(f"{k:<{width}}  {v}")
    print(f"W1 with otel spans (in-memory exporter): {(result['W1_spans_ratio'] - 1) * 100:+.0f} %  "
          "(target: at most +50 %)")
    if args.json:
        print(json.dumps(result))


if __name__ == "__main__":
    main()
