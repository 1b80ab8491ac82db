"""How ``seamkit run`` shows a run: human-readable (the answer on stdout: streamed text, or only
the typed output as JSON; tool lines and a summary on stderr, styled with rich) or ``--json``
(one JSON object per stream event on stdout, ``run_failed`` last when the run fails)."""

from __future__ import annotations

import contextlib
import dataclasses
import datetime
import enum
import json
import logging
import sys
import time
from collections.abc import Iterable, Mapping
from decimal import Decimal
from typing import IO, TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from seamkit.values import StreamEvent, ToolCall, ToolResult, Usage

__all__ = [
    "EventSink",
    "HumanRenderer",
    "JsonRenderer",
    "event_to_json",
    "failure_to_json",
    "format_cost",
    "format_summary",
    "LineSafeHandler",
    "clear_line",
    "install_log_handler",
    "interactions_text",
    "jsonable",
    "release_line",
    "resume_command",
    "show_command",
    "settle_command",
    "truncate",
    "uncertain_text",
    "use_line",
]

MAX_ARGS = 120
MAX_RESULT = 160


# -- stderr lines written while a run streams ----------------------------------------------------
#
# A log record (``checkpoint of run ... skipped``) is written to stderr while the model's text may
# be streaming to the same terminal without a newline yet, or while the status line is drawn:
# whatever is drawn on the current line gets out of the way first (a newline after streamed text,
# the status line erased), so the record starts on a line of its own.

_LINE_USERS: list[Any] = []  # callables ``() -> None`` that leave the terminal at a line start


def use_line(clear: Any) -> None:
    """Register ``clear`` (``() -> None``): called before a log record is written to stderr."""
    if clear not in _LINE_USERS:
        _LINE_USERS.append(clear)


def release_line(clear: Any) -> None:
    """Undo :func:`use_line`."""
    if clear in _LINE_USERS:
        _LINE_USERS.remove(clear)


def clear_line() -> None:
    """Leave the terminal at the start of a line (see :func:`use_line`)."""
    for clear in list(_LINE_USERS):
        clear()


class LineSafeHandler(logging.Handler):
    """The CLI's log handler (level ``WARNING``, the message alone, on stderr, as Python's
    last-resort handler writes it) that first calls :func:`clear_line`."""

    def __init__(self) -> None:
        super().__init__(logging.WARNING)

    def emit(self, record: logging.LogRecord) -> None:
        try:
            text = self.format(record)
            clear_line()
            sys.stderr.write(text + "\n")
            sys.stderr.flush()
        except Exception:
            self.handleError(record)


def install_log_handler() -> LineSafeHandler | None:
    """Give the root logger a :class:`LineSafeHandler` when it has no handler (Python would use its
    last-resort handler, which knows nothing of a line the run's text left open); else ``None``."""
    root = logging.getLogger()
    if root.handlers:
        return None
    handler = LineSafeHandler()
    root.addHandler(handler)
    return handler


def jsonable(value: Any) -> Any:
    """``value`` as plain JSON data: ``Decimal`` → string (exact), dataclasses and pydantic models →
    objects, ``bytes`` → ``{"bytes": length}``, anything else unknown → its ``str``."""
    if value is None or isinstance(value, bool | int | float | str):
        return value
    if isinstance(value, Decimal):
        return str(value)
    if isinstance(value, enum.Enum):
        return jsonable(value.value)
    if isinstance(value, Mapping):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple | set | frozenset):
        return [jsonable(v) for v in value]
    if isinstance(value, bytes | bytearray):
        return {"bytes": len(value)}
    if isinstance(value, datetime.datetime | datetime.date | datetime.time):
        return value.isoformat()
    dump = getattr(value, "model_dump", None)
    if callable(dump):  # a pydantic model
        return dump(mode="json")
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: jsonable(getattr(value, f.name)) for f in dataclasses.fields(value)}
    return str(value)


