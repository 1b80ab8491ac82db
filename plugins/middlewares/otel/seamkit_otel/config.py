"""Config model of the ``otel`` middleware (imports only pydantic; no OpenTelemetry module).

```yaml
middlewares:
  - use: otel                                   # no exporter: the application's OpenTelemetry setup
  - {use: otel, exporter: console}              # spans and metrics printed to stderr
  - use: otel
    exporter: {kind: otlp, protocol: http/protobuf, endpoint: "http://collector:4318",
               headers: {authorization: "${OTLP_TOKEN}"}}
    capture_content: true                       # opt-in: messages, tool arguments and results
```
"""

from __future__ import annotations

from typing import Annotated, Literal
from urllib.parse import urlsplit

from pydantic import BaseModel, ConfigDict, Field, SecretStr, field_validator

__all__ = ["CONTENT_MAX_CHARS", "ConsoleExporterConfig", "ExporterConfig", "OtelConfig", "OtlpExporterConfig",
           "check_endpoint"]


#: Default ``content_max_chars``: the most characters kept of one captured text (a message's text
#: part, a tool result, a string in tool arguments). The OTLP exporter drops a whole batch of spans
#: (every span of the run, and of others) above 64 MiB, collectors refuse far less (gRPC: 4 MiB),
#: and a run's history is repeated on each of its chat spans.
CONTENT_MAX_CHARS = 65536

_SIGNAL_PATHS = ("/v1/traces", "/v1/metrics", "/v1/logs")


def check_endpoint(value: str) -> str:
    """``value`` without surrounding spaces and trailing slashes when it is an ``http``/``https``
    URL with a host and a valid port, without credentials, query or fragment, whose path (a base
    path, if any) does not end in a signal's path (``/v1/traces``...); else ``ValueError``
    (whose message never repeats the URL: it could hold a credential)."""
    from seamkit.plugin import check_base_url

    v = check_base_url(value, field="endpoint", echo=False)
    parts = urlsplit(v)
    if parts.username is not None or parts.password is not None:
        raise ValueError("endpoint must not hold credentials (user:password@); send them in headers")
    if parts.query or parts.fragment:
        raise ValueError("endpoint must not have a query or fragment")
    # an OTEL_EXPORTER_OTLP_TRACES_ENDPOINT-style URL would be exported to /v1/traces/v1/traces
    # (a silent 404 per export): the signal paths are appended here, never written
    for signal in _SIGNAL_PATHS:
        if parts.path.rstrip("/").endswith(signal):
            raise ValueError(f"endpoint is the collector's base URL: leave out {signal} "
                             "(/v1/traces and /v1/metrics are appended)")
    return v.rstrip("/")


class ConsoleExporterConfig(BaseModel):
    """``exporter: console`` (or ``{kind: console}``): finished spans and, every
    ``metrics_interval_s`` and at exit, metrics, written as JSON to stderr (stdout stays the run's
    answer)."""

    model_config = ConfigDict(extra="forbid")
    kind: Literal["console"] = "console"


class OtlpExporterConfig(BaseModel):
    """``exporter: {kind: otlp, ...}``: OTLP to a collector.

    ``protocol``: ``http/protobuf`` (``endpoint`` is the base URL, e.g. ``http://localhost:4318``;
    ``/v1/traces`` and ``/v1/metrics`` are appended) or ``grpc`` (e.g. ``http://localhost:4317``;
    an ``http://`` endpoint is a plaintext connection, ``https://`` uses TLS). ``headers`` are sent
    with every export (values are secrets: masked in reprs and errors). ``timeout_s``: seconds per
    export.
    """

    model_config = ConfigDict(extra="forbid")
    kind: Literal["otlp"]
    protocol: Literal["http/protobuf", "grpc"] = Field(
        default="http/protobuf", description="http/protobuf (default) or grpc"
    )
    endpoint: str = Field(description="The collector's base URL, e.g. http://localhost:4318 (http) or "
                                      "http://localhost:4317 (grpc)")
    headers: dict[str, SecretStr] = Field(
        default_factory=dict, description="Headers sent with every export (values masked in reprs)"
    )
    timeout_s: float = Field(default=10.0, gt=0, le=600, description="Seconds per export request")

    @field_validator("endpoint")
    @classmethod
    def _endpoint(cls, v: str) -> str:
        return check_endpoint(v)

    @field_validator("headers")
    @classmethod
    def _header_names(cls, v: dict[str, SecretStr]) -> dict[str, SecretStr]:
        for name, value in v.items():
            if not name or any(c in name for c in " \t\r\n:") or not name.isascii():
                raise ValueError(f"invalid header name {name!r}")
            # the HTTP client refuses such a value at every export, and its error quotes the value
            # (a credential) into the log; the message here never repeats it
            text = value.get_secret_value()
            if text != text.strip() or any(ord(c) < 32 or ord(c) == 127 for c in text):
                raise ValueError(f"the value of header {name!r} has a line break, a control character "
                                 "or surrounding spaces (a trailing newline in the environment variable?)")
        return v


ExporterConfig = Annotated[ConsoleExporterConfig | OtlpExporterConfig, Field(discriminator="kind")]


class OtelConfig(BaseModel):
    """Parameters of ``use: otel``.

    ``exporter``: where spans and metrics go. Absent (the default): nowhere of this plugin's own —
    the application's global OpenTelemetry providers receive them (an application that configured
    OpenTelemetry sees seamkit's spans in its traces; otherwise the API's no-op costs next to
    nothing). ``console`` or ``{kind: otlp, ...}``: this middleware builds its own tracer and meter
    providers for that exporter (never installed globally) and flushes them when the process
    exits. ``capture_content``: record messages, system instructions, tool arguments and tool
    results (off by default; secrets still masked). ``content_max_chars``: the most characters
    kept of each captured text (the rest is left out, with a note of how much). ``service_name``:
    the ``service.name`` resource attribute of the providers it builds. ``metrics``: record the metrics (default true).
    ``metrics_interval_s``: seconds between metric exports of the providers it builds.
    """

    model_config = ConfigDict(extra="forbid")

    exporter: ExporterConfig | None = Field(
        default=None,
        description="console, or {kind: otlp, protocol: http/protobuf|grpc, endpoint: URL, headers: {...}}. "
        "Default: none of its own (the application's OpenTelemetry providers, if any, receive the spans)",
    )
    capture_content: bool = Field(
        default=False, description="Record messages, tool arguments and results on spans (secrets masked)"
    )
    metrics: bool = Field(default=True, description="Record gen_ai.client.* metrics and seamkit.client.cost")
    content_max_chars: int = Field(default=CONTENT_MAX_CHARS, ge=64, le=16_777_216,
                                   description="With capture_content: the most characters kept of one captured "
                                   "text (a message part, a tool result, a string argument)")
    service_name: str = Field(default="seamkit", min_length=1, max_length=200,
                              description="service.name of the providers built for the exporter")
    metrics_interval_s: float = Field(default=60.0, gt=0, le=86400,
                                      description="Seconds between metric exports (and once at exit)")

    @field_validator("exporter", mode="before")
    @classmethod
    def _exporter_shorthand(cls, value: object) -> object:
        # ``exporter: console`` is short for ``{kind: console}``
        if isinstance(value, str):
            if value != "console":
                raise ValueError(f"unknown exporter {value!r}: use 'console' or {{kind: otlp, endpoint: URL}}")
            return {"kind": value}
        return value
