"""What a user of ``use: mcp`` reads when something is wrong, and what reaches the model:
``server:`` mistakes located by the YAML loader (one issue each), servers that cannot start
refused at build, stderr tails on one line, secrets masked only where they are secrets, the SDK's
tracebacks kept off stderr, malformed results, clashing names, wrapped lists and size limits."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from mcp_testlib import SERVER
from seamkit._cli.main import main
from seamkit.errors import ConfigError
from seamkit_mcp.config import McpConfig
from seamkit_mcp.connection import McpConnectError, ServerSpec
from seamkit_mcp.toolset import build_toolset

NOISY = str(Path(SERVER).with_name("mcp_noisy_server.py"))
GATE = str(Path(SERVER).with_name("mcp_http_gate_server.py"))
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
    ("{comand: python}", 15, "server", "(is 'comand' one of them, misspelt?)"),
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


@pytest.mark.parametrize("key", ["max_result_chars", "max_images", "max_image_bytes"])
def test_a_limit_must_be_a_whole_number_not_a_boolean(key: str) -> None:
    from pydantic import ValidationError

    with pytest.raises(ValidationError, match="valid integer"):
        McpConfig.model_validate({"server": {"command": "python"}, key: True})


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
    from seamkit._durability.checkpointer import Checkpointer
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


EXAMPLE = str(Path(__file__).parents[4] / "examples" / "mcp" / "orders_server.py")


def _run_tools(ts: Any, *calls: tuple[str, dict[str, Any]]) -> dict[str, Any]:
    from seamkit import Agent
    from seamkit.testing import ScriptedModel

    model = ScriptedModel([{"tool_calls": [{"id": f"c{i}", "name": n, "arguments": a}
                                           for i, (n, a) in enumerate(calls)]}, "done"])
    result = asyncio.run(Agent(model=model, tools=ts.tools).run("go"))
    return {r.call_id: r for m in result.transcript for r in m.tool_results}


def test_a_returned_list_reaches_the_model_as_the_list_without_the_wrapper_or_repeated_text() -> None:
    orders = build_toolset(McpConfig(server={"command": "python", "args": [EXAMPLE]}, allow=["list_orders"]))
    r = _run_tools(orders, ("list_orders", {}))
    assert r["c0"].content == '{"result":["A-1001","A-1002","A-1003"]}'
    ts = build_toolset(McpConfig(server={"command": "python", "args": [SERVER, "stdio"]},
                                 allow=["order_ids", "cities"], resources=False, prompts=False))
    r = _run_tools(ts, ("order_ids", {}), ("cities", {}))
    assert r["c0"].content == '{"result":["A-1001","A-1002","A-1003"]}'
    assert r["c1"].content == '{"result":[{"city":"Oslo","celsius":21.5},{"city":"Rome","celsius":30.0}]}'


def test_tools_of_one_server_that_clash_once_named_are_all_listed_with_a_deny_hint() -> None:
    from mcp.types import Tool
    from seamkit_mcp.connection import Listing
    from seamkit_mcp.toolset import toolset_from

    tools = tuple(Tool(name=n, input_schema={"type": "object"}) for n in ("a.b", "ok", "a b", "a_b"))
    spec = ServerSpec.of(McpConfig(server={"command": "python"}, name="srv"))
    with pytest.raises(ConfigError) as err:
        toolset_from(spec, Listing(tools, None, None, None))
    (issue,) = err.value.issues
    assert issue.path == "deny"
    assert issue.message == ("the tools 'a.b', 'a b' and 'a_b' of MCP server 'srv' all become the tool name 'a_b': "
                             'keep one and deny the others (e.g. deny: ["a b", "a_b"])')
    names = [t.schema.name for t in toolset_from(spec.of(McpConfig(server={"command": "python"}, name="srv",
                                                                   deny=["a b", "a_b"])),
                                                 Listing(tools, None, None, None)).tools]
    assert names == ["a_b", "ok"]


def test_results_beyond_the_size_limits_are_cut_and_described() -> None:
    server = {"command": "python", "args": [SERVER, "stdio"]}
    ts = build_toolset(McpConfig(server=server, allow=["big_text", "images"], resources=False, prompts=False,
                                 max_result_chars=1000, max_images=2, max_image_bytes=4096))
    r = _run_tools(ts, ("big_text", {"chars": 1500}), ("big_text", {"chars": 1000}), ("images", {"count": 3}),
                   ("images", {"count": 1, "size": 5000}))
    assert r["c0"].content == "x" * 1000 + (
        "\n[500 more characters left out: the result has 1500, more than max_result_chars (1000)]")
    assert r["c1"].content == "x" * 1000
    assert len(r["c2"].images) == 2
    assert r["c2"].content.endswith("[image (image/png, 69 bytes) left out: more than max_images (2)]")
    assert r["c3"].images == ()
    assert "[image (image/png, 5000 bytes) left out: larger than max_image_bytes (4096 bytes)]" in r["c3"].content


def test_the_default_limits_keep_a_10_mb_result_from_the_model() -> None:
    ts = build_toolset(McpConfig(server={"command": "python", "args": [SERVER, "stdio"]}, allow=["big_text"],
                                 resources=False, prompts=False))
    (r,) = _run_tools(ts, ("big_text", {"chars": 10_000_000})).values()
    assert len(r.content) < 100_200 and "9900000 more characters left out" in r.content


@pytest.fixture(scope="module")
def gate(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Path]]:
    """The gated HTTP test server: its url, and the file whose existence makes it answer 500."""
    from mcp_testlib import free_port, wait_listening

    port = free_port()
    fail = tmp_path_factory.mktemp("gate") / "fail"
    proc = subprocess.Popen([sys.executable, GATE, str(port)], env={**os.environ, "MCP_GATE_FAIL": str(fail)},
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    problem = wait_listening(port, proc, "gated HTTP test server")
    if problem is not None:
        pytest.fail(problem)
    yield f"http://127.0.0.1:{port}/mcp", fail
    proc.terminate()
    proc.wait(5)


async def test_an_http_error_status_is_named_with_a_hint_for_401(gate: tuple[str, Path]) -> None:
    from seamkit._runtime.context import RunContext
    from seamkit._runtime.resources import RunResources
    from seamkit.errors import ToolUnavailable

    url, fail = gate
    with pytest.raises(McpConnectError) as err:
        await asyncio.to_thread(build_toolset, McpConfig(
            server={"url": url, "headers": {"Authorization": "Bearer bad-token"}}, connect_timeout=10))
    assert str(err.value).endswith("(HTTP 401: check the server's headers, e.g. the Authorization token)")
    assert "bad-token" not in str(err.value)
    ts = await asyncio.to_thread(build_toolset, McpConfig(
        server={"url": url, "headers": {"Authorization": "Bearer good"}}, allow=["ping"], resources=False,
        prompts=False))
    (ping,) = ts.tools
    ctx = RunContext(resources=RunResources())
    try:
        assert (await ping.invoke({}, ctx)).value == {"result": "pong"}
        fail.write_text("down")
        with pytest.raises(ToolUnavailable) as down:
            await ping.invoke({}, ctx)
    finally:
        fail.unlink(missing_ok=True)
        await ctx.resources.aclose()  # type: ignore[union-attr]
    assert str(down.value).endswith(
        "MCP server '127.0.0.1/mcp' refused the call of 'ping': Server returned an error response (HTTP 500)")
