"""``seamkit mcp serve``: real server processes, spoken to by the official SDK's client.

One stdio server (one client session, every call recorded once per module), one streamable-HTTP
server (two sessions: with and without elicitation), a budget-limited agent, raw stdio for the
purity of stdout and the exit at EOF, and a configuration error.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar

import anyio
import mcp_types as types
import pytest
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client
from seamkit.values import ImageBlock, ToolOutput

SECRET = "s3cr3t-reason-4711"
SEAMKIT = str(Path(sys.executable).with_name("seamkit"))

AGENT_YAML = """\
seamkit: 1
agent:
  name: helper
  model:
    use: scripted
    follow_transcript: true
    turns:
      - tool_calls: [{name: calculator, arguments: {expression: "6*7"}}]
      - "The answer is 42."
  prompt: "You compute things."
  tools: [calculator, {use: write_file, root: ./out}]
  approvals: {write_file: every_call}
  guardrails: [{use: deny, patterns: ["forbidden"], at: [tool], reason: "${MCP_TEST_SECRET}"}]
  checkpoints: {use: sqlite, path: runs.db}
"""

# an agent whose own run calls a tool that needs approval
WRITER_YAML = """\
seamkit: 1
agent:
  name: writer
  model:
    use: scripted
    follow_transcript: true
    turns:
      - tool_calls: [{name: write_file, arguments: {path: by-agent.txt, content: from the agent}}]
      - "done"
  tools: [calculator, {use: write_file, root: ./out}]
  approvals: {write_file: every_call}
  checkpoints: {use: sqlite, path: runs.db}
"""

# an unpriced model (not on loopback, so not "local") under a USD ceiling: the budget middleware
# refuses its first call before anything is sent
BUDGET_YAML = """\
seamkit: 1
agent:
  name: spender
  model: {use: openai, model: no-such-model-xyz, api_key: sk-test, base_url: "http://192.0.2.1:9/v1"}
  tools: [calculator]
  middlewares: [{use: budget, max_cost_usd: "0.01"}]
  checkpoints: null
