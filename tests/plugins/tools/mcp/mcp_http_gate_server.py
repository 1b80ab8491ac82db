"""The SDK test server (``mcp_test_server.py``) over streamable HTTP behind a gate, as a reverse
proxy or an auth layer may put one: a request without ``Authorization: Bearer good`` gets HTTP
401; while the file named by ``MCP_GATE_FAIL`` exists, every request gets HTTP 500. Run:
``python mcp_http_gate_server.py PORT`` (serves http://127.0.0.1:PORT/mcp)."""

from __future__ import annotations

import os
import sys
from typing import Any

import uvicorn
from mcp_test_server import build


class Gate:
    def __init__(self, app: Any) -> None:
        self.app = app

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "http":
            headers = dict(scope["headers"])
            fail = os.environ.get("MCP_GATE_FAIL")
            down = bool(fail) and os.path.exists(fail)  # noqa: ASYNC240 (a test's signal, checked per request)
            status = 500 if down else 401 if headers.get(b"authorization") != b"Bearer good" else 0
            if status:
                await send({"type": "http.response.start", "status": status,
                            "headers": [(b"content-type", b"text/plain")]})
                await send({"type": "http.response.body", "body": b"no"})
                return
        await self.app(scope, receive, send)


if __name__ == "__main__":
    app = build().streamable_http_app()
    uvicorn.run(Gate(app), host="127.0.0.1", port=int(sys.argv[1]), log_level="warning")
