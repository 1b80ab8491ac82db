"""``seamkit budget show|release`` (argparse only: cheap to import)."""

from __future__ import annotations

import argparse
from typing import Any

__all__ = ["add_commands"]


def _run(args: argparse.Namespace) -> int:
    from seamkit_budget.cli import main

    return main(args)


def add_commands(cli: Any) -> None:
    """Add ``budget`` to ``seamkit`` (``cli``: the ``seamkit`` sub-parsers object)."""
    budget = cli.add_parser(
        "budget",
        help="a shared budget ledger (seamkit-budget): show it, release a dead process's reservations",
        description="Read or repair a budget ledger kept in a store (the budget middleware with 'store:'). The "
        "store and ledger are those of the budget middleware in --agent FILE; LEDGER overrides its 'ledger:' "
        "(a root run id when it has none).",
    )
    sub = budget.add_subparsers(dest="budget_command", metavar="COMMAND", required=True)
    show = sub.add_parser("show", help="spent, reserved, and what each process holds",
                          description="Print the ledger's spent and reserved USD and each process (host:pid) that "
                          "reserved on it with what it holds now.")
    release = sub.add_parser(
        "release", help="give back the reservations of processes that died",
        description="Give back what dead processes hold on the ledger (a process killed mid-call never settles "
        "its reservation, so the ledger refuses sooner than it should). --dead releases the owners on this host "
        "whose process no longer exists; --owner releases one owner (host:pid:tag, as 'show' lists it): only for "
        "a process you know is gone, because a live one would release its reservation a second time.",
    )
    for q in (show, release):
        q.add_argument("ledger", metavar="LEDGER", nargs="?",
                       help="the ledger key (default: the middleware's 'ledger:')")
        q.add_argument("--agent", metavar="FILE", required=True,
                       help="the composition whose budget middleware names the store")
        q.add_argument("--tenant", metavar="NAME", default="default",
                       help="the tenant of the runs (default: default)")
    show.add_argument("--json", action="store_true", help="print the ledger as JSON")
    who = release.add_mutually_exclusive_group(required=True)
    who.add_argument("--dead", action="store_true", help="every owner on this host whose process is gone")
    who.add_argument("--owner", metavar="OWNER", help="this owner (host:pid:tag)")
    show.set_defaults(func=_run)
    release.set_defaults(func=_run)