def usage_to_json(usage: Usage) -> dict[str, Any]:
    """A :class:`~seamkit.values.Usage` as JSON data; ``cost`` is a decimal string (USD) or ``null``."""
    return {
        "input_tokens": usage.input_tokens,
        "output_tokens": usage.output_tokens,
        "cache_read_tokens": usage.cache_read_tokens,
        "cache_write_tokens": usage.cache_write_tokens,
        "reasoning_tokens": usage.reasoning_tokens,
        "requests": usage.requests,
        "cost": None if usage.cost is None else str(usage.cost),
        "cost_source": usage.cost_source,
    }


def event_to_json(event: StreamEvent) -> dict[str, Any]:
    """One stream event as a JSON object: ``kind``, ``run_id``, ``step`` and the fields that are set.

    ``model_result`` carries ``result`` (text, tool calls, finish reason, model, usage, warnings);
    ``run_finished`` carries ``output``, ``usage`` (cost as a string), ``stop_reason``, ``steps``,
    ``warnings``, ``parent_run_id``, ``answered_by`` (the agent that answered) and, after handoffs,
    ``handoffs`` (the agents that held the conversation, in order); other ``data`` keys (a
    ``handoff``'s ``from``, ``to`` and ``filter``) are copied as they are.
    """
    d: dict[str, Any] = {"kind": event.kind, "run_id": event.run_id, "step": event.step}
    if event.text is not None:
        d["text"] = event.text
    if event.result is not None:
        r = event.result
        d["result"] = {
            "text": r.text,
            "tool_calls": [call_json(c) for c in r.tool_calls],
            "finish_reason": r.finish_reason,
            "model": r.model,
            "usage": usage_to_json(r.usage),
            "warnings": list(r.warnings),
        }
    if event.tool_call is not None:
        d["tool_call"] = call_json(event.tool_call)
    if event.tool_result is not None:
        d["tool_result"] = result_json(event.tool_result)
    if event.partial_output is not None:
        d["partial_output"] = jsonable(event.partial_output)
    if event.kind == "output" or event.output is not None:
        d["output"] = jsonable(event.output)
    for key, value in event.data.items():
        if key == "result" and event.kind == "run_finished":
            res = value
            d["output"] = jsonable(res.output)
            d["usage"] = usage_to_json(res.usage)
            d["stop_reason"] = res.stop_reason
            d["steps"] = res.steps
            d["warnings"] = list(res.warnings)
            d["parent_run_id"] = res.parent_run_id
            if res.answered_by is not None:
                d["answered_by"] = res.answered_by
            if res.handoffs:
                d["handoffs"] = list(res.handoffs)
            if res.stopped_early:  # a tool-loop limit was reached: the answer came without more tools
                d["stopped_early"] = True
                d["limit_reached"] = res.limit_reached
            if res.turn is not None:
                d["turn"] = jsonable(res.turn)
            if res.pending_approvals:
                d["pending_approvals"] = [
                    {"call_id": p.call_id, "tool": p.tool, "arguments": jsonable(p.arguments), "policy": p.policy}
                    for p in res.pending_approvals
                ]
        elif key not in d:
            d[key] = jsonable(value)
    return d


def call_json(call: ToolCall) -> dict[str, Any]:
    """A tool call as JSON: ``id``, ``name``, ``arguments`` (the values of secret-named arguments,
    at any depth, as ``***``: :func:`seamkit.composition._models.mask_named`; a model may pass on
    a credential it was given, and what the CLI prints is read by people and kept in logs)."""
    from seamkit.composition._models import mask_named

    return {"id": call.id, "name": call.name, "arguments": mask_named(jsonable(call.arguments))}


def result_json(result: ToolResult) -> dict[str, Any]:
    """A tool result as JSON: ``call_id``, ``name``, ``content``, ``is_error``."""
    return {"call_id": result.call_id, "name": result.name, "content": result.content, "is_error": result.is_error}


def truncate(text: str, limit: int) -> str:
    """``text`` on one line, cut to ``limit`` characters with an ellipsis."""
    one = " ".join(text.split())
    return one if len(one) <= limit else one[: max(0, limit - 3)] + "..."


