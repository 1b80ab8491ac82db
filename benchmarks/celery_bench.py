"""seamkit-celery throughput: runs/second of a batch with 1, 2 and 4 worker processes, and the
per-run overhead the queue adds over a local run of the same composition.

Run: ``bash benchmarks/run.sh celery``. Options: ``--runs 1000`` (batch size), ``--workers 1,2,4``
(worker processes: one ``seamkit worker --concurrency N``), ``--single 50`` (runs for the
one-at-a-time measures), ``--rounds 3`` (every measure, interleaved; medians printed),
``--delay 0`` (seconds each model turn waits: ``0.05`` stands for an I/O-bound model, where more
processes pay off even on few cores), ``--json`` (one JSON object), ``--quick`` (``--runs 100
--single 10 --rounds 1``).
Numbers only, no thresholds. Redis (broker and checkpoint store) is a throwaway server on loopback
(:mod:`seamkit_services`).

The composition is light on purpose, so that what is measured is seamkit and the queue: a
scripted model (no network) that calls one tiny side-effecting tool (``bench_tick``: returns at
once) and answers; checkpoints in Redis. Measures:

- **local**: ``Agent.run`` in this process, one run after another (the same composition, the same
  Redis checkpoints): ms per run.
- **submit+wait**: ``seamkit_celery.submit`` then polling the run's checkpoint until it is done,
  one run at a time, on one worker process: ms per run; its excess over *local* is the latency
  the queue adds to one run (message hop, the worker's pick-up, the poll interval).
- **batch**: :func:`seamkit_celery.batch.run_batch` (what ``seamkit batch`` does) over ``--runs``
  inputs, from the first message sent to the last result read: runs/second per worker count, the
  scaling over one worker, and process-ms per run (wall time x processes / runs: what one run
  occupies a worker process, to set next to the local ms per run). On a machine with fewer cores
  than worker processes, the processes (and Redis, and the poller) share them: for a CPU-bound run
  the curve flattens there; for an I/O-bound one (``--delay``) it does not.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
import uuid
from pathlib import Path
from typing import Any

# seamkit_services (the throwaway PostgreSQL/Redis servers) lives with the test suite, not in the wheel
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

PLUGIN = '''
from seamkit._hookspecs import hookimpl


@hookimpl
def seamkit_register_tools(register):
    register("bench_tick", "celery_bench_impl:make_tick", description="A tiny side-effecting tool")
'''

IMPL = '''
from seamkit import tool


@tool(side_effecting=True, idempotent=True)
def bench_tick() -> str:
    """Return at once."""
    return "ticked"


def make_tick():
    return bench_tick
'''


def _dist(root: Path, dist: str, module: str, target: str, files: dict[str, str]) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    for name, text in files.items():
        (root / f"{name}.py").write_text(textwrap.dedent(text))
    info = root / f"{dist.replace('-', '_')}-0.1.dist-info"
    info.mkdir(exist_ok=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {dist}\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text(f"[seamkit]\n{module} = {target}\n")
    return root


def plugin_paths(root: Path) -> list[Path]:
    """The bench tool's plugin, and seamkit-celery's entry point when that is not installed."""
    import importlib.metadata

    paths = [_dist(root / "tools", "celery-bench-tools", "celery_bench_tools", "celery_bench_tools",
                   {"celery_bench_tools": PLUGIN, "celery_bench_impl": IMPL})]
    try:
        importlib.metadata.distribution("seamkit-celery")
    except importlib.metadata.PackageNotFoundError:
        paths.append(_dist(root / "celery-ep", "seamkit-celery", "celery", "seamkit_celery.plugin", {}))
    return paths


def composition(redis_url: str, prefix: str, delay: float = 0.0) -> str:
    return textwrap.dedent(f"""\
        seamkit: 1
        agent:
          name: bench
          model:
            use: scripted
            follow_transcript: true
            delay: {delay}
            turns:
              - tool_calls: [{{name: bench_tick}}]
              - text: ticked
          tools: [bench_tick]
          checkpoints: {{use: redis, url: "{redis_url}", prefix: "{prefix}"}}
        """)


class Bench:
    def __init__(self, folder: Path, redis_url: str, delay: float = 0.0) -> None:
        self.folder = folder
        self.redis_url = redis_url
        self.broker = redis_url.rsplit("/", 1)[0] + "/1"
        self.prefix = f"cbench-{uuid.uuid4().hex[:8]}"
        self.file = folder / "bench.yaml"
        self.file.write_text(composition(redis_url, self.prefix, delay))
        self.paths = plugin_paths(folder / "plugins")
        sys.path[:0] = [str(p) for p in self.paths]  # this process builds the agent too (local runs)
        self.workers: list[subprocess.Popen[bytes]] = []

    def env(self) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith("SEAMKIT_")}
        env["PYTHONPATH"] = os.pathsep.join([*map(str, self.paths), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
        env["SEAMKIT_BROKER_URL"] = self.broker
        return env

    def start_worker(self, processes: int) -> None:
        log = self.folder / f"worker-{len(self.workers)}.log"
        p = subprocess.Popen([sys.executable, "-m", "seamkit", "worker", str(self.file), "--concurrency",
                              str(processes), "--queue", self.prefix, "--loglevel", "INFO"], env=self.env(),
                             stdout=subprocess.DEVNULL, stderr=log.open("w"), start_new_session=True)
        self.workers.append(p)
        deadline = time.monotonic() + 60
        while " ready." not in log.read_text(errors="replace"):
            if p.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"the worker did not start:\n{log.read_text(errors='replace')[-3000:]}")
            time.sleep(0.05)

    def stop_workers(self) -> None:
        import signal

        for p in self.workers:
            if p.poll() is None:
                os.killpg(p.pid, signal.SIGKILL)
                p.wait(timeout=10)
        self.workers.clear()

    def checkpointer(self) -> Any:
        from seamkit._durability.checkpointer import Checkpointer
        from seamkit_redis.store import RedisStore

        return Checkpointer(RedisStore(self.redis_url, prefix=self.prefix))


async def local_runs(bench: Bench, n: int) -> float:
    """ms per run of ``Agent.run`` in this process, one after another."""
    from seamkit._plugins.registry import get_registry
    from seamkit._runtime.context import RunContext
    from seamkit.composition import build_agent, load_composition

    agent = build_agent(load_composition(bench.file, registry=get_registry()))
    try:
        for i in range(5):  # warm-up
            await agent.run("warm", ctx=RunContext(run_id=f"lw-{uuid.uuid4().hex}-{i}"))
        t0 = time.perf_counter()
        for i in range(n):
            result = await agent.run(f"item {i}", ctx=RunContext(run_id=f"l-{uuid.uuid4().hex}"))
            assert result.output == "ticked", result.output
        return (time.perf_counter() - t0) / n * 1000
    finally:
        if agent.checkpointer is not None:
            await agent.checkpointer.aclose()


async def submit_wait_runs(bench: Bench, n: int) -> float:
    """ms per run of submit, then polling the run's checkpoint every 2 ms until done, one at a time."""
    from seamkit_celery import make_app, submit

    app = make_app(bench.broker, queue=bench.prefix)
    cp = bench.checkpointer()
    try:
        times = []
        for i in range(n + 3):
            t0 = time.perf_counter()
            run_id = submit(app, bench.file, f"item {i}", queue=bench.prefix, check=False)
            while True:
                stored = await cp.port.latest(run_id)
                if stored is not None and stored.record.status == "done":
                    break
                await asyncio.sleep(0.002)
            if i >= 3:  # the first ones warm the worker
                times.append((time.perf_counter() - t0) * 1000)
        return statistics.median(times)
    finally:
        await cp.aclose()


