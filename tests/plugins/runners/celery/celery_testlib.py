"""Helpers of the seamkit-celery tests: a test tool that counts its executions in Redis, the
compositions that use it, and real ``seamkit worker`` subprocesses.

``priced_scripted`` is the scripted model with a price (1 USD per million tokens), for budgets.
The ``record`` tool is side-effecting and idempotent: the outside system it stands for (a Redis
hash) applies each idempotency key once (``SET NX``), as a payment API deduplicates on an
``Idempotency-Key``. Every execution is logged with its process id (``<prefix>:attempts``), each
applied key once (``<prefix>:applied``), and an execution that finds another live process inside
the same run is logged in ``<prefix>:overlaps`` (two workers on one run at once)."""

from __future__ import annotations

import asyncio
import importlib.metadata
import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

TOOLS_PLUGIN = '''
from seamkit._hookspecs import hookimpl


@hookimpl
def seamkit_register_tools(register):
    register("record", "celery_test_tools_impl:make_record", description="Record an execution in Redis")
    register("record_once", "celery_test_tools_impl:make_record_once", description="Record, not idempotent")


@hookimpl
def seamkit_register_providers(register):
    register("priced_scripted", "celery_test_tools_impl:make_priced",
             config="seamkit.testing._scripted_component:ScriptedConfig", description="Scripted, at 1 USD/Mtok")
'''

TOOLS_IMPL = '''
import json
import os
import time

import redis
from seamkit import tool
from seamkit._runtime.context import RunContext


def _alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:
        return True
    return True


_APPLY = """
if redis.call('SET', KEYS[1], ARGV[1], 'NX') then
  redis.call('RPUSH', KEYS[2], ARGV[2])
end
"""


def _record(ctx, sleep):
    prefix = os.environ["CTT_PREFIX"]
    r = redis.Redis.from_url(os.environ["CTT_REDIS_URL"])
    pid = os.getpid()
    key = ctx.idempotency_key
    r.rpush(f"{prefix}:attempts", json.dumps({"run": ctx.run_id, "key": key, "pid": pid}))
    busy = f"{prefix}:busy:{ctx.run_id}"
    holder = r.get(busy)
    if holder is not None and int(holder) != pid and _alive(int(holder)):
        r.rpush(f"{prefix}:overlaps", json.dumps({"run": ctx.run_id, "pids": [int(holder), pid]}))
    r.set(busy, pid)
    time.sleep(sleep)
    # the outside system applies a key once, atomically: a kill between two separate writes left the
    # key taken and the effect unlisted (CI saw a done run "missing" its write that way)
    r.eval(_APPLY, 2, f"{prefix}:applied:{key}", f"{prefix}:applied", pid,
           json.dumps({"run": ctx.run_id, "key": key, "pid": pid}))
    r.delete(busy)
    r.close()
    return "recorded"


@tool(side_effecting=True, idempotent=True)
def record(ctx: RunContext, sleep: float = 0.0) -> str:
    """Record this call's execution.

    Args:
        sleep: seconds to wait before applying it
    """
    return _record(ctx, sleep)


def make_record():
    return record


@tool(side_effecting=True)
def record_once(ctx: RunContext, sleep: float = 0.0) -> str:
    """Record this call's execution (not idempotent: a call a crash interrupted is never re-run).

    Args:
        sleep: seconds to wait before applying it
    """
    return _record(ctx, sleep)


def make_record_once():
    return record_once


def make_priced(cfg):
    from decimal import Decimal

    from seamkit._pricing import Price
    from seamkit.testing._scripted_component import build

    model = build(cfg)
    model.price = Price(Decimal("1"), Decimal("1"))  # a budget reserves for its calls (a local model is free)
    return model
'''


