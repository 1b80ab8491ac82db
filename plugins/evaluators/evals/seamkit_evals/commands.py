"""``seamkit eval SUITE.yaml [--json F] [--html F] [--compare OLD.json] [--concurrency N] [--repeat N]
[--case ID ...] [--quiet]`` (argparse only: cheap to import; the command's work is in
:mod:`seamkit_evals.cli`)."""

from __future__ import annotations

import argparse
from typing import Any

__all__ = ["add_commands"]


def _positive(text: str) -> int:
    try:
        n = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
    if n < 1:
        raise argparse.ArgumentTypeError(f"expected a number of at least 1, got {n}")
    return n


def _run(args: argparse.Namespace) -> int:
    from seamkit_evals.cli import cmd_eval

    return cmd_eval(args)


def add_commands(cli: Any) -> None:
    """Add ``eval`` to ``seamkit`` (``cli``: the ``seamkit`` sub-parsers object)."""
    p = cli.add_parser(
        "eval",
        help="run an eval suite against a composed agent and report (seamkit-evals)",
        description="Run every case of SUITE (a YAML file: the agent's composition file, cases, evaluators, "
        "thresholds; see docs/evals.md) against its agent, with bounded concurrency, and print a table of the "
        "results. Exit codes: 0 every stated threshold is met (with none stated: every attempt passed), 1 a "
        "threshold is not met (or an attempt failed, or the budget stopped the eval), 2 bad input (the suite, "
        "its agent, an option or the --compare report), 130 interrupted (the reports are still written).",
    )
    p.add_argument("suite", metavar="SUITE", help="eval suite YAML file")
    p.add_argument("--json", metavar="OUT.json", help="write the machine-readable report here")
    p.add_argument("--html", metavar="OUT.html", help="write a self-contained HTML report here")
    p.add_argument("--compare", metavar="OLD.json",
                   help="an earlier --json report: print each case's change (regressed, improved, ...)")
    p.add_argument("--concurrency", metavar="N", type=_positive, help="attempts running at once (default: the suite's)")
    p.add_argument("--repeat", metavar="N", type=_positive, help="attempts per case (default: the suite's)")
    p.add_argument("--case", metavar="ID", action="append", default=None,
                   help="run only this case (repeatable)")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    p.set_defaults(func=_run)