async def batch_run(bench: Bench, n: int) -> float:
    """Seconds from the first message of an ``n``-input batch to its last result."""
    from seamkit_celery import make_app
    from seamkit_celery.batch import BatchItem, BatchState, run_batch

    app = make_app(bench.broker, queue=bench.prefix)
    items = [BatchItem(i, i + 1, f"item {i}") for i in range(n)]
    state = BatchState(items, f"bb{uuid.uuid4().hex[:10]}")
    cp = bench.checkpointer()
    try:
        t0 = time.perf_counter()
        await run_batch(app, bench.file, items, state, cp=cp, store=cp.port, queue=bench.prefix, poll_s=0.2)
        elapsed = time.perf_counter() - t0
    finally:
        await cp.aclose()
    assert state.count("done") == n, {s: state.count(s) for s in ("done", "failed", "suspended", "running")}
    return elapsed


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=1000)
    ap.add_argument("--workers", default="1,2,4")
    ap.add_argument("--single", type=int, default=50)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--delay", type=float, default=0.0, help="seconds each model turn waits (an I/O-bound model)")
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--quick", action="store_true")
    args = ap.parse_args()
    if args.quick:
        args.runs, args.single, args.rounds = 100, 10, 1
    counts = [int(x) for x in args.workers.split(",")]
    from seamkit_services import start_redis

    folder = Path(tempfile.mkdtemp(prefix="celery-bench-"))
    server = start_redis(folder / "redis")
    bench = Bench(folder, server.url, args.delay)
    out: dict[str, Any] = {"runs": args.runs, "cpus": os.cpu_count(), "model_delay_s": args.delay}
    try:
        locals_, singles = [], []
        rounds: dict[int, list[float]] = {k: [] for k in counts}
        for _ in range(args.rounds):  # interleaved, so that machine noise hits every measure alike
            locals_.append(asyncio.run(local_runs(bench, args.single)))
            bench.start_worker(1)
            singles.append(asyncio.run(submit_wait_runs(bench, args.single)))
            bench.stop_workers()
            for k in counts:
                bench.start_worker(k)
                asyncio.run(batch_run(bench, min(50, args.runs)))  # warm the pool processes
                rounds[k].append(asyncio.run(batch_run(bench, args.runs)))
                bench.stop_workers()
        out["local_ms_per_run"] = statistics.median(locals_)
        out["submit_wait_ms_per_run"] = statistics.median(singles)
        out["batch"] = {}
        for k in counts:
            seconds = statistics.median(rounds[k])
            out["batch"][k] = {"seconds": seconds, "runs_per_s": args.runs / seconds,
                               "process_ms_per_run": seconds * k / args.runs * 1000,
                               "rounds_runs_per_s": [round(args.runs / x, 1) for x in rounds[k]]}
    finally:
        bench.stop_workers()
        server.stop()
        shutil.rmtree(folder, ignore_errors=True)
    if args.json:
        print(json.dumps(out))
        return
    local = out["local_ms_per_run"]
    load = os.getloadavg()[0]
    print(f"machine: {out['cpus']} CPUs, load average {load:.1f} at the end; composition: scripted model (each turn "
          f"waits {args.delay:g} s) + one tiny tool, Redis checkpoints; medians of the rounds")
    print(f"local Agent.run, one after another:   {local:8.2f} ms/run  ({1000 / local:6.1f} runs/s)")
    sw = out["submit_wait_ms_per_run"]
    print(f"submit + wait, one at a time (1 proc): {sw:8.2f} ms/run  (queue adds {sw - local:+.2f} ms to one run)")
    base = None
    for k, b in out["batch"].items():
        base = base or b["runs_per_s"]
        print(f"batch of {args.runs}, {k} worker process{'es' if k > 1 else '  '}: {b['seconds']:6.2f} s  "
              f"{b['runs_per_s']:7.1f} runs/s  x{b['runs_per_s'] / base:4.2f}  "
              f"({b['process_ms_per_run']:.2f} process-ms/run, {b['process_ms_per_run'] - local:+.2f} over local; "
              f"rounds {', '.join(map(str, b['rounds_runs_per_s']))} runs/s)")


if __name__ == "__main__":
    main()
