"""How many threads llama.cpp runs, and how its threads wait for each other (imports only the
standard library).

llama.cpp splits each token's work across its threads and waits for all of them after every
operation (hundreds per token), through OpenMP (libgomp). By default libgomp's waiting threads
*spin*: when another process holds one of the CPUs, the spinning threads burn the time slices the
descheduled thread needs, and generation collapses (2 CPUs, one busy process, 2 threads: 3.8
tokens/s, erratic, where 1 thread held 21.5 and an idle machine gave 37). Two remedies, both here:

- :func:`import_llama` imports llama-cpp-python with ``OMP_WAIT_POLICY=PASSIVE`` (waiting threads
  sleep), unless the environment names a wait policy or spin count itself. Every import of
  llama_cpp in this package goes through it first: libgomp reads the policy once, when the first
  module of llama_cpp loads (the grammar converter's import came first for schema requests, and
  2 spinning threads made them 3-6x slower under load). Measured on a shared 2-CPU machine with
  passive waits, 2 threads were about as fast as 1 with no extra work and faster with one or two
  busy processes (see docs/getting-started.md, "Threads").
- :func:`default_threads`: every CPU this process may use (affinity mask, cgroup quota) when the
  waits are passive; when they spin (the user's ``OMP_WAIT_POLICY``/non-zero ``GOMP_SPINCOUNT``, or
  llama_cpp imported before seamkit could set it), those CPUs less the ones the 1-minute load
  average says are busy (:func:`choose_threads`), since then one thread too many costs several
  times more than one thread too few.

``threads:`` in the configuration overrides the default: at most :data:`MAX_THREADS`, and
:func:`warn_if_oversubscribed` warns (once) about more threads than usable CPUs.
"""

from __future__ import annotations

import importlib
import logging
import math
import os
import sys
from pathlib import Path
from typing import Any

__all__ = ["MAX_THREADS", "OMP_SETTINGS", "choose_threads", "cpu_quota", "default_threads", "import_llama",
           "usable_cpus", "waits_passive", "warn_if_oversubscribed"]

CGROUP_CPU_MAX = Path("/sys/fs/cgroup/cpu.max")
OMP_SETTINGS = {"OMP_WAIT_POLICY": "PASSIVE"}
"""What :func:`import_llama` puts in the environment while libgomp loads (it reads it once then)."""
_OMP_KEYS = ("OMP_WAIT_POLICY", "GOMP_SPINCOUNT")
MAX_THREADS = 512
"""The most threads ggml runs: ``GGML_MAX_N_THREADS`` in ggml/include/ggml.h (512 in the ggml that
llama-cpp-python 0.3.36 ships, ``site-packages/include/ggml.h``). ``threads:`` above it is refused:
ggml sizes its per-thread tables by it, and a count that large only oversubscribes the CPUs (10,000
threads wedged a 2-CPU machine)."""


log = logging.getLogger("seamkit_llamacpp")


class _Imported:
    passive: bool | None = None  # the wait policy llama_cpp was imported with by import_llama


class _Warned:
    oversubscribed = False  # warn_if_oversubscribed has logged its warning in this process


def _spin_count_zero(value: str) -> bool:
    """Whether a ``GOMP_SPINCOUNT`` value is a spin count of 0 (libgomp accepts an integer with an
    optional ``k``/``M``/``G``/``T`` multiplier, or ``INFINITE``/``INFINITY``)."""
    digits = value.strip().rstrip("kKmMgGtT").strip()
    return digits.isdigit() and int(digits) == 0


def _env_policy_passive() -> bool:
    """Whether the waits will be passive when llama_cpp is imported now through import_llama.
    libgomp takes a set ``GOMP_SPINCOUNT`` over ``OMP_WAIT_POLICY`` (which only picks the spin
    count's default: 0 for PASSIVE), so a spin count of 0 is passive and any other spins."""
    if "GOMP_SPINCOUNT" in os.environ:
        return _spin_count_zero(os.environ["GOMP_SPINCOUNT"])
    if "OMP_WAIT_POLICY" in os.environ:
        return os.environ["OMP_WAIT_POLICY"].strip().upper() == "PASSIVE"
    return True  # import_llama sets OMP_WAIT_POLICY=PASSIVE


def import_llama() -> Any:
    """``llama_cpp.llama``, imported (the first time) with :data:`OMP_SETTINGS` in the environment
    unless the environment names a wait policy or spin count itself. The variables are removed
    right after the import (libgomp has read them), so child processes do not inherit them.
    Without effect once the ``llama_cpp`` package is imported (any of its modules loads libllama,
    libggml and libgomp, which reads the variables then): every import of llama_cpp in seamkit
    goes through here first (the grammar converter too)."""
    module = sys.modules.get("llama_cpp.llama")
    if module is not None:
        return module
    if "llama_cpp" in sys.modules:  # loaded by someone else: too late to choose the wait policy
        return importlib.import_module("llama_cpp.llama")
    own = not any(k in os.environ for k in _OMP_KEYS)
    passive = _env_policy_passive()
    if own:
        os.environ.update(OMP_SETTINGS)
    try:
        module = importlib.import_module("llama_cpp.llama")
    finally:
        if own:
            for key in OMP_SETTINGS:
                os.environ.pop(key, None)
    _Imported.passive = passive
    return module


def waits_passive() -> bool:
    """Whether llama.cpp's threads sleep while they wait (see :func:`import_llama`): as the
    environment says before llama_cpp is imported; as it was imported through
    :func:`import_llama` after; ``False`` (assumed spinning) when someone else imported it (or
    any module of the ``llama_cpp`` package)."""
    if "llama_cpp" not in sys.modules and "llama_cpp.llama" not in sys.modules:
        return _env_policy_passive()
    return bool(_Imported.passive)


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
    """The default of ``LlamaCppConfig.threads``: :func:`usable_cpus` when :func:`waits_passive`,
    else :func:`choose_threads` for this process now."""
    usable = usable_cpus()
    if waits_passive():
        return usable
    try:
        load1 = os.getloadavg()[0]
    except (AttributeError, OSError):  # Windows
        load1 = 0.0
    return choose_threads(usable, load1, os.cpu_count() or 1)


def warn_if_oversubscribed(threads: int) -> bool:
    """Log a warning on the ``seamkit_llamacpp`` logger, the first time in this process, when
    ``threads`` exceeds :func:`usable_cpus`: llama.cpp waits for all its threads after every
    operation, so a thread without a CPU of its own stalls every token (10,000 threads on 2 CPUs
    made no progress in a minute). Returns whether ``threads`` exceeds them (warned now or before)."""
    usable = usable_cpus()
    if threads <= usable:
        return False
    if not _Warned.oversubscribed:
        _Warned.oversubscribed = True
        log.warning("llamacpp: threads=%d but this process may use %d CPU%s; more threads than CPUs "
                    "slow generation down (leave threads out for the default)", threads, usable,
                    "" if usable == 1 else "s")
    return True