def format_cost(usage: Usage) -> str:
    """``unknown`` when the cost is unknown (never ``$0``), ``local`` for a local model, ``$0
    (cache)`` for answers replayed from a cache, else ``$<USD>`` (``~$<USD> (estimated)`` for an
    estimate)."""
    if usage.cost is None:
        return "unknown"
    if usage.cost_source == "local":
        return "local"
    if usage.cost_source == "cache":
        return f"${usage.cost:f} (cache)"
    text = f"${usage.cost:f}"
    return f"~{text} (estimated)" if usage.cost_source == "estimated" else text


def format_summary(run_id: str, stop_reason: str, steps: int, usage: Usage, duration: float | None = None) -> str:
    """The one-line summary of a run; ``duration`` (seconds, when known) is shown as ``in 12.3s``
    after the stop reason."""
    took = "" if duration is None else f" in {duration:.1f}s"
    return (
        f"run {run_id}: {stop_reason}{took}, {steps} step{'s' if steps != 1 else ''}, "
        f"tokens {usage.input_tokens} in / {usage.output_tokens} out, "
        f"{usage.requests} request{'s' if usage.requests != 1 else ''}, cost {format_cost(usage)}"
    )


def _is_terminal(stream: Any) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError, OSError):
        return False


def visible(text: str) -> str:
    """``text`` with every control and invisible format character (bidi overrides such as U+202E,
    zero-width characters: Unicode categories Cc and Cf) written as ``\\uXXXX``, so what a person
    reads is what will run."""
    import unicodedata

    return "".join(
        f"\\u{ord(ch):04x}" if unicodedata.category(ch) in ("Cc", "Cf") else ch for ch in text
    )


def _command_line(command: list[str], positionals: list[str], options: list[tuple[str, str | None]]) -> str:
    """A command line that argparse reads back as written: each word shell-quoted; an option value
    that starts with ``-`` joined to its option (``--agent=-a.yaml``), and ``--`` before the
    positionals, after the options, when one of them starts with ``-`` (a call id is the provider's)."""
    import shlex

    opts: list[str] = []
    for name, value in options:
        if value is None:
            opts.append(name)
        elif value.startswith("-"):
            opts.append(f"{name}={value}")
        else:
            opts += [name, value]
    if any(p.startswith("-") for p in positionals):
        words = [*command, *opts, "--", *positionals]
    else:
        words = [*command, *positionals, *opts]
    return " ".join(shlex.quote(w) for w in words)


def resume_command(run_id: str, *flags: str | tuple[str, str], agent_file: str | None = None) -> str:
    """A ``seamkit resume`` command line that works as printed (see :func:`_command_line`):
    ``flags`` are options, a bare flag (``"--allow-finished"``) or an option with its value
    (``("--approve", CALL_ID)``); ``--agent FILE`` last when ``agent_file`` is given (the
    composition names its own checkpoint store, so the embedded default store would not find the
    run)."""
    options: list[tuple[str, str | None]] = [f if isinstance(f, tuple) else (f, None) for f in flags]
    if agent_file is not None:
        options.append(("--agent", agent_file))
    return _command_line(["seamkit", "resume"], [run_id], options)


def show_command(run_id: str, *, agent_file: str | None = None) -> str:
    """A ``seamkit runs show`` command line that works as printed (see :func:`resume_command`)."""
    return _command_line(["seamkit", "runs", "show"], [run_id], [("--agent", agent_file)] if agent_file else [])


def pending_text(run_id: str, pending: Any, *, agent_file: str | None = None) -> str:
    """The lines telling a person which tool calls wait for approval and how to decide: one
    ``seamkit resume`` command to approve the first call and one to reject it, each runnable as
    printed (``agent_file``: as :func:`resume_command`)."""
    lines = ["waiting for approval:"]
    for p in pending:
        args = visible(json.dumps(jsonable(p.arguments), ensure_ascii=False))
        lines.append(f"  call {visible(p.call_id)}: {visible(p.tool)} {truncate(args, MAX_ARGS)}")
    first = visible(pending[0].call_id)
    lines.append("decide with: " + resume_command(run_id, ("--approve", first), agent_file=agent_file))
    lines.append("         or: " + resume_command(run_id, ("--reject", first), agent_file=agent_file))
    lines.append(f"(--edit {first}='{{...JSON arguments...}}' approves with other arguments; "
                 "one command can decide several calls)")
    return "\n".join(lines)


