"""Registers ``seamkit worker``, ``seamkit submit`` and ``seamkit runs wait`` with seamkit, lazily
(argparse only here; Celery and the agent machinery load when a command runs)."""

from __future__ import annotations

from typing import Any

from seamkit.plugin import hookimpl

__all__ = ["seamkit_register_commands", "seamkit_register_runners"]


@hookimpl
def seamkit_register_commands(cli: Any) -> None:
    from seamkit_celery.commands import add_commands  # argparse only: cheap

    add_commands(cli)


@hookimpl
def seamkit_register_runners(register: Any) -> None:
    register("celery", "seamkit_celery.runner:CeleryRunner",
             description="seamkit resume on a queued run: enqueue its continuation for the Celery workers")
