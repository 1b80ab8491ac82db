"""Registers ``use: mcp`` and the ``seamkit mcp`` commands, lazily (module paths only)."""

from __future__ import annotations

from typing import Any

from seamkit.plugin import hookimpl

__all__ = ["seamkit_register_commands", "seamkit_register_tools"]

_PKG = "seamkit_mcp"


@hookimpl
def seamkit_register_tools(register: Any) -> None:
    register(
        "mcp",
        f"{_PKG}.toolset:build_toolset",
        config=f"{_PKG}.config:McpConfig",
        description="The tools, resources and prompts of an MCP server (stdio or streamable HTTP)",
        toolset=True,
    )


@hookimpl
def seamkit_register_commands(cli: Any) -> None:
    from seamkit_mcp.commands import add_commands  # argparse only: cheap

    add_commands(cli)
