"""``seamkit runs list`` and the head of ``seamkit runs show``: a run's record as people read it.

``runs list`` prints a table (rich) with a header row: run id (never shortened: a terminal too
narrow for the table gets a few short lines per run, a pipe gets whole lines), status, creation time (the
run's first checkpoint, UTC), duration (first to latest checkpoint), tokens, cost (USD), agent and the task's
first words; ``--json`` gives the same fields (see :func:`list_row`). ``runs show`` starts with the
same facts, says why a failed run failed, and draws the run's steps as a tree: each model call
with the tool calls it asked for and their results, and the child runs (see :func:`show_head`,
:func:`step_lines`).
"""

from __future__ import annotations

import datetime as _dt
import json
import sys
from collections.abc import Sequence
from typing import IO, Any

from seamkit._durability.summary import RunSummary, run_summary

__all__ = ["format_duration", "list_row", "list_rows", "print_runs_table", "show_head", "shown_status",
           "step_lines", "stop_line", "summary_of"]


def _iso(ts: float) -> str:
    return _dt.datetime.fromtimestamp(ts, _dt.UTC).isoformat()


def _shown_time(ts: float) -> str:
    return _dt.datetime.fromtimestamp(ts, _dt.UTC).strftime("%Y-%m-%d %H:%M:%S")


