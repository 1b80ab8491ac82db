"""Partial-parse cost of the ``output_coerce`` middleware while a typed object streams.

Run: ``bash benchmarks/run.sh coerce``. Options: ``--kb 50`` (object size), ``--deltas 250,500,1000,2000,4000``,
``--growth 0,0.1`` (``partial_min_growth`` values; 0 re-parses after every text delta),
``--parser adapter,pydantic-core`` (the partial parser: ``seamkit._schemas.adapt(schema).partial_parse``,
what the middleware uses when ``seamkit._schemas`` is installed, or the bare
``pydantic_core.from_json(allow_partial=True)`` fallback), ``--rounds 3``, ``--json``.

A scripted terminal streams a ~``--kb`` KB JSON object (a list of records, validated by a JSON
Schema) in N equal text deltas through the middleware (``max_repairs`` 1, so text is held back
until it validates). Measured per (growth, N), best of ``--rounds``:

- ``parse_ms``: total time inside the partial parser (every call, timed around it),
- ``parses``: how many times the buffer was parsed, ``partials``: partial values yielded,
- ``total_ms``: the whole stream through the middleware (partial parsing, change detection,
  final ``jsonschema`` validation) minus the same stream through a bare pass-through middleware;
  ``validate_ms`` (printed once): the final validation alone (``OutputSpec.parse`` of the text).

Target (issue 5): under 100 ms of parsing in total for 2,000 deltas of a 50 KB object.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import sys
import time
from collections.abc import AsyncIterator
from itertools import pairwise
from typing import Any

from seamkit._middleware import Call, chain
from seamkit.testing import make_test_ctx
from seamkit.values import ChatRequest, Delta, FrozenDict, Message, TextBlock, Usage, freeze
from seamkit_output_coerce.middleware import OutputCoerceMiddleware, _Compiled, partial_parser

SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "title": {"type": "string"},
        "items": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {
                    "id": {"type": "integer"},
                    "name": {"type": "string"},
                    "tags": {"type": "array", "items": {"type": "string"}},
                    "score": {"type": "number"},
                    "ok": {"type": "boolean"},
                },
                "required": ["id", "name", "tags", "score", "ok"],
            },
        },
    },
    "required": ["title", "items"],
}


def document(kb: int) -> str:
    items: list[dict[str, Any]] = []
    doc = ""
    while len(doc) < kb * 1000:
        i = len(items)
        items.append({"id": i, "name": f"item number {i}", "tags": ["alpha", "beta"], "score": i * 1.5,
                      "ok": i % 2 == 0})
        doc = json.dumps({"title": "a streamed typed object", "items": items})
    return doc


def pieces(doc: str, n: int) -> list[str]:
    """``doc`` cut into exactly ``n`` pieces of (nearly) equal length."""
    cuts = [len(doc) * i // n for i in range(n + 1)]
    return [doc[a:b] for a, b in pairwise(cuts) if b > a]


async def _terminal_for(parts: list[str]) -> Any:
    async def terminal(call: Call) -> AsyncIterator[Delta]:
        for p in parts:
            yield Delta(text=p)
        yield Delta(usage=Usage(requests=1), finish_reason="stop")

    return terminal


def _pydantic_core_parse(buffer: str) -> Any:
    from pydantic_core import from_json

    try:
        return from_json(buffer, allow_partial=True)
    except ValueError:
        return None


def _timed(fn: Any) -> float:
    t = time.perf_counter()
    fn()
    return time.perf_counter() - t


async def _bare(call: Call, nxt: Any) -> AsyncIterator[Any]:
    async for d in nxt(call):
        yield d


async def run_once(parts: list[str], growth: float | None, request: ChatRequest, parser: str = "adapter"
                   ) -> dict[str, float]:
    terminal = await _terminal_for(parts)
    stats = {"parse_s": 0.0, "parses": 0, "partials": 0}
    if growth is None:
        mws: list[Any] = [_bare]
    else:
        mw = OutputCoerceMiddleware(max_repairs=1, partial_min_growth=growth)
        compiled = mw.compiled(request.output_schema)  # type: ignore[arg-type]
        inner = compiled.parse if parser == "adapter" else _pydantic_core_parse

        def timed(buffer: str) -> Any:
            t = time.perf_counter()
            try:
                return inner(buffer)
            finally:
                stats["parse_s"] += time.perf_counter() - t
                stats["parses"] += 1

        mw._compiled[request.output_schema] = _Compiled(compiled.spec, timed)
        mws = [mw]
    run = chain(mws, terminal)
    call = Call("chat", request, make_test_ctx())
    gc.collect()
    gc.disable()
    t0 = time.perf_counter()
    async for d in run(call):
        if d.partial_output is not None:
            stats["partials"] += 1
    wall = time.perf_counter() - t0
    gc.enable()
    stats["wall_s"] = wall
    return stats


DEFAULT_GROWTH = 0.1  # OutputCoerceMiddleware(partial_min_growth=0.1)

async def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--kb", type=int, default=50)
    ap.add_argument("--deltas", default="250,500,1000,2000,4000")
    ap.add_argument("--growth", default="0,0.1")
    ap.add_argument("--parser", default="adapter,pydantic-core")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    doc = document(args.kb)
    request = ChatRequest((Message("user", (TextBlock("stream it"),)),), output_schema=freeze(SCHEMA))
    assert isinstance(request.output_schema, FrozenDict)
    counts = [int(x) for x in args.deltas.split(",")]
    growths = [float(x) for x in args.growth.split(",")]
    parsers = args.parser.split(",")
    spec = OutputCoerceMiddleware().compiled(request.output_schema).spec  # type: ignore[arg-type]
    validate_s = min(_timed(lambda: spec.parse(doc)) for _ in range(args.rounds))
    adapter = partial_parser(request.output_schema)  # type: ignore[arg-type]
    one = {"adapter": min(_timed(lambda: adapter(doc)) for _ in range(args.rounds)),
           "pydantic-core": min(_timed(lambda: _pydantic_core_parse(doc)) for _ in range(args.rounds))}
    if not args.json:
        print(f"output_coerce: a {len(doc) / 1000:.1f} KB JSON object streamed in N text deltas "
              f"(best of {args.rounds}; target: parse under 100 ms for N=2000)")
        print(f"one parse of the whole object: adapter ({getattr(adapter, '__qualname__', adapter)}) "
              f"{one['adapter'] * 1000:.2f} ms, pydantic-core {one['pydantic-core'] * 1000:.2f} ms; "
              f"final validation (OutputSpec.parse) {validate_s * 1000:.1f} ms")
        print(f"{'parser':>13} {'growth':>7} {'N':>6} {'parses':>7} {'partials':>9} {'parse_ms':>9} {'total_ms':>9}")
    else:
        print(json.dumps({"kb": round(len(doc) / 1000, 1), "validate_ms": round(validate_s * 1000, 2),
                          "one_parse_ms": {k: round(v * 1000, 3) for k, v in one.items()}}))
    for parser, g, n in ((p, g, n) for p in parsers for g in growths for n in counts):
        parts = pieces(doc, n)
        best: dict[str, float] | None = None
        for _ in range(args.rounds):
            base = await run_once(parts, None, request)
            s = await run_once(parts, g, request, parser)
            s["total_s"] = s["wall_s"] - base["wall_s"]
            if best is None or s["parse_s"] < best["parse_s"]:
                best = s
        assert best is not None
        row = {"kb": round(len(doc) / 1000, 1), "parser": parser, "growth": g, "deltas": len(parts),
               "parses": int(best["parses"]), "partials": int(best["partials"]),
               "parse_ms": round(best["parse_s"] * 1000, 2),
               "total_ms": round(best["total_s"] * 1000, 2)}
        if args.json:
            print(json.dumps(row))
        else:
            print(f"{parser:>13} {g:>7} {row['deltas']:>6} {row['parses']:>7} {row['partials']:>9} "
                  f"{row['parse_ms']:>9.1f} {row['total_ms']:>9.1f}")
            if n == 2000 and g == DEFAULT_GROWTH:  # the target is stated for the middleware's default
                print(f"output_coerce parse, {row['kb']} KB in {n} deltas ({parser}, growth {g}): "
                      f"{row['parse_ms']:.1f} ms  (target: under 100 ms)")
    return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main(sys.argv[1:])))