def interactions_text(run_id: str, interactions: Any, *, agent_file: str | None = None) -> str:
    """The lines telling a person what a conversation with capabilities asks, and the
    ``seamkit resume --answer`` command that answers (runnable as printed)."""
    lines = ["waiting for the person:"]
    for i in interactions:
        extra = f" (options: {', '.join(i.options)})" if i.options else ""
        lines.append(f"  {visible(i.prompt)}{extra}")
    confirming = any(i.kind == "confirmation" for i in interactions)
    answer = "yes" if confirming else "TEXT"
    lines.append("answer with: " + resume_command(run_id, ("--answer", answer), agent_file=agent_file))
    if confirming:
        lines.append("         or: " + resume_command(run_id, ("--answer", "no"), agent_file=agent_file))
    return "\n".join(lines)


def settle_command(run_id: str, call_id: str, outcome: str, *, agent_file: str | None = None) -> str:
    """A ``seamkit runs settle`` command line that works as printed (``agent_file``: as
    :func:`resume_command`)."""
    options: list[tuple[str, str | None]] = [] if agent_file is None else [("--agent", agent_file)]
    return _command_line(["seamkit", "runs", "settle"], [run_id, call_id, outcome], options)


def uncertain_text(run_id: str, effects: Any, *, agent_file: str | None = None) -> str:
    """The lines telling a person which side-effecting tool calls of a run have an unknown outcome
    and how to settle them, one runnable command per call and outcome ("" when every one is settled;
    ``agent_file``: as :func:`resume_command`)."""
    open_ = [e for e in effects if getattr(e, "settled", "") is None]
    if not open_:
        return ""
    lines = ["outcome unknown (check the outside system, then settle):"]
    for e in open_:
        args = visible(json.dumps(jsonable(e.arguments), ensure_ascii=False))
        waits = " [the run waits for it]" if e.waits else ""
        lines.append(f"  call {visible(e.call_id)}: {visible(e.tool)} {truncate(args, MAX_ARGS)}{waits}")
        lines.append(f"    {visible(e.reason)}")
    for i, e in enumerate(open_):
        # a shell comment after the command: the whole line stays pasteable
        lines.append(("settle with: " if i == 0 else "        and: ")
                     + settle_command(run_id, e.call_id, "applied", agent_file=agent_file)
                     + "   # add --result TEXT to tell the model what it returned")
        lines.append("         or: " + settle_command(run_id, e.call_id, "not-applied", agent_file=agent_file))
    return "\n".join(lines)


class EventSink(Protocol):
    def event(self, event: StreamEvent) -> None: ...

    def close(self) -> None: ...


def failure_to_json(exc: BaseException, exit_code: int, run_id: str | None) -> dict[str, Any]:
    """The ``run_failed`` line: ``{"kind": "run_failed", "run_id": ..., "error": {"type": ...,
    "message": ...}, "exit_code": N}`` (``run_id`` is ``null`` when the run had not started)."""
    message = str(exc) or ("interrupted" if isinstance(exc, KeyboardInterrupt) else "")
    return {
        "kind": "run_failed",
        "run_id": run_id,
        "error": {"type": type(exc).__name__, "message": message},
        "exit_code": exit_code,
    }


