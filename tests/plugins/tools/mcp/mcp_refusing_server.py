"""An MCP server on the SDK's low-level API that answers every ``tools/call`` with a JSON-RPC
error (``INVALID_PARAMS``: the request itself refused), as low-level servers may; its one tool has
no ``readOnlyHint``, so seamkit treats it as side-effecting. Run: ``python mcp_refusing_server.py``
(stdio)."""

from __future__ import annotations

from typing import Any

import anyio
import mcp_types as types
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server
from mcp.shared.exceptions import MCPError


async def list_tools(ctx: Any, params: types.PaginatedRequestParams | None) -> types.ListToolsResult:
    return types.ListToolsResult(tools=[types.Tool(
        name="transfer", description="Move money between two accounts; returns a receipt.",
        input_schema={"type": "object", "properties": {"amount": {"type": "number"}}})])


async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
    raise MCPError(types.INVALID_PARAMS, "amount must be positive")


async def main() -> None:
    server = Server("refusing", on_list_tools=list_tools, on_call_tool=call_tool)
    async with stdio_server() as (read, write):
        await server.run(read, write, server.create_initialization_options())


if __name__ == "__main__":
    anyio.run(main)
