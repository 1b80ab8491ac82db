"""``use: mcp`` against the SDK test server (``mcp_test_server.py``), over stdio and streamable
HTTP: tools offered and called by agent runs, results, annotations, allow/deny, timeouts, a dying
server, build errors, secrets masked, and YAML composition."""

from __future__ import annotations

import asyncio
import os
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from mcp_test_server import PNG
from mcp_testlib import SERVER, free_port, pid_gone, stdio_params, wait_gone
from seamkit import Agent
from seamkit._durability.checkpointer import Checkpointer
from seamkit.errors import ConfigError, FailureClass, ToolUnavailable
from seamkit.testing import MemoryStore, ScriptedModel
from seamkit.values import ImageBlock, ToolResult
from seamkit_mcp.config import McpConfig
from seamkit_mcp.connection import McpConnectError, ServerSpec
from seamkit_mcp.toolset import McpToolset, build_toolset, discover, toolset_from

SERVER_TOOLS = ["ping", "weather", "snapshot", "fail", "hang", "die", "write_note", "auth_header", "lookup",
                "evolving", "order_ids", "cities", "big_text", "images"]
HELPERS = ["list_resources", "read_resource", "list_prompts", "get_prompt"]


def _results(result: Any) -> dict[str, ToolResult]:
    return {r.call_id: r for m in result.transcript for r in m.tool_results}


def _calls(*calls: tuple[str, dict[str, Any]]) -> dict[str, Any]:
    return {"tool_calls": [{"id": f"c{i}", "name": n, "arguments": a} for i, (n, a) in enumerate(calls)]}


def _pids(path: Path) -> list[int]:
    return [int(x) for x in path.read_text().split()] if path.exists() else []


@pytest.fixture(scope="module")
def stdio_listing(tmp_path_factory: pytest.TempPathFactory) -> Any:
    """What the stdio test server lists (discovered once per module)."""
    spec = ServerSpec.of(McpConfig(server=stdio_params()))
    return asyncio.run(discover(spec))


def _toolset(listing: Any, tmp: Path, **cfg: Any) -> McpToolset:
    """A toolset of the stdio server as build_toolset makes it, from the module's listing; its
    server logs pids to ``tmp/pids`` and side effects to ``tmp/calls``."""
    env = {"MCP_TEST_PIDFILE": str(tmp / "pids"), "MCP_TEST_CALLS": str(tmp / "calls"), **cfg.pop("env", {})}
    return toolset_from(ServerSpec.of(McpConfig(server=stdio_params(**env), **cfg)), listing)


def test_the_plugin_registers_mcp_lazily() -> None:
    from seamkit._plugins.registry import load_registry

    spec = load_registry().resolve("tool", "mcp", distribution="seamkit-mcp")
    assert spec.factory == "seamkit_mcp.toolset:build_toolset"
    assert spec.config_model() is McpConfig


def test_build_toolset_offers_each_tool_with_a_normalised_schema_and_honest_side_effects(tmp_path: Path) -> None:
    started = time.perf_counter()
    ts = build_toolset(McpConfig(server=stdio_params(MCP_TEST_PIDFILE=str(tmp_path / "pids"))))
    took = time.perf_counter() - started
    by_name = {t.schema.name: t.schema for t in ts.tools}
    assert list(by_name) == SERVER_TOOLS + HELPERS
    assert {n for n, s in by_name.items() if s.side_effecting} == {"write_note"}  # no readOnlyHint: side-effecting
    assert by_name["ping"].parameters["type"] == "object" and by_name["ping"].parameters["properties"] == {}
    assert by_name["weather"].description == "The weather in a city, as structured content."
    (pid,) = _pids(tmp_path / "pids")
    assert wait_gone(pid), "build_toolset left the server running"
    assert took < 15


