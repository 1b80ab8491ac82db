"""A composed agent with tool calls runs with ``audit``; ``seamkit runs audit`` prints its records in
order; a secret in the arguments is in no byte of the audit store."""

from __future__ import annotations

import importlib.metadata
import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

SECRET = "sk-live-9f8e7d6c5b4a3210SECRET"

AGENT = f"""\
seamkit: 1
agent:
  name: auditor
  model:
    use: scripted
    follow_transcript: true
    turns:
      - tool_calls:
          - {{name: calculator, arguments: {{expression: "2+3"}}}}
      - tool_calls:
          - {{name: calculator, arguments: {{expression: "{SECRET}"}}}}
      - "five"
  tools: [calculator]
  middlewares:
    - use: audit
      store: {{use: sqlite, path: audit.db}}
"""


def _paths(tmp_path: Path) -> list[str]:
    """sys.path, plus a fake dist-info registering seamkit-audit's entry point when it is not installed."""
    try:
        importlib.metadata.distribution("seamkit-audit")
        return list(sys.path)
    except importlib.metadata.PackageNotFoundError:
        root = tmp_path / "dists"
        info = root / "seamkit_audit-0.1.0.dist-info"
        info.mkdir(parents=True)
        (info / "METADATA").write_text("Metadata-Version: 2.1\nName: seamkit-audit\nVersion: 0.1.0\n")
        (info / "entry_points.txt").write_text("[seamkit]\naudit = seamkit_audit.plugin\n")
        return [str(root), *sys.path]


Seamkit = Callable[..., subprocess.CompletedProcess[str]]


@pytest.fixture
def seamkit(tmp_path: Path) -> Seamkit:
    """``seamkit(*args)``: ``python -m seamkit ARGS`` in ``tmp_path`` with seamkit-audit registered."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("SEAMKIT_")}
    env["PYTHONPATH"] = os.pathsep.join(_paths(tmp_path))
    env["NO_COLOR"] = "1"

    def run(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "seamkit", *args], cwd=tmp_path, env=env, capture_output=True,
                              text=True, timeout=120, check=False)

    return run


def test_runs_audit_prints_every_call_in_order_and_no_secret_is_stored(tmp_path: Path, seamkit: Seamkit) -> None:
    (tmp_path / "a.yaml").write_text(AGENT)
    done = seamkit("run", "a.yaml", "add two and three")
    assert done.returncode == 0 and done.stdout.strip() == "five", done.stderr
    listed = json.loads(seamkit("runs", "list", "--json").stdout)
    run_id = str(listed[0]["run_id"])

    shown = seamkit("runs", "audit", run_id, "--agent", "a.yaml", "--json")
    assert shown.returncode == 0, shown.stderr
    records = json.loads(shown.stdout)
    assert [(r["kind"], r["step"]) for r in records] == [("chat", 1), ("tool", 1), ("chat", 2), ("tool", 2),
                                                         ("chat", 3)]
    assert all(r["run_id"] == run_id and r["tenant"] == "default" and r["agent"] == "auditor" for r in records)
    chats = [r for r in records if r["kind"] == "chat"]
    assert all(r["provider"] == "scripted" and r["outcome"] == "ok" for r in chats)
    assert all(r["cost_usd"] == "0" and r["cost_source"] == "local" and r["input_tokens"] == 0 for r in chats)
    ok, bad = (r for r in records if r["kind"] == "tool")
    assert ok["tool"] == "calculator" and ok["outcome"] == "ok" and ok["error"] is None
    assert bad["outcome"] == "error" and bad["error"]  # an error class name, never its message
    assert len({r["arguments_sha256"] for r in records}) == 5
    assert all(len(r["arguments_sha256"]) == 64 and r["duration_s"] >= 0 for r in records)

    human = seamkit("runs", "audit", run_id, "--agent", "a.yaml")
    assert human.returncode == 0, human.stderr
    lines = human.stdout.splitlines()
    assert lines[0] == f"run {run_id}: 5 audit records"
    assert [ln.split()[0] for ln in lines[1:]] == ["1", "2", "3", "4", "5"]
    assert "calculator" in lines[2] and "scripted:scripted" in lines[1] and "error" in lines[4]

    stored = b"".join(p.read_bytes() for p in tmp_path.glob("audit.db*"))
    assert stored and SECRET.encode() not in stored and b"2+3" not in stored
    assert SECRET not in shown.stdout + human.stdout

    missing = seamkit("runs", "audit", "run_nope", "--agent", "a.yaml")
    assert missing.returncode == 2 and "run_nope" in missing.stderr and "Traceback" not in missing.stderr


def test_without_a_store_the_records_go_to_the_checkpoint_store(tmp_path: Path, seamkit: Seamkit) -> None:
    (tmp_path / "b.yaml").write_text(AGENT.replace("      store: {use: sqlite, path: audit.db}\n", ""))
    assert "store:" not in (tmp_path / "b.yaml").read_text()
    done = seamkit("run", "b.yaml", "add two and three")
    assert done.returncode == 0, done.stderr
    run_id = str(json.loads(seamkit("runs", "list", "--json").stdout)[0]["run_id"])
    shown = seamkit("runs", "audit", run_id, "--json")  # the embedded default store
    assert shown.returncode == 0, shown.stderr
    assert [r["kind"] for r in json.loads(shown.stdout)] == ["chat", "tool", "chat", "tool", "chat"]
    other = seamkit("runs", "audit", run_id, "--tenant", "acme")
    assert other.returncode == 2 and "tenant 'acme'" in other.stderr