def make_dist(root: Path, dist: str, module: str, *, source: str | None = None, extra: Mapping[str, str] = {},
              target: str | None = None) -> Path:
    """A fake installed distribution ``dist`` in ``root`` whose ``seamkit`` entry point names
    ``target`` (default ``module``); ``source``: the module's text (none: it is importable already)."""
    root.mkdir(parents=True, exist_ok=True)
    if source is not None:
        (root / f"{module}.py").write_text(textwrap.dedent(source))
    for name, text in extra.items():
        (root / f"{name}.py").write_text(textwrap.dedent(text))
    info = root / f"{dist.replace('-', '_')}-0.1.dist-info"
    info.mkdir(exist_ok=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {dist}\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text(f"[seamkit]\n{module} = {target or module}\n")
    return root


def plugin_paths(root: Path) -> list[Path]:
    """Directories to put on ``PYTHONPATH``: the test tools, and seamkit-celery's entry point when
    the distribution is not installed (a checkout that has not re-run the setup)."""
    paths = [make_dist(root / "tools", "celery-test-tools", "celery_test_tools", source=TOOLS_PLUGIN,
                       extra={"celery_test_tools_impl": TOOLS_IMPL})]
    try:
        importlib.metadata.distribution("seamkit-celery")
    except importlib.metadata.PackageNotFoundError:
        paths.append(make_dist(root / "celery-ep", "seamkit-celery", "celery", target="seamkit_celery.plugin"))
    return paths


def composition(*, redis_url: str, prefix: str, sleep: float = 0.0, approvals: bool = False,
                store: str | None = None, name: str = "recorder", tool: str = "record",
                prompt: str | None = None) -> str:
    """A scripted agent that calls ``record`` once and answers ``recorded``; it checkpoints into
    Redis under ``prefix`` unless ``store`` (the YAML of another ``checkpoints:``) is given."""
    checkpoints = store or f'{{use: redis, url: "{redis_url}", prefix: "{prefix}"}}'
    approval = "  approvals: {record: every_call}\n" if approvals else ""
    return (
        "seamkit: 1\n"
        "agent:\n"
        f"  name: {name}\n"
        "  model:\n"
        "    use: scripted\n"
        "    follow_transcript: true\n"
        "    turns:\n"
        f"      - tool_calls: [{{name: {tool}, arguments: {{sleep: {sleep}}}}}]\n"
        "      - text: recorded\n"
        f"  tools: [{tool}]\n"
        f"  checkpoints: {checkpoints}\n"
        f"{approval}"
        + (f"  prompt: {json.dumps(prompt)}\n" if prompt is not None else "")
    )


class Env:
    """What the worker and CLI subprocesses of one test share: the plugin paths, the working
    directory, Redis and the key prefix."""

    def __init__(self, paths: Sequence[Path], cwd: Path, redis_url: str, prefix: str) -> None:
        self.paths = list(paths)
        self.cwd = cwd
        self.redis_url = redis_url
        self.prefix = prefix
        self.workers: list[Worker] = []

    def env(self, extra: Mapping[str, str] | None = None) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith("SEAMKIT_")}
        env["PYTHONPATH"] = os.pathsep.join([*map(str, self.paths), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
        env["PYTHONIOENCODING"] = "utf-8"
        env["CTT_PREFIX"] = self.prefix
        env["CTT_REDIS_URL"] = self.redis_url
        env["SEAMKIT_BROKER_URL"] = self.broker
        env.update(extra or {})
        return env

    @property
    def broker(self) -> str:
        return self.redis_url.rsplit("/", 1)[0] + "/1"  # the broker's own database

    def cli(self, *args: str, env: Mapping[str, str] | None = None,
            timeout: float = 60) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "seamkit", *args], cwd=self.cwd, env=self.env(env),
                              capture_output=True, text=True, timeout=timeout)

    def submit(self, file: Path, *args: str) -> subprocess.CompletedProcess[str]:
        """``seamkit submit FILE ARGS... --queue <this test's queue>``."""
        return self.cli("submit", str(file), *args, "--queue", self.prefix)

    def worker(self, file: Path, *args: str) -> Worker:
        log = self.cwd / f"worker-{len(self.workers)}.log"
        w = Worker(subprocess.Popen(
            [sys.executable, "-m", "seamkit", "worker", str(file), "--visibility-timeout", "3", "--loglevel",
             "INFO", "--queue", self.prefix, *args],
            cwd=self.cwd, env=self.env(), stdout=subprocess.DEVNULL, stderr=log.open("w"), start_new_session=True,
        ), log)
        self.workers.append(w)
        return w

    def stop_all(self) -> None:
        for w in self.workers:
            w.kill()

    # -- what the record tool wrote ----------------------------------------------------------------

    def _list(self, name: str) -> list[dict[str, Any]]:
        import redis

        r = redis.Redis.from_url(self.redis_url)
        try:
            return [json.loads(x) for x in r.lrange(f"{self.prefix}:{name}", 0, -1)]
        finally:
            r.close()

    def attempts(self) -> list[dict[str, Any]]:
        return self._list("attempts")

    def applied(self) -> list[dict[str, Any]]:
        return self._list("applied")

    def overlaps(self) -> list[dict[str, Any]]:
        return self._list("overlaps")

    # -- the runs' checkpoints ---------------------------------------------------------------------

    def outcomes(self, run_ids: Sequence[str], *, timeout: float,
                 until: Callable[[str], bool] = lambda s: s != "running") -> dict[str, Any]:
        """The latest checkpoint of each run once every one satisfies ``until`` (its status), or
        when ``timeout`` seconds have passed (missing runs absent)."""
        return asyncio.run(self._outcomes(run_ids, timeout, until))

    async def _outcomes(self, run_ids: Sequence[str], seconds: float, until: Callable[[str], bool]) -> dict[str, Any]:
        from seamkit._durability.checkpointer import Checkpointer
        from seamkit_redis.store import RedisStore

        cp = Checkpointer(RedisStore(self.redis_url, prefix=self.prefix))
        deadline = time.monotonic() + seconds
        found: dict[str, Any] = {}
        try:
            while True:
                for run_id in run_ids:
                    if run_id in found and until(found[run_id].status):
                        continue
                    snap = await cp.latest(run_id)
                    if snap is not None:
                        found[run_id] = snap
                if all(r in found and until(found[r].status) for r in run_ids) or time.monotonic() > deadline:
                    return found
                await asyncio.sleep(0.2)
        finally:
            await cp.aclose()

    async def history_owners(self, run_id: str) -> list[str]:
        from seamkit._durability.checkpointer import Checkpointer
        from seamkit_redis.store import RedisStore

        cp = Checkpointer(RedisStore(self.redis_url, prefix=self.prefix))
        try:
            owners = []
            for info in await cp.history(run_id):
                snap = await cp.at_version(run_id, info.version)
                owners.append(str(snap.metadata.get("owner")) if snap is not None else "?")
            return owners
        finally:
            await cp.aclose()