async def test_an_agent_calls_the_stdio_servers_tools(stdio_listing: Any, tmp_path: Path) -> None:
    ts = _toolset(stdio_listing, tmp_path)
    model = ScriptedModel([
        _calls(("ping", {}), ("weather", {"city": "Oslo"}), ("snapshot", {}), ("fail", {}),
               ("write_note", {"text": "hi"}), ("read_resource", {"uri": "note://readme"}),
               ("get_prompt", {"name": "greet", "arguments": {"name": "Ann"}}), ("list_prompts", {}),
               ("weather", {"town": "Oslo"})),
        "done"])
    result = await Agent(model=model, tools=ts.tools).run("go")
    assert result.output == "done"
    r = _results(result)
    assert (r["c0"].content, r["c0"].is_error) == ('{"result":"pong"}', False)
    assert r["c1"].content == '{"city":"Oslo","celsius":21.5}'
    assert r["c2"].images == (ImageBlock("image/png", data=PNG),) and not r["c2"].is_error
    assert (r["c3"].content, r["c3"].is_error) == ("the disk is on fire", True)
    assert r["c4"].content == '{"result":"noted hi"}' and (tmp_path / "calls").read_text() == "hi\n"
    assert r["c5"].content == "[resource note://readme (text/plain)]\nread me first"
    assert r["c6"].content == "Greet someone by name.\n\n[user] Say hello to Ann."
    assert '"name":"greet"' in r["c7"].content
    assert r["c8"].is_error and "(arguments): 'city' is a required property" in r["c8"].content
    # the model saw the normalised schemas; one server for the run, gone when it ended
    assert [t.name for t in model.requests[0].tools][:2] == ["ping", "weather"]
    (pid,) = _pids(tmp_path / "pids")
    assert wait_gone(pid)


async def test_streamable_http_sends_the_headers_and_converts_results(http_url: str) -> None:
    secret = "Bearer s3cret-token"
    ts = build_toolset(McpConfig(server={"url": http_url, "headers": {"Authorization": secret}}, prefix="web_"))
    assert "web_read_resource" in [t.schema.name for t in ts.tools]
    assert secret not in repr(ts) and secret not in repr(ts.link.spec)
    model = ScriptedModel([_calls(("web_auth_header", {}), ("web_snapshot", {}), ("web_fail", {}),
                                  ("web_read_resource", {"uri": "note://logo"})), "done"])
    result = await Agent(model=model, tools=ts.tools).run("go")
    r = _results(result)
    assert r["c0"].content == '{"result":"Bearer s3cret-token"}'
    assert r["c1"].images == (ImageBlock("image/png", data=PNG),)
    assert r["c2"].is_error and r["c2"].content == "the disk is on fire"
    assert r["c3"].images == (ImageBlock("image/png", data=PNG),)


async def test_a_side_effecting_mcp_tool_needs_approval_and_goes_through_the_effect_ledger(
        stdio_listing: Any, tmp_path: Path) -> None:
    from seamkit._durability.approvals import approve

    ts = _toolset(stdio_listing, tmp_path)
    store = MemoryStore()
    agent = Agent(model=ScriptedModel([_calls(("write_note", {"text": "pay"})), "done"], follow_transcript=True),
                  tools=ts.tools, checkpointer=Checkpointer(store), approvals={"write_note": "every_call"})
    first = await agent.run("go")
    assert first.stop_reason == "suspended" and not (tmp_path / "calls").exists()
    done = await agent.resume(first.run_id, decisions={p.call_id: approve() for p in first.pending_approvals})
    assert done.output == "done" and (tmp_path / "calls").read_text() == "pay\n"
    from seamkit._durability.ledger import EffectLedger, effect_key

    ledger = EffectLedger(store)
    receipts = [await ledger.receipt(effect_key(first.run_id, step, "c0")) for step in range(4)]
    assert [r["status"] for r in receipts if r is not None] == ["completed"]


def test_allow_and_deny_pick_tools_by_the_servers_names(stdio_listing: Any, tmp_path: Path) -> None:
    ts = _toolset(stdio_listing, tmp_path, allow=["ping", "lookup", "write_note"], deny=["write_note"],
                  resources=False, prompts=False)
    assert [t.schema.name for t in ts.tools] == ["ping", "lookup"]
    with pytest.raises(ConfigError) as err:
        _toolset(stdio_listing, tmp_path, allow=["ping", "pong"], deny=["nope"])
    text = str(err.value)
    assert "'pong'" in text and "'nope'" in text and "it offers: ping, weather, snapshot" in text


