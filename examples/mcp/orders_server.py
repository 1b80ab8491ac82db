"""A small MCP server for examples/mcp.yaml, written with the official MCP Python SDK's server
API (``MCPServer``): an order desk with a read-only lookup, a no-argument listing, a
side-effecting cancellation, a resource and a prompt. A ``ToolError`` is the SDK's way to send
the model a tool error it may read (``isError: true`` with this text); any other exception is
reported as "Error executing tool ..." only. Runs over stdio (the default: the agent
starts it) or streamable HTTP::

    python examples/mcp/orders_server.py              # stdio
    python examples/mcp/orders_server.py --http 8765  # http://127.0.0.1:8765/mcp
"""

from __future__ import annotations

import sys

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import ToolAnnotations
from pydantic import BaseModel

ORDERS = {
    "A-1001": {"status": "delivered", "eta": "2026-11-28", "items": 2},
    "A-1002": {"status": "shipped", "eta": "2026-12-09", "items": 1},
    "A-1003": {"status": "processing", "eta": "2026-12-15", "items": 4},
}

server = MCPServer("orders", instructions="Order desk: look up, list and cancel orders.")


class OrderStatus(BaseModel):
    order_id: str
    status: str
    eta: str


@server.tool(annotations=ToolAnnotations(readOnlyHint=True))
def order_status(order_id: str) -> OrderStatus:
    """Look up one order by its id (like A-1002); returns its status (processing, shipped,
    delivered, cancelled) and its estimated delivery date."""
    order = ORDERS.get(order_id.strip().upper())
    if order is None:
        raise ToolError(f"no order {order_id!r}; known orders: {', '.join(ORDERS)}")
    return OrderStatus(order_id=order_id.strip().upper(), status=str(order["status"]), eta=str(order["eta"]))


@server.tool(annotations=ToolAnnotations(readOnlyHint=True))
def list_orders() -> list[str]:
    """List the ids of all open and past orders; takes no arguments."""
    return list(ORDERS)


@server.tool(annotations=ToolAnnotations(readOnlyHint=False, destructiveHint=True))
def cancel_order(order_id: str) -> str:
    """Cancel an order that has not shipped yet; returns a confirmation."""
    order = ORDERS.get(order_id.strip().upper())
    if order is None or order["status"] != "processing":
        raise ToolError(f"order {order_id!r} cannot be cancelled")
    order["status"] = "cancelled"
    return f"order {order_id} cancelled"


@server.resource("orders://policy", mime_type="text/plain")
def policy() -> str:
    """The cancellation policy."""
    return "Orders can be cancelled until they ship. Shipped orders can be returned within 30 days."


@server.prompt()
def summarize(order_id: str) -> str:
    """Ask for a one-line summary of an order."""
    return f"Summarize order {order_id} in one line: its status and when it arrives."


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "--http":
        server.run("streamable-http", host="127.0.0.1", port=int(sys.argv[2]))
    else:
        server.run()
