"""examples/mcp.yaml on the bundled local model (llama.cpp, Gemma 3 270M, CPU), as its header says
to run it: the run starts examples/mcp/orders_server.py (the official SDK's server) over stdio,
the model calls its order_status tool, and the answer carries what the server returned. Then
``seamkit mcp approve`` shows the definitions the run pinned in the embedded store."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "mcp.yaml"


def _seamkit(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    proc = subprocess.run([sys.executable, "-m", "seamkit", *args], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=600)
    assert "Traceback" not in proc.stderr, proc.stderr
    return proc


def test_the_agent_answers_from_the_mcp_servers_tool_on_the_bundled_model(tmp_path: Path) -> None:
    proc = _seamkit(tmp_path, "run", str(EXAMPLE), "What is the status of order A-1002?")
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout) == {"order_id": "A-1002", "status": "shipped"}
    # the tool's structured content, as the server sent it (the model could not have made up the eta)
    assert '<- order_status: {"order_id":"A-1002","status":"shipped","eta":"2026-12-09"}' in proc.stderr
    assert "cancel_order" not in proc.stderr  # denied: never offered, never called
    pins = _seamkit(tmp_path, "mcp", "approve", str(EXAMPLE))
    assert pins.returncode == 0, pins.stderr
    assert "order_status: pinned" in pins.stdout and "list_orders: pinned" in pins.stdout
    assert "cancel_order" not in pins.stdout
