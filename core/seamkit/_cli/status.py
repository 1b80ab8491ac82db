"""The status line of ``seamkit run``, ``seamkit resume`` and ``seamkit ask`` on a terminal: a
spinner on stderr saying what the run waits for and for how long (``⠋ waiting for the model…
12s``, ``⠋ running tool calculator… 1s``), so a model that loads or decodes a forced tool call for
a minute does not look hung (``ask``: :func:`terminal_status`, until the answer streams).

Shown only when stderr is a terminal (and never with ``--json``: :func:`with_status` returns the
sink unchanged). It is drawn with :class:`rich.live.Live` on the renderer's own stderr console,
``transient`` (erased when stopped) and without redirecting ``sys.stdout``/``sys.stderr``, so
stdout carries only the answer. Before every event is shown the line is erased, and it is drawn
again afterwards; while the model's text streams it stays away (the text is the progress); after
a model answer it comes back only if the run has not ended within :data:`AFTER_ANSWER_S`, and
after the run's output or end it is never drawn again. A log record written meanwhile (see
:func:`seamkit._cli.render.use_line`) erases it first.
:meth:`StatusSink.close` (called from the run's ``finally``, so on errors, Ctrl-C and SIGTERM
too) erases it and shows the cursor again; an ``atexit`` hook does the same should a path skip
it.

The phase is known from the run's events, not from the provider: providers emit no "loading"
event (llama.cpp loads its model inside the first model call), so before the first answer the
line says ``waiting for the model`` (the first call's time includes loading the model).
"""

from __future__ import annotations

import atexit
import threading
import time
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from rich.console import Console, RenderableType

    from seamkit._cli.render import EventSink
    from seamkit.values import StreamEvent

__all__ = ["StatusLine", "StatusSink", "status_wanted", "terminal_status", "with_status"]

WAITING = "waiting for the model"
#: after a model answer (no tool calls), how long (seconds) before the line is drawn again: the
#: run normally ends well within it, and a line must not flash up after the answer
AFTER_ANSWER_S = 1.0


class StatusLine:
    """A transient one-line spinner ``<phase>… <seconds>s`` on ``console`` (refreshed 8 times a
    second by rich's own thread). The seconds count from the last :meth:`phase` change."""

    def __init__(self, console: Console) -> None:
        from rich.spinner import Spinner

        self.console = console
        # a terminal that cannot show braille dots or an ellipsis gets ASCII (- \\ | /, ...)
        self._ascii = not (console.encoding or "").lower().startswith("utf")
        self._spinner = Spinner("line" if self._ascii else "dots", style="cyan")
        self._phase = ""
        self._since = time.monotonic()
        self._live: Any = None
        self._lock = threading.Lock()
        self._timer: threading.Timer | None = None
        self._generation = 0  # bumped by every hide(): a pending show_later() of an older one is void
        self._closed = False

    def phase(self, text: str, *, restart: bool = False) -> None:
        """Say ``text`` from now on (the seconds restart when it changes, or when ``restart``)."""
        if text != self._phase or restart:
            self._phase, self._since = text, time.monotonic()

    def __rich__(self) -> RenderableType:
        from rich.text import Text

        seconds = int(time.monotonic() - self._since)
        dots = "..." if self._ascii else "…"
        self._spinner.update(text=Text(f"{self._phase}{dots} {seconds}s", style="dim"))
        return self._spinner

    @property
    def shown(self) -> bool:
        return self._live is not None

    def show(self) -> None:
        """Draw the line (again); no-op when it is shown."""

        with self._lock:
            self._show_locked()

    def _show_locked(self) -> None:
        from rich.live import Live

        if self._live is not None or self._closed:
            return
        live = Live(self, console=self.console, transient=True, refresh_per_second=8,
                    redirect_stdout=False, redirect_stderr=False)
        live.start()
        self._live = live

    def show_later(self, delay: float) -> None:
        """Draw the line in ``delay`` seconds unless :meth:`hide` or :meth:`close` comes first (the
        timer thread checks under the same lock, so a line is never drawn after either)."""
        with self._lock:
            if self._live is not None or self._closed or self._timer is not None:
                return
            generation = self._generation

            def fire() -> None:
                with self._lock:
                    if self._generation == generation and self._timer is timer:
                        self._timer = None
                        self._show_locked()

            timer = threading.Timer(delay, fire)
            timer.daemon = True
            self._timer = timer
            timer.start()

    def hide(self) -> None:
        """Erase the line and show the cursor (a pending :meth:`show_later` is dropped); no-op
        when it is not shown."""
        with self._lock:
            self._generation += 1
            timer, self._timer = self._timer, None
            live, self._live = self._live, None
            if live is not None:  # stopped under the lock: a timer cannot draw it again meanwhile
                live.stop()
                self.console.file.flush()
        if timer is not None:
            timer.cancel()

    def close(self) -> None:
        """Erase the line for good: no later :meth:`show` or :meth:`show_later` draws it."""
        with self._lock:
            self._closed = True
        self.hide()