"""


def _env() -> dict[str, str]:
    env = dict(os.environ)  # PYTHONPATH included: the server imports what this test imports
    env["NO_COLOR"] = "1"
    env["MCP_TEST_SECRET"] = SECRET  # a ${ENV} value of the composition: masked in what the server sends
    return env


@pytest.fixture(scope="module")
def workdir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    d = tmp_path_factory.mktemp("mcpserve")
    (d / "out").mkdir()
    (d / "agent.yaml").write_text(AGENT_YAML)
    (d / "budget.yaml").write_text(BUDGET_YAML)
    (d / "writer.yaml").write_text(WRITER_YAML)
    return d


T = TypeVar("T")


def _run(go: Callable[[], Awaitable[T]], timeout: float) -> T:
    """``go()`` in an event loop of its own, failing after ``timeout`` seconds (nothing hangs)."""

    async def bounded() -> T:
        with anyio.fail_after(timeout):
            return await go()

    return anyio.run(bounded)


def _text(result: types.CallToolResult) -> str:
    return "\n".join(c.text for c in result.content if isinstance(c, types.TextContent))


def _params(workdir: Path, *args: str) -> StdioServerParameters:
    return StdioServerParameters(command=SEAMKIT, args=["mcp", "serve", *args], cwd=str(workdir), env=_env())


# -- one stdio session, every call recorded -------------------------------------------------------


class Recorded:
    def __init__(self) -> None:
        self.tools: dict[str, types.Tool] = {}
        self.results: dict[str, types.CallToolResult] = {}
        self.questions: list[str] = []
        self.start_s = 0.0
        self.call_ms: list[float] = []


@pytest.fixture(scope="module")
def stdio_session(workdir: Path) -> Recorded:
    rec = Recorded()
    answers = iter(["accept", "decline"])

    async def elicit(context: Any, params: types.ElicitRequestParams) -> types.ElicitResult | types.ErrorData:
        rec.questions.append(params.message)
        return types.ElicitResult(action=next(answers), content={})  # type: ignore[arg-type]

    calls: list[tuple[str, str, dict[str, Any]]] = [
        ("calc", "calculator", {"expression": "2+3*4"}),
        ("calc_bad_args", "calculator", {"expr": "1"}),
        ("guarded", "calculator", {"expression": "1+forbidden"}),
        ("agent", "helper", {"task": "What is 6*7?"}),
        ("agent_bad_args", "helper", {"task": "   "}),
        ("write_approved", "write_file", {"path": "approved.txt", "content": "yes"}),
        ("write_declined", "write_file", {"path": "declined.txt", "content": "no"}),
        ("unknown", "nope", {}),
    ]

    async def go() -> None:
        t0 = time.perf_counter()
        async with stdio_client(_params(workdir, "agent.yaml")) as (r, w):
            async with ClientSession(r, w, elicitation_callback=elicit) as s:
                await s.initialize()
                rec.start_s = time.perf_counter() - t0
                rec.tools = {t.name: t for t in (await s.list_tools()).tools}
                for key, name, args in calls:
                    t1 = time.perf_counter()
                    rec.results[key] = await s.call_tool(name, args)
                    rec.call_ms.append((time.perf_counter() - t1) * 1000)

    _run(go, 60)
    print(f"stdio: start {rec.start_s:.2f} s, calls (ms): {[round(x, 1) for x in rec.call_ms]}", file=sys.stderr)
    return rec


def test_tools_are_listed_with_schemas_and_annotations(stdio_session: Recorded) -> None:
    tools = stdio_session.tools
    assert set(tools) == {"calculator", "write_file", "helper"}
    calc = tools["calculator"]
    assert calc.input_schema["required"] == ["expression"]
    assert calc.input_schema["properties"]["expression"]["type"] == "string"
    assert calc.annotations is not None and calc.annotations.read_only_hint is True
    assert calc.annotations.destructive_hint is False
    write = tools["write_file"]
    assert write.annotations is not None and write.annotations.read_only_hint is False
    assert write.annotations.destructive_hint is True
    agent = tools["helper"]
    assert agent.input_schema["required"] == ["task"]
    assert "helper" in (agent.description or "")


def test_a_tool_call_answers(stdio_session: Recorded) -> None:
    r = stdio_session.results["calc"]
    assert not r.is_error
    assert _text(r) == "14"


def test_bad_arguments_are_an_error_result_naming_the_problem(stdio_session: Recorded) -> None:
    r = stdio_session.results["calc_bad_args"]
    assert r.is_error
    assert "ToolArgumentError" in _text(r) and "expression" in _text(r)
    r = stdio_session.results["agent_bad_args"]
    assert r.is_error and "task" in _text(r)
    r = stdio_session.results["unknown"]
    assert r.is_error and "no tool 'nope'" in _text(r)


def test_the_agents_tool_guardrail_applies_and_secrets_are_masked(stdio_session: Recorded) -> None:
    r = stdio_session.results["guarded"]
    assert r.is_error
    # the block's reason is a ${ENV} value of the composition: the client sees it masked
    assert _text(r) == "GuardrailTripped: guardrail 'deny' blocked the call at the tool point: ***"
    assert SECRET[:8] not in _text(r)


def test_the_agent_as_a_tool_answers(stdio_session: Recorded) -> None:
    r = stdio_session.results["agent"]
    assert not r.is_error, _text(r)
    assert _text(r) == "The answer is 42."


def test_approval_by_elicitation_runs_on_accept_and_refuses_on_decline(stdio_session: Recorded,
                                                                       workdir: Path) -> None:
    assert len(stdio_session.questions) == 2
    assert "write_file" in stdio_session.questions[0] and "approved.txt" in stdio_session.questions[0]
    ok = stdio_session.results["write_approved"]
    assert not ok.is_error, _text(ok)
    assert (workdir / "out" / "approved.txt").read_text() == "yes"
    refused = stdio_session.results["write_declined"]
    assert refused.is_error and "declined" in _text(refused)
    assert not (workdir / "out" / "declined.txt").exists()


# -- streamable HTTP ------------------------------------------------------------------------------


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture(scope="module")
def http_server(workdir: Path) -> Iterator[tuple[str, subprocess.Popen[str]]]:
    port = _free_port()
    proc = subprocess.Popen([SEAMKIT, "mcp", "serve", "writer.yaml", "--http", f"127.0.0.1:{port}"], cwd=workdir,
                            env=_env(), stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)
    assert proc.stderr is not None
    line = proc.stderr.readline()  # the server says when it listens (or why it stopped)
    assert "serving agent 'writer' over MCP at http://127.0.0.1" in line, line + proc.stderr.read()
    yield f"http://127.0.0.1:{port}/mcp", proc
    if proc.poll() is None:
        proc.kill()
        proc.wait()


def test_http_serves_and_fails_closed_without_elicitation(http_server: tuple[str, Any], workdir: Path) -> None:
    url, _ = http_server

    (workdir / "out" / "by-agent.txt").unlink(missing_ok=True)

    async def go() -> tuple[types.CallToolResult, types.CallToolResult, types.CallToolResult]:
        async with streamable_http_client(url) as (r, w), ClientSession(r, w) as s:
            await s.initialize()
            calc = await s.call_tool("calculator", {"expression": "10/4"})
            write = await s.call_tool("write_file", {"path": "unasked.txt", "content": "x"})
            agent = await s.call_tool("writer", {"task": "write it"})
            return calc, write, agent

    calc, write, agent = _run(go, 30)
    assert not calc.is_error and _text(calc) == "2.5"
    assert write.is_error and "approval required" in _text(write) and "elicitation" in _text(write)
    assert not (workdir / "out" / "unasked.txt").exists()
    # the agent's own run asked for an approval it cannot get: the call was refused, the run finished
    assert not agent.is_error and _text(agent).startswith("done\n\n(Note: 1 call ")
    assert "(write_file) was refused" in _text(agent) and "elicitation" in _text(agent)
    assert not (workdir / "out" / "by-agent.txt").exists()


def test_http_asks_for_approval_by_elicitation(http_server: tuple[str, Any], workdir: Path) -> None:
    url, _ = http_server
    asked: list[str] = []

    async def elicit(context: Any, params: types.ElicitRequestParams) -> types.ElicitResult | types.ErrorData:
        asked.append(params.message)
        return types.ElicitResult(action="accept", content={})

    async def go() -> types.CallToolResult:
        async with streamable_http_client(url) as (r, w), ClientSession(r, w, elicitation_callback=elicit) as s:
            await s.initialize()
            return await s.call_tool("write_file", {"path": "over-http.txt", "content": "ok"})

    result = _run(go, 30)
    assert not result.is_error, _text(result)
    assert len(asked) == 1 and "over-http.txt" in asked[0]
    assert (workdir / "out" / "over-http.txt").read_text() == "ok"


def test_a_2026_client_is_asked_by_input_required_results(http_server: tuple[str, Any], workdir: Path) -> None:
    """A client of the 2026-07-28 protocol (the SDK's ``Client``, which discovers it) gets the
    questions as ``InputRequiredResult`` and retries with the answers."""
    from mcp.client.client import Client

    url, _ = http_server
    (workdir / "out" / "by-agent.txt").unlink(missing_ok=True)
    answers = iter(["accept", "decline", "accept"])
    asked: list[str] = []

    async def elicit(context: Any, params: types.ElicitRequestParams) -> types.ElicitResult | types.ErrorData:
        asked.append(params.message)
        return types.ElicitResult(action=next(answers), content={})  # type: ignore[arg-type]

    async def go() -> tuple[str | None, list[types.CallToolResult]]:
        async with Client(url, elicitation_callback=elicit) as c:
            return c.session.protocol_version, [
                await c.call_tool("write_file", {"path": "modern.txt", "content": "m"}),
                await c.call_tool("write_file", {"path": "modern-declined.txt", "content": "n"}),
                await c.call_tool("writer", {"task": "write it"}),
            ]

    version, (ok, declined, agent) = _run(go, 30)
    assert version == "2026-07-28"
    assert len(asked) == 3 and "modern.txt" in asked[0] and "by-agent.txt" in asked[2]
    assert not ok.is_error and (workdir / "out" / "modern.txt").read_text() == "m"
    assert declined.is_error and "declined" in _text(declined)
    assert not (workdir / "out" / "modern-declined.txt").exists()
    assert not agent.is_error and _text(agent) == "done"  # the suspended run resumed with the approval
    assert (workdir / "out" / "by-agent.txt").read_text() == "from the agent"


def test_http_server_stops_on_ctrl_c(http_server: tuple[str, subprocess.Popen[str]]) -> None:
    _, proc = http_server
    proc.send_signal(signal.SIGINT)
    assert proc.wait(timeout=15) == 130
    assert proc.stdout is not None and proc.stdout.read() == ""
    assert proc.stderr is not None and "no authentication" not in proc.stderr.read()  # loopback: no warning


def test_a_non_loopback_http_address_warns_on_stderr_that_there_is_no_authentication(workdir: Path) -> None:
    port = _free_port()
    proc = subprocess.Popen([SEAMKIT, "mcp", "serve", "agent.yaml", "--http", f"0.0.0.0:{port}"], cwd=workdir,
                            env=_env(), stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)
    assert proc.stderr is not None and proc.stdout is not None
    try:
        lines: list[str] = []
        while not any("serving agent" in line for line in lines):
            line = proc.stderr.readline()  # bounded by the kill in finally when the server hangs
            assert line, "".join(lines)
            lines.append(line)
        proc.send_signal(signal.SIGINT)
        assert proc.wait(timeout=15) == 130
    finally:
        if proc.poll() is None:
            proc.kill()
    warnings = [line for line in lines if "no authentication" in line]
    assert len(warnings) == 1, lines
    assert warnings[0].startswith("seamkit: warning: ") and "0.0.0.0" in warnings[0]
    assert "reachable from other machines" in warnings[0]
    assert proc.stdout.read() == ""  # stderr only


# -- the agent's own approvals, handshake era ------------------------------------------------------


def test_the_agent_tools_approvals_are_asked_and_its_run_resumed(tmp_path: Path) -> None:
    (tmp_path / "out").mkdir()
    (tmp_path / "writer.yaml").write_text(WRITER_YAML)
    written = tmp_path / "out" / "by-agent.txt"
    answers = iter(["decline", "accept"])
    asked: list[str] = []
    seen: list[bool] = []

    async def elicit(context: Any, params: types.ElicitRequestParams) -> types.ElicitResult | types.ErrorData:
        asked.append(params.message)
        return types.ElicitResult(action=next(answers), content={})  # type: ignore[arg-type]

    async def go() -> list[types.CallToolResult]:
        results = []
        async with stdio_client(_params(tmp_path, "writer.yaml")) as (r, w), \
                ClientSession(r, w, elicitation_callback=elicit) as s:
            await s.initialize()
            for _ in range(2):
                results.append(await s.call_tool("writer", {"task": "write it"}))
                seen.append(written.exists())
        return results

    declined, accepted = _run(go, 30)
    assert len(asked) == 2 and "write_file" in asked[0] and "by-agent.txt" in asked[0]
    assert not declined.is_error and _text(declined) == "done"  # its model saw the rejection and answered
    assert seen == [False, True]
    assert not accepted.is_error and written.read_text() == "from the agent"


# -- budget -----------------------------------------------------------------------------------------


def test_the_agents_budget_applies_to_the_agent_tool(workdir: Path) -> None:
    async def go() -> types.CallToolResult:
        async with stdio_client(_params(workdir, "budget.yaml")) as (r, w), ClientSession(r, w) as s:
            await s.initialize()
            return await s.call_tool("spender", {"task": "spend"})

    result = _run(go, 30)
    assert result.is_error
    assert _text(result).startswith("BudgetExceeded: ") and "$0.01" in _text(result)
    assert "Traceback" not in _text(result)


# -- stdout purity, exit at EOF, configuration errors ------------------------------------------------


# the server as `seamkit mcp serve agent.yaml`, with a calculator that writes to stdout (through
# print and straight to fd 1) as a careless tool or C library would
NOISY_SERVER = """\
import os, sys
import seamkit_tools_basic.calculator as c
evaluate = c.Calculator.evaluate
def noisy(self, expression):
    print("NOISE from print")
    sys.stdout.flush()
    os.write(1, b"NOISE on fd 1\\n")
    return evaluate(self, expression)
c.Calculator.evaluate = noisy
from seamkit._cli.main import main
sys.exit(main(["mcp", "serve", "agent.yaml"]))
"""


def test_stdout_carries_only_the_protocol_and_eof_exits_0(workdir: Path) -> None:
    messages = [
        {"jsonrpc": "2.0", "id": 1, "method": "initialize",
         "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}},
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 2, "method": "tools/list"},
        {"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": "helper", "arguments": {"task": "go"}}},
    ]
    proc = subprocess.Popen([sys.executable, "-c", NOISY_SERVER], cwd=workdir, env=_env(), text=True,
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert proc.stdin is not None and proc.stdout is not None
    try:
        proc.stdin.write("".join(json.dumps(m) + "\n" for m in messages))
        proc.stdin.flush()
        lines: list[str] = []
        while not any('"id":3' in line.replace(" ", "") for line in lines):
            line = proc.stdout.readline()  # bounded by the kill in finally when the server hangs
            assert line, "the server closed stdout before answering"
            lines.append(line)
        proc.stdin.close()  # the client goes away: the server must exit, with 0
        lines += proc.stdout.read().splitlines()
        code = proc.wait(timeout=15)
    finally:
        if proc.poll() is None:
            proc.kill()
    stderr = proc.stderr.read() if proc.stderr is not None else ""
    assert code == 0, stderr
    replies = [json.loads(line) for line in lines]  # every line is a JSON-RPC message, nothing else
    assert all(m.get("jsonrpc") == "2.0" for m in replies)
    by_id = {m["id"]: m for m in replies if "id" in m}
    assert set(by_id) == {1, 2, 3}
    assert by_id[3]["result"]["content"][0]["text"] == "The answer is 42."  # the agent called the calculator
    assert "NOISE from print" in stderr and "NOISE on fd 1" in stderr
    assert "serving agent 'helper'" in stderr


def test_a_configuration_error_exits_2_with_its_location(tmp_path: Path) -> None:
    (tmp_path / "bad.yaml").write_text(AGENT_YAML.replace("  prompt:", "  colour: blue\n  prompt:"))
    proc = subprocess.run([SEAMKIT, "mcp", "serve", "bad.yaml"], cwd=tmp_path, env=_env(), text=True,
                          stdin=subprocess.DEVNULL, capture_output=True, timeout=30)
    assert proc.returncode == 2
    assert "bad.yaml:10:3: agent.colour: unknown key 'colour'" in proc.stderr
    assert "Traceback" not in proc.stderr
    assert proc.stdout == ""


def test_a_bad_http_address_is_a_usage_error(workdir: Path) -> None:
    proc = subprocess.run([SEAMKIT, "mcp", "serve", "agent.yaml", "--http", "localhost"], cwd=workdir, env=_env(),
                          text=True, stdin=subprocess.DEVNULL, capture_output=True, timeout=30)
    assert proc.returncode == 2
    assert "--http takes HOST:PORT" in proc.stderr


# -- request states (in process: the same AgentServer a server process uses) ---------------------------


def test_answers_count_only_with_the_state_signed_for_the_same_call(tmp_path: Path) -> None:
    import asyncio

    from seamkit.composition import build_agent, load_composition
    from seamkit_mcp.serve_tools import AgentServer, Asking

    (tmp_path / "out").mkdir()
    (tmp_path / "writer.yaml").write_text(WRITER_YAML)
    agent = build_agent(load_composition(tmp_path / "writer.yaml"))
    core = AgentServer(agent)
    args = {"path": "a.txt", "content": "a"}

    def answered(state: str | None) -> Asking:
        return Asking(input_required=True, responses={"approval": "accept"}, state=state)

    async def go() -> None:
        try:
            forged = await core.call("write_file", args, answered("e30.0000"))
            assert isinstance(forged, types.InputRequiredResult)  # asked again, not run
            assert not (tmp_path / "out" / "a.txt").exists()
            state = forged.request_state
            assert state and forged.input_requests
            question = forged.input_requests["approval"].params
            assert isinstance(question, types.ElicitRequestFormParams) and "a.txt" in question.message
            other = await core.call("write_file", {"path": "b.txt", "content": "b"}, answered(state))
            assert isinstance(other, types.InputRequiredResult)  # an answer about a.txt does not approve b.txt
            assert not (tmp_path / "out" / "b.txt").exists()
            ran = await core.call("write_file", args, answered(state))
            assert isinstance(ran, types.CallToolResult) and not ran.is_error
            assert (tmp_path / "out" / "a.txt").read_text() == "a"
        finally:
            await agent.checkpointer.aclose()

    asyncio.run(go())


def test_results_keep_json_objects_as_structured_content_and_images_as_image_content() -> None:
    import asyncio
    import base64

    from seamkit._agent.agent import Agent
    from seamkit._tools.decorator import tool
    from seamkit.testing._models import ScriptedModel
    from seamkit_mcp.serve_tools import AgentServer

    png = b"\x89PNG\r\n\x1a\n" + b"\x00" * 8

    @tool(side_effecting=False, name="snap", description="A picture and what is in it.")
    def snap(subject: str) -> ToolOutput:
        return ToolOutput({"subject": subject, "width": 1}, images=(ImageBlock(data=png, media_type="image/png"),))

    @tool(side_effecting=False, name="broken", description="Says it failed.")
    def broken() -> ToolOutput:
        return ToolOutput({"error": "no camera"}, is_error=True)

    core = AgentServer(Agent(ScriptedModel(["x"]), name="cam", tools=(snap, broken)), agent_tool=False)
    assert [t.name for t in core.list_tools()] == ["snap", "broken"]  # --no-agent-tool: no 'cam'

    ok = asyncio.run(core.call("snap", {"subject": "cat"}))
    assert isinstance(ok, types.CallToolResult) and not ok.is_error
    assert ok.structured_content == {"subject": "cat", "width": 1}
    image = ok.content[1]
    assert isinstance(image, types.ImageContent) and image.mime_type == "image/png"
    assert base64.b64decode(image.data) == png
    failed = asyncio.run(core.call("broken", {}))
    assert isinstance(failed, types.CallToolResult) and failed.is_error
    assert failed.structured_content is None and json.loads(_text(failed)) == {"error": "no camera"}


@pytest.mark.parametrize(("sig", "code"), [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_stdio_server_stops_on_ctrl_c_and_sigterm(workdir: Path, sig: signal.Signals, code: int) -> None:
    proc = subprocess.Popen([SEAMKIT, "mcp", "serve", "agent.yaml"], cwd=workdir, env=_env(), text=True,
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert proc.stdin is not None and proc.stdout is not None
    try:
        proc.stdin.write(json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}}) + "\n")
        proc.stdin.flush()
        assert json.loads(proc.stdout.readline())["id"] == 1  # serving, stdin still open
        proc.send_signal(sig)
        try:
            assert proc.wait(timeout=15) == code
        except subprocess.TimeoutExpired:
            proc.kill()
            pytest.fail(f"serve outlived {sig.name} by 15 s; its stderr: {proc.communicate()[1][-2000:]}")
    finally:
        if proc.poll() is None:
            proc.kill()


def test_a_port_in_use_is_a_usage_error(workdir: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        proc = subprocess.run([SEAMKIT, "mcp", "serve", "agent.yaml", "--http", f"127.0.0.1:{port}"], cwd=workdir,
                              env=_env(), text=True, stdin=subprocess.DEVNULL, capture_output=True, timeout=30)
    assert proc.returncode == 2
    assert f"cannot serve on 127.0.0.1:{port}: Address already in use" in proc.stderr


# -- an MCP tool of the served agent: its pinned definition is checked -------------------------------


def _mcp_agent_yaml(tmp_path: Path, **env: str) -> Path:
    """An agent whose tools come from the SDK test server (``use: mcp``), checkpointed in runs.db."""
    from mcp_testlib import SERVER

    file = tmp_path / "mcp-agent.yaml"
    doc = {"seamkit": 1, "agent": {
        "name": "relay",
        "model": {"use": "scripted", "turns": [{"tool_calls": [{"name": "evolving", "arguments": {"x": 2}}]}, "done"]},
        "tools": [{"use": "mcp", "server": {"command": sys.executable, "args": [SERVER, "stdio"], "env": env},
                   "allow": ["evolving", "ping", "hang"], "resources": False, "prompts": False}],
        "checkpoints": {"use": "sqlite", "path": str(tmp_path / "runs.db")}}}
    file.write_text(json.dumps(doc))  # JSON is YAML
    return file


def test_a_direct_call_of_an_mcp_tool_whose_definition_changed_is_refused(tmp_path: Path) -> None:
    variant = tmp_path / "variant"
    variant.write_text("v1")
    file = _mcp_agent_yaml(tmp_path, MCP_TEST_VARIANT_FILE=str(variant))
    first = subprocess.run([SEAMKIT, "run", str(file), "go"], cwd=tmp_path, env=_env(), text=True,
                           stdin=subprocess.DEVNULL, capture_output=True, timeout=60)
    assert first.returncode == 0 and "done" in first.stdout, first.stderr  # pinned v1 in runs.db
    variant.write_text("v2")  # the server changes the tool after it was approved (a "rug pull")

    async def go() -> tuple[list[str], types.CallToolResult, types.CallToolResult]:
        async with stdio_client(_params(tmp_path, file.name)) as (r, w), ClientSession(r, w) as s:
            await s.initialize()
            listed = [t.name for t in (await s.list_tools()).tools]
            return (listed, await s.call_tool("evolving", {"x": 2, "exfiltrate": "secrets"}),
                    await s.call_tool("ping", {}))

    listed, refused, pong = _run(go, 60)
    assert "evolving" not in listed and "ping" in listed  # its new description never reaches the client
    assert refused.is_error, _text(refused)
    assert "definition of tool 'evolving'" in _text(refused) and "changed" in _text(refused)
    assert "seamkit mcp approve" in _text(refused)
    assert not pong.is_error and "pong" in _text(pong)  # the unchanged tool still runs


# -- the client goes away mid-call ----------------------------------------------------------------------


def test_a_client_closing_both_pipes_during_a_call_ends_the_server_with_0(tmp_path: Path) -> None:
    from mcp_testlib import wait_gone

    mark, pids = tmp_path / "entered", tmp_path / "pids"
    file = _mcp_agent_yaml(tmp_path, MCP_TEST_HANG_MARK=str(mark), MCP_TEST_PIDFILE=str(pids))
    messages = [
        {"jsonrpc": "2.0", "id": 1, "method": "initialize",
         "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}},
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "hang", "arguments": {}}},
    ]
    proc = subprocess.Popen([SEAMKIT, "mcp", "serve", file.name], cwd=tmp_path, env=_env(), text=True,
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert proc.stdin is not None and proc.stdout is not None
    try:
        proc.stdin.write("".join(json.dumps(m) + "\n" for m in messages))
        proc.stdin.flush()
        assert json.loads(proc.stdout.readline())["id"] == 1
        deadline = time.monotonic() + 30
        while not mark.exists():  # the call is running in the MCP server the agent uses
            assert proc.poll() is None and time.monotonic() < deadline, "the call never started"
            time.sleep(0.05)
        proc.stdin.close()  # the client goes away, both pipes at once, while the call runs
        proc.stdout.close()
        code = proc.wait(timeout=20)
    finally:
        if proc.poll() is None:
            proc.kill()
    stderr = proc.stderr.read() if proc.stderr is not None else ""
    assert code == 0, stderr
    assert "the client closed the connection" in stderr
    assert "ExceptionGroup" not in stderr and "error:" not in stderr
    started = [int(p) for p in pids.read_text().split()]
    assert started and all(wait_gone(p, 10) for p in started), "the agent's MCP server outlived serve"


# -- the agent as a tool, for a client that cannot be asked --------------------------------------------


def _runs(workdir: Path, file: str) -> list[dict[str, Any]]:
    listed = subprocess.run([SEAMKIT, "runs", "list", "--agent", file, "--json"], cwd=workdir, env=_env(),
                            text=True, stdin=subprocess.DEVNULL, capture_output=True, timeout=30)
    assert listed.returncode == 0, listed.stderr
    runs: list[dict[str, Any]] = json.loads(listed.stdout)
    return runs


def test_an_agent_run_needing_approval_for_a_client_without_elicitation_is_not_left_suspended(
        tmp_path: Path) -> None:
    (tmp_path / "out").mkdir()
    (tmp_path / "writer.yaml").write_text(WRITER_YAML)

    async def go() -> list[types.CallToolResult]:
        async with stdio_client(_params(tmp_path, "writer.yaml")) as (r, w), ClientSession(r, w) as s:
            await s.initialize()
            return [await s.call_tool("writer", {"task": "write it"}) for _ in range(2)]

    results = _run(go, 60)
    for r in results:
        assert not r.is_error, _text(r)
        assert _text(r).startswith("done\n\n(Note: 1 call of the agent's run needing a person's approval "
                                   "(write_file) was refused and not run, because this MCP client cannot be asked")
        assert "seamkit resume" not in _text(r)
    assert not (tmp_path / "out" / "by-agent.txt").exists()
    runs = _runs(tmp_path, "writer.yaml")
    assert len(runs) == 2 and {r["status"] for r in runs} == {"done"}, runs  # nothing left suspended
    shown = subprocess.run([SEAMKIT, "runs", "show", runs[0]["run_id"], "--agent", "writer.yaml", "--json"],
                           cwd=tmp_path, env=_env(), text=True, stdin=subprocess.DEVNULL, capture_output=True,
                           timeout=30)
    assert shown.returncode == 0, shown.stderr
    # the model was told why the call was not run
    assert "rejected this tool call" in shown.stdout and "the person cannot be asked" in shown.stdout
