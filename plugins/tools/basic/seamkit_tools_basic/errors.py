"""Errors of the basic tools; all are :class:`seamkit.errors.ToolError`, so the agent loop turns
them into error tool results the model can read."""

from __future__ import annotations

from seamkit.errors import ToolError

__all__ = ["CalculatorError", "ClockError", "FileToolError", "PathOutsideRoot"]


class CalculatorError(ToolError):
    """The expression is malformed, uses something not allowed, or its value cannot be computed
    (division by zero, a result too large, not a real number)."""


class ClockError(ToolError):
    """The time zone is unknown."""


class FileToolError(ToolError):
    """A file could not be read or written (missing, not a regular file, not UTF-8 text, too big)."""


class PathOutsideRoot(FileToolError):
    """The path is absolute, escapes the root with ``..``, or resolves (through a symlink)
    outside the root."""
