"""Registers the built-in evaluators and ``seamkit eval`` with seamkit, lazily."""

from __future__ import annotations

from typing import Any

from seamkit.hookspecs import hookimpl

__all__ = ["seamkit_register_commands", "seamkit_register_evaluators"]


@hookimpl
def seamkit_register_evaluators(register: Any) -> None:
    # the checks and the judge: seamkit_evals.checks, seamkit_evals.judge
    pass


@hookimpl
def seamkit_register_commands(cli: Any) -> None:
    from seamkit_evals.commands import add_commands  # argparse only: cheap

    add_commands(cli)
