"""The event loop of the commands that drive a run (``run``, ``resume``).

``asyncio.run`` waits, when it closes, for every thread of the loop's default executor, where sync
tools run. A sync tool that ignores the cancellation token therefore kept ``seamkit run`` alive
after Ctrl-C or SIGTERM (the run's checkpoint long saved) and held back the resume hint until it
returned; under ``docker stop`` the process was killed first and no hint was printed at all.
Here a run that is interrupted abandons those threads instead of joining them.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Coroutine
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

__all__ = ["TOOL_THREAD_PREFIX", "run_interruptible", "tool_threads_left_running"]

T = TypeVar("T")
TOOL_THREAD_PREFIX = "seamkit-tool"
"""The name prefix of the worker threads sync tools run in under the CLI."""


class _ToolThreads(ThreadPoolExecutor):
    """A default executor that stops waiting for its threads once the run was interrupted."""

    abandoned = False

    def shutdown(self, wait: bool = True, *, cancel_futures: bool = False) -> None:
        super().shutdown(wait=wait and not self.abandoned, cancel_futures=cancel_futures or self.abandoned)


def run_interruptible(coro: Coroutine[Any, Any, T]) -> T:
    """``asyncio.run(coro)``, except that after a ``KeyboardInterrupt`` (Ctrl-C, or SIGTERM as
    :class:`~seamkit._cli.main.Terminated`) the loop closes without waiting for sync tools still
    running in worker threads; the interruption propagates as usual."""
    with asyncio.Runner() as runner:
        executor = _ToolThreads(thread_name_prefix=TOOL_THREAD_PREFIX)
        runner.get_loop().set_default_executor(executor)
        try:
            return runner.run(coro)
        except KeyboardInterrupt:
            executor.abandoned = True
            raise


def tool_threads_left_running() -> bool:
    """Whether a sync tool of an interrupted run is still running in its worker thread."""
    return any(t.name.startswith(TOOL_THREAD_PREFIX) and t.is_alive() for t in threading.enumerate())
