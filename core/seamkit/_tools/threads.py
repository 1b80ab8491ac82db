"""Worker threads for sync tools (``@tool`` on a plain ``def``).

A hand-off to asyncio's default executor cost a trivial sync tool ~170 µs more per run than an
``async def`` (issue 19): ``run_in_executor`` wraps a ``concurrent.futures.Future`` in an asyncio
one, takes the executor's locks and semaphore, and chains the two futures with callbacks. Here a
job is a plain callable put on a C-implemented ``queue.SimpleQueue``; the worker that takes it
answers the loop with one ``call_soon_threadsafe``. What is left is the two thread wake-ups
that any hand-off to a thread costs.

The threads are started on demand, up to :data:`MAX_WORKERS` at once (as asyncio's default
executor: more jobs wait their turn), are kept for the life of the process (a thread started per
call would cost more than the hand-off), are daemon threads that the interpreter waits for at exit
(a running tool finishes; as ``concurrent.futures`` does), and are forgotten in a child process
after ``os.fork`` (which copies no thread), where new ones start on demand.
"""

from __future__ import annotations

import atexit
import os
import queue
import threading
from collections.abc import Callable

__all__ = ["MAX_WORKERS", "ToolThreads", "tool_threads"]

#: Sync tools that run at once in one process, at most: as asyncio's default executor,
#: ``min(32, CPUs + 4)``; a call beyond that waits for a thread to be free.
MAX_WORKERS = min(32, (os.cpu_count() or 1) + 4)


#: A job: runs in a worker thread and returns what hands its outcome back (called once the
#: thread counts as free again, so that a caller answered at once finds it free). Neither may raise.
Job = Callable[[], Callable[[], None]]


class ToolThreads:
    """A pool of worker threads running :data:`Job` s. :meth:`submit` hands a job to a waiting
    thread, starting one when none waits and fewer than ``max_workers`` run."""

    def __init__(self, max_workers: int = MAX_WORKERS, name: str = "seamkit-tool") -> None:
        if max_workers < 1:
            raise ValueError(f"max_workers must be at least 1, got {max_workers}")
        self.max_workers = max_workers
        self.name = name
        self._reset()

    def _reset(self) -> None:
        self._jobs: queue.SimpleQueue[Job | None] = queue.SimpleQueue()
        self._lock = threading.Lock()
        self._threads: list[threading.Thread] = []
        self._queued = 0  # jobs put and not yet taken
        self._waiting = 0  # threads waiting for a job
        self._closed = False

    def submit(self, job: Job) -> None:
        """Run ``job()`` in a worker thread as soon as one is free, then what it returns. Raises
        ``RuntimeError`` after :meth:`shutdown`."""
        start = False
        with self._lock:
            if self._closed:
                raise RuntimeError("the sync-tool threads are shut down (the interpreter is exiting)")
            self._queued += 1
            if self._queued > self._waiting and len(self._threads) < self.max_workers:
                start = True
                thread = threading.Thread(target=self._work, args=(self._jobs,), daemon=True,
                                          name=f"{self.name}_{len(self._threads)}")
                self._threads.append(thread)
        self._jobs.put(job)
        if start:
            thread.start()

    def _work(self, jobs: queue.SimpleQueue[Job | None]) -> None:
        lock = self._lock
        with lock:
            self._waiting += 1
        while True:
            job = jobs.get()
            with lock:
                self._waiting -= 1
                if job is not None:
                    self._queued -= 1
            if job is None:
                return
            hand_back = job()
            with lock:  # free again before the caller hears back: its next call finds this thread
                self._waiting += 1
            hand_back()
            del job, hand_back  # not kept alive (with what they hold) while the thread waits

    def shutdown(self) -> None:
        """Refuse new jobs, let the queued and running ones finish, and wait for every thread to
        end. Called at interpreter exit."""
        with self._lock:
            self._closed = True
            threads = list(self._threads)
        for _ in threads:
            self._jobs.put(None)
        for t in threads:
            if t is not threading.current_thread():
                t.join()

    @property
    def threads(self) -> int:
        """How many worker threads were started (and are kept)."""
        return len(self._threads)


_POOL: ToolThreads | None = None
_POOL_LOCK = threading.Lock()


def tool_threads() -> ToolThreads:
    """The process's :class:`ToolThreads`, made on first use (with an exit hook that waits for
    running tools, and a fork hook that forgets the parent's threads in the child)."""
    global _POOL
    pool = _POOL
    if pool is None:
        with _POOL_LOCK:
            pool = _POOL
            if pool is None:
                pool = _POOL = ToolThreads()
                atexit.register(pool.shutdown)
    return pool


def _forget_threads_after_fork() -> None:
    # the child has none of the parent's threads: counting them would queue jobs nobody takes
    global _POOL_LOCK
    _POOL_LOCK = threading.Lock()
    if _POOL is not None:
        _POOL._reset()


if hasattr(os, "register_at_fork"):  # POSIX
    os.register_at_fork(after_in_child=_forget_threads_after_fork)
