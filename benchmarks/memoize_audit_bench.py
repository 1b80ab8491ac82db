"""memoize and audit overhead per model call, on the in-memory and the SQLite store.

Run: ``bash benchmarks/run.sh memoize``. Options: ``--calls 300`` (calls per kind per round),
``--rounds 5``, ``--stores memory,sqlite``, ``--concurrent 20``, ``--json`` (one JSON line per
store), ``--quick`` (``--calls 20 --rounds 1``: a smoke run). Numbers only, no thresholds.

The model is :class:`seamkit.testing.ScriptedModel` (one short text turn, repeated): what the
provider costs is nothing, so what is measured is the middleware. Each call is one chat call
through :func:`seamkit._middleware.chain` with a fresh ``Call`` on one run context, collected to
the end of its stream. Kinds, interleaved round by round so that machine noise hits them alike:

- ``none``: no middleware (the chain is the terminal itself);
- ``memoize_miss``: ``memoize`` on a request it has never seen (every call another question): key,
  lookup, the model, the answer stored;
- ``memoize_hit``: ``memoize`` on a request already stored: key, lookup, the answer replayed;
- ``audit``: ``audit``: the argument digest and one record appended per call;
- ``audit+memoize_hit``: ``[audit, memoize]`` (audit outer) on a stored request: the hit audited.

Per kind: median and p90 of the per-call time (µs) over every call of every round, after a warm-up
of 20 calls, and the median's overhead over ``none``. The audit kinds record each round under a
new run id (a run of ``--calls`` calls). ``audit_us_at_records``: the median time of an audited
call in a run that already has 0 / 1000 records (100 with ``--quick``): a store whose ``append``
rewrites the whole list (SQLite, PostgreSQL) makes it grow with the run. Then ``--concurrent`` identical calls
started together through one ``memoize`` on an empty store (the model waits 10 ms before it
answers, so they overlap): how many reached the model (single-flight: 1) and the wall time (ms).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

from seamkit._middleware import Call, Middleware, Next, chain
from seamkit.testing import make_test_ctx
from seamkit.testing._memory_store import MemoryStore
from seamkit.testing._models import ScriptedModel
from seamkit.values import ChatRequest, Message, Scope

KINDS = ("none", "memoize_miss", "memoize_hit", "audit", "audit+memoize_hit")


def _request(text: str) -> ChatRequest:
    return ChatRequest((Message.system("You answer arithmetic questions briefly."), Message.user(text)),
                       max_tokens=100)


def _store(kind: str, folder: Path, name: str) -> Any:
    if kind == "memory":
        return MemoryStore()
    if kind == "sqlite":
        from seamkit_sqlite.store import SqliteStore

        return SqliteStore(folder / f"{name}.db")
    raise SystemExit(f"unknown store {kind!r} (memory, sqlite)")


def _runner(model: ScriptedModel, mws: list[Middleware], run_id: str = "run_bench") -> Callable[[ChatRequest], Any]:
    def terminal(call: Call) -> AsyncIterator[Any]:
        return model.stream(call.request)  # type: ignore[arg-type]

    nxt: Next = chain(mws, terminal, kind="chat")
    ctx = make_test_ctx(run_id=run_id, scope=Scope("bench"))

    async def one(request: ChatRequest) -> None:
        async for _ in nxt(Call("chat", request, ctx, model=model)):
            pass

    return one


async def _timed(fn: Callable[[ChatRequest], Any], requests: list[ChatRequest]) -> list[float]:
    out = []
    for r in requests:
        t0 = time.perf_counter()
        await fn(r)
        out.append((time.perf_counter() - t0) * 1e6)
    return out


def _stats(xs: list[float]) -> dict[str, float]:
    xs = sorted(xs)
    return {"median_us": round(statistics.median(xs), 1), "p90_us": round(xs[int(len(xs) * 0.9)], 1)}


async def _concurrent(store_kind: str, folder: Path, n: int) -> dict[str, Any]:
    from seamkit_memoize.middleware import Memoize

    model = ScriptedModel([{"text": "4", "delay": 0.01}], repeat=True, record=False)
    memo = Memoize(_store(store_kind, folder, "concurrent"), ttl=3600)
    one = _runner(model, [memo])
    req = _request("What is 2 + 2, all at once?")
    t0 = time.perf_counter()
    await asyncio.gather(*(one(req) for _ in range(n)))
    wall = (time.perf_counter() - t0) * 1e3
    await memo.aclose()
    return {"calls": n, "provider_calls": model.calls, "hits": memo.hits, "wall_ms": round(wall, 1)}


async def bench_store(store_kind: str, calls: int, rounds: int, concurrent: int,
                      growth_at: tuple[int, ...] = (0, 1000)) -> dict[str, Any]:
    """The numbers of one store (see the module doc)."""
    from seamkit_audit.middleware import Audit, audit_key
    from seamkit_memoize.middleware import Memoize

    with tempfile.TemporaryDirectory(prefix="seamkit-memo-bench-") as tmp:
        folder = Path(tmp)
        model = ScriptedModel(["4"], repeat=True, record=False)
        memo = Memoize(_store(store_kind, folder, "memo"), ttl=3600)
        audit = Audit(_store(store_kind, folder, "audit"))
        runners = {
            "none": _runner(model, []),
            "memoize_miss": _runner(model, [memo]),
            "memoize_hit": _runner(model, [memo]),
            "audit": _runner(model, [audit]),
            "audit+memoize_hit": _runner(model, [audit, memo]),
        }
        hit = _request("What is 2 + 2?")
        await runners["memoize_hit"](hit)  # stored once: every later call with it is a hit
        fresh = iter(range(10**9))

        def requests(kind: str, n: int) -> list[ChatRequest]:
            if kind == "memoize_miss":
                return [_request(f"What is {next(fresh)} + 1?") for _ in range(n)]
            return [hit] * n

        times: dict[str, list[float]] = {k: [] for k in KINDS}
        for kind in KINDS:
            await _timed(runners[kind], requests(kind, 20))  # warm-up
        for n in range(rounds):
            for kind in KINDS:
                if kind.startswith("audit"):  # one run per round: its record list grows to `calls`, no further
                    runners[kind] = _runner(model, [audit, memo] if "memoize" in kind else [audit], f"run_{kind}_{n}")
                times[kind] += await _timed(runners[kind], requests(kind, calls))
        hits, misses = memo.hits, memo.misses
        growth: dict[str, float] = {}
        for length in growth_at:  # a run that already has `length` records: what one more call costs
            key = f"run_long_{length}"
            sample = (await audit.store.list(Scope("bench"), audit_key(audit.namespace, "run_audit_0")))[0]
            await audit.store.set(Scope("bench"), audit_key(audit.namespace, key), [sample] * length)
            growth[str(length)] = _stats(await _timed(_runner(model, [audit], key), requests("audit", 20)))["median_us"]
        await memo.aclose()
        await audit.aclose()
        out: dict[str, Any] = {"store": store_kind}
        for kind in KINDS:
            out[kind] = _stats(times[kind])
        base = out["none"]["median_us"]
        out["overhead_us"] = {k: round(out[k]["median_us"] - base, 1) for k in KINDS if k != "none"}
        out["audit_us_at_records"] = growth
        # every memoize_hit and audit+memoize_hit call a hit, every memoize_miss call (and the first) a miss
        out["hits_misses"] = [hits, misses]
        out["counts_ok"] = hits == 2 * (rounds * calls + 20) and misses == rounds * calls + 21
        out["concurrent"] = await _concurrent(store_kind, folder, concurrent)
    return out


def _line(r: dict[str, Any]) -> str:
    rows = [f"store {r['store']}:"]
    for k in KINDS:
        s = r[k]
        extra = "" if k == "none" else f"  (+{r['overhead_us'][k]:.1f} µs over none)"
        rows.append(f"  {k:<18} median {s['median_us']:>9.1f} µs  p90 {s['p90_us']:>9.1f} µs{extra}")
    g = ", ".join(f"{v:.1f} µs with {k} records" for k, v in r["audit_us_at_records"].items())
    rows.append(f"  audit, one more call in a run that has: {g}")
    c = r["concurrent"]
    rows.append(f"  {c['calls']} concurrent identical calls: {c['provider_calls']} provider call(s), "
                f"{c['hits']} hits, {c['wall_ms']:.1f} ms")
    if not r["counts_ok"]:
        rows.append(f"  warning: hits/misses {r['hits_misses']} are not what the kinds should give")
    return "\n".join(rows)


async def main(argv: list[str] | None = None) -> int:
    """Parse ``argv``, run every store, print the numbers; returns the exit status (0)."""
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--calls", type=int, default=300, help="calls per kind per round")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--stores", default="memory,sqlite")
    ap.add_argument("--concurrent", type=int, default=20)
    ap.add_argument("--json", action="store_true", help="one JSON line per store")
    ap.add_argument("--quick", action="store_true", help="--calls 20 --rounds 1 (a smoke run)")
    args = ap.parse_args(argv)
    if args.quick:
        args.calls, args.rounds = 20, 1
    if args.calls < 1 or args.rounds < 1 or args.concurrent < 1:
        ap.error("--calls, --rounds and --concurrent must be at least 1")
    if not args.json:
        print(f"memoize / audit per chat call (ScriptedModel), {args.calls} calls x {args.rounds} rounds per kind; "
              f"python {sys.version.split()[0]}")
    for kind in args.stores.split(","):
        growth = (0, 100) if args.quick else (0, 1000)
        r = await bench_store(kind.strip(), args.calls, args.rounds, args.concurrent, growth)
        print(json.dumps(r) if args.json else _line(r), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
