"""Sync tools in worker threads (``seamkit._tools.threads``, ``FunctionTool.invoke``): threads kept
and reused, calls in parallel, context variables copied, errors handed back, after a fork and at
exit."""

from __future__ import annotations

import asyncio
import contextvars
import subprocess
import sys
import textwrap
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from seamkit._tools import tool
from seamkit._tools.threads import ToolThreads, tool_threads
from seamkit.testing import make_test_ctx

WHO: contextvars.ContextVar[str] = contextvars.ContextVar("WHO", default="nobody")


async def test_a_sync_tool_runs_in_a_kept_thread_that_later_calls_reuse() -> None:
    seen: list[int] = []

    @tool(side_effecting=False)
    def where() -> str:
        """Record which thread runs the tool and return ok."""
        seen.append(threading.get_ident())
        return "ok"

    pool = tool_threads()
    assert await where.invoke({}, make_test_ctx()) == "ok"
    started = pool.threads  # earlier tests of this process may have started some already
    for _ in range(4):
        assert await where.invoke({}, make_test_ctx()) == "ok"
    assert threading.get_ident() not in seen
    # one call at a time: a kept thread serves each (which one, when several wait, is the queue's
    # choice), and none is started for them
    assert pool.threads == started <= pool.max_workers
    names = {t.ident: t.name for t in threading.enumerate()}
    assert all(names.get(ident, "").startswith("seamkit-tool") for ident in seen), (seen, names)


async def test_parallel_sync_calls_run_at_once() -> None:
    # each call waits for the other two: they finish only if all three run in parallel
    barrier = threading.Barrier(3, timeout=5)

    @tool(side_effecting=False)
    def meet(n: int) -> int:
        """Wait for the two other calls, then return n."""
        barrier.wait()
        return n

    ctx = make_test_ctx()
    assert await asyncio.gather(*(meet.invoke({"n": n}, ctx) for n in range(3))) == [0, 1, 2]


async def test_context_variables_are_copied_into_the_thread_and_not_back() -> None:
    @tool(side_effecting=False)
    def whoami() -> str:
        """Return who the caller is, then claim to be someone else."""
        seen = WHO.get()
        WHO.set("the tool")
        return seen

    WHO.set("the run")
    assert await whoami.invoke({}, make_test_ctx()) == "the run"
    assert WHO.get() == "the run"


async def test_an_error_in_the_thread_reaches_the_caller() -> None:
    @tool(side_effecting=False)
    def fail() -> str:
        """Fail with a lookup error."""
        raise LookupError("no such row")

    with pytest.raises(LookupError, match="no such row"):
        await fail.invoke({}, make_test_ctx())


def test_the_pool_starts_threads_on_demand_up_to_its_limit() -> None:
    pool = ToolThreads(max_workers=2, name="test-pool")
    gate = threading.Event()
    ran: list[str] = []
    done = threading.Semaphore(0)

    def job(name: str) -> Callable[[], None]:
        gate.wait(5)
        ran.append(name)
        return done.release

    for name in "abc":
        pool.submit(lambda name=name: job(name))
    assert pool.threads == 2  # the third job waits for a free thread instead of starting one
    gate.set()
    for _ in range(3):
        assert done.acquire(timeout=5)
    assert sorted(ran) == ["a", "b", "c"]
    pool.submit(lambda: job("d"))
    assert done.acquire(timeout=5) and pool.threads == 2  # an idle thread took it
    pool.shutdown()
    with pytest.raises(RuntimeError, match="shut down"):
        pool.submit(lambda: lambda: None)
    with pytest.raises(ValueError, match="at least 1"):
        ToolThreads(max_workers=0)


RUN_AFTER_FORK = """
import asyncio, os, sys, time
from seamkit._tools import tool
from seamkit._tools.threads import tool_threads
from seamkit.testing import make_test_ctx

@tool(side_effecting=False)
def add(a: int, b: int) -> int:
    '''Add two integers.'''
    return a + b

assert asyncio.run(add.invoke({"a": 1, "b": 2}, make_test_ctx())) == 3  # the parent's threads start
pool = tool_threads()
while pool._waiting < 1:  # its thread waits for the next job: the child must not count on it
    time.sleep(0.001)
pid = os.fork()
if pid == 0:  # the child has none of them: new ones must start
    os._exit(0 if asyncio.run(asyncio.wait_for(add.invoke({"a": 2, "b": 3}, make_test_ctx()), 5)) == 5 else 1)
_, status = os.waitpid(pid, 0)
sys.exit(os.waitstatus_to_exitcode(status))
"""


