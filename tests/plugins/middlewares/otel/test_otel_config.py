"""The ``otel`` configuration and what it must never do: bad exporters are located composition
errors; header values never show in reprs; no global provider is installed; without an exporter
the application's global providers get the spans (and with none, calls pass straight through);
importing the plugin imports no OpenTelemetry module; the console exporter writes to stderr."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from opentelemetry import metrics, trace
from otel_testlib import OtlpReceiver, plugin_paths
from seamkit._cli.main import main
from seamkit.composition import build_agent, load_composition
from seamkit_otel.config import OtelConfig
from seamkit_otel.middleware import Otel, build

TOKEN = "otlp-token-abcdef0123456789"


def _validate(tmp_path: Path, exporter: str, capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    path = tmp_path / "agent.yaml"
    path.write_text(f"seamkit: 1\nagent:\n  model: {{use: scripted, turns: [hi]}}\n  middlewares:\n"
                    f"    - use: otel\n      exporter: {exporter}\n")
    code = main(["validate", str(path)])
    return code, capsys.readouterr().err


@pytest.mark.parametrize(("exporter", "where", "says"), [
    ('{kind: otlp, endpoint: "ftp://collector:4317"}', ":6:40: agent.middlewares[0].exporter.endpoint",
     "endpoint must start with http:// or https://"),
    ('{kind: otlp, endpoint: "http://user:pw@collector:4318"}', ":6:40: agent.middlewares[0].exporter.endpoint",
     "must not hold credentials"),
    ('{kind: otlp, endpoint: "http://collector:99999"}', ":6:40: agent.middlewares[0].exporter.endpoint",
     "endpoint is not a valid URL"),
    ('{kind: jaeger, endpoint: "http://c:1"}', ":6:17: agent.middlewares[0].exporter", "'jaeger'"),
    ('{kind: otlp, protocol: thrift, endpoint: "http://c:1"}', ":6:40: agent.middlewares[0].exporter.protocol",
     "'http/protobuf' or 'grpc'"),
    ("zipkin", ":6:17: agent.middlewares[0].exporter", "unknown exporter 'zipkin'"),
    # the keys of the member the kind picks, never those of the other member
    ('{kind: console, endpoint: "http://c:1"}', ":6:33: agent.middlewares[0].exporter.endpoint",
     "unknown key 'endpoint' for middleware 'otel' (allowed: kind)"),
    # a signal's own URL (OTEL_EXPORTER_OTLP_TRACES_ENDPOINT style) would export to /v1/traces/v1/traces
    ('{kind: otlp, endpoint: "http://collector:4318/v1/traces"}', ":6:40: agent.middlewares[0].exporter.endpoint",
     "leave out /v1/traces"),
    ('{kind: otlp, endpoint: "http://collector:4318/otlp/v1/metrics/"}',
     ":6:40: agent.middlewares[0].exporter.endpoint", "leave out /v1/metrics"),
])
def test_a_bad_exporter_is_a_located_composition_error(tmp_path: Path, otel_plugin: None, exporter: str,
                                                       where: str, says: str,
                                                       capsys: pytest.CaptureFixture[str]) -> None:
    code, err = _validate(tmp_path, exporter, capsys)
    assert code == 2
    line = next(x for x in err.splitlines() if "agent.middlewares[0]" in x)
    assert line.startswith(str(tmp_path / "agent.yaml") + where) and says in line, err
    assert "pw@" not in err


def test_a_good_exporter_validates(tmp_path: Path, otel_plugin: None, capsys: pytest.CaptureFixture[str]) -> None:
    code, err = _validate(tmp_path, '{kind: otlp, protocol: grpc, endpoint: "http://collector:4317/"}', capsys)
    assert code == 0, err


def test_a_base_path_is_kept_in_the_endpoint(tmp_path: Path, otel_plugin: None,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    code, err = _validate(tmp_path, '{kind: otlp, endpoint: "https://gateway.example/otlp/"}', capsys)
    assert code == 0, err


@pytest.mark.parametrize("value", [f"Bearer {TOKEN}\\n", f"{TOKEN}\\r\\nX-Injected: 1", f" {TOKEN}", f"{TOKEN}\\x00"])
def test_a_header_value_the_http_client_would_refuse_is_a_located_error_that_never_shows_it(
        tmp_path: Path, otel_plugin: None, value: str, capsys: pytest.CaptureFixture[str]) -> None:
    # the HTTP client refuses such a value at every export and logs it, credential included
    code, err = _validate(tmp_path, f'{{kind: otlp, endpoint: "http://c:4318", headers: {{authorization: "{value}"}}}}',
                          capsys)
    assert code == 2
    line = next(x for x in err.splitlines() if "agent.middlewares[0]" in x)
    assert line.startswith(str(tmp_path / "agent.yaml") + ":6:") and "exporter.headers" in line, err
    assert "line break, a control character or surrounding spaces" in line
    assert TOKEN[:12] not in err


def test_content_max_chars_reaches_the_middleware_and_is_bounded() -> None:
    assert build(OtelConfig.model_validate({"content_max_chars": 100}))._masker.max_chars == 100
    assert build(OtelConfig())._masker.max_chars == 65536
    with pytest.raises(ValueError, match="content_max_chars"):
        OtelConfig.model_validate({"content_max_chars": 3})


def test_header_values_never_show_in_reprs() -> None:
    cfg = OtelConfig.model_validate({"exporter": {"kind": "otlp", "endpoint": "http://127.0.0.1:4318",
                                                  "headers": {"authorization": TOKEN}}})
    mw = build(cfg)
    try:
        assert TOKEN not in repr(cfg) and TOKEN not in str(cfg)
        assert TOKEN not in repr(mw) and repr(mw) == "Otel(exporter=otlp http/protobuf http://127.0.0.1:4318, " \
                                                     "capture_content=False)"
        assert TOKEN not in repr(mw.owned) and TOKEN not in repr(mw.__dict__)
    finally:
        mw.owned.shutdown()


def test_building_and_running_with_an_exporter_installs_no_global_provider(tmp_path: Path, otel_plugin: None,
                                                                           otlp: OtlpReceiver) -> None:
    before = trace.get_tracer_provider(), metrics.get_meter_provider()
    path = tmp_path / "a.yaml"
    path.write_text(textwrap.dedent(f"""\
        seamkit: 1
        agent:
          model: {{use: scripted, turns: [hi]}}
          checkpoints: null
          middlewares: [{{use: otel, exporter: {{kind: otlp, endpoint: "{otlp.endpoint}"}}, metrics: false}}]
        """))
    agent = build_agent(load_composition(path))
    (mw,) = agent.middlewares
    assert isinstance(mw, Otel) and mw.owned is not None
    assert agent.run_sync("x").output == "hi"
    assert (trace.get_tracer_provider(), metrics.get_meter_provider()) == before
    mw.owned.shutdown()
    assert sorted(s["name"] for s in otlp.spans()) == ["chat scripted", "invoke_agent a"]  # named after the file


def _python(code: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SEAMKIT_", "OTEL_"))}
    env["PYTHONPATH"] = os.pathsep.join(sys.path)
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], env=env, capture_output=True, text=True,
                          timeout=120, check=False)


def test_importing_the_plugin_imports_no_opentelemetry_and_building_without_exporter_no_sdk() -> None:
    done = _python("""
        import sys
        import seamkit, seamkit_otel, seamkit_otel.plugin, seamkit_otel.config
        assert not [m for m in sys.modules if m.startswith("opentelemetry")], "imported at plugin load"
        from seamkit_otel.middleware import build
        from seamkit_otel.config import OtelConfig
        build(OtelConfig())
        assert "opentelemetry.trace" in sys.modules
        assert not [m for m in sys.modules if m.startswith("opentelemetry.sdk")], "SDK imported without exporter"
        print("ok")
    """)
    assert done.returncode == 0 and done.stdout.strip() == "ok", done.stderr


def test_without_exporter_the_applications_global_provider_gets_the_spans_and_without_one_nothing_runs() -> None:
    done = _python("""
        from seamkit import Agent
        from seamkit._middleware import Call
        from seamkit.testing import ScriptedModel, make_test_ctx
        from seamkit.values import ChatRequest, Message
        from seamkit_otel.config import OtelConfig
        from seamkit_otel.middleware import build

        mw = build(OtelConfig())          # built before the application configures OpenTelemetry
        sentinel = object()
        call = Call("chat", ChatRequest((Message.user("x"),)), make_test_ctx())
        assert mw(call, lambda c: sentinel) is sentinel, "no provider anywhere: the call must pass straight through"

        from opentelemetry import trace
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import SimpleSpanProcessor
        from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

        exporter = InMemorySpanExporter()
        app = TracerProvider()
        app.add_span_processor(SimpleSpanProcessor(exporter))
        trace.set_tracer_provider(app)     # the application's own setup
        tracer = trace.get_tracer("app")
        with tracer.start_as_current_span("request") as root:
            Agent(ScriptedModel(["hi"]), name="a", middlewares=[mw]).run_sync("x")
        spans = {s.name: s for s in exporter.get_finished_spans()}
        assert sorted(spans) == ["chat scripted", "invoke_agent a", "request"], sorted(spans)
        assert spans["invoke_agent a"].parent.span_id == root.get_span_context().span_id
        assert trace.get_tracer_provider() is app
        print("ok")
    """)
    assert done.returncode == 0 and done.stdout.strip() == "ok", done.stderr




def test_the_console_exporter_writes_to_stderr_and_leaves_stdout_to_the_answer(tmp_path: Path) -> None:
    (tmp_path / "a.yaml").write_text(textwrap.dedent("""\
        seamkit: 1
        agent:
          name: echo
          model: {use: scripted, turns: ["the answer"]}
          checkpoints: null
          middlewares: [{use: otel, exporter: console}]
        """))
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SEAMKIT_", "OTEL_"))}
    env["PYTHONPATH"] = os.pathsep.join(plugin_paths(tmp_path))
    done = subprocess.run([sys.executable, "-m", "seamkit", "run", "a.yaml", "go"], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "the answer"
    assert '"name": "invoke_agent echo"' in done.stderr and '"gen_ai.operation.name": "chat"' in done.stderr
    assert "gen_ai.client.operation.duration" in done.stderr
