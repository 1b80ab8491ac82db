"""Fixtures for the seamkit-mcp tests: the SDK test server (``mcp_test_server.py``) over
streamable HTTP (one uvicorn process per module; over stdio each session starts its own)."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator

import pytest
from mcp_testlib import SERVER, free_port, wait_listening


@pytest.fixture(scope="module")
def http_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The test server over streamable HTTP on 127.0.0.1 (one per module); its calls log to
    ``<url's tmp dir>/calls.txt``."""
    port = free_port()
    tmp = tmp_path_factory.mktemp("mcp_http")
    env = {**os.environ, "MCP_TEST_CALLS": str(tmp / "calls.txt")}
    proc = subprocess.Popen([sys.executable, SERVER, "http", str(port)], env=env,
                            stdout=subprocess.DEVNULL, stderr=(tmp / "stderr.txt").open("w"))
    problem = wait_listening(port, proc, "HTTP test server")
    if problem is not None:
        pytest.fail(f"{problem}: {(tmp / 'stderr.txt').read_text()}")
    yield f"http://127.0.0.1:{port}/mcp"
    proc.terminate()
    try:
        proc.wait(5)
    except subprocess.TimeoutExpired:
        proc.kill()
