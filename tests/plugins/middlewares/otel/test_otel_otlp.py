"""OTLP round trips: a composed agent (YAML through the real loader, the real ``openai_chat``
provider talking to a fake Chat Completions server on loopback, ``retry`` and ``otel``) exports to
a local OTLP/HTTP receiver; the received protobuf is decoded and checked (span names, parents,
``gen_ai.*`` attributes, metrics), content appears only when capture is on, and no exported byte
holds a secret. The gRPC exporter is built with its endpoint and headers and exports to a local
gRPC collector. ``seamkit run`` flushes its spans when it exits."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import threading
from collections.abc import Callable, Iterator
from concurrent import futures
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from otel_testlib import OtlpReceiver, attributes, plugin_paths
from seamkit import tool
from seamkit._hookspecs import hookimpl
from seamkit.composition import build_agent, load_composition

PROVIDER_KEY = "sk-proj-PROVIDERkey0123456789abcdef"
HEADER_TOKEN = "otlp-HEADERtoken-9876543210fedcba"
TOOL_SECRET = "pw-TOOLsecret-5555aaaa7777bbbb"
TASK = "Please log Ada in"


def _chunk(delta: dict[str, Any] | None, finish: str | None = None, usage: dict[str, Any] | None = None) -> bytes:
    obj: dict[str, Any] = {"id": "chatcmpl-otel1", "object": "chat.completion.chunk", "created": 1741570283,
                           "model": "gpt-4o-mini-2024-07-18"}
    obj["choices"] = [] if usage is not None else [{"index": 0, "delta": delta, "finish_reason": finish}]
    if usage is not None:
        obj["usage"] = usage
    return b"data: " + json.dumps(obj).encode() + b"\n\n"


def _usage(prompt: int, completion: int) -> dict[str, Any]:
    return {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion}


TOOL_TURN = [
    _chunk({"role": "assistant", "content": None, "tool_calls": [{
        "index": 0, "id": "call_login_1", "type": "function",
        "function": {"name": "login", "arguments": json.dumps({"user": "ada", "api_key": TOOL_SECRET})}}]}),
    _chunk({}, "tool_calls"), _chunk(None, usage=_usage(40, 12)), b"data: [DONE]\n\n"]
# the model echoes the provider's own key: content capture must still mask it
FINAL_TURN = [_chunk({"role": "assistant", "content": f"Ada is in (key {PROVIDER_KEY})."}), _chunk({}, "stop"),
              _chunk(None, usage=_usage(60, 8)), b"data: [DONE]\n\n"]


class FakeOpenAI:
    """A Chat Completions server on loopback answering, per run: 503, a tool call, a final text."""

    def __init__(self) -> None:
        self.calls = 0
        self.auth: list[str | None] = []
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                self.rfile.read(int(self.headers.get("content-length") or 0))
                fake.auth.append(self.headers.get("authorization"))
                step = fake.calls % 3
                fake.calls += 1
                if step == 0:
                    body = json.dumps({"error": {"message": "The server is overloaded", "type": "server_error",
                                                 "param": None, "code": None}}).encode()
                    self.send_response(503)
                    self.send_header("content-type", "application/json")
                    self.send_header("content-length", str(len(body)))
                    self.end_headers()
                    self.wfile.write(body)
                    return
                chunks = TOOL_TURN if step == 1 else FINAL_TURN
                self.send_response(200)
                self.send_header("content-type", "text/event-stream")
                self.end_headers()
                for c in chunks:
                    self.wfile.write(c)
                self.wfile.flush()
                self.close_connection = True

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    @property
    def port(self) -> int:
        return int(self.server.server_address[1])

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@tool(side_effecting=False)
def login(user: str, api_key: str) -> str:
    """Log a user in.

    Args:
        user: Who.
        api_key: The user's key.
    """
    return f"{user} logged in"


class LoginTool:
    @hookimpl
    def seamkit_register_tools(self, register: Any) -> None:
        register("login", lambda config=None: login, description="test: log a user in")


@pytest.fixture
def openai_server() -> Iterator[FakeOpenAI]:
    s = FakeOpenAI()
    yield s
    s.close()


@pytest.fixture
def composed(tmp_path: Path, otel_plugin: None, register_plugin: Callable[..., Any], openai_server: FakeOpenAI,
             otlp: OtlpReceiver, monkeypatch: pytest.MonkeyPatch) -> Callable[[bool], Path]:
    assert register_plugin(LoginTool(), "otel-test-login").status == "ok"
    monkeypatch.setenv("OPENAI_KEY", PROVIDER_KEY)
    monkeypatch.setenv("OTLP_TOKEN", HEADER_TOKEN)

    def write(capture: bool) -> Path:
        path = tmp_path / f"agent-{capture}.yaml"
        path.write_text(textwrap.dedent(f"""\
            seamkit: 1
            agent:
              name: desk
              model:
                use: openai_chat
                model: gpt-4o-mini
                base_url: "http://127.0.0.1:{openai_server.port}/v1"
                api_key: ${{OPENAI_KEY}}
                local: false
                price: {{input: "2.50", output: "10.00"}}
              prompt: You log people in.
              tools: [{{use: login}}]
              checkpoints: null
              middlewares:
                - {{use: retry, max_attempts: 3, base_delay_s: 0.01, max_delay_s: 0.01}}
                - use: otel
                  service_name: desk-service
                  capture_content: {str(capture).lower()}
                  exporter:
                    kind: otlp
                    endpoint: "{otlp.endpoint}"
                    headers: {{authorization: "Bearer ${{OTLP_TOKEN}}"}}
            """))
        return path

    return write


async def _run(path: Path) -> Any:
    agent = build_agent(load_composition(path))
    result = await agent.run(TASK)
    otel_mw = next(m for m in agent.middlewares if type(m).__name__ == "Otel")
    await otel_mw.aclose()  # flush the batch processor and the metric reader, as process exit does
    return result


async def test_otlp_http_round_trip_spans_parents_attributes_and_metrics(
        composed: Callable[[bool], Path], otlp: OtlpReceiver, openai_server: FakeOpenAI) -> None:
    result = await _run(composed(False))
    assert result.output == f"Ada is in (key {PROVIDER_KEY})."
    assert openai_server.calls == 3  # the 503 was retried
    spans = otlp.spans()
    by_name: dict[str, list[dict[str, Any]]] = {}
    for s in spans:
        by_name.setdefault(s["name"], []).append(s)
    assert sorted(by_name) == ["chat gpt-4o-mini", "execute_tool login", "invoke_agent desk"]
    (run,) = by_name["invoke_agent desk"]
    chats = by_name["chat gpt-4o-mini"]
    (tool_span,) = by_name["execute_tool login"]
    assert len(chats) == 3
    assert run["parent_id"] is None
    assert {s["parent_id"] for s in [*chats, tool_span]} == {run["span_id"]}
    assert {s["trace_id"] for s in spans} == {run["trace_id"]}
    assert run["resource"]["service.name"] == "desk-service" and run["scope"] == "seamkit.otel"
    # span kinds (protobuf enum): INTERNAL = 1, CLIENT = 3; status ERROR = 2
    assert run["kind"] == 1 and tool_span["kind"] == 1 and {c["kind"] for c in chats} == {3}
    failed = [c for c in chats if c["status"] == 2]
    assert len(failed) == 1 and failed[0]["attributes"]["error.type"] == "server_error"
    assert [e for e, _ in failed[0]["events"]] == ["exception"]
    ok = [c["attributes"] for c in chats if c["status"] != 2]
    for a in ok:
        assert a["gen_ai.operation.name"] == "chat" and a["gen_ai.provider.name"] == "openai"
        assert a["gen_ai.request.model"] == "gpt-4o-mini" and a["gen_ai.response.model"] == "gpt-4o-mini-2024-07-18"
        assert a["server.address"] == "127.0.0.1" and a["server.port"] == openai_server.port
    assert sorted(a["gen_ai.response.finish_reasons"][0] for a in ok) == ["stop", "tool_calls"]
    assert sorted((a["gen_ai.usage.input_tokens"], a["gen_ai.usage.output_tokens"]) for a in ok) == [(40, 12), (60, 8)]
    # 40 in + 12 out at $2.50 / $10.00 per 1M tokens: exact decimal text
    assert sorted(a["seamkit.cost.usd"] for a in ok) == ["0.00022", "0.00023"]
    r = run["attributes"]
    assert r["gen_ai.operation.name"] == "invoke_agent" and r["gen_ai.agent.name"] == "desk"
    assert r["seamkit.run.id"] == result.run_id and r["seamkit.cost.usd"] == "0.00045"
    t = tool_span["attributes"]
    assert (t["gen_ai.tool.name"], t["gen_ai.tool.call.id"]) == ("login", "call_login_1")
    wanted = {"gen_ai.client.token.usage", "gen_ai.client.operation.duration", "seamkit.client.cost"}
    assert wanted <= otlp.metric_names()
    # headers reached the collector; no content was exported
    assert {r.headers.get("authorization") for r in otlp.requests} == {f"Bearer {HEADER_TOKEN}"}
    raw = otlp.raw()
    for absent in (TASK, "You log people in", "logged in", "gen_ai.input.messages", "gen_ai.tool.call.arguments"):
        assert absent.encode() not in raw


async def test_content_capture_exports_the_messages_and_no_byte_holds_a_secret(
        composed: Callable[[bool], Path], otlp: OtlpReceiver) -> None:
    await _run(composed(False))
    await _run(composed(True))
    captured = [s for s in otlp.spans() if "gen_ai.input.messages" in s["attributes"]]
    assert captured, "no span carried the input messages"
    chats = [s["attributes"] for s in captured if s["name"].startswith("chat ")]
    assert json.loads(chats[0]["gen_ai.system_instructions"]) == [{"type": "text", "content": "You log people in."}]
    first_user = json.loads(chats[0]["gen_ai.input.messages"])[0]
    assert first_user == {"role": "user", "parts": [{"type": "text", "content": TASK}]}
    (tool_span,) = [s["attributes"] for s in otlp.spans() if s["name"] == "execute_tool login"
                    and "gen_ai.tool.call.arguments" in s["attributes"]]
    assert json.loads(tool_span["gen_ai.tool.call.arguments"]) == {"user": "ada", "api_key": "***"}
    assert tool_span["gen_ai.tool.call.result"] == "ada logged in"
    outputs = [json.loads(a["gen_ai.output.messages"]) for a in chats if "gen_ai.output.messages" in a]
    assert [{"type": "text", "content": "Ada is in (key ***)."}] in [o[0]["parts"] for o in outputs]
    # every byte the collector received, headers and bodies of both runs, traces and metrics
    raw = otlp.raw()
    assert TASK.encode() in raw  # content was exported...
    assert f"Bearer {HEADER_TOKEN}".encode() in raw  # ...and the header was sent where it belongs
    bodies = b"".join(r.body for r in otlp.requests)
    for secret in (PROVIDER_KEY, HEADER_TOKEN, TOOL_SECRET):
        assert secret.encode() not in bodies, secret
        assert secret[: len(secret) // 2].encode() not in bodies, secret


def test_the_grpc_exporter_is_built_with_its_endpoint_and_headers() -> None:
    from seamkit_otel.config import OtelConfig
    from seamkit_otel.exporters import build_providers

    cfg = OtelConfig.model_validate({"exporter": {"kind": "otlp", "protocol": "grpc", "endpoint": "https://otel.example:4317",
                                                  "headers": {"X-Api-Key": HEADER_TOKEN}, "timeout_s": 3}})
    owned = build_providers(cfg)
    try:
        (processor,) = owned.tracer_provider._active_span_processor._span_processors
        exporter = processor._batch_processor._exporter
        assert type(exporter).__module__ == "opentelemetry.exporter.otlp.proto.grpc.trace_exporter"
        assert exporter._endpoint == "otel.example:4317" and exporter._insecure is False
        assert ("x-api-key", HEADER_TOKEN) in tuple(exporter._headers)
        assert exporter._timeout == 3
        assert owned.describe == "otlp grpc https://otel.example:4317"
    finally:
        owned.shutdown()


def test_a_grpc_round_trip_reaches_a_local_collector(rec_grpc: tuple[str, list[Any]]) -> None:
    import asyncio

    from seamkit import Agent
    from seamkit.testing import ScriptedModel
    from seamkit_otel.config import OtelConfig
    from seamkit_otel.middleware import build

    endpoint, received = rec_grpc
    mw = build(OtelConfig.model_validate({"exporter": {"kind": "otlp", "protocol": "grpc", "endpoint": endpoint,
                                                       "headers": {"authorization": HEADER_TOKEN}}}))
    Agent(ScriptedModel(["hi"]), name="g", middlewares=[mw]).run_sync("x")
    asyncio.run(mw.aclose())
    names = []
    for request, metadata in received:
        assert ("authorization", HEADER_TOKEN) in metadata
        for rs in request.resource_spans:
            for ss in rs.scope_spans:
                names.extend((s.name, attributes(s.attributes).get("gen_ai.operation.name")) for s in ss.spans)
    assert sorted(names) == [("chat scripted", "chat"), ("invoke_agent g", "invoke_agent")]


@pytest.fixture
def rec_grpc() -> Iterator[tuple[str, list[Any]]]:
    grpc = pytest.importorskip("grpc")
    from opentelemetry.proto.collector.trace.v1 import trace_service_pb2, trace_service_pb2_grpc

    received: list[Any] = []

    class Collector(trace_service_pb2_grpc.TraceServiceServicer):
        def Export(self, request: Any, context: Any) -> Any:
            received.append((request, tuple(context.invocation_metadata())))
            return trace_service_pb2.ExportTraceServiceResponse()

    server = grpc.server(futures.ThreadPoolExecutor(max_workers=2))
    trace_service_pb2_grpc.add_TraceServiceServicer_to_server(Collector(), server)
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    yield f"http://127.0.0.1:{port}", received
    server.stop(None)


# --- seamkit run: the last spans are flushed when the process exits ---------------------------




def test_seamkit_run_exports_its_spans_before_it_exits(tmp_path: Path, otlp: OtlpReceiver) -> None:
    (tmp_path / "a.yaml").write_text(textwrap.dedent(f"""\
        seamkit: 1
        agent:
          name: adder
          model:
            use: scripted
            turns:
              - tool_calls: [{{name: calculator, arguments: {{expression: "2+3"}}}}]
              - "five"
          tools: [calculator]
          checkpoints: null
          middlewares:
            - use: otel
              exporter: {{kind: otlp, endpoint: "{otlp.endpoint}"}}
        """))
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SEAMKIT_", "OTEL_"))}
    env["PYTHONPATH"] = os.pathsep.join(plugin_paths(tmp_path))
    done = subprocess.run([sys.executable, "-m", "seamkit", "run", "a.yaml", "add two and three"], cwd=tmp_path,
                          env=env, capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0 and done.stdout.strip() == "five", done.stderr
    names = sorted(s["name"] for s in otlp.spans())
    assert names == ["chat scripted", "chat scripted", "execute_tool calculator", "invoke_agent adder"]
    assert "gen_ai.client.operation.duration" in otlp.metric_names()


async def test_the_credential_of_an_authorization_header_is_masked_alone_in_captured_content(
        tmp_path: Path, otlp: OtlpReceiver, monkeypatch: pytest.MonkeyPatch) -> None:
    # the header is "Bearer ${OTLP_TOKEN}": a model (or a user) quoting the token without the
    # scheme must not export it
    monkeypatch.setenv("OTLP_TOKEN", HEADER_TOKEN)
    path = tmp_path / "a.yaml"
    path.write_text(textwrap.dedent(f"""\
        seamkit: 1
        agent:
          name: echo
          model: {{use: scripted, turns: ["the token is {HEADER_TOKEN}, cut: {HEADER_TOKEN[:20]}"]}}
          checkpoints: null
          middlewares:
            - use: otel
              capture_content: true
              exporter:
                kind: otlp
                endpoint: "{otlp.endpoint}"
                headers: {{authorization: "Bearer ${{OTLP_TOKEN}}"}}
        """))
    await _run(path)
    outputs = [s["attributes"]["gen_ai.output.messages"] for s in otlp.spans() if s["name"] == "chat scripted"]
    assert outputs and "the token is ***, cut: ***" in outputs[0]
    bodies = b"".join(r.body for r in otlp.requests)
    assert HEADER_TOKEN[:12].encode() not in bodies
    assert {r.headers.get("authorization") for r in otlp.requests} == {f"Bearer {HEADER_TOKEN}"}
