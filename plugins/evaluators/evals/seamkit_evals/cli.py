"""The work of ``seamkit eval`` (see :mod:`seamkit_evals.commands` for its options).

Problems with the input (the suite, its agent's composition, an unknown ``--case``, an unreadable
``--compare`` report) are raised before anything runs, as the ``seamkit`` CLI reports them (no
traceback, exit code 2). The reports are written even when the eval was interrupted (Ctrl-C):
they say how many attempts were not run.
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import Any

from seamkit.plugin import BuildFailed, UsageError

__all__ = ["cmd_eval"]


def cmd_eval(args: argparse.Namespace) -> int:
    """``seamkit eval``: exit code from :attr:`seamkit_evals.results.EvalReport.exit_code`."""
    from seamkit.composition import ComponentBuildError, build_agents
    from seamkit.plugin import existing_file, get_registry, run_interruptible, scrub_output

    from seamkit_evals.report import ReportError, compare, comparison_json, read_report, render_terminal, report_json
    from seamkit_evals.runner import EvalRunner
    from seamkit_evals.suite import load_suite

    path = existing_file(args.suite)
    registry = get_registry()
    suite = load_suite(path, registry=registry)  # ConfigError: exit 2
    scrub_output(suite.secrets)  # from here on, stdout and stderr mask the secrets
    if args.case:
        known = [c.case.id for c in suite.cases]
        unknown = [c for c in args.case if c not in known]
        if unknown:
            from seamkit.plugin import did_you_mean

            hint = did_you_mean(unknown[0], known)
            raise UsageError(f"--case {unknown[0]!r}: no such case in {args.suite}{hint} (cases: {', '.join(known)})")
    old = None
    if args.compare:
        try:
            old = read_report(args.compare)
        except ReportError as exc:
            raise UsageError(str(exc)) from None
    for option in ("json", "html"):
        _check_target(option, getattr(args, option))
    try:
        agent = build_agents(suite.composition, registry=registry)[suite.agent_name]  # ConfigError: exit 2
    except ComponentBuildError as exc:  # valid, but a component failed to build (exit 1)
        raise BuildFailed(exc.issues) from exc
    progress, stop_progress = _progress(args.quiet)
    runner = EvalRunner(suite, agent, concurrency=args.concurrency, repeat=args.repeat, case_ids=args.case,
                        progress=progress)
    try:
        report = run_interruptible(runner.run())
    except KeyboardInterrupt:
        report = runner.report("interrupted")
    finally:
        stop_progress()
    doc = report_json(report, suite.secrets)
    comparison = None
    if old is not None:
        comparison = compare(old, doc)
        doc["comparison"] = comparison_json(comparison, args.compare)
    failed = _write(args, doc)
    render_terminal(doc, _console(), comparison)  # shown even when a report could not be written
    if failed:
        raise UsageError(failed[0] if len(failed) == 1 else "; ".join(failed))
    return report.exit_code


def _check_target(option: str, target: str | None) -> None:
    """Refuse a report path that cannot be written before anything runs: found out after the eval,
    it would lose the reports of a long (and paid for) eval. Raises :class:`UsageError`."""
    if target is None:
        return
    if os.path.isdir(target):
        raise UsageError(f"--{option} {target}: is a directory; give a file name")
    folder = os.path.dirname(target) or "."
    if not os.path.isdir(folder):
        raise UsageError(f"--{option} {target}: the folder {folder} does not exist")
    if not os.access(folder, os.W_OK) or (os.path.exists(target) and not os.access(target, os.W_OK)):
        raise UsageError(f"--{option} {target}: not writable")


def _write(args: argparse.Namespace, doc: dict[str, Any]) -> list[str]:
    """Write the reports asked for, each on its own (one that fails does not stop the other);
    returns what failed, as messages."""
    from seamkit_evals import report

    failed: list[str] = []
    for target, html in ((args.json, False), (args.html, True)):
        if not target:
            continue
        try:
            if html:
                _write_html(doc, target)
            else:
                report.write_json(doc, target)
        except OSError as exc:
            failed.append(f"cannot write the report {exc.filename or target}: {exc.strerror or exc}")
    return failed


def _write_html(doc: dict[str, Any], path: str) -> None:
    from seamkit_evals.report_html import render_html

    with open(path, "w", encoding="utf-8") as f:
        f.write(render_html(doc))


def _console() -> Any:
    from rich.console import Console

    tty = sys.stdout.isatty()
    cols = os.environ.get("COLUMNS", "")
    width = None if tty else int(cols) if cols.isdigit() and int(cols) > 0 else 120  # not a terminal: wide enough
    return Console(file=sys.stdout, highlight=False, width=width, no_color=not tty or "NO_COLOR" in os.environ)


def _progress(quiet: bool) -> tuple[Any, Any]:
    """A progress callback and a function that ends the bar: a rich progress bar on stderr when
    it is a terminal and not ``--quiet``, else nothing."""
    if quiet or not sys.stderr.isatty():
        return None, lambda: None
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    bar = Progress(TextColumn("eval"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                   console=Console(file=sys.stderr), transient=True)
    task = bar.add_task("eval", total=None)
    bar.start()

    def advance(done: int, total: int) -> None:
        bar.update(task, completed=done, total=total)

    return advance, bar.stop
