"""Helpers the command modules share, plugins' commands included: checking a file argument,
reading the task, closing an agent's stores. Below the command modules (which import it) and
above nothing of the CLI but :mod:`seamkit._cli.outcomes`."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING

from seamkit._cli.outcomes import UsageError

if TYPE_CHECKING:
    from seamkit._agent.agent import Agent

__all__ = ["BUILTIN_COMMANDS", "CHECK_ALL", "PLUGIN_KINDS", "close_stores", "existing_file", "read_task"]


def existing_file(name: str) -> Path:
    path = Path(name)
    if not path.exists():
        raise UsageError(f"no such file: {name}")
    if not path.is_file():
        raise UsageError(f"not a file: {name}")
    return path


def _is_utf8(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:  # bytes that were not UTF-8, decoded with "surrogateescape"
        return False
    return True


def read_task(task: str, what: str = "task") -> str:
    """The task text: ``task`` itself, or stdin for ``-``. Raises :class:`UsageError` (exit 2) for
    an empty task or one that is not valid UTF-8; messages call it ``what`` (``task``, ``prompt``)."""
    if task == "-":
        if sys.stdin is None:
            raise UsageError(f"the {what} is '-' but there is no stdin to read it from")
        try:
            text = sys.stdin.read()
        except UnicodeDecodeError:
            raise UsageError(f"the {what} read from stdin is not valid UTF-8") from None
        if not _is_utf8(text):
            raise UsageError(f"the {what} read from stdin is not valid UTF-8")
        if not text.strip():
            raise UsageError(f"the {what} read from stdin is empty")
        return text
    if not _is_utf8(task):
        raise UsageError(f"the {what} is not valid UTF-8")
    if not task.strip():
        raise UsageError(f"the {what} is empty")
    return task


async def close_stores(agent: Agent) -> None:
    """Release the agent's checkpoint store, also when the run failed: an open store connection
    (aiosqlite's worker thread) would keep the process from exiting."""
    cp = agent.checkpointer
    if cp is None:
        return
    try:
        await cp.aclose()
    except Exception:  # the run's own outcome is what the caller must see
        pass


CHECK_ALL = "*"  # `seamkit plugins --check` without a name
#: the kinds ``seamkit new plugin`` has a template for (see seamkit/_cli/templates/)
PLUGIN_KINDS = ("provider", "store", "tool", "middleware", "compactor", "schema", "guardrail", "command")
#: seamkit's own sub-commands, which a plugin command cannot take (a test holds this equal to the
#: parser's; kept here so that the scaffold need not import the CLI's entry module)
BUILTIN_COMMANDS = frozenset({"ask", "chat", "init", "new", "plugins", "resume", "run", "runs", "schema", "stores",
                              "validate"})
