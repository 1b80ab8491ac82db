"""Running a plugin's code so that it cannot hang, end or write over the command that loads it.

A plugin's import, its registration hooks and its component modules run in a daemon worker thread
(:func:`run_guarded`) with a time limit (:func:`import_timeout`, ``SEAMKIT_PLUGIN_IMPORT_TIMEOUT``),
whatever they raise caught there (a ``KeyboardInterrupt`` raised in a worker thread is the
plugin's own: the user's Ctrl-C arrives in the main thread), and file descriptor 1 pointed at
stderr meanwhile (:func:`plugin_output_to_stderr`), so nothing reaches a command's ``--json``.
What cannot be stopped in-process: ``os._exit``, a crash in native code, a thread left running
past its limit (``seamkit plugins --check`` checks in child processes for that).
"""

from __future__ import annotations

import contextlib
import math
import os
import sys
import threading
from collections.abc import Callable, Iterator
from typing import Any

__all__ = ["IMPORT_TIMEOUT_S", "COMPONENT_IMPORT_TIMEOUT_S", "THREAD_NAME", "import_timeout",
           "plugin_output_to_stderr", "run_guarded", "needs_main_thread"]

#: seconds one plugin's import (and then its registration hooks) may take, unless
#: ``SEAMKIT_PLUGIN_IMPORT_TIMEOUT`` says otherwise
IMPORT_TIMEOUT_S = 10.0  # a registration module should import nothing heavy (docs/plugins/index.md)
#: seconds a component's module (imported when a composition uses it) may take at least
COMPONENT_IMPORT_TIMEOUT_S = 60.0
#: the worker thread running a plugin's code (named so that an error mentioning it is recognised)
THREAD_NAME = "seamkit-plugin-load"


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


def run_guarded(fn: Callable[[], Any], timeout_s: float, *,
                 redirect: bool = True) -> tuple[Any, BaseException | None] | None:
    """Run a plugin's ``fn`` in a daemon worker thread, its output sent to stderr
    (:func:`plugin_output_to_stderr`); ``(value, None)``, ``(None, exception)`` for whatever it
    raised (any ``BaseException``: a ``KeyboardInterrupt`` raised there is the plugin's own, the
    user's Ctrl-C arrives in the main thread, which waits here), or ``None`` when it has not
    returned after ``timeout_s`` seconds: it is left running (a daemon thread does not keep the
    process alive; nothing can stop a thread). ``redirect=False``: its output is left alone."""
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
    return box[0] if box else None


def needs_main_thread(exc: BaseException) -> bool:
    """Whether a plugin failed only because its code ran outside the main thread:
    ``signal.signal`` ("only works in main thread"), asyncio's "no current event loop in thread
    'seamkit-plugin-load'"."""
    text = str(exc)
    return isinstance(exc, (ValueError, RuntimeError)) and ("main thread" in text or THREAD_NAME in text)