def test_helper_names_that_clash_with_the_servers_tools_are_refused(tmp_path: Path) -> None:
    from mcp.types import Resource, Tool
    from seamkit_mcp.connection import Listing

    listing = Listing((Tool(name="read_resource", input_schema={"type": "object"}),),
                      (Resource(uri="file:///readme", name="readme"),), None, None)
    with pytest.raises(ConfigError, match=r"clashes with tool 'read_resource'.*prefix"):
        toolset_from(ServerSpec.of(McpConfig(server=stdio_params())), listing)


async def test_a_hung_call_times_out_classified_and_the_run_goes_on(stdio_listing: Any, tmp_path: Path) -> None:
    mark = tmp_path / "entered"
    ts = _toolset(stdio_listing, tmp_path, timeout=0.5, env={"MCP_TEST_HANG_MARK": str(mark)})
    model = ScriptedModel([_calls(("hang", {})), _calls(("ping", {})), "done"])
    started = time.perf_counter()
    result = await Agent(model=model, tools=ts.tools).run("go")
    took = time.perf_counter() - started
    hung, pong = [r for m in result.transcript for r in m.tool_results]
    assert hung.is_error and hung.content.startswith("ToolUnavailable (timeout): tool 'hang'")
    assert pong.content == '{"result":"pong"}'
    assert len(_pids(tmp_path / "pids")) == 1  # the session was kept after the timeout
    assert took < 8
    assert wait_gone(_pids(tmp_path / "pids")[0])


async def test_a_timed_out_call_is_cancelled_on_the_server(stdio_listing: Any, tmp_path: Path) -> None:
    from seamkit._runtime.context import RunContext
    from seamkit._runtime.resources import RunResources

    mark = tmp_path / "entered"
    ts = _toolset(stdio_listing, tmp_path, timeout=0.3, env={"MCP_TEST_HANG_MARK": str(mark)})
    hang, ping = (next(t for t in ts.tools if t.schema.name == n) for n in ("hang", "ping"))
    ctx = RunContext(resources=RunResources())
    try:
        with pytest.raises(ToolUnavailable) as err:
            await hang.invoke({}, ctx)
        assert err.value.failure_class is FailureClass.TIMEOUT and not err.value.stop_run
        assert (await ping.invoke({}, ctx)).value == {"result": "pong"}  # same session, answered after the cancel
        for _ in range(100):  # the server's tool unwinds in its own task
            if (tmp_path / "entered.cancelled").exists():
                break
            await asyncio.sleep(0.02)
        assert (tmp_path / "entered.cancelled").exists()  # notifications/cancelled reached the server's tool
    finally:
        await ctx.resources.aclose()  # type: ignore[union-attr]


async def test_on_failure_stop_stops_the_run(stdio_listing: Any, tmp_path: Path) -> None:
    ts = _toolset(stdio_listing, tmp_path, timeout=0.5, on_failure="stop")
    with pytest.raises(ToolUnavailable) as err:
        await Agent(model=ScriptedModel([_calls(("hang", {})), "done"]), tools=ts.tools).run("go")
    assert err.value.failure_class is FailureClass.TIMEOUT and err.value.stop_run
    assert wait_gone(_pids(tmp_path / "pids")[0])


async def test_a_server_that_dies_mid_call_is_a_classified_failure_and_the_next_call_restarts_it(
        stdio_listing: Any, tmp_path: Path) -> None:
    ts = _toolset(stdio_listing, tmp_path)
    model = ScriptedModel([_calls(("die", {})), _calls(("ping", {})), "done"])
    result = await Agent(model=model, tools=ts.tools).run("go")
    died, pong = [r for m in result.transcript for r in m.tool_results]
    assert died.is_error and died.content.startswith("ToolUnavailable (server_error): MCP server 'mcp_test_server'")
    assert "dying now" in died.content  # the stderr tail
    assert pong.content == '{"result":"pong"}'
    assert any("stopped during a call of 'die'" in w for w in result.warnings)
    pids = _pids(tmp_path / "pids")
    assert len(pids) == 2 and all(wait_gone(p) for p in pids)


