"""Helpers for the otel tests: SDK providers with in-memory exporters, a local OTLP/HTTP receiver
(stdlib ``http.server`` on loopback) that keeps every raw request body, and decoders of the OTLP
protobuf it receives (``opentelemetry-proto``'s ``ExportTraceServiceRequest`` /
``ExportMetricsServiceRequest``)."""

from __future__ import annotations

import sys
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from opentelemetry.proto.collector.metrics.v1.metrics_service_pb2 import (
    ExportMetricsServiceRequest,
    ExportMetricsServiceResponse,
)
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter


@dataclass
class Recorder:
    """An SDK tracer provider exporting to memory, and a meter provider read on demand."""

    exporter: InMemorySpanExporter = field(default_factory=InMemorySpanExporter)
    reader: InMemoryMetricReader = field(default_factory=InMemoryMetricReader)
    lean: bool = False  # the middleware ends its spans into the processor (seamkit_otel.lean)

    def __post_init__(self) -> None:
        self.tracer_provider = TracerProvider()
        self.processor = SimpleSpanProcessor(self.exporter)
        self.tracer_provider.add_span_processor(self.processor)
        self.meter_provider = MeterProvider(metric_readers=[self.reader])

    def spans(self) -> list[ReadableSpan]:
        return list(self.exporter.get_finished_spans())

    def named(self, prefix: str) -> list[ReadableSpan]:
        return [s for s in self.spans() if s.name.startswith(prefix)]

    def one(self, name: str) -> ReadableSpan:
        found = [s for s in self.spans() if s.name == name]
        assert len(found) == 1, [s.name for s in self.spans()]
        return found[0]

    def metrics(self) -> dict[str, list[Any]]:
        """Metric name -> its data points."""
        out: dict[str, list[Any]] = {}
        data = self.reader.get_metrics_data()
        for rm in data.resource_metrics if data is not None else ():
            for sm in rm.scope_metrics:
                for m in sm.metrics:
                    out.setdefault(m.name, []).extend(m.data.data_points)
        return out


def parent_id(span: ReadableSpan) -> int | None:
    return span.parent.span_id if span.parent is not None else None


# --- OTLP/HTTP receiver ---------------------------------------------------------------------


@dataclass
class Received:
    path: str
    headers: dict[str, str]
    body: bytes


class OtlpReceiver:
    """Accepts ``POST /v1/traces`` and ``POST /v1/metrics`` (protobuf) on 127.0.0.1 and keeps each
    request (path, headers, raw body). ``endpoint``: its base URL."""

    def __init__(self) -> None:
        self.requests: list[Received] = []
        self.lock = threading.Lock()
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                n = int(self.headers.get("content-length") or 0)
                body = self.rfile.read(n)
                with receiver.lock:
                    receiver.requests.append(Received(self.path, {k.lower(): v for k, v in self.headers.items()},
                                                      body))
                if self.path == "/v1/traces":
                    reply = ExportTraceServiceResponse().SerializeToString()
                elif self.path == "/v1/metrics":
                    reply = ExportMetricsServiceResponse().SerializeToString()
                else:
                    self.send_response(404)
                    self.end_headers()
                    return
                self.send_response(200)
                self.send_header("content-type", "application/x-protobuf")
                self.send_header("content-length", str(len(reply)))
                self.end_headers()
                self.wfile.write(reply)

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}"

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()

    def raw(self) -> bytes:
        """Every byte received, all requests' headers and bodies together."""
        with self.lock:
            return b"".join(repr(r.headers).encode() + r.body for r in self.requests)

    def spans(self) -> list[dict[str, Any]]:
        """Every span received, decoded: name, kind, ids (hex), status code, attributes, events."""
        out = []
        with self.lock:
            bodies = [r.body for r in self.requests if r.path == "/v1/traces"]
        for body in bodies:
            req = ExportTraceServiceRequest()
            req.ParseFromString(body)
            for rs in req.resource_spans:
                resource = attributes(rs.resource.attributes)
                for ss in rs.scope_spans:
                    for s in ss.spans:
                        out.append({
                            "name": s.name, "kind": s.kind, "trace_id": s.trace_id.hex(), "span_id": s.span_id.hex(),
                            "parent_id": s.parent_span_id.hex() or None, "status": s.status.code,
                            "attributes": attributes(s.attributes), "resource": resource, "scope": ss.scope.name,
                            "events": [(e.name, attributes(e.attributes)) for e in s.events],
                        })
        return out

    def metric_names(self) -> set[str]:
        names = set()
        with self.lock:
            bodies = [r.body for r in self.requests if r.path == "/v1/metrics"]
        for body in bodies:
            req = ExportMetricsServiceRequest()
            req.ParseFromString(body)
            for rm in req.resource_metrics:
                for sm in rm.scope_metrics:
                    names.update(m.name for m in sm.metrics)
        return names


def _value(v: Any) -> Any:
    which = v.WhichOneof("value")
    if which == "array_value":
        return [_value(x) for x in v.array_value.values]
    return getattr(v, which) if which else None


def attributes(kvs: Any) -> dict[str, Any]:
    return {kv.key: _value(kv.value) for kv in kvs}


def receiver() -> Iterator[OtlpReceiver]:
    r = OtlpReceiver()
    try:
        yield r
    finally:
        r.close()


def plugin_paths(tmp_path: Path) -> list[str]:
    """sys.path, plus a fake dist-info registering seamkit-otel's entry point when it is not
    installed (for subprocesses running seamkit with the plugin)."""
    import importlib.metadata

    try:
        importlib.metadata.distribution("seamkit-otel")
        return list(sys.path)
    except importlib.metadata.PackageNotFoundError:
        root = tmp_path / "dists"
        info = root / "seamkit_otel-0.1.0.dist-info"
        info.mkdir(parents=True)
        (info / "METADATA").write_text("Metadata-Version: 2.1\nName: seamkit-otel\nVersion: 0.1.0\n")
        (info / "entry_points.txt").write_text("[seamkit]\notel = seamkit_otel.plugin\n")
        return [str(root), *sys.path]