class JsonRenderer:
    """Writes one JSON object per event to ``out`` (stdout), flushing each line; :meth:`failed`
    writes the final ``run_failed`` line of a run that raised."""

    def __init__(self, out: IO[str] | None = None, *, secrets: Iterable[str] = ()) -> None:
        from seamkit._cli.scrub import TextScrubber

        self.out = out if out is not None else sys.stdout
        self.run_id: str | None = None
        self._text = TextScrubber(secrets)
        self._last_text: dict[str, Any] | None = None

    def _write(self, obj: Mapping[str, Any]) -> None:
        self.out.write(json.dumps(obj, ensure_ascii=False) + "\n")
        self.out.flush()

    def _drain(self) -> None:
        rest = self._text.drain()
        if rest and self._last_text is not None:
            self._write({**self._last_text, "text": rest})

    def event(self, event: StreamEvent) -> None:
        if self.run_id is None:
            self.run_id = event.run_id
        d = event_to_json(event)
        if event.kind == "text" and self._text:
            # a secret split across text events is masked too: the end of a delta that may start
            # one is held back and sent with the next text (or on its own before any other event)
            self._last_text = d
            shown = self._text.feed(event.text or "")
            if not shown:
                return
            d["text"] = shown
        else:
            self._drain()
        self._write(d)

    def failed(self, exc: BaseException, exit_code: int) -> None:
        """Write the ``run_failed`` line (see :func:`failure_to_json`) for ``exc``."""
        self._drain()
        self._write(failure_to_json(exc, exit_code, self.run_id))
        with contextlib.suppress(AttributeError):  # said: the entry point writes no other error object
            exc._json_written = True  # type: ignore[attr-defined]

    def close(self) -> None:
        self._drain()
        self.out.flush()


def _isatty(stream: Any) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError, OSError):
        return False


