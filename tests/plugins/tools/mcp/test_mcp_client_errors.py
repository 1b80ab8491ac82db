"""What a user of ``use: mcp`` reads when something is wrong: ``server:`` mistakes located by the
YAML loader (one issue each), servers that cannot start refused at build, stderr tails on one
line, secrets masked only where they are secrets, and the SDK's tracebacks kept off stderr."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from mcp_testlib import SERVER
from seamkit.cli.main import main
from seamkit.errors import ConfigError
from seamkit_mcp.config import McpConfig
from seamkit_mcp.connection import McpConnectError, ServerSpec
from seamkit_mcp.toolset import build_toolset

NOISY = str(Path(SERVER).with_name("mcp_noisy_server.py"))
MALFORMED = str(Path(SERVER).with_name("mcp_malformed_server.py"))


def _yaml(tmp_path: Path, server: str, *, turns: str = "[{text: done}]", extra: str = "",
          checkpoints: str = "null") -> Path:
    path = tmp_path / "agent.yaml"
    path.write_text(f"""seamkit: 1
agent:
  model: {{use: scripted, turns: {turns}}}
  tools:
    - use: mcp
      server: {server}
{extra}  checkpoints: {checkpoints}
""")
    return path


def _seamkit(*args: str, cwd: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "seamkit", *args], cwd=cwd, capture_output=True, text=True,
                          timeout=120, env={**os.environ, **(env or {})})


@pytest.mark.parametrize(("server", "column", "where", "message"), [
    ("{command: x, url: 'http://127.0.0.1/mcp'}", 15, "server",
     "give either command (a stdio server) or url (streamable HTTP), not both"),
    ("{}", 15, "server", "server needs command (a stdio server"),
    ("{url: notaurl}", 21, "server.url", "the url of an MCP server must start with http:// or https://"),
    ("{url: 'http://127.0.0.1/mcp', comand: x}", 45, "server.comand",
     "unknown key 'comand' for tool 'mcp' (allowed: url, headers)"),
    ("{command: x, headrs: {}}", 28, "server.headrs", "(allowed: command, args, env, cwd)"),
])
def test_each_server_mistake_is_one_clear_issue_at_its_key(
        tmp_path: Path, server: str, column: int, where: str, message: str) -> None:
    from seamkit.composition import load_composition

    path = _yaml(tmp_path, server)
    with pytest.raises(ConfigError) as err:
        load_composition(path)
    (issue,) = err.value.issues
    assert (issue.path, issue.line, issue.column) == (f"agent.tools[0].{where}", 6, column)
    assert message in issue.message
    assert "missing required key" not in issue.message and "did you mean 'command'" not in issue.message


@pytest.mark.parametrize(("server", "message"), [
    ("{command: /nonexistent/cmd}", "command '/nonexistent/cmd' is not an executable file"),
    ("{command: no-such-mcp-server-cmd}", "command 'no-such-mcp-server-cmd' is not found on PATH"),
    ("{command: python, args: [x.py], cwd: no_such_dir}", "is not a directory"),
])
def test_a_stdio_server_that_cannot_start_fails_validate_at_the_server_key(
        tmp_path: Path, server: str, message: str, capsys: pytest.CaptureFixture[str]) -> None:
    path = _yaml(tmp_path, server)
    assert main(["validate", str(path)]) == 2
    err = capsys.readouterr().err
    assert f"{path}:6:15: agent.tools[0].server: tool 'mcp': the MCP server cannot be started: " in err
    assert message in err and "Traceback" not in err


def test_the_stderr_tail_is_on_the_messages_line(tmp_path: Path) -> None:
    cfg = McpConfig(server={"command": sys.executable, "args": [SERVER, "crash"]})
    with pytest.raises(McpConnectError) as err:
        build_toolset(cfg)
    text = str(err.value)
    assert "\n" not in text
    assert text.endswith("; server stderr (last lines): test server starting (token -) | "
                         "fatal: cannot start (config missing)")


def test_only_long_enough_values_under_secret_names_are_masked() -> None:
    env = {"MYSECRET": "x", "API_TOKEN": "tok-12345", "DEBUG": "verbose-mode"}
    spec = ServerSpec.of(McpConfig(server={"command": "python", "env": env}))
    assert spec.mask("exitmid tok-12345 verbose-mode") == "exitmid *** verbose-mode"
    headers = {"authorization": "Bearer abc", "X-Api-Key": "k-9999", "Cookie": "s=1234", "X-Trace": "trace-77"}
    spec = ServerSpec.of(McpConfig(server={"url": "http://127.0.0.1/mcp", "headers": headers}))
    assert spec.mask("Bearer abc k-9999 s=1234 trace-77") == "*** *** *** trace-77"


def test_an_env_value_from_the_environment_never_shows_in_output_errors_or_checkpoints(tmp_path: Path) -> None:
    value = "banner-from-env-5150"
    turns = "[{tool_calls: [{name: die, arguments: {}}]}, {text: done}]"
    path = _yaml(tmp_path, f"{{command: python, args: [{SERVER}, stdio], env: {{MCP_TEST_BANNER: '${{MCP_BANNER}}'}}}}",
                 turns=turns, extra="      allow: [die]\n", checkpoints="{use: sqlite, path: cp.db}")
    env = {"MCP_BANNER": value}
    assert _seamkit("stores", "setup", "--agent", str(path), cwd=tmp_path, env=env).returncode == 0
    done = _seamkit("run", str(path), "go", cwd=tmp_path, env=env)
    out = done.stdout + done.stderr
    assert done.returncode == 0, out
    assert "ToolUnavailable (server_error)" in out
    assert value not in out
    # the die call's error carries the stderr tail, with the value in it: that state is not saved
    assert "not saved: the state contains a secret value" in out
    stored = b"".join(p.read_bytes() for p in tmp_path.glob("cp.db*"))
    assert b"mcp_test_server" in stored and value.encode() not in stored


def test_junk_on_a_servers_stdout_gives_one_line_per_line_not_a_traceback(tmp_path: Path) -> None:
    turns = "[{tool_calls: [{name: ping, arguments: {}}]}, {text: done}]"
    path = _yaml(tmp_path, f"{{command: python, args: [{NOISY}]}}", turns=turns, extra="      allow: [ping]\n")
    done = _seamkit("run", str(path), "go", cwd=tmp_path, env={"SEAMKIT_DEBUG": ""})
    assert done.returncode == 0, done.stderr
    assert "pong" in done.stdout + done.stderr
    assert "Failed to parse JSONRPC message from server" in done.stderr
    assert "Traceback" not in done.stderr


async def test_a_result_that_breaks_the_mcp_schema_is_a_short_server_error(tmp_path: Path) -> None:
    from seamkit import Agent
    from seamkit.durability.checkpointer import Checkpointer
    from seamkit.testing import MemoryStore, ScriptedModel

    ts = build_toolset(McpConfig(server={"command": sys.executable, "args": [MALFORMED]}))
    assert ts.tools[2].schema.parameters["properties"]["address"] == {}  # its remote $ref dropped
    calls = [("list_structured", {}), ("no_content", {}), ("refs", {"n": 1, "address": {"x": 1}})]
    model = ScriptedModel([{"tool_calls": [{"id": n, "name": n, "arguments": a} for n, a in calls]}, "done"])
    result = await Agent(model=model, tools=ts.tools, checkpointer=Checkpointer(MemoryStore())).run("go")
    r = {x.call_id: x for m in result.transcript for x in m.tool_results}
    prefix = "ToolUnavailable (server_error): MCP server 'mcp_malformed_server' sent a result that does not follow " \
             "the MCP schema"
    assert r["list_structured"].content == f"{prefix} (structuredContent: Input should be a valid dictionary)"
    assert r["no_content"].content == f"{prefix} (content: Field required)"
    assert r["refs"].content == '{"address": {"x": 1}, "n": 1}'
    assert result.output == "done"
