"""Fixtures for the seamkit-mcp tests: the SDK test server (``mcp_test_server.py``) over stdio
(a subprocess per session) and over streamable HTTP (one uvicorn process per module)."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

SERVER = str(Path(__file__).with_name("mcp_test_server.py"))


def stdio_params(**env: str) -> dict[str, Any]:
    """The ``server:`` of a stdio configuration of the test server (``env``: its variables)."""
    return {"command": sys.executable, "args": [SERVER, "stdio"], "env": dict(env)}


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture(scope="module")
def http_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The test server over streamable HTTP on 127.0.0.1 (one per module); its calls log to
    ``<url's tmp dir>/calls.txt``."""
    port = _free_port()
    tmp = tmp_path_factory.mktemp("mcp_http")
    env = {**os.environ, "MCP_TEST_CALLS": str(tmp / "calls.txt")}
    proc = subprocess.Popen([sys.executable, SERVER, "http", str(port)], env=env,
                            stdout=subprocess.DEVNULL, stderr=(tmp / "stderr.txt").open("w"))
    deadline = time.monotonic() + 20
    while True:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            break
        except OSError:
            if proc.poll() is not None or time.monotonic() > deadline:
                proc.kill()
                pytest.fail(f"the HTTP test server did not start: {(tmp / 'stderr.txt').read_text()}")
            time.sleep(0.05)
    yield f"http://127.0.0.1:{port}/mcp"
    proc.terminate()
    try:
        proc.wait(5)
    except subprocess.TimeoutExpired:
        proc.kill()


def pid_gone(pid: int) -> bool:
    """Whether process ``pid`` no longer runs (a zombie counts as gone)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return True
    return state in ("Z", "X")


def wait_gone(pid: int, timeout: float = 10.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if pid_gone(pid):
            return True
        time.sleep(0.05)
    return pid_gone(pid)
