"""The tracer and meter providers the ``otel`` middleware builds for a configured exporter.

Imported only when an exporter is configured: this is where the OpenTelemetry SDK (and an OTLP
exporter package) is loaded. The providers are never installed globally
(``trace.set_tracer_provider`` is never called); they shut down (flushing the batched spans and
the last metrics) when the process exits (``shutdown_on_exit``), or when
:meth:`Providers.shutdown` is called.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from typing import Any

from seamkit_otel.config import ConsoleExporterConfig, OtelConfig, OtlpExporterConfig

__all__ = ["Providers", "build_providers"]


class _Stderr:
    """Writes to whatever ``sys.stderr`` is at the time (the CLI wraps it to mask secrets)."""

    def write(self, text: str) -> int:
        return sys.stderr.write(text)

    def flush(self) -> None:
        sys.stderr.flush()


@dataclass
class Providers:
    """A tracer provider and, when metrics are on, a meter provider, both owned by one middleware."""

    tracer_provider: Any
    meter_provider: Any | None
    describe: str
    span_processor: Any = None  # the tracer provider's processor, which the lean tracer ends spans into

    def shutdown(self) -> None:
        """Flush and stop both providers (blocking: export calls run here). Idempotent."""
        self.tracer_provider.shutdown()
        if self.meter_provider is not None:
            self.meter_provider.shutdown()


def _exporters(exporter: ConsoleExporterConfig | OtlpExporterConfig) -> tuple[Any, Any]:
    """The span exporter and the metric exporter of ``exporter``."""
    if isinstance(exporter, ConsoleExporterConfig):
        from opentelemetry.sdk.metrics.export import ConsoleMetricExporter
        from opentelemetry.sdk.trace.export import ConsoleSpanExporter

        out: Any = _Stderr()
        return ConsoleSpanExporter(out=out), ConsoleMetricExporter(out=out)
    headers = {k: v.get_secret_value() for k, v in exporter.headers.items()}
    if exporter.protocol == "grpc":
        from opentelemetry.exporter.otlp.proto.grpc.metric_exporter import OTLPMetricExporter as GrpcMetrics
        from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter as GrpcSpans

        insecure = exporter.endpoint.lower().startswith("http://")
        # grpc metadata keys must be lower case
        pairs = tuple((k.lower(), v) for k, v in headers.items())
        return (GrpcSpans(endpoint=exporter.endpoint, insecure=insecure, headers=pairs, timeout=exporter.timeout_s),
                GrpcMetrics(endpoint=exporter.endpoint, insecure=insecure, headers=pairs, timeout=exporter.timeout_s))
    from opentelemetry.exporter.otlp.proto.http.metric_exporter import OTLPMetricExporter as HttpMetrics
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter as HttpSpans

    return (HttpSpans(endpoint=exporter.endpoint + "/v1/traces", headers=dict(headers), timeout=exporter.timeout_s),
            HttpMetrics(endpoint=exporter.endpoint + "/v1/metrics", headers=dict(headers), timeout=exporter.timeout_s))


def describe(exporter: ConsoleExporterConfig | OtlpExporterConfig) -> str:
    """A short description without secrets (``console``, ``otlp grpc http://host:4317``)."""
    if isinstance(exporter, ConsoleExporterConfig):
        return "console"
    return f"otlp {exporter.protocol} {exporter.endpoint}"


def build_providers(config: OtelConfig) -> Providers:
    """Providers exporting to ``config.exporter`` (which must be set): a ``TracerProvider`` with a
    ``BatchSpanProcessor`` and, when ``config.metrics``, a ``MeterProvider`` with a
    ``PeriodicExportingMetricReader`` every ``config.metrics_interval_s`` seconds. Both carry the
    resource ``service.name = config.service_name``."""
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor

    exporter = config.exporter
    if exporter is None:
        raise ValueError("no exporter configured")
    span_exporter, metric_exporter = _exporters(exporter)
    resource = Resource.create({"service.name": config.service_name})
    tracer_provider = TracerProvider(resource=resource, shutdown_on_exit=True)
    processor = BatchSpanProcessor(span_exporter)
    tracer_provider.add_span_processor(processor)
    meter_provider = None
    if config.metrics:
        from opentelemetry.sdk.metrics import MeterProvider
        from opentelemetry.sdk.metrics.export import PeriodicExportingMetricReader

        reader = PeriodicExportingMetricReader(metric_exporter,
                                               export_interval_millis=config.metrics_interval_s * 1000)
        meter_provider = MeterProvider(metric_readers=[reader], resource=resource, shutdown_on_exit=True)
    return Providers(tracer_provider, meter_provider, describe(exporter), processor)
