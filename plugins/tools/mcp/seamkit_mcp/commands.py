"""``seamkit mcp``: ``serve`` (an agent over MCP) and ``approve`` (changed tool definitions)."""

from __future__ import annotations

import argparse
from typing import Any

__all__ = ["add_commands"]


def _lazy(module: str) -> Any:
    def run(args: argparse.Namespace) -> int:
        import importlib

        main: Any = importlib.import_module(f"seamkit_mcp.{module}").main
        return int(main(args))

    return run


def add_commands(cli: Any) -> None:
    """Add ``seamkit mcp serve`` and ``seamkit mcp approve`` to ``cli`` (argparse sub-parsers)."""
    p = cli.add_parser("mcp", help="serve an agent over MCP; approve changed MCP tool definitions",
                       description="The Model Context Protocol (seamkit-mcp).")
    sub = p.add_subparsers(dest="mcp_command", metavar="MCP_COMMAND", title="mcp commands", required=True)

    s = sub.add_parser(
        "serve",
        help="serve FILE's agent (its tools, and the agent as a tool) to MCP clients",
        description="Serve the tools of FILE's entry agent, and the agent itself as a tool, over MCP: stdio by "
        "default (for a client that starts this command; stdout carries only the protocol, logs go to "
        "stderr), or streamable HTTP with --http. The agent's approvals (asked through MCP elicitation; "
        "refused when the client cannot be asked), guardrails and middlewares apply to every call made "
        "through it. A direct call of one of its tools is not a run: it is not checkpointed, cannot be "
        "resumed and does not go through the effect ledger (a crash mid-call leaves no record; a retry "
        "runs it again). A call of the agent as a tool is an agent run, checkpointed in the agent's store "
        "when it has one.",
    )
    s.add_argument("file", metavar="FILE", help="composition YAML file")
    s.add_argument("--http", metavar="HOST:PORT",
                   help="serve streamable HTTP on HOST:PORT (path /mcp) instead of stdio; keep HOST a loopback "
                   "address (127.0.0.1, ::1) unless clients on other machines must reach it: there is no "
                   "authentication, anyone who can connect can call the tools")
    s.add_argument("--no-agent-tool", action="store_true", help="serve the agent's tools only, not the agent")
    s.set_defaults(func=_lazy("serve"))

    a = sub.add_parser(
        "approve",
        help="pin the current definitions of FILE's MCP tools (after a change was refused)",
        description="Connect to each MCP server of FILE, compare its tool definitions with the pinned ones "
        "(in FILE's checkpoint store) and pin the current ones: the named tools (--tool), or every changed "
        "one (--all). With neither, only shows what changed.",
    )
    a.add_argument("file", metavar="FILE", help="composition YAML file")
    a.add_argument("--tool", metavar="NAME", action="append", default=[], help="a tool to approve (repeatable)")
    a.add_argument("--all", action="store_true", help="approve every changed or new definition")
    a.add_argument("--check", action="store_true",
                   help="exit 1 when a definition is left changed or new (a CI gate)")
    a.add_argument("--tenant", metavar="NAME", default="default",
                   help="the tenant whose pins to show and set (runs keep pins per tenant; default: default)")
    a.set_defaults(func=_lazy("approve"))
