"""Registers the ``audit`` middleware and ``seamkit runs audit`` with seamkit, lazily."""

from __future__ import annotations

from typing import Any

from seamkit.plugin import hookimpl

__all__ = ["seamkit_register_commands", "seamkit_register_middlewares"]


@hookimpl
def seamkit_register_middlewares(register: Any) -> None:
    register(
        "audit",
        "seamkit_audit.middleware:build",
        config="seamkit_audit.config:AuditConfig",
        description="An append-only record per model and tool call: who, what, argument digest, outcome, cost",
    )


@hookimpl
def seamkit_register_commands(cli: Any) -> None:
    from seamkit_audit.commands import add_commands  # argparse only: cheap

    add_commands(cli)