async def test_a_server_that_cannot_start_at_run_time_applied_nothing(stdio_listing: Any, tmp_path: Path) -> None:
    spec = ServerSpec.of(McpConfig(server={"command": sys.executable, "args": [SERVER, "crash"]}))
    ts = toolset_from(spec, stdio_listing)  # offered by a server that works, run against one that does not
    agent = Agent(model=ScriptedModel([_calls(("write_note", {"text": "x"})), "done"]), tools=ts.tools,
                  checkpointer=Checkpointer(MemoryStore()))
    result = await agent.run("go")
    (r,) = [r for m in result.transcript for r in m.tool_results]
    assert r.is_error and r.content.startswith("ToolUnavailable: MCP server 'mcp_test_server' could not be started")
    assert "fatal: cannot start (config missing)" in r.content
    assert result.output == "done" and not result.uncertain_effects  # certainly not applied: no settlement


def test_build_errors_name_the_server_with_its_stderr_and_mask_secrets(tmp_path: Path) -> None:
    secret = "sk-verysecret-123"
    cfg = McpConfig(server={"command": sys.executable, "args": [SERVER, "crash"], "env": {"MCP_TEST_SECRET": secret}})
    with pytest.raises(McpConnectError) as err:
        build_toolset(cfg)
    text = str(err.value)
    assert "MCP server 'mcp_test_server'" in text and "fatal: cannot start (config missing)" in text
    assert secret not in text and "token ***" in text
    missing = McpConfig(server={"command": str(tmp_path / "nonexistent")})
    with pytest.raises(ConfigError, match=r"server: the MCP server cannot be started: command .*nonexistent"):
        build_toolset(missing)  # refused before anything is started
    with pytest.raises(McpConnectError, match=r"could not be started or reached.*nonexistent"):
        asyncio.run(discover(ServerSpec.of(missing)))  # at run time (gone since build): a connect error


def test_a_server_that_never_answers_initialize_times_out(tmp_path: Path) -> None:
    started = time.perf_counter()
    cfg = McpConfig(server={"command": sys.executable, "args": [SERVER, "silent"],
                            "env": {"MCP_TEST_PIDFILE": str(tmp_path / "pids")}}, connect_timeout=1)
    with pytest.raises(McpConnectError, match="did not start and initialize within 1 s"):
        build_toolset(cfg)
    assert time.perf_counter() - started < 10
    assert wait_gone(_pids(tmp_path / "pids")[0])


def test_an_unreachable_http_server_is_a_clear_error_without_the_headers() -> None:
    cfg = McpConfig(server={"url": f"http://127.0.0.1:{free_port()}/mcp", "headers": {"X-Key": "hdr-secret-9"}},
                    connect_timeout=5)
    with pytest.raises(McpConnectError) as err:
        build_toolset(cfg)
    assert "MCP server '127.0.0.1/mcp'" in str(err.value) and "hdr-secret-9" not in str(err.value)


