"""Running a plugin's code so that it cannot hang, end or write over the command that loads it.

A plugin's import, its registration and command hooks and its component modules run in a daemon
worker thread (:func:`run_guarded`) with a time limit (:func:`import_timeout`,
``SEAMKIT_PLUGIN_IMPORT_TIMEOUT``), whatever they raise caught there (a ``KeyboardInterrupt``
raised in a worker thread is the plugin's own: the user's Ctrl-C arrives in the main thread), and
file descriptor 1 pointed at stderr meanwhile (:func:`plugin_output_to_stderr`), so nothing reaches
a command's ``--json``. The modules an abandoned thread is importing fail fast afterwards
(:func:`abandon_imports`); code that needs the main thread runs there under a ``SIGALRM`` deadline
(:func:`main_thread_deadline`). What cannot be stopped in-process: ``os._exit``, a crash in native
code, a thread left running past its limit (``seamkit plugins --check`` checks in child processes
for that).
"""

from __future__ import annotations

import contextlib
import importlib
import math
import os
import signal
import sys
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

__all__ = ["IMPORT_TIMEOUT_S", "COMPONENT_IMPORT_TIMEOUT_S", "THREAD_NAME", "Overran", "abandon_imports",
           "alarm_deadline", "error_text", "import_error", "import_timeout", "main_thread_deadline",
           "needs_main_thread", "overran_in_main", "plugin_output_to_stderr", "run_guarded"]

#: seconds one plugin's import (and then its registration hooks) may take, unless
#: ``SEAMKIT_PLUGIN_IMPORT_TIMEOUT`` says otherwise
IMPORT_TIMEOUT_S = 10.0  # a registration module should import nothing heavy (docs/plugins/index.md)
#: seconds a component's module (imported when a composition uses it) may take at least
COMPONENT_IMPORT_TIMEOUT_S = 60.0
#: the worker thread running a plugin's code (named so that an error mentioning it is recognised)
THREAD_NAME = "seamkit-plugin-load"


def error_text(exc: BaseException) -> str:
    """``"Type: message"`` for a plugin's exception, secrets masked (see :mod:`seamkit._plugins.redact`)."""
    from seamkit._plugins.redact import mask_message

    return mask_message(f"{type(exc).__name__}: {exc}")


@contextlib.contextmanager
def plugin_output_to_stderr() -> Iterator[None]:
    """``sys.stdout`` and file descriptor 1 both point at stderr meanwhile: ``print``,
    ``sys.__stdout__.write`` and ``os.write(1, ...)`` by a plugin all land on stderr. The fd is left
    alone when fd 1 or 2 is closed (nothing to protect, or nowhere to send it)."""
    with contextlib.redirect_stdout(sys.stderr):
        _flush(sys.stdout, sys.__stdout__)
        try:
            saved = os.dup(1)
        except OSError:
            yield
            return
        try:
            os.dup2(2, 1)
        except OSError:
            os.close(saved)
            yield
            return
        try:
            yield
        finally:
            # what the plugin left in the buffer of the real stdout goes to stderr too
            _flush(sys.__stdout__, sys.stderr)
            os.dup2(saved, 1)
            os.close(saved)


def _flush(*streams: Any) -> None:
    for stream in streams:
        try:
            if stream is not None:
                stream.flush()
        except (OSError, ValueError):  # closed
            pass


def import_timeout() -> float:
    """Seconds one plugin's import, then its registration hooks, may take: the
    ``SEAMKIT_PLUGIN_IMPORT_TIMEOUT`` environment variable (a number > 0), else
    :data:`IMPORT_TIMEOUT_S`."""
    raw = os.environ.get("SEAMKIT_PLUGIN_IMPORT_TIMEOUT", "").strip()
    try:
        value = float(raw)
    except ValueError:
        return IMPORT_TIMEOUT_S
    return value if value > 0 and math.isfinite(value) else IMPORT_TIMEOUT_S


def run_guarded(fn: Callable[[], Any], timeout_s: float, *, redirect: bool = True,
                 abandon: str | None = None) -> tuple[Any, BaseException | None] | None:
    """Run a plugin's ``fn`` in a daemon worker thread, its output sent to stderr
    (:func:`plugin_output_to_stderr`); ``(value, None)``, ``(None, exception)`` for whatever it
    raised (any ``BaseException``: a ``KeyboardInterrupt`` raised there is the plugin's own, the
    user's Ctrl-C arrives in the main thread, which waits here), or ``None`` when it has not
    returned after ``timeout_s`` seconds: it is left running (a daemon thread does not keep the
    process alive; nothing can stop a thread). ``redirect=False``: its output is left alone.
    ``abandon``: who ran it (a plugin's name), when the modules it was importing at the timeout are
    to be given up on (:func:`abandon_imports`; not for a component's module, which a long-running
    program may import again once it is reachable)."""
    box: list[tuple[Any, BaseException | None]] = []

    def target() -> None:
        try:
            box.append((fn(), None))
        except BaseException as exc:
            box.append((None, exc))

    worker = threading.Thread(target=target, name=THREAD_NAME, daemon=True)
    with plugin_output_to_stderr() if redirect else contextlib.nullcontext():
        worker.start()
        worker.join(timeout_s)
    if not box and abandon is not None:
        abandon_imports(worker, abandon)
    return box[0] if box else None


#: module name -> who (``"plugin 'a'"``) was importing it when given up on, still running (:func:`abandon_imports`)
_ABANDONED: dict[str, str] = {}


