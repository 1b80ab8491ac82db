"""The budget middleware's cost per model call: in-process next to a shared ledger on the in-memory,
SQLite, Redis and PostgreSQL stores.

Run: ``bash benchmarks/run.sh budget``. Options: ``--calls 300`` (calls per kind per round),
``--rounds 5``, ``--kinds none,in_process,shared_memory,shared_sqlite,shared_redis,shared_postgres``,
``--json`` (one JSON line per kind), ``--quick`` (``--calls 20 --rounds 1``: a smoke run). Numbers
only, no thresholds. Redis and PostgreSQL are throwaway servers started on loopback
(:mod:`seamkit_services`); SQLite is a file in a temporary folder.

The model is a priced fake that answers at once (a text delta, then its usage and cost), so what
is measured is the middleware. Each call is one chat call through :func:`seamkit._middleware.chain`
with a fresh ``Call`` on one run context, collected to the end of its stream; the ceiling is far
away, so every call is admitted. A shared-ledger call makes five store round trips (reserve:
``committed += n``, ``held += n``; settle: ``held -= n``, ``committed += charge - n``,
``spent += charge``), plus one ``append`` the first time a process uses a ledger (warm-up).
Kinds run interleaved round by round so that machine noise hits them alike. Per kind: median and
p90 of the per-call time (µs) over every call of every round, after a warm-up of 20 calls, and the
median's overhead over ``none``.
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
from decimal import Decimal
from pathlib import Path
from typing import Any

from seamkit._middleware import Call, Middleware, Next, chain
from seamkit._pricing import Price
from seamkit.testing import make_test_ctx
from seamkit.testing._memory_store import MemoryStore
from seamkit.values import ChatRequest, Delta, Message, Scope, Usage
from seamkit_budget import BudgetMiddleware

# seamkit_services (the throwaway PostgreSQL/Redis servers) lives with the test suite, not in the wheel
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

KINDS = ("none", "in_process", "shared_memory", "shared_sqlite", "shared_redis", "shared_postgres")
REQUEST = ChatRequest((Message.system("You answer briefly."), Message.user("What is the capital of France?")),
                      max_tokens=100)


class PricedModel:
    provider = "bench"
    model = "priced"
    price = Price(Decimal("1"), Decimal("2"))

    async def stream(self, request: ChatRequest) -> AsyncIterator[Delta]:
        yield Delta(text="Paris")
        yield Delta(finish_reason="stop", usage=Usage(20, 2, requests=1, cost=Decimal("0.000024"),
                                                       cost_source="reported"))


class Services:
    """The stores the kinds need, started on first use; ``close()`` stops them."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.pg: Any = None
        self.redis: Any = None
        self.stores: list[Any] = []

    async def store(self, kind: str) -> Any:
        if kind == "shared_memory":
            store: Any = MemoryStore()
        elif kind == "shared_sqlite":
            from seamkit_sqlite.store import SqliteStore

            store = SqliteStore(self.folder / "budget.db")
        elif kind == "shared_redis":
            from seamkit_redis.store import RedisStore
            from seamkit_services import start_redis

            self.redis = self.redis or start_redis(self.folder / "redis")
            store = RedisStore(self.redis.url)
        elif kind == "shared_postgres":
            from seamkit_postgres.config import PostgresConfig
            from seamkit_postgres.store import PostgresStore
            from seamkit_services import start_postgres

            self.pg = self.pg or start_postgres(self.folder / "pg")
            store = PostgresStore(PostgresConfig(dsn=self.pg.dsn))
            await store.setup()
        else:
            raise SystemExit(f"unknown kind {kind!r} ({', '.join(KINDS)})")
        self.stores.append(store)
        return store

    async def aclose(self) -> None:
        for s in self.stores:
            await s.aclose()
        for server in (self.redis, self.pg):
            if server is not None:
                server.stop()


def _runner(mws: list[Middleware]) -> Callable[[], Any]:
    model = PricedModel()

    def terminal(call: Call) -> AsyncIterator[Any]:
        return model.stream(call.request)

    nxt: Next = chain(mws, terminal, kind="chat")
    ctx = make_test_ctx(run_id="run_bench", scope=Scope("bench"))

    async def one() -> None:
        async for _ in nxt(Call("chat", REQUEST, ctx, model=model)):
            pass

    return one


async def _timed(fn: Callable[[], Any], n: int) -> list[float]:
    out = []
    for _ in range(n):
        t0 = time.perf_counter()
        await fn()
        out.append((time.perf_counter() - t0) * 1e6)
    return out


async def main(argv: list[str]) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    ap.add_argument("--calls", type=int, default=300)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--kinds", default=",".join(KINDS))
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--quick", action="store_true")
    args = ap.parse_args(argv)
    if args.quick:
        args.calls, args.rounds = 20, 1
    kinds = [k for k in args.kinds.split(",") if k]
    with tempfile.TemporaryDirectory() as tmp:
        services = Services(Path(tmp))
        try:
            runners: dict[str, Callable[[], Any]] = {}
            for kind in kinds:
                if kind == "none":
                    runners[kind] = _runner([])
                elif kind == "in_process":
                    runners[kind] = _runner([BudgetMiddleware("1000000")])
                else:
                    store = await services.store(kind)
                    runners[kind] = _runner([BudgetMiddleware("1000000", store=store, ledger="bench")])
            times: dict[str, list[float]] = {k: [] for k in kinds}
            for fn in runners.values():
                await _timed(fn, 20)  # warm-up: connections, the owner record, caches
            for _ in range(args.rounds):
                for kind, fn in runners.items():
                    times[kind].extend(await _timed(fn, args.calls))
        finally:
            await services.aclose()
    base = statistics.median(times["none"]) if "none" in times else 0.0
    if not args.json:
        print(f"budget middleware per chat call, {args.rounds} rounds x {args.calls} calls (µs)")
        print(f"{'kind':<18}{'median':>10}{'p90':>10}{'over none':>12}")
    for kind in kinds:
        ts = sorted(times[kind])
        med, p90 = statistics.median(ts), ts[int(0.9 * (len(ts) - 1))]
        row = {"kind": kind, "median_us": round(med, 1), "p90_us": round(p90, 1),
               "overhead_us": round(med - base, 1) if "none" in times else None}
        if args.json:
            print(json.dumps(row))
        else:
            over = f"{med - base:+.1f}" if "none" in times else "-"
            print(f"{kind:<18}{med:>10.1f}{p90:>10.1f}{over:>12}")


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1:]))