@pytest.mark.skipif(not hasattr(__import__("os"), "fork"), reason="needs os.fork")
def test_a_forked_child_runs_sync_tools_in_its_own_threads() -> None:
    proc = subprocess.run([sys.executable, "-c", RUN_AFTER_FORK], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr


FINISH_AT_EXIT = """
import asyncio, sys, threading, time
from pathlib import Path
from typing import Any
from seamkit._tools import tool
from seamkit.testing import make_test_ctx

started = threading.Event()

@tool(side_effecting=True)
def write(path: str) -> str:
    '''Write a file slowly.'''
    started.set()
    time.sleep(0.3)
    Path(path).write_text("done")
    return "ok"

async def main() -> None:
    call = asyncio.ensure_future(write.invoke({"path": sys.argv[1]}, make_test_ctx()))
    while not started.is_set():
        await asyncio.sleep(0.01)
    call.cancel()  # the run stops waiting; the thread runs on

asyncio.run(main())
"""


def test_the_interpreter_waits_at_exit_for_a_sync_tool_still_running(tmp_path: Path) -> None:
    out = tmp_path / "written"
    proc = subprocess.run([sys.executable, "-c", textwrap.dedent(FINISH_AT_EXIT), str(out)], capture_output=True,
                          text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert out.read_text() == "done"


async def _loop_ran_during(call: Any) -> tuple[Any, bool]:
    """``(result of awaiting call, whether the event loop ran a callback meanwhile)``."""
    ran: list[bool] = []
    asyncio.get_running_loop().call_soon(ran.append, True)
    return await call, bool(ran)


async def test_a_quick_sync_tool_is_waited_for_on_the_loop_thread_and_a_slow_one_awaited() -> None:
    # issue 19: a quick call is answered with one thread wake-up (the loop thread waits on a lock,
    # at most quick_wait); a call that takes longer frees the loop, and so do the tool's next
    # calls until one returns within quick_wait again
    gate = threading.Event()

    @tool(side_effecting=False)
    def step(slow: bool) -> str:
        """Return at once, or once the gate opens when slow."""
        if slow:
            gate.wait(10)
            return "slow"
        return "quick"

    step.quick_wait = 2.0  # generous: a busy machine's thread wake-up stays far below it
    ctx = make_test_ctx()
    assert await _loop_ran_during(step.invoke({"slow": False}, ctx)) == ("quick", False)

    step.quick_wait = 0.05
    loop = asyncio.get_running_loop()
    loop.call_later(0.2, gate.set)  # runs only if the loop is free while the call waits
    assert await _loop_ran_during(step.invoke({"slow": True}, ctx)) == ("slow", True)

    step.quick_wait = 2.0
    assert await _loop_ran_during(step.invoke({"slow": False}, ctx)) == ("quick", True)  # awaited at once
    assert await _loop_ran_during(step.invoke({"slow": False}, ctx)) == ("quick", False)  # quick again


async def test_quick_wait_zero_awaits_every_call_and_errors_still_reach_the_caller() -> None:
    @tool(side_effecting=False)
    def check(n: int) -> int:
        """Return n, or fail for a negative n."""
        if n < 0:
            raise ValueError("negative")
        return n

    check.quick_wait = 0.0
    ctx = make_test_ctx()
    assert await _loop_ran_during(check.invoke({"n": 1}, ctx)) == (1, True)
    with pytest.raises(ValueError, match="negative"):
        await check.invoke({"n": -1}, ctx)


async def test_a_sync_tool_that_waits_on_the_event_loop_completes() -> None:
    # the loop thread waits at most quick_wait for a call: a tool that needs the loop (it runs a
    # coroutine there and waits for it) is not deadlocked by that wait
    loop = asyncio.get_running_loop()

    async def lookup() -> str:
        await asyncio.sleep(0)
        return "from the loop"

    @tool(side_effecting=False)
    def ask_the_loop() -> str:
        """Run a coroutine on the run's event loop and return its answer."""
        return asyncio.run_coroutine_threadsafe(lookup(), loop).result(timeout=10)

    ask_the_loop.quick_wait = 0.05
    assert await ask_the_loop.invoke({}, make_test_ctx()) == "from the loop"
