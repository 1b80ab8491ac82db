"""What a command's outcome is: the exit codes, the errors a command raises to say how it ended,
and :func:`exit_code_for`. The command modules (:mod:`seamkit._cli.commands` and the others) and
:mod:`seamkit._cli.main`, which dispatches to them, all import this module; it imports none of them.
"""

from __future__ import annotations

import contextlib
import json
import sys
from collections.abc import Sequence
from typing import Any

__all__ = [
    "EXIT_FAILED",
    "EXIT_INTERRUPTED",
    "EXIT_OK",
    "EXIT_SUSPENDED",
    "EXIT_TERMINATED",
    "EXIT_TRIPPED",
    "EXIT_USAGE",
    "BuildFailed",
    "Terminated",
    "UsageError",
    "exit_code_for",
    "shown_issues",
    "write_json_error",
]

EXIT_OK = 0
EXIT_FAILED = 1
EXIT_USAGE = 2
EXIT_SUSPENDED = 3
EXIT_TRIPPED = 4
EXIT_INTERRUPTED = 130
EXIT_TERMINATED = 143  # 128 + SIGTERM, as a shell reports a process ended by it


class Terminated(KeyboardInterrupt):
    """SIGTERM (``docker stop``, Kubernetes) arrived: handled like Ctrl-C, so a run is left
    resumable, and the command exits with status 143."""


class UsageError(Exception):
    """A problem with how the command was called (exit code 2); the message is shown as is."""


class BuildFailed(Exception):
    """A valid composition whose components could not be built (a factory raised, a plugin module
    failed to import): the run failed, exit code 1. ``issues`` are the located problems."""

    def __init__(self, issues: Sequence[object]) -> None:
        self.issues = tuple(issues)
        super().__init__("; ".join(str(i) for i in self.issues))


def exit_code_for(exc: BaseException) -> int:
    """The exit code for an error that ended a command (see the module doc)."""
    from seamkit.errors import (
        AmbiguousComponent,
        ComponentNotFound,
        ConfigError,
        RunCancelled,
        TaskTooLarge,
        UnsupportedFeature,
    )

    composition = sys.modules.get("seamkit.composition")  # loaded if such an error can exist
    if composition is not None and isinstance(exc, composition.ComponentBuildError):
        return EXIT_FAILED
    if isinstance(exc, UsageError | ConfigError | ComponentNotFound | AmbiguousComponent | FileNotFoundError
                  | UnsupportedFeature | TaskTooLarge):
        return EXIT_USAGE
    if isinstance(exc, Terminated):
        return EXIT_TERMINATED
    if isinstance(exc, KeyboardInterrupt | RunCancelled):  # a cancelled run is interrupted, not failed
        return EXIT_INTERRUPTED
    guardrails = sys.modules.get("seamkit._guardrails")  # loaded if a guardrail can have tripped
    if guardrails is not None and isinstance(exc, guardrails.GuardrailTripped):
        return EXIT_TRIPPED
    return EXIT_FAILED


#: Most problems of one error printed (a 30,000-item list of bad values is not 30,000 lines)
MAX_ISSUES_SHOWN = 50


def shown_issues(issues: Sequence[Any]) -> list[str]:
    """The lines of ``issues`` to print: the first :data:`MAX_ISSUES_SHOWN`, then how many more."""
    lines = [str(i) for i in issues[:MAX_ISSUES_SHOWN]]
    if len(issues) > MAX_ISSUES_SHOWN:
        more = len(issues) - MAX_ISSUES_SHOWN
        lines.append(f"... and {more:,} more problem{'s' if more != 1 else ''} (fix these first)")
    return lines


def write_json_error(exc: BaseException, exit_code: int) -> None:
    """Write ``{"error": {"type": ..., "message": ...}, "exit_code": N}`` for ``exc`` on stdout,
    once per exception (``seamkit._cli.main`` writes it for a usage or configuration error of any
    ``--json`` command; ``plugins show --json`` and a run's ``run_failed`` line mark it written)."""
    if getattr(exc, "_json_written", False):
        return
    message = str(exc)
    issues = getattr(exc, "issues", None)
    if isinstance(issues, list | tuple) and len(issues) > MAX_ISSUES_SHOWN:  # its first problems, as on stderr
        message = "\n".join([message.split("\n", 1)[0], *shown_issues(issues)])
    sys.stdout.write(json.dumps({"error": {"type": type(exc).__name__, "message": message},
                                 "exit_code": exit_code}, ensure_ascii=False) + "\n")
    sys.stdout.flush()
    with contextlib.suppress(AttributeError):
        exc._json_written = True  # type: ignore[attr-defined]
