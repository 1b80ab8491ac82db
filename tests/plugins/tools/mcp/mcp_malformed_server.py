"""An MCP server that breaks the MCP schema in its ``tools/call`` results, as a buggy server may.
The SDK's servers check their own results ("Handler returned an invalid result"), so this one
speaks JSON-RPC over stdio by hand (newline-delimited, MCP specification "Transports", stdio).

Its tools: ``list_structured`` sends ``structuredContent`` that is a list (the schema wants an
object); ``no_content`` leaves ``content`` out; ``refs`` has an input schema whose ``$ref``
points outside the schema, and answers with its arguments. Run: ``python mcp_malformed_server.py``.
"""

from __future__ import annotations

import json
import sys
from typing import Any

_OBJECT = {"type": "object", "properties": {}}
_READ_ONLY = {"readOnlyHint": True}
TOOLS = [
    {"name": "list_structured", "inputSchema": _OBJECT, "annotations": _READ_ONLY},
    {"name": "no_content", "inputSchema": _OBJECT, "annotations": _READ_ONLY},
    {"name": "refs", "annotations": _READ_ONLY, "inputSchema": {
        "type": "object", "required": ["n"],
        "properties": {"address": {"$ref": "https://example.invalid/address.json"}, "n": {"type": "integer"}}}},
]


def answer(method: str, params: dict[str, Any]) -> dict[str, Any]:
    if method == "initialize":
        return {"protocolVersion": params.get("protocolVersion", "2025-06-18"), "capabilities": {"tools": {}},
                "serverInfo": {"name": "malformed", "version": "1"}}
    if method == "tools/list":
        return {"tools": TOOLS}
    if method == "tools/call":
        name = params.get("name")
        if name == "list_structured":
            return {"content": [], "structuredContent": [1, 2]}
        if name == "no_content":
            return {"isError": False}
        return {"content": [{"type": "text", "text": json.dumps(params.get("arguments"), sort_keys=True)}]}
    return {}


def main() -> None:
    for line in sys.stdin:
        message = json.loads(line)
        if "id" not in message:
            continue  # a notification
        result = answer(message["method"], message.get("params") or {})
        sys.stdout.write(json.dumps({"jsonrpc": "2.0", "id": message["id"], "result": result}) + "\n")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
