"""Registers the basic tools with seamkit, lazily (module paths only; nothing heavy is imported)."""

from __future__ import annotations

from typing import Any

from seamkit.plugin import hookimpl

__all__ = ["seamkit_register_tools"]

_PKG = "seamkit_tools_basic"


@hookimpl
def seamkit_register_tools(register: Any) -> None:
    register(
        "calculator",
        f"{_PKG}.calculator:build_calculator",
        config=f"{_PKG}.config:CalculatorConfig",
        description="Exact arithmetic on one expression (+ - * / // % **, sqrt, round, min, max, pi, e)",
    )
    register(
        "clock",
        f"{_PKG}.clock:build_clock",
        config=f"{_PKG}.config:ClockConfig",
        description="The current date and time, ISO 8601, in UTC or an IANA time zone",
    )
    register(
        "read_file",
        f"{_PKG}.files:build_read_file",
        config=f"{_PKG}.config:ReadFileConfig",
        description="Read a UTF-8 text file under a configured root directory",
    )
    register(
        "write_file",
        f"{_PKG}.files:build_write_file",
        config=f"{_PKG}.config:WriteFileConfig",
        description="Write or append a UTF-8 text file under a configured root directory (side effect)",
    )
