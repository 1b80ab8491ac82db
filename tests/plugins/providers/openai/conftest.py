"""A real OpenAI-compatible server on loopback for the integration tests: llama-cpp-python's
server (``python -m seamkit_llamacpp.server``, i.e. ``llama_cpp.server`` with the AMX guard) with
the packaged Gemma 3 270M GGUF, started once per session and stopped at the end."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

MODEL_ALIAS = "gemma-3-270m"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture(scope="session")
def llama_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The base URL (``http://127.0.0.1:PORT/v1``) of a running llama.cpp server."""
    port = _free_port()
    log = Path(tmp_path_factory.mktemp("llama-server")) / "server.log"
    with open(log, "wb") as out:
        proc = subprocess.Popen(
            [sys.executable, "-m", "seamkit_llamacpp.server", "--host", "127.0.0.1", "--port", str(port),
             "--n_ctx", "2048", "--model_alias", MODEL_ALIAS, "--n_threads", str(min(4, os.cpu_count() or 1))],
            stdout=out, stderr=subprocess.STDOUT,
        )
    base = f"http://127.0.0.1:{port}/v1"
    try:
        deadline = time.monotonic() + 180
        while True:
            if proc.poll() is not None:
                raise RuntimeError(f"llama.cpp server exited with {proc.returncode}:\n{log.read_text()[-3000:]}")
            try:
                if httpx.get(f"{base}/models", timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if time.monotonic() > deadline:
                raise RuntimeError(f"llama.cpp server did not start in 180 s:\n{log.read_text()[-3000:]}")
            time.sleep(0.25)
        yield base
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
