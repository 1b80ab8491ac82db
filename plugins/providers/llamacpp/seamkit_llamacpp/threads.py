"""The default thread count of ``use: llamacpp``: the CPUs this process may use, less the CPUs other
work keeps busy (imports only the standard library).

Why not every CPU: llama.cpp splits each token's work across its threads and waits for all of them
after every operation (hundreds per token). When another process holds one of the CPUs, one of
llama.cpp's threads keeps waiting for its turn on that CPU, and every other thread waits for it:
on 2 CPUs with one busy process, 2 threads generated 3.8 tokens/s (erratic, 2.9-11.5) where
1 thread held 21.5 (37 with 2 threads on an idle machine); see ``benchmarks/local_model_bench.py``
and docs/getting-started.md, "Threads". Too few threads costs at most the idle CPUs left unused;
too many costs several times more, so the rule leaves a CPU to other work as soon as the load
average says it is more than half busy.

The load is read once, when the configuration is made (a process start), from the 1-minute load
average: a load that starts later is not seen, and recent work of an earlier seamkit process
counts as load too. ``threads:`` in the configuration overrides the rule.
"""

from __future__ import annotations

import math
import os
from pathlib import Path

__all__ = ["choose_threads", "cpu_quota", "default_threads", "usable_cpus"]

CGROUP_CPU_MAX = Path("/sys/fs/cgroup/cpu.max")


def choose_threads(usable: int, load1: float, online: int) -> int:
    """Threads for llama.cpp: ``usable`` CPUs (this process may run on) less the share of the
    machine's 1-minute load average ``load1`` that falls on them, rounded to the nearest whole CPU
    (half a CPU busy counts as free), at least 1. ``online`` is the machine's CPU count (the load
    average covers all of them; it is assumed spread evenly, so 2 usable CPUs of 16 with a load of
    8 lose 1). Pure: ``choose_threads(2, 0.1, 2) == 2``, ``choose_threads(2, 1.0, 2) == 1``,
    ``choose_threads(16, 1.0, 16) == 15``. Counts below 1 count as 1; a negative load as 0."""
    usable = max(1, usable)
    online = max(usable, online)
    busy = max(0.0, load1) * usable / online
    return max(1, min(usable, math.floor(usable - busy + 0.5)))


def cpu_quota(path: Path = CGROUP_CPU_MAX) -> int | None:
    """CPUs allowed by a cgroup v2 CPU quota (``cpu.max``: ``QUOTA PERIOD`` in microseconds,
    ``max`` for none), rounded up; ``None`` when there is no quota or no readable file."""
    try:
        quota, period = path.read_text().split()[:2]
    except (OSError, ValueError):
        return None
    if quota == "max":
        return None
    try:
        return max(1, math.ceil(int(quota) / int(period)))
    except (ValueError, ZeroDivisionError):
        return None


def usable_cpus() -> int:
    """CPUs this process may run on: its affinity mask (all CPUs where there is none), capped by
    a cgroup v2 quota (a container started with ``--cpus 2``)."""
    try:
        cpus = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # macOS, Windows
        cpus = os.cpu_count() or 1
    quota = cpu_quota()
    return min(cpus, quota) if quota is not None else cpus


def default_threads() -> int:
    """:func:`choose_threads` for this process now (the default of ``LlamaCppConfig.threads``)."""
    try:
        load1 = os.getloadavg()[0]
    except (AttributeError, OSError):  # Windows
        load1 = 0.0
    return choose_threads(usable_cpus(), load1, os.cpu_count() or 1)