class Worker:
    """A ``seamkit worker`` subprocess in its own process group (its pool processes with it)."""

    def __init__(self, proc: subprocess.Popen[bytes], log: Path) -> None:
        self.proc = proc
        self.log = log

    @property
    def pid(self) -> int:
        return self.proc.pid

    def wait_ready(self, timeout: float = 30) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if " ready." in self.log.read_text(errors="replace"):
                return
            if self.proc.poll() is not None:
                raise AssertionError(f"the worker exited ({self.proc.returncode}):\n{self.text()}")
            time.sleep(0.05)
        raise AssertionError(f"the worker was not ready in {timeout} s:\n{self.text()}")

    def text(self) -> str:
        return self.log.read_text(errors="replace")[-4000:]

    def kill_main(self) -> None:
        """SIGKILL the worker's main process only: its pool processes die with it (Celery's prefork
        children ask the kernel for SIGKILL when their parent dies)."""
        os.kill(self.proc.pid, signal.SIGKILL)
        self.proc.wait(timeout=10)

    def kill(self) -> None:
        """SIGKILL the worker's whole process group (as a machine dying would), once."""
        if self.proc.poll() is None:
            try:
                os.killpg(self.proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            self.proc.wait(timeout=10)


__all__ = ["Env", "Worker", "composition", "make_dist", "plugin_paths"]


def wait_for(predicate: Any, timeout: float, what: str) -> None:
    """Poll ``predicate()`` every 50 ms until it is true; ``AssertionError`` naming ``what`` after
    ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what}")
