"""The SDK test server (``mcp_test_server.py``) behind a few lines of junk on stdout, as servers
that print a banner before speaking MCP do. Run: ``python mcp_noisy_server.py`` (stdio)."""

from __future__ import annotations

from mcp_test_server import build

if __name__ == "__main__":
    for line in ("Starting the orders server v1.2...", "{not json", "ready."):
        print(line, flush=True)
    build().run("stdio")
