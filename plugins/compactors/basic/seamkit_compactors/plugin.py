"""Registers the ``sliding_window``, ``truncation`` and ``tool_result_clearing`` compactors with
seamkit, lazily (module paths only)."""

from __future__ import annotations

from typing import Any

from seamkit.plugin import hookimpl

__all__ = ["seamkit_register_compactors"]


@hookimpl
def seamkit_register_compactors(register: Any) -> None:
    register(
        "sliding_window",
        "seamkit_compactors.compactors:build_sliding_window",
        config="seamkit_compactors.config:SlidingWindowConfig",
        description="Keep the N most recent turns (a tool call stays with its results)",
    )
    register(
        "truncation",
        "seamkit_compactors.compactors:build_truncation",
        config="seamkit_compactors.config:TruncationConfig",
        description="Drop the oldest turns until the token estimate fits the budget",
    )
    register(
        "tool_result_clearing",
        "seamkit_compactors.compactors:build_tool_result_clearing",
        config="seamkit_compactors.config:ToolResultClearingConfig",
        description="Replace old tool results with a short placeholder that keeps their call ids",
    )
