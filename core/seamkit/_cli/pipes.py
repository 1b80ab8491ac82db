"""Output whose reader went away (``seamkit run FILE TASK | head -c 20``).

Python ignores SIGPIPE, so a write to a closed pipe raises ``BrokenPipeError`` wherever it happens:
in the middle of a run, between two checkpoints. Raised there, it would end the run half way, its
last checkpoint saying ``running`` while the command had stopped. :class:`PipeGuard` wraps
``sys.stdout`` and ``sys.stderr`` for the length of a command: the first ``BrokenPipeError`` points
the stream's file descriptor at ``/dev/null`` and every later write is dropped, so the command
goes on to its end (a run finishes and checkpoints its true status) and its exit code says how it
ended. Nothing is printed about it: the reader chose to stop reading (``head`` does).
"""

from __future__ import annotations

import errno
import os
from typing import Any

__all__ = ["PipeGuard"]


def _closed_pipe(exc: BaseException) -> bool:
    return isinstance(exc, BrokenPipeError) or (isinstance(exc, OSError) and exc.errno == errno.EPIPE)


class PipeGuard:
    """A text stream that drops what it cannot write once its reader has gone (see the module doc);
    everything else is the wrapped stream's (``isatty``, ``fileno``, ``encoding``...).
    :attr:`broken` says whether the reader went away."""

    def __init__(self, stream: Any) -> None:
        self._stream = stream
        self.broken = False

    @property
    def wrapped(self) -> Any:
        """The stream this one writes to."""
        return self._stream

    def _break(self) -> None:
        self.broken = True
        try:  # later writes and the flush at exit go to /dev/null instead of raising again
            devnull = os.open(os.devnull, os.O_WRONLY)
            try:
                os.dup2(devnull, self._stream.fileno())
            finally:
                os.close(devnull)
        except (OSError, ValueError, AttributeError):  # no file descriptor (a StringIO): writes are dropped
            pass

    def write(self, text: str) -> int:
        if self.broken:
            return len(text)
        try:
            return int(self._stream.write(text))
        except OSError as exc:
            if not _closed_pipe(exc):
                raise
            self._break()
            return len(text)

    def writelines(self, lines: Any) -> None:
        for line in lines:
            self.write(line)

    def flush(self) -> None:
        try:
            self._stream.flush()
        except OSError as exc:
            if not _closed_pipe(exc):
                raise
            self._break()
            try:  # what the buffer held goes to /dev/null now
                self._stream.flush()
            except (OSError, ValueError):
                pass

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)