def format_duration(seconds: float) -> str:
    """``0.25s``, ``12.3s``, ``4m05s``, ``2h03m``."""
    if seconds < 10:
        return f"{seconds:.2f}s"
    if seconds < 60:
        return f"{seconds:.1f}s"
    if seconds < 3600:
        m, s = divmod(int(seconds), 60)
        return f"{m}m{s:02d}s"
    h, m = divmod(int(seconds) // 60, 60)
    return f"{h}h{m:02d}m"


def _cost_text(s: RunSummary) -> str:
    if s.cost_usd is None:
        return "unknown" if s.cost_source is not None else "-"
    if s.cost_source == "local":
        return "local"
    text = f"${s.cost_usd:f}"
    return f"~{text}" if s.cost_source == "estimated" else text


def _tokens_text(s: RunSummary) -> str:
    if s.input_tokens is None or s.output_tokens is None:
        return "-"
    return f"{s.input_tokens} in / {s.output_tokens} out"


async def summary_of(cp: Any, info: Any, snap: Any = None) -> RunSummary:
    """The :class:`~seamkit._durability.summary.RunSummary` of the run whose latest checkpoint's
    header is ``info`` (``snap``: that checkpoint decoded, when the caller has it). A run stored
    before checkpoints kept a summary is read from its oldest stored version and latest checkpoint."""
    from seamkit.errors import CodecError

    meta = info.metadata
    if isinstance(meta.get("started_at"), int | float):
        return run_summary(meta, info.created_at)
    history = await cp.history(info.run_id)
    first = history[0].created_at if history else None
    if snap is None:
        try:
            snap = await cp.latest(info.run_id)
        except CodecError:  # a checkpoint this version cannot read: show what the header says
            snap = None
    return run_summary(meta, info.created_at, first_version_at=first,
                       state=snap.state if snap is not None else None,
                       transcript=snap.transcript if snap is not None else ())


def shown_status(status: str, s: RunSummary) -> str:
    """The status as listed: ``done (max_steps)`` for a run that finished without an answer."""
    return f"{status} ({s.stopped})" if status == "done" and s.stopped else status


def stop_line(status: str, s: RunSummary) -> str | None:
    """For ``runs show``: why a finished run has no answer (``stopped: max_steps (10 model turns)
    without an answer``), or that a tool-loop limit ended its tool use; else ``None``."""
    if status == "done" and s.stopped:
        turns = f" ({s.steps} model turn{'s' if s.steps != 1 else ''})" if s.steps is not None else ""
        return f"stopped: {s.stopped}{turns} without an answer"
    if s.limit_reached:
        return f"tool limit: {s.limit_reached} reached; the model answered without further tools"
    return None


def list_row(info: Any, s: RunSummary) -> dict[str, Any]:
    """One run of ``seamkit runs list --json``: ``run_id``, ``version``, ``status``, ``stopped``
    (why a ``done`` run has no answer: ``max_steps``; else ``null``), ``limit_reached`` (a tool-loop
    limit the run reached, else ``null``),
    ``parent_run_id``, ``agent``, ``created_at`` (ISO 8601, UTC: the run's first checkpoint),
    ``updated_at`` (its latest), ``duration_s`` (between them), ``task`` (its first words),
    ``input_tokens``, ``output_tokens``, ``requests``, ``cost_usd`` (a decimal string, ``null`` when
    unknown) and ``cost_source``."""
    return {
        "run_id": info.run_id,
        "version": info.version,
        "status": info.status,
        "stopped": s.stopped if info.status == "done" else None,
        "limit_reached": s.limit_reached,
        "parent_run_id": info.parent_run_id,
        "agent": info.metadata.get("agent"),
        "created_at": _iso(s.created_at),
        "updated_at": _iso(s.updated_at),
        "duration_s": round(s.duration_s, 3),
        "task": s.task,
        "input_tokens": s.input_tokens,
        "output_tokens": s.output_tokens,
        "requests": s.requests,
        "cost_usd": None if s.cost_usd is None else str(s.cost_usd),
        "cost_source": s.cost_source,
    }


async def list_rows(cp: Any, *, status: str | None, limit: int) -> list[tuple[Any, RunSummary]]:
    """The listed runs of ``cp`` (newest first), each with its summary."""
    infos = await cp.list_runs(status=status, limit=limit)
    return [(info, await summary_of(cp, info)) for info in infos]


#: On a terminal, the task column is cut (with an ellipsis) to what the terminal's width leaves,
#: but never to fewer characters than this: a narrower terminal wraps the lines instead.
MIN_TASK_WIDTH = 20


def print_runs_table(rows: Sequence[tuple[Any, RunSummary]], out: IO[str] | None = None) -> None:
    """The ``seamkit runs list`` table: a header row, then one row per run, each on one line. No
    column is ever cut but the task's: on a terminal it is shortened (with an ellipsis) to the width
    the other columns leave, never below :data:`MIN_TASK_WIDTH` characters; a terminal too narrow
    for that gets three lines per run instead (:func:`_print_compact`: run id and status, then the
    rest cut to the terminal's width; run ids stay whole); into a pipe or a file each run is one
    whole line, with no styling and no padding at the ends of lines."""
    import io
    import shutil

    from rich.cells import cell_len
    from rich.console import Console
    from rich.markup import escape
    from rich.table import Table
    from rich.text import Text

    from seamkit._cli.render import visible

    file = out if out is not None else sys.stdout
    tty = file.isatty()
    header = ("RUN ID", "STATUS", "CREATED (UTC)", "DURATION", "TOKENS", "COST", "AGENT", "TASK")
    right = {"DURATION", "TOKENS", "COST"}
    cells = [(visible(info.run_id), visible(shown_status(info.status, s)),
              _shown_time(s.created_at), format_duration(s.duration_s), _tokens_text(s),
              _cost_text(s), visible(str(info.metadata.get("agent") or "")), visible(s.task or ""))
             for info, s in rows]
    widths = [max(cell_len(str(c[i])) for c in [header, *cells]) for i in range(len(header))]
    fixed = sum(widths[:-1]) + 2 * (len(header) - 1)  # the columns before the task, 2 spaces apart
    task_width = widths[-1]
    if tty:
        columns = shutil.get_terminal_size().columns
        if fixed + 2 + min(task_width, MIN_TASK_WIDTH) > columns:  # no room for the table's lines
            _print_compact(file, header, cells, columns)
            return
        room = columns - fixed
        task_width = max(min(task_width, room), min(task_width, MIN_TASK_WIDTH))
    table = Table(box=None, pad_edge=False, show_lines=False, header_style="bold" if tty else "")
    for name, width in zip(header[:-1], widths, strict=False):
        table.add_column(name, no_wrap=True, min_width=width, justify="right" if name in right else "left")
    table.add_column("TASK", no_wrap=True, overflow="ellipsis", min_width=task_width, max_width=task_width)
    colors = {"done": "green", "failed": "red", "suspended": "yellow", "running": "cyan"}
    for c in cells:
        status = Text(c[1], style=colors.get(c[1].split(" ")[0], "") if tty else "")
        table.add_row(c[0], status, *(escape(x) for x in c[2:]))
    buffer = io.StringIO()
    # rendered at its own width (a narrower terminal wraps the lines), colours as the terminal has them
    Console(file=buffer, highlight=False, emoji=False, width=fixed + 2 + task_width,
            color_system="auto" if tty else None, force_terminal=tty).print(table)
    file.write("".join(line.rstrip() + "\n" for line in buffer.getvalue().splitlines()))


def _print_compact(file: IO[str], header: Sequence[str], cells: Sequence[Sequence[str]], columns: int) -> None:
    """``runs list`` on a terminal too narrow for the table: the run id and status on one line
    (never cut; on two when the terminal is narrower than both), the creation time, duration,
    tokens, cost and agent on the next, the task on a third, each of these cut with an ellipsis
    to the terminal's width, so the terminal never wraps a line in the middle of a word."""
    from rich.cells import cell_len, set_cell_size

    def fit(line: str) -> str:
        if cell_len(line) <= columns:
            return line
        return set_cell_size(line, max(1, columns - 1)) + "…"

    import os

    bold, plain = ("", "") if os.environ.get("NO_COLOR") else ("\x1b[1m", "\x1b[0m")
    file.write(f"{bold}{header[0]}  {header[1]}{plain}\n{bold}{fit('  ' + '  '.join(header[2:-1]))}{plain}\n"
               f"{bold}  {header[-1]}{plain}\n")
    for c in cells:
        file.write(f"{c[0]}  {c[1]}\n" if cell_len(f"{c[0]}  {c[1]}") <= columns else f"{c[0]}\n{c[1]}\n")
        file.write(fit("  " + "  ".join(x for x in c[2:-1] if x)) + "\n")
        if c[-1]:
            file.write(fit("  " + c[-1]) + "\n")


def show_head(out: IO[str], snap: Any, s: RunSummary, kept: int, error: str | None) -> None:
    """The first lines of ``seamkit runs show``: ``run ID: STATUS, version ...`` and one line each
    for the task, when it started, how long it ran, tokens and cost; a failed run's reason
    (``error: ...``, or that none was recorded); why a finished run has no answer
    (:func:`stop_line`)."""
    from seamkit._cli.render import visible

    versions = f"{kept} version{'s' if kept != 1 else ''} kept"
    # every stored text is shown through visible(): an agent name, a task or an error with escape
    # sequences must not drive the terminal
    out.write(f"run {visible(snap.run_id)}: {visible(snap.status)}, version {snap.version} ({versions}), "
              f"agent {visible(str(snap.metadata.get('agent')))}\n")
    if s.task is not None:
        out.write(f"task: {visible(s.task)}\n")
    out.write(f"created: {_shown_time(s.created_at)} UTC, duration {format_duration(s.duration_s)}"
              f"{' so far' if snap.status == 'running' else ''}\n")
    requests = f", {s.requests} model request{'s' if s.requests != 1 else ''}" if s.requests is not None else ""
    out.write(f"tokens: {_tokens_text(s)}{requests}, cost {_cost_text(s)}\n")
    if snap.status == "failed":  # why, first
        out.write(f"error: {visible(error) if error else 'the run failed; no reason was recorded'}\n")
    stopped = stop_line(snap.status, s)
    if stopped is not None:
        out.write(stopped + "\n")


def step_lines(snap: Any, children: Sequence[Any]) -> list[str]:
    """The run's steps as a tree, in order: ``task`` (the first user message), each model call
    (``model #N``: its text, the tool calls it asked for, each with its result under it), other
    user messages, and the child runs this run started (agents used as tools, workflow steps)."""
    from seamkit._cli.render import MAX_ARGS, MAX_RESULT, call_json, truncate, visible

    lines = ["steps:"]
    results: dict[str, Any] = {}
    for m in snap.transcript:
        for r in m.tool_results:
            results[r.call_id] = r
    n = 0
    for i, m in enumerate(snap.transcript):
        if m.role == "user":
            label = "task" if i == 0 else "user"
            lines.append(f"  {label}: {visible(truncate(m.text, MAX_RESULT))}")
        elif m.role == "system":
            continue
        elif m.role == "assistant":
            n += 1
            text = visible(truncate(m.text, MAX_RESULT)) if m.text.strip() else ""
            lines.append(f"  model #{n}" + (f": {text}" if text else ""))
            for j, c in enumerate(m.tool_calls):
                last = j == len(m.tool_calls) - 1
                args = visible(truncate(json.dumps(call_json(c)["arguments"], ensure_ascii=False), MAX_ARGS))
                lines.append(f"    {'└' if last else '├'}─ tool {visible(c.name)} {args} [{visible(c.id)}]")
                r = results.get(c.id)
                pad = "       " if last else "    │  "
                if r is None:
                    lines.append(f"{pad}(no result)")
                else:
                    what = "ERROR " if r.is_error else ""
                    lines.append(f"{pad}-> {what}{visible(truncate(r.content, MAX_RESULT))}")
    for child in children:
        agent = child.metadata.get("agent")
        who = f", agent {visible(str(agent))}" if agent else ""
        lines.append(f"  child run {visible(child.run_id)}: {visible(child.status)}{who}")
    return lines
