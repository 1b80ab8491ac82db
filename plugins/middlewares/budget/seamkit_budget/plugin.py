"""Registers the ``budget`` middleware and ``seamkit budget`` with seamkit, lazily (module paths only)."""

from __future__ import annotations

from typing import Any

from seamkit.plugin import hookimpl

__all__ = ["seamkit_register_commands", "seamkit_register_middlewares"]


@hookimpl
def seamkit_register_middlewares(register: Any) -> None:
    register(
        "budget",
        "seamkit_budget.middleware:build",
        config="seamkit_budget.config:BudgetConfig",
        description="A USD ceiling per run (and its child runs): reserve before each model call, settle from usage",
    )


@hookimpl
def seamkit_register_commands(cli: Any) -> None:
    from seamkit_budget.commands import add_commands  # argparse only: cheap

    add_commands(cli)
