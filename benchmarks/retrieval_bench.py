"""Retrieval latency of seamkit-vector-sqlite (``use: sqlite_vec``) over 10,000 stored chunks.

Run: ``bash benchmarks/run.sh retrieval``. Options: ``--chunks 10000``, ``--dims 384``,
``--queries 200``, ``--k 5``, ``--batch 500``, ``--metric cosine|l2``, ``--memory`` (``:memory:``
instead of a WAL file in a temporary directory), ``--json`` (one JSON line).

What it does: stores ``--chunks`` random unit vectors (seeded, ``--dims`` long, each with metadata
``{"group": i % 10, "source": "doc-<i>.md#<i>"}``) for one tenant through the async ``upsert`` in
batches of ``--batch`` (insert throughput: chunks per second, including the float32 packing), plus
1,000 chunks of a second tenant (the partition key keeps them out of the first tenant's scans).
Then ``--queries`` random unit query vectors, timed one by one through the async ``query``
(thread hand-off included): unfiltered top-k, filtered on one metadata value (10% of the chunks
match) and with ``$in`` on two values (20%). Prints p50/p95/max in milliseconds. The KNN is exact
(a brute-force scan of the tenant's vectors by sqlite-vec), so latency grows linearly with the
tenant's chunk count and the dimensions.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from seamkit.values import Scope
from seamkit_vector_sqlite.store import SqliteVectorStore


def _unit(rng: random.Random, dims: int) -> list[float]:
    v = [rng.gauss(0.0, 1.0) for _ in range(dims)]
    norm = math.sqrt(sum(x * x for x in v))
    return [x / norm for x in v]


def _pct(times: list[float], q: float) -> float:
    ordered = sorted(times)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))] * 1e3


async def measure(args: argparse.Namespace, path: str | Path) -> dict[str, Any]:
    rng = random.Random(7)
    tenant, other = Scope("bench"), Scope("other-tenant")
    vectors = [_unit(rng, args.dims) for _ in range(args.chunks)]
    queries = [_unit(rng, args.dims) for _ in range(args.queries)]
    result: dict[str, Any] = {"chunks": args.chunks, "dims": args.dims, "k": args.k, "metric": args.metric}
    async with SqliteVectorStore(path, dimensions=args.dims, metric=args.metric) as store:
        t0 = time.perf_counter()
        for start in range(0, args.chunks, args.batch):
            await store.upsert(
                tenant,
                [
                    (f"chunk-{i}", vectors[i], {"group": i % 10, "source": f"doc-{i // 20}.md#{i}"})
                    for i in range(start, min(start + args.batch, args.chunks))
                ],
            )
        insert_s = time.perf_counter() - t0
        await store.upsert(other, [(f"o-{i}", _unit(rng, args.dims), {"group": 3}) for i in range(1000)])
        result["insert"] = {"seconds": insert_s, "chunks_per_s": args.chunks / insert_s}
        assert await store.count(tenant) == args.chunks
        cases: dict[str, dict[str, Any] | None] = {
            "unfiltered": None,
            "where group=3 (10%)": {"group": 3},
            "where group $in [3, 4] (20%)": {"group": {"$in": [3, 4]}},
        }
        for name, where in cases.items():
            await store.query(tenant, queries[0], k=args.k, where=where)  # warm up
            times = []
            for q in queries:
                t = time.perf_counter()
                hits = await store.query(tenant, q, k=args.k, where=where)
                times.append(time.perf_counter() - t)
                assert len(hits) == args.k and all(h[0].startswith("chunk-") for h in hits)
            result[name] = {
                "p50_ms": _pct(times, 0.50),
                "p95_ms": _pct(times, 0.95),
                "max_ms": max(times) * 1e3,
                "mean_ms": statistics.fmean(times) * 1e3,
            }
    return result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--chunks", type=int, default=10_000, help="chunks stored for the tenant (default 10000)")
    parser.add_argument("--dims", type=int, default=384, help="vector dimensions (default 384)")
    parser.add_argument("--queries", type=int, default=200, help="timed queries per case (default 200)")
    parser.add_argument("--k", type=int, default=5, help="neighbours per query (default 5)")
    parser.add_argument("--batch", type=int, default=500, help="chunks per upsert call (default 500)")
    parser.add_argument("--metric", choices=["cosine", "l2"], default="cosine")
    parser.add_argument("--memory", action="store_true", help="use :memory: instead of a WAL file")
    parser.add_argument("--json", action="store_true", help="print one JSON line")
    args = parser.parse_args(argv)
    for name in ("chunks", "dims", "queries", "batch"):
        if getattr(args, name) < 1:
            parser.error(f"--{name} must be at least 1")
    if not 1 <= args.k <= min(args.chunks // 10, 4096):
        parser.error("--k must be from 1 to a tenth of --chunks (the filtered cases need k matches)")
    with tempfile.TemporaryDirectory(prefix="seamkit-retrieval-") as tmp:
        path: str | Path = ":memory:" if args.memory else Path(tmp) / "vectors.db"
        result = asyncio.run(measure(args, path))
    result["storage"] = "memory" if args.memory else "file (WAL)"
    if args.json:
        print(json.dumps(result))
        return 0
    ins = result["insert"]
    print(
        f"sqlite_vec ({result['storage']}, {result['metric']}): {result['chunks']} chunks x {result['dims']} dims, "
        f"k={result['k']}, {args.queries} queries per case"
    )
    print(f"  insert: {ins['chunks_per_s']:,.0f} chunks/s ({ins['seconds']:.2f} s, batches of {args.batch})")
    for name, row in result.items():
        if isinstance(row, dict) and "p50_ms" in row:
            print(
                f"  query {name:28s} p50 {row['p50_ms']:7.2f} ms   p95 {row['p95_ms']:7.2f} ms   "
                f"max {row['max_ms']:7.2f} ms"
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