class HumanRenderer:
    """Shows a run for people.

    Free-text agent: the model's text to ``out`` (stdout) as it arrives, each model turn's text
    on its own line. Typed-output agent (``typed``): the model's text streams to ``err`` instead
    (dimmed on a terminal) and ``out`` gets only the final output as pretty JSON, so stdout is
    valid JSON. Gather-mode agent: ``out`` gets the gathered context block (the run's output) when
    the run finishes. Tool calls, tool results and the summary (with the time since this renderer
    was made: the run's duration in this command): one styled line each on ``err``.
    """

    def __init__(self, out: IO[str] | None = None, err: IO[str] | None = None, *, typed: bool = False,
                 secrets: Iterable[str] = (), agent_file: str | None = None) -> None:
        from rich.console import Console

        from seamkit._cli.scrub import TextScrubber

        self.out = out if out is not None else sys.stdout
        self.console = Console(
            file=err if err is not None else sys.stderr, highlight=False, soft_wrap=True, emoji=False
        )
        self.typed = typed
        self.agent_file = agent_file  # named in the resume commands it prints (see resume_command)
        self._midline = False
        self._text = TextScrubber(secrets)  # masks secrets split across deltas, before styling
        self._started = time.monotonic()  # the summary's duration: this command's time on the run

    def _write_text(self, text: str) -> None:
        shown = self._text.feed(text)
        if shown:
            self._show(shown)
        self._midline = not text.endswith("\n")
        if self._midline:
            use_line(self._break_line)

    def _break_line(self) -> None:
        """Before a log record goes to stderr: when the text streamed to the same terminal ended
        mid-line, end that line (the text goes on after the record, on a line of its own)."""
        if not self._midline:
            return
        stream = self.console.file if self.typed else self.out
        if _isatty(stream) and _isatty(sys.stderr):
            stream.write("\n")
            stream.flush()
            self._midline = False

    def _show(self, text: str) -> None:
        if self.typed:
            from rich.text import Text

            self.console.print(Text(text, style="dim"), end="")
            self.console.file.flush()
        else:
            self.out.write(text)
            self.out.flush()

    def _end_line(self) -> None:
        rest = self._text.drain()
        if rest:
            self._show(rest)
        if self._midline:
            self._midline = False
            self._show("\n")

    def event(self, event: StreamEvent) -> None:
        from rich.text import Text

        kind = event.kind
        if kind == "text" and event.text:
            self._write_text(event.text)
        elif kind == "model_result":  # the next turn's text starts on a new line
            self._end_line()
        elif kind == "tool_call" and event.tool_call is not None:
            self._end_line()
            self.console.print(self._call_line(event.tool_call))
        elif kind == "tool_result" and event.tool_result is not None:
            self._end_line()
            self.console.print(self._result_line(event.tool_result))
        elif kind == "output":
            self._end_line()
            if _is_terminal(self.out):  # the label tells the answer apart on a shared screen only
                self.console.print(Text("output:", style="bold"))
            self.out.write(json.dumps(jsonable(event.output), indent=2, ensure_ascii=False) + "\n")
            self.out.flush()
        elif kind == "handoff":
            self._end_line()
            self.console.print(Text(f"handed over: {event.data.get('from')} -> {event.data.get('to')} "
                                    f"(filter {event.data.get('filter')})", style="cyan"))
        elif kind == "capability":
            self._end_line()
            line = self._capability_line(event.data)
            if line is not None:
                self.console.print(line)
        elif kind == "run_finished":
            self._end_line()
            result = event.data["result"]
            if getattr(result, "gathered", ()) and isinstance(result.output, str) and result.output:
                # a gather-mode run's output (the context block) streams as no text event: it is
                # the run's answer, so stdout gets it like a typed output
                self.console.print(Text("gathered:", style="bold"))
                self.out.write(result.output if result.output.endswith("\n") else result.output + "\n")
                self.out.flush()
            line = format_summary(result.run_id, result.stop_reason, result.steps, result.usage,
                                  time.monotonic() - self._started)
            style = "dim" if result.stop_reason == "completed" else "yellow"
            self.console.print(Text(line, style=style))
            for w in result.warnings:  # a traceback (SEAMKIT_DEBUG=1) keeps its lines
                self.console.print(Text("warning: " + "\n  ".join(visible(x) for x in w.split("\n")),
                                        style="yellow"))
            if result.pending_approvals:
                self.console.print(Text(pending_text(result.run_id, result.pending_approvals,
                                                     agent_file=self.agent_file), style="yellow"))
            turn = getattr(result, "turn", None)
            if turn is not None and turn.interactions:
                self.console.print(Text(interactions_text(result.run_id, turn.interactions,
                                                          agent_file=self.agent_file), style="yellow"))
            if result.uncertain_effects:  # the warnings name no command: the runnable ones are here
                text = uncertain_text(result.run_id, result.uncertain_effects, agent_file=self.agent_file)
                if text:
                    self.console.print(Text(text, style="yellow"))

    @staticmethod
    def _capability_line(data: Any) -> Any:
        """A disposition the planner did not execute, or a capability run: one line."""
        from rich.text import Text

        d = data.get("disposition")
        if d is not None:
            if d.action == "execute":
                return None
            return Text.assemble(("!! ", "yellow"), (visible(d.intention.capability), "bold yellow"),
                                 f" {d.action} {d.code}: ", visible(truncate(d.message, MAX_RESULT)))
        e = data.get("execution")
        if e is None:
            return None
        args = visible(json.dumps(jsonable(e.input), ensure_ascii=False))
        if e.outcome == "completed":
            out = visible(truncate(json.dumps(jsonable(e.output), ensure_ascii=False), MAX_RESULT))
            return Text.assemble(("<> ", "green"), (visible(e.capability), "bold green"), " ",
                                 truncate(args, MAX_ARGS), " -> ", out)
        return Text.assemble(("<> ", "yellow"), (visible(e.capability), "bold yellow"), " ", truncate(args, MAX_ARGS),
                             f" {e.outcome} {e.code or ''}: ", visible(truncate(e.message, MAX_RESULT)))

    @staticmethod
    def _call_line(call: ToolCall) -> Any:
        from rich.text import Text

        args = visible(json.dumps(call_json(call)["arguments"], ensure_ascii=False))  # secret-named ones masked
        return Text.assemble(("-> ", "cyan"), (visible(call.name), "bold cyan"), " ", truncate(args, MAX_ARGS))

    @staticmethod
    def _result_line(result: ToolResult) -> Any:
        from rich.text import Text

        # tool results carry text from outside (a fetched page, an error quoting a URL): control
        # characters are shown escaped, never sent to the terminal (ANSI/OSC escape injection)
        content = visible(truncate(result.content, MAX_RESULT))
        name = visible(result.name)
        if result.is_error:
            return Text.assemble(("<- ", "red"), (name, "bold red"), (" ERROR: ", "bold red"), content)
        return Text.assemble(("<- ", "green"), (name, "bold green"), ": ", content)

    def close(self) -> None:
        release_line(self._break_line)
        self._end_line()
        self.out.flush()