def _initializing() -> set[str]:
    """The modules being imported now (``__spec__._initializing``, set by importlib meanwhile)."""
    return {name for name, module in list(sys.modules.items())
            if getattr(getattr(module, "__spec__", None), "_initializing", False)}


def _import_lock_owner(name: str) -> int | None:
    """The thread holding the import lock of module ``name`` (CPython's importlib keeps it in
    ``_bootstrap._module_locks``); ``None`` when that cannot be told."""
    try:
        ref = importlib._bootstrap._module_locks.get(name)  # type: ignore[attr-defined]
        owner = getattr(ref() if ref is not None else None, "owner", None)
    except Exception:  # another implementation: no such detail
        return None
    return owner if isinstance(owner, int) else None


def abandon_imports(worker: threading.Thread, who: str) -> None:
    """The loader gave up on ``who`` (``"plugin 'a'"``), still running in ``worker``: the modules
    that thread is importing (those whose import lock it holds) become ``None`` in ``sys.modules``,
    so that a later import of one (another plugin importing the module that blocks) fails at once
    ("import of X halted") instead of waiting on that lock for its whole time limit again. Where the
    lock's owner cannot be told (not CPython) nothing changes. The abandoned import, should it ever
    end, leaves ``None`` there: the module is not importable again in this process (its plugin is
    reported failed)."""
    for name in _initializing():
        if worker.ident is not None and _import_lock_owner(name) == worker.ident:
            sys.modules[name] = None  # type: ignore[assignment]
            _ABANDONED[name] = who


def import_error(exc: BaseException) -> str:
    """:func:`error_text`, or for an import of a module given up on (:func:`abandon_imports`) which one."""
    name = getattr(exc, "name", None)
    if isinstance(exc, ModuleNotFoundError) and name in _ABANDONED:
        return (f"it imports {name}, whose import (by {_ABANDONED[name]}) did not finish within its time "
                "limit and was left running: not waited on again")
    return error_text(exc)


def needs_main_thread(exc: BaseException) -> bool:
    """Whether a plugin failed only because its code ran outside the main thread:
    ``signal.signal`` ("only works in main thread"), asyncio's "no current event loop in thread
    'seamkit-plugin-load'"."""
    text = str(exc)
    return isinstance(exc, (ValueError, RuntimeError)) and ("main thread" in text or THREAD_NAME in text)




def overran_in_main(timeout_s: float) -> str:
    return (f"it did not finish importing within {timeout_s:g} s in the main thread, where it was imported again "
            "because it needs it (signal.signal at import); it blocks: a network call, a sleep; "
            "SEAMKIT_PLUGIN_IMPORT_TIMEOUT sets the limit")


class Overran(BaseException):
    """Raised in the main thread, in a plugin's code, when :func:`main_thread_deadline` expires (a
    ``BaseException``: a plugin's ``except Exception`` does not swallow it)."""


#: seconds between the deadline's exceptions once it expired (a plugin that catches one and blocks again)
_AGAIN_S = 0.5


@contextlib.contextmanager
def main_thread_deadline(timeout_s: float) -> Iterator[Callable[[], bool]]:
    """While a plugin's code runs in the main thread (imported again there because it needs it):
    raise :class:`Overran` in it after ``timeout_s`` seconds, and again every :data:`_AGAIN_S`
    seconds until the block ends (a plugin swallowing one and blocking again); see
    :func:`alarm_deadline`. Yields a function telling whether the deadline expired."""
    with alarm_deadline(timeout_s, lambda: Overran(f"did not finish within {timeout_s:g} s"),
                        again_s=_AGAIN_S) as expired:
        yield expired


@contextlib.contextmanager
def alarm_deadline(timeout_s: float, stop: Callable[[], BaseException], *,
                   again_s: float = 0.0) -> Iterator[Callable[[], bool]]:
    """Raise ``stop()`` in the main thread's running code after ``timeout_s`` seconds
    (``SIGALRM``), and again every ``again_s`` seconds (when > 0) until the block ends. Yields a
    function telling whether it fired. A timer armed already (a caller's own limit, pytest-timeout's)
    is suspended meanwhile and armed again after with what is left of it; when it is due first
    anyway it is left alone (it stops the code sooner). No limit (it never fires) outside the main
    thread, without ``signal.setitimer`` (Windows), or when the ``SIGALRM`` handler was not
    installed from Python (it could not be put back). Code replacing the ``SIGALRM`` handler itself,
    or catching every exception in a loop, is not stopped."""
    fired: list[bool] = []
    armed = [True]

    def expired() -> bool:
        return bool(fired)

    if not hasattr(signal, "setitimer") or threading.current_thread() is not threading.main_thread():
        yield expired
        return
    outer_left, outer_every = signal.getitimer(signal.ITIMER_REAL)
    if (0 < outer_left <= timeout_s) or signal.getsignal(signal.SIGALRM) is None:
        yield expired
        return

    def alarm(signum: int, frame: object) -> None:
        if armed[0]:  # not after the block ended (an alarm due just then)
            fired.append(True)
            raise stop()

    started = time.monotonic()
    previous = signal.signal(signal.SIGALRM, alarm)
    signal.setitimer(signal.ITIMER_REAL, timeout_s, again_s)
    try:
        yield expired
    finally:
        armed[0] = False
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
        if outer_left > 0:  # the suspended timer goes on with what is left (one overdue fires at once)
            signal.setitimer(signal.ITIMER_REAL, max(outer_left - (time.monotonic() - started), 1e-3), outer_every)
