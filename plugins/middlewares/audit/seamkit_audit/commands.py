"""``seamkit runs audit RUN_ID [--agent FILE] [--tenant NAME] [--json]`` (argparse only: cheap to import)."""

from __future__ import annotations

import argparse
from typing import Any

__all__ = ["add_commands"]


def _runs_actions(cli: Any) -> Any:
    """The sub-parsers object of ``seamkit runs`` (``None`` when there is no such command)."""
    runs = getattr(cli, "choices", {}).get("runs")
    if runs is None:
        return None
    for action in runs._actions:
        if isinstance(action, argparse._SubParsersAction):
            return action
    return None


def _run(args: argparse.Namespace) -> int:
    from seamkit_audit.show import main

    return main(args)


def add_commands(cli: Any) -> None:
    """Add ``audit`` to ``seamkit runs`` (``cli``: the ``seamkit`` sub-parsers object)."""
    runs = _runs_actions(cli)
    if runs is None:
        raise RuntimeError("seamkit has no 'runs' command to add 'audit' to")
    q = runs.add_parser(
        "audit",
        help="a run's audit records (seamkit-audit), oldest first",
        description="Print the audit records of RUN_ID written by the audit middleware: one per model and "
        "tool call, in the order they finished (kind, model or tool, outcome, duration, tokens, cost, the "
        "SHA-256 of the arguments). The store is the audit middleware's 'store:' in --agent FILE, else that "
        "file's checkpoint store, else the embedded default (.seamkit/seamkit.db).",
    )
    q.add_argument("run_id", metavar="RUN_ID")
    q.add_argument("--agent", metavar="FILE", help="use this composition's audit (or checkpoint) store")
    q.add_argument("--tenant", metavar="NAME", default="default",
                   help="the tenant the run ran for (records are kept per tenant; default: default)")
    q.add_argument("--json", action="store_true", help="print a JSON list of the records")
    q.set_defaults(func=_run)