async def test_yaml_composition_builds_the_servers_tools(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from seamkit.composition import build_agent, load_composition

    monkeypatch.setenv("MCP_TEST_TOKEN", "yaml-secret-77")
    (tmp_path / "agent.yaml").write_text(f"""
seamkit: 1
agent:
  model:
    use: scripted
    turns:
      - tool_calls: [{{name: srv_ping, arguments: {{}}}}]
      - text: done
  tools:
    - use: mcp
      name: testsrv
      prefix: srv_
      server:
        command: {sys.executable}
        args: [{SERVER}, stdio]
        env: {{MCP_TEST_SECRET: "${{MCP_TEST_TOKEN}}"}}
  checkpoints: null
""")
    composition = load_composition(tmp_path / "agent.yaml")
    assert "yaml-secret-77" not in repr(composition)
    agent = build_agent(composition)
    assert "srv_ping" in agent.invoker.tools.names and "srv_get_prompt" in agent.invoker.tools.names
    result = await agent.run("go")
    assert result.output == "done"
    (r,) = [r for m in result.transcript for r in m.tool_results]
    assert r.content == '{"result":"pong"}'


async def test_a_cancelled_run_stops_its_server_before_the_cancellation_returns(
        stdio_listing: Any, tmp_path: Path) -> None:
    mark = tmp_path / "entered"
    ts = _toolset(stdio_listing, tmp_path, env={"MCP_TEST_HANG_MARK": str(mark)})
    task = asyncio.create_task(Agent(model=ScriptedModel([_calls(("hang", {})), "done"]), tools=ts.tools).run("go"))
    for _ in range(400):
        if mark.exists():
            break
        await asyncio.sleep(0.025)
    assert mark.exists(), "the hanging tool was never entered"
    (pid,) = _pids(tmp_path / "pids")
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert pid_gone(pid), "the run's server outlived the cancelled run"


async def test_two_slots_for_different_servers_under_one_name_never_share_a_session(
        stdio_listing: Any, tmp_path: Path) -> None:
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    a = _toolset(stdio_listing, tmp_path / "a", name="same", prefix="a_")
    b = _toolset(stdio_listing, tmp_path / "b", name="same", prefix="b_")
    again = _toolset(stdio_listing, tmp_path / "a", name="same", prefix="c_")  # the same server as `a`
    model = ScriptedModel([_calls(("a_write_note", {"text": "x"}), ("b_write_note", {"text": "y"}),
                                  ("c_write_note", {"text": "z"})), "done"])
    result = await Agent(model=model, tools=(*a.tools, *b.tools, *again.tools), parallel_side_effects=True).run("go")
    assert result.output == "done"
    # parallel_side_effects: x and z go concurrently down one session, so either order is right
    assert sorted((tmp_path / "a" / "calls").read_text().split()) == ["x", "z"]
    assert (tmp_path / "b" / "calls").read_text().split() == ["y"]
    assert len(_pids(tmp_path / "a" / "pids")) == 1 and len(_pids(tmp_path / "b" / "pids")) == 1


async def test_python_means_seamkits_interpreter_and_cwd_is_relative_to_the_yaml_file(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import shutil

    from seamkit.composition import build_agent, load_composition

    here = tmp_path / "agents"
    (here / "servers").mkdir(parents=True)
    shutil.copy(SERVER, here / "servers" / "srv.py")
    bin_dir = tmp_path / "bin"  # on PATH, a `python` that is not this interpreter (and cannot serve)
    bin_dir.mkdir()
    (bin_dir / "python").write_text("#!/bin/sh\necho 'not the python seamkit runs on' >&2\nexit 3\n")
    (bin_dir / "python").chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}:{os.environ['PATH']}")
    (here / "agent.yaml").write_text("""
seamkit: 1
agent:
  model: {use: scripted, turns: [{tool_calls: [{name: ping, arguments: {}}]}, {text: done}]}
  tools:
    - use: mcp
      server: {command: python, args: [srv.py, stdio], cwd: servers}
      allow: [ping]
      resources: false
      prompts: false
  checkpoints: null
""")
    monkeypatch.chdir(tmp_path)  # cwd: servers is found next to the YAML file, not here
    agent = build_agent(load_composition(here / "agent.yaml"))
    result = await agent.run("go")
    (r,) = [r for m in result.transcript for r in m.tool_results]
    assert (r.content, r.is_error) == ('{"result":"pong"}', False)


def test_resource_and_prompt_tools_only_when_the_server_has_some(stdio_listing: Any, tmp_path: Path) -> None:
    import dataclasses

    assert stdio_listing.resources and stdio_listing.prompts  # the test server has both
    names = [t.schema.name for t in _toolset(stdio_listing, tmp_path).tools]
    assert set(HELPERS) <= set(names)
    empty = dataclasses.replace(stdio_listing, resources=(), prompts=())  # the capability declared, nothing behind
    names = [t.schema.name for t in _toolset(empty, tmp_path).tools]
    assert names == SERVER_TOOLS


async def test_a_side_effecting_call_the_server_refuses_as_a_request_is_recorded_as_not_applied(
        tmp_path: Path) -> None:
    server = str(Path(SERVER).with_name("mcp_refusing_server.py"))
    ts = build_toolset(McpConfig(server={"command": sys.executable, "args": [server]}))
    (transfer,) = ts.tools
    assert transfer.schema.side_effecting
    model = ScriptedModel([_calls(("transfer", {"amount": -5})), "done"])
    result = await Agent(model=model, tools=ts.tools, checkpointer=Checkpointer(MemoryStore())).run("go")
    # the server said the request was invalid: the tool never ran, so nothing waits to be settled
    assert (result.stop_reason, result.output, result.uncertain_effects) == ("completed", "done", ())
    r = _results(result)["c0"]
    assert r.is_error and "refused the call of 'transfer': amount must be positive" in r.content