class StatusSink:
    """An :class:`~seamkit._cli.render.EventSink` that shows a :class:`StatusLine` around
    ``inner`` (a :class:`~seamkit._cli.render.HumanRenderer`): erased before each event is shown,
    drawn again after it with the phase the event starts."""

    def __init__(self, inner: EventSink, console: Console) -> None:
        self.inner = inner
        self.line = StatusLine(console)
        self._streaming = False
        self._closed = False
        atexit.register(self.line.hide)
        from seamkit._cli.render import use_line

        use_line(self.line.hide)  # a log record written meanwhile erases it (drawn again at the next event)

    def event(self, event: StreamEvent) -> None:
        self.line.hide()
        self.inner.event(event)
        kind = event.kind
        if kind in ("output", "run_finished"):  # the answer is out: nothing more to wait for
            self._closed = True
            self.line.close()
            return
        if self._closed:
            return
        if kind == "text":
            self._streaming = True  # the text shows the model is working; the line would flicker
            return
        if kind == "tool_call" and event.tool_call is not None:
            self.line.phase(f"running tool {event.tool_call.name}")
        elif kind in ("run_started", "tool_result", "handoff"):
            self.line.phase(WAITING)
        if kind == "model_result":
            self._streaming = False
            result = getattr(event, "result", None)
            message = getattr(result, "message", None)
            if not getattr(message, "tool_calls", ()):
                # an answer: the run is most likely ending (its output checked, its checkpoint
                # saved), so the line comes back only if something takes a while (a corrected
                # answer asked again, a slow output guardrail), counting from now
                self.line.phase(WAITING, restart=True)
                self.line.show_later(AFTER_ANSWER_S)
                return
            self.line.phase(WAITING)
        if not self._streaming:
            self.line.show()

    def close(self) -> None:
        from seamkit._cli.render import release_line

        self._closed = True
        self.line.close()
        release_line(self.line.hide)
        atexit.unregister(self.line.hide)
        self.inner.close()


def status_wanted(console: Console) -> bool:
    """Whether ``console`` (stderr) is a terminal that can redraw a line: a TTY, not ``TERM=dumb``."""
    return bool(console.is_terminal) and not console.is_dumb_terminal


def with_status(sink: EventSink, *, json_output: bool) -> EventSink:
    """``sink`` wrapped in a :class:`StatusSink` when it is a human renderer whose stderr console
    is a terminal (:func:`status_wanted`) and ``--json`` was not asked for; else ``sink``."""
    console = getattr(sink, "console", None)
    if json_output or console is None or not status_wanted(console):
        return sink
    return StatusSink(sink, console)


def terminal_status(*, json_output: bool) -> StatusLine | None:
    """A :class:`StatusLine` on ``sys.stderr`` when it is a terminal (:func:`status_wanted`) and
    ``--json`` was not asked for (``seamkit ask``: no event stream to wrap); else ``None``."""
    if json_output:
        return None
    import sys

    from rich.console import Console

    console = Console(file=sys.stderr, highlight=False, emoji=False)
    return StatusLine(console) if status_wanted(console) else None
