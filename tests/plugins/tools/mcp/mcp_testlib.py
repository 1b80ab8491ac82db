"""Helpers for the seamkit-mcp tests: how to start the SDK test server (``mcp_test_server.py``),
a free port, and whether a process is gone."""

from __future__ import annotations

import os
import socket
import sys
import time
from pathlib import Path
from typing import Any

SERVER = str(Path(__file__).with_name("mcp_test_server.py"))


def stdio_params(**env: str) -> dict[str, Any]:
    """The ``server:`` of a stdio configuration of the test server (``env``: its variables)."""
    return {"command": sys.executable, "args": [SERVER, "stdio"], "env": dict(env)}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def wait_listening(port: int, proc: Any, what: str, timeout: float = 20.0) -> str | None:
    """Wait until something listens on 127.0.0.1:``port``; ``None`` then, else why not (``proc``,
    the server's ``subprocess.Popen``, exited or the ``timeout`` in seconds passed: it is killed)."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            return None
        except OSError:
            if proc.poll() is not None or time.monotonic() > deadline:
                proc.kill()
                return f"the {what} did not start"
            time.sleep(0.05)


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
