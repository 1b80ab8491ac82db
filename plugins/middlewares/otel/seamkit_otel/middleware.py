"""The ``otel`` middleware: OpenTelemetry spans and metrics for agent runs, model calls and tool
calls, following the OpenTelemetry GenAI semantic conventions **v1.41.0** (the last release of
``open-telemetry/semantic-conventions`` that holds them; they moved to
``semantic-conventions-genai`` afterwards). Sections cited below are of
``docs/gen-ai/gen-ai-agent-spans.md``, ``gen-ai-spans.md`` and ``gen-ai-metrics.md`` of that tag.

Spans (the middleware wraps ``run``, ``chat`` and ``tool`` calls):

- ``invoke_agent {agent}`` — one per agent run (a resumed run, and each capability turn, is its
  own run); kind ``INTERNAL`` ("Invoke agent internal span": an agent in this process).
  ``gen_ai.operation.name=invoke_agent``, ``gen_ai.provider.name`` and ``gen_ai.request.model``
  (the agent's model), ``gen_ai.agent.name``, ``gen_ai.conversation.id`` (the run's
  ``Scope.thread``, when set), usage summed over the run (``gen_ai.usage.*``), and seamkit's own
  ``seamkit.run.id``, ``seamkit.run.parent_id``, ``seamkit.run.resumed``,
  ``seamkit.run.stop_reason``, ``seamkit.run.steps``, ``seamkit.cost.usd``,
  ``seamkit.cost.source``. ``gen_ai.agent.id`` is not set: a seamkit agent has no identity beyond
  its name, and the run id identifies an invocation, not the agent (it is ``seamkit.run.id``).
- ``chat {model}`` — one per model call ("Inference" span, ``{gen_ai.operation.name}
  {gen_ai.request.model}``); kind ``CLIENT``, ``INTERNAL`` for a model running in this process
  (``llamacpp``). ``gen_ai.operation.name=chat``, ``gen_ai.provider.name`` (seamkit provider
  names mapped to the conventions' well-known values: ``openai`` and ``openai_chat`` ->
  ``openai``, ``anthropic`` -> ``anthropic``; others as they are), ``gen_ai.request.model``,
  ``gen_ai.conversation.id`` (the scope's thread, when set), ``gen_ai.request.temperature`` /
  ``max_tokens`` / ``seed`` / ``stop_sequences`` (when set),
  ``gen_ai.request.stream=true``, ``gen_ai.output.type=json`` (when an output schema is asked
  for), ``server.address`` / ``server.port`` (from the provider's ``base_url``, when it has one),
  ``gen_ai.response.model``, ``gen_ai.response.finish_reasons``, ``gen_ai.usage.input_tokens`` /
  ``output_tokens`` / ``cache_read.input_tokens`` / ``cache_creation.input_tokens`` /
  ``reasoning.output_tokens``, ``gen_ai.response.time_to_first_chunk`` (seconds), and
  ``seamkit.cost.usd`` / ``seamkit.cost.source``. ``gen_ai.response.id`` is not set: seamkit's
  deltas do not carry the provider's response id.
- ``execute_tool {tool}`` — one per tool call ("Execute tool span"); kind ``INTERNAL``.
  ``gen_ai.operation.name=execute_tool``, ``gen_ai.tool.name``, ``gen_ai.tool.call.id``,
  ``gen_ai.tool.type=function``, ``gen_ai.tool.description`` (when the schema is known).

Parenting: the ``invoke_agent`` span's parent is the current OpenTelemetry context (an
application's own span, when it has one). While the run goes on, its span is the current span, so
its ``chat`` and ``execute_tool`` spans are its children; while a tool runs, its span is current,
so an agent used as a tool (a child run) opens its ``invoke_agent`` span under the
``execute_tool`` span that started it. The context is attached only while ``next`` runs to
completion and is detached before anything is yielded (an async generator must never leave a
context attached across a ``yield``: its consumer would run inside it); ``chat`` spans are leaves
and attach nothing.

Retries: listed *after* ``retry`` (inner), each try is its own ``chat`` span with its own error;
listed *before* it (outer), one ``chat`` span covers every try and the backoff between them, and
records only the final outcome. List ``otel`` after ``retry`` and ``fallback``.

Errors: the span's status is ``ERROR`` and ``error.type`` is the
:class:`~seamkit.errors.ProviderError`'s failure class (``rate_limited``, ``timeout``...), else the
exception's class name; ``cancelled`` when the call was cancelled; ``tool_error`` for a tool
result marked ``is_error``. The exception is recorded as an ``exception`` event with its type and
stack frames; its **message** only with ``capture_content`` (masked), as messages may quote
arguments or credentials.

Metrics ("Generative AI client metrics"): ``gen_ai.client.token.usage`` (histogram, ``{token}``,
``gen_ai.token.type`` ``input`` / ``output``, per chat call), ``gen_ai.client.operation.duration``
(histogram, ``s``, per chat call and per agent run, ``error.type`` on failures), both with the
conventions' bucket boundaries and attributes (operation, provider, request and response model,
server address and port), and ``seamkit.client.cost`` (counter, ``{USD}``, per chat call with a
known cost; a float: the exact ``Decimal`` is on the span as ``seamkit.cost.usd``).

Content (``capture_content``): see :mod:`seamkit_otel.content`. Off, no message, argument, result
or error message is recorded, and none is even serialized.
"""

from __future__ import annotations

import asyncio
import logging
import os
import time
import traceback
from collections.abc import AsyncIterator, Iterable
from typing import Any
from urllib.parse import urlsplit

from opentelemetry import context as otel_context
from opentelemetry import metrics as otel_metrics
from opentelemetry import trace
from opentelemetry import trace as _trace_api
from opentelemetry.metrics import _internal as _metrics_api
from opentelemetry.trace import SpanKind, Status, StatusCode
from seamkit.errors import ProviderError
from seamkit.plugin import Call, Next
from seamkit.values import ChatRequest, Delta, RunRequest, ToolRequest, ToolResult, Usage

from seamkit_otel.config import CONTENT_MAX_CHARS, OtelConfig

__all__ = ["PROVIDER_NAMES", "Otel", "build", "error_type", "provider_name"]

log = logging.getLogger("seamkit.otel")

SCOPE = "seamkit.otel"
VERSION = "0.1.0"

#: seamkit provider names -> the well-known ``gen_ai.provider.name`` values (v1.41.0).
PROVIDER_NAMES = {
    "openai": "openai", "openai_chat": "openai", "anthropic": "anthropic", "azure_openai": "azure.ai.openai",
    "bedrock": "aws.bedrock", "gemini": "gcp.gemini", "vertex_ai": "gcp.vertex_ai", "mistral": "mistral_ai",
    "xai": "x_ai", "cohere": "cohere", "deepseek": "deepseek", "groq": "groq", "perplexity": "perplexity",
}
#: Providers whose model runs in this process: their chat spans are INTERNAL, not CLIENT.
LOCAL_PROVIDERS = frozenset({"llamacpp"})
TOKEN_BUCKETS = (1, 4, 16, 64, 256, 1024, 4096, 16384, 65536, 262144, 1048576, 4194304, 16777216, 67108864)
DURATION_BUCKETS = (0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12, 10.24, 20.48, 40.96, 81.92)


def provider_name(provider: str | None) -> str:
    """``gen_ai.provider.name`` for a seamkit provider name (``_OTHER`` when there is none)."""
    if not provider:
        return "_OTHER"
    return PROVIDER_NAMES.get(provider, provider)


def error_type(exc: BaseException) -> str:
    """``error.type`` of ``exc``: a provider error's failure class, ``cancelled`` for a
    cancellation, else the exception's class name (low cardinality, never the message)."""
    if isinstance(exc, ProviderError):
        fc = getattr(exc, "failure_class", None)
        return str(getattr(fc, "value", fc)) if fc is not None else type(exc).__name__
    if isinstance(exc, asyncio.CancelledError):
        return "cancelled"
    return type(exc).__name__


def _server(model: Any) -> tuple[str, int] | None:
    """(``server.address``, ``server.port``) of a provider with a ``base_url`` string, else ``None``."""
    url = getattr(model, "base_url", None)
    if not isinstance(url, str):
        return None
    try:
        parts = urlsplit(url)
        host, port = parts.hostname, parts.port
    except ValueError:
        return None
    if not host:
        return None
    return host, port if port is not None else (443 if parts.scheme == "https" else 80)


def _secrets_of(model: Any) -> list[str]:
    fn = getattr(model, "secrets", None)
    if not callable(fn):
        return []
    try:
        found = fn()
    except Exception:  # a provider that cannot say: nothing to add
        return []
    return [s for s in found if isinstance(s, str)] if isinstance(found, list | tuple | set | frozenset) else []


# Whether the application has set a global provider, read from the API modules' globals (two
# attribute reads per call: ``get_tracer_provider()`` looks the environment up on every call).
# With the providers' environment variables set, the API builds the global provider on first use,
# so the shortcut is never taken.
_ENV_PROVIDERS = "OTEL_PYTHON_TRACER_PROVIDER" in os.environ or "OTEL_PYTHON_METER_PROVIDER" in os.environ


def _global_is_noop() -> bool:
    """No application set a global tracer or meter provider: everything would go to the API's no-op."""
    return (not _ENV_PROVIDERS and getattr(_trace_api, "_TRACER_PROVIDER", False) is None
            and getattr(_metrics_api, "_METER_PROVIDER", False) is None)


def _cost_attrs(attrs: dict[str, Any], usage: Usage) -> None:
    if usage.cost is not None:
        attrs["seamkit.cost.usd"] = str(usage.cost)  # exact: Decimal text, never a float
    attrs["seamkit.cost.source"] = usage.cost_source


def _usage_attrs(attrs: dict[str, Any], usage: Usage) -> None:
    attrs["gen_ai.usage.input_tokens"] = usage.input_tokens
    attrs["gen_ai.usage.output_tokens"] = usage.output_tokens
    if usage.cache_read_tokens:
        attrs["gen_ai.usage.cache_read.input_tokens"] = usage.cache_read_tokens
    if usage.cache_write_tokens:
        attrs["gen_ai.usage.cache_creation.input_tokens"] = usage.cache_write_tokens
    if usage.reasoning_tokens:
        attrs["gen_ai.usage.reasoning.output_tokens"] = usage.reasoning_tokens
    _cost_attrs(attrs, usage)


class Otel:
    """The ``otel`` middleware (see the module doc).

    ``tracer_provider`` / ``meter_provider``: where spans and metrics go; ``None`` (the default):
    the global providers as the application set them, looked up on every call (an application
    that configures OpenTelemetry after building the agent still gets the spans; with none set,
    calls pass straight through). ``capture_content``: record content (masked, each text cut to
    ``content_max_chars`` characters). ``secrets``:
    more values to mask in captured content (the exporter's header values). ``metrics``: record
    metrics. ``owned``: the :class:`~seamkit_otel.exporters.Providers` this middleware built
    (shut down by :meth:`aclose`). ``span_processor``: a span processor added to
    ``tracer_provider`` that this middleware may end its spans into directly, through the lean
    tracer (:mod:`seamkit_otel.lean`, about 3 µs a span instead of the SDK span's 16+); given only
    for a provider this plugin (or its caller) owns, never an application's.

    Calling it (``mw(call, next)``) yields what the rest of the chain yields and raises what it
    raises; recording never fails a call.
    """

    kinds = frozenset({"run", "chat", "tool"})

    def __init__(self, tracer_provider: Any = None, meter_provider: Any = None, *, capture_content: bool = False,
                 secrets: Iterable[str] = (), metrics: bool = True, owned: Any = None,
                 span_processor: Any = None, content_max_chars: int = CONTENT_MAX_CHARS) -> None:
        from seamkit_otel.content import Masker

        self.capture_content = capture_content
        self.owned = owned
        self._uses_global = tracer_provider is None
        tp = tracer_provider if tracer_provider is not None else trace.get_tracer_provider()
        # with no provider of its own, trace.get_tracer returns a proxy resolving to the global
        # provider once the application sets one
        if span_processor is not None and tracer_provider is not None:
            from seamkit_otel.lean import LeanTracer

            self._tracer: Any = LeanTracer(tracer_provider, span_processor, SCOPE, VERSION)
        else:
            self._tracer = (trace.get_tracer(SCOPE, VERSION) if tracer_provider is None
                            else tp.get_tracer(SCOPE, VERSION))
        self._masker = Masker(secrets, content_max_chars)
        self._metrics = metrics
        if metrics:
            meter = (otel_metrics.get_meter(SCOPE, VERSION) if meter_provider is None
                     else meter_provider.get_meter(SCOPE, VERSION))
            self._tokens = meter.create_histogram(
                "gen_ai.client.token.usage", unit="{token}", description="Number of input and output tokens used.",
                explicit_bucket_boundaries_advisory=TOKEN_BUCKETS)
            self._duration = meter.create_histogram(
                "gen_ai.client.operation.duration", unit="s", description="GenAI operation duration.",
                explicit_bucket_boundaries_advisory=DURATION_BUCKETS)
            self._cost = meter.create_counter(
                "seamkit.client.cost", unit="{USD}",
                description="Cost of model calls in US dollars (known costs only).")

    def __repr__(self) -> str:
        where = self.owned.describe if self.owned is not None else "global providers"
        return f"Otel(exporter={where}, capture_content={self.capture_content})"

    async def aclose(self) -> None:
        """Flush and shut down the providers this middleware built for its exporter (in a worker
        thread: exports block). Nothing to do when it uses the application's providers."""
        if self.owned is not None:
            await asyncio.to_thread(self.owned.shutdown)

    def __call__(self, call: Call, nxt: Next) -> AsyncIterator[Any]:
        if self._uses_global and _global_is_noop():
            return nxt(call)  # nothing would record anything: not even a no-op span
        if call.kind == "chat":
            return self._chat(call, nxt)
        if call.kind == "tool":
            return self._tool(call, nxt)
        if call.kind == "run":
            return self._run(call, nxt)
        return nxt(call)

    # --- helpers ------------------------------------------------------------------------------

    def _fail(self, span: Any, exc: BaseException, attrs: dict[str, Any] | None = None) -> str:
        """Mark ``span`` failed by ``exc``: ``error.type``, status ERROR, an ``exception`` event
        (type and frames; the message only with content capture, masked). Returns the type."""
        etype = error_type(exc)
        span.set_attribute("error.type", etype)
        span.set_status(Status(StatusCode.ERROR, etype))
        if not isinstance(exc, asyncio.CancelledError | GeneratorExit):
            cls = type(exc)
            event = {
                "exception.type": f"{cls.__module__}.{cls.__qualname__}",
                # the frames only: format_exception's last line would repeat the message
                "exception.stacktrace": "".join(traceback.format_tb(exc.__traceback__)),
                "exception.escaped": True,
            }
            if self.capture_content:
                from seamkit_otel.content import clip

                event["exception.message"] = self._masker(clip(str(exc), self._masker.max_chars))
            span.add_event("exception", event)
        if attrs is not None:
            attrs["error.type"] = etype
        return etype

    def _learn_secrets(self, model: Any) -> None:
        if self.capture_content and model is not None:
            self._masker.add(_secrets_of(model))

    # --- run ----------------------------------------------------------------------------------

    async def _run(self, call: Call, nxt: Next) -> AsyncIterator[Any]:
        req: RunRequest = call.request  # type: ignore[assignment]
        ctx = call.ctx
        model = call.model
        self._learn_secrets(model)
        provider = provider_name(getattr(model, "provider", None))
        model_name = getattr(model, "model", None)
        attrs: dict[str, Any] = {
            "gen_ai.operation.name": "invoke_agent",
            "gen_ai.provider.name": provider,
            "gen_ai.agent.name": req.agent,
            "seamkit.run.id": ctx.run_id,
            "seamkit.run.resumed": req.resumed,
        }
        if model_name:
            attrs["gen_ai.request.model"] = model_name
        if ctx.parent_run_id is not None:
            attrs["seamkit.run.parent_id"] = ctx.parent_run_id
        if ctx.scope.thread is not None:
            attrs["gen_ai.conversation.id"] = ctx.scope.thread
        if self.capture_content:
            from seamkit_otel.content import input_attributes

            attrs.update(input_attributes(req.messages, self._masker))
        span = self._tracer.start_span(f"invoke_agent {req.agent}", kind=SpanKind.INTERNAL, attributes=attrs)
        metric_attrs: dict[str, Any] = {"gen_ai.operation.name": "invoke_agent", "gen_ai.provider.name": provider}
        if model_name:
            metric_attrs["gen_ai.request.model"] = model_name
        start = time.perf_counter()
        token = otel_context.attach(trace.set_span_in_context(span))
        try:
            items = [item async for item in nxt(call)]
        except BaseException as exc:
            otel_context.detach(token)
            self._fail(span, exc, metric_attrs)
            span.end()
            if self._metrics:
                self._duration.record(time.perf_counter() - start, metric_attrs)
            raise
        otel_context.detach(token)  # before anything is yielded
        result = items[0] if len(items) == 1 else None
        if result is not None and hasattr(result, "usage"):
            end: dict[str, Any] = {"seamkit.run.stop_reason": result.stop_reason, "seamkit.run.steps": result.steps}
            _usage_attrs(end, result.usage)
            if self.capture_content and result.transcript:
                from seamkit_otel.content import output_messages

                last = result.transcript[-1]
                if last.role == "assistant":
                    end["gen_ai.output.messages"] = output_messages(last, "stop", self._masker)
            span.set_attributes(end)
        span.end()
        if self._metrics:
            self._duration.record(time.perf_counter() - start, metric_attrs)
        for item in items:
            yield item

    # --- tool ---------------------------------------------------------------------------------

    async def _tool(self, call: Call, nxt: Next) -> AsyncIterator[Any]:
        req: ToolRequest = call.request  # type: ignore[assignment]
        tc = req.call
        attrs: dict[str, Any] = {
            "gen_ai.operation.name": "execute_tool",
            "gen_ai.tool.name": tc.name,
            "gen_ai.tool.call.id": tc.id,
            "gen_ai.tool.type": "function",
        }
        if req.schema is not None and req.schema.description:
            attrs["gen_ai.tool.description"] = req.schema.description
        if self.capture_content:
            from seamkit_otel.content import tool_arguments

            attrs["gen_ai.tool.call.arguments"] = tool_arguments(tc.arguments, self._masker)
        span = self._tracer.start_span(f"execute_tool {tc.name}", kind=SpanKind.INTERNAL, attributes=attrs)
        token = otel_context.attach(trace.set_span_in_context(span))
        try:
            items = [item async for item in nxt(call)]
        except BaseException as exc:
            otel_context.detach(token)
            self._fail(span, exc)
            span.end()
            raise
        otel_context.detach(token)  # before anything is yielded
        for item in items:
            if isinstance(item, ToolResult):
                if item.is_error:
                    span.set_attribute("error.type", "tool_error")
                    span.set_status(Status(StatusCode.ERROR, "tool_error"))
                elif self.capture_content:
                    from seamkit_otel.content import clip

                    span.set_attribute("gen_ai.tool.call.result",
                                       self._masker(clip(item.content, self._masker.max_chars)))
        span.end()
        for item in items:
            yield item

    # --- chat ---------------------------------------------------------------------------------

    async def _chat(self, call: Call, nxt: Next) -> AsyncIterator[Any]:
        req: ChatRequest = call.request  # type: ignore[assignment]
        model = call.model
        self._learn_secrets(model)
        provider_raw = getattr(model, "provider", None)
        provider = provider_name(provider_raw)
        model_name = getattr(model, "model", None)
        attrs: dict[str, Any] = {
            "gen_ai.operation.name": "chat",
            "gen_ai.provider.name": provider,
            "gen_ai.request.stream": True,
        }
        metric_attrs: dict[str, Any] = {"gen_ai.operation.name": "chat", "gen_ai.provider.name": provider}
        if model_name:
            attrs["gen_ai.request.model"] = model_name
            metric_attrs["gen_ai.request.model"] = model_name
        server = _server(model)
        if server is not None:
            attrs["server.address"] = metric_attrs["server.address"] = server[0]
            attrs["server.port"] = metric_attrs["server.port"] = server[1]
        thread = call.ctx.scope.thread
        if thread is not None:
            attrs["gen_ai.conversation.id"] = thread
        if req.temperature is not None:
            attrs["gen_ai.request.temperature"] = req.temperature
        if req.max_tokens is not None:
            attrs["gen_ai.request.max_tokens"] = req.max_tokens
        if req.seed is not None:
            attrs["gen_ai.request.seed"] = req.seed
        if req.stop:
            attrs["gen_ai.request.stop_sequences"] = tuple(req.stop)
        if req.output_schema is not None:
            attrs["gen_ai.output.type"] = "json"
        acc = None
        if self.capture_content:
            from seamkit.plugin import Accumulator

            from seamkit_otel.content import input_attributes

            attrs.update(input_attributes(req.messages, self._masker))
            acc = Accumulator(provider_raw, model_name)
        kind = SpanKind.INTERNAL if provider_raw in LOCAL_PROVIDERS else SpanKind.CLIENT
        span = self._tracer.start_span(f"chat {model_name}" if model_name else "chat", kind=kind, attributes=attrs)
        start = time.perf_counter()
        first: float | None = None
        usage: Usage | None = None
        finish: str | None = None
        answered_by: str | None = None
        failed = False
        try:
            async for d in nxt(call):
                if type(d) is Delta:
                    if first is None and (d.text or d.tool_call is not None or d.reasoning):
                        first = time.perf_counter() - start
                    if d.usage is not None:
                        usage = d.usage
                    if d.finish_reason is not None:
                        finish = d.finish_reason
                    if d.model is not None:
                        answered_by = d.model
                    if acc is not None:
                        try:
                            acc.add(d)
                        except Exception:  # content capture never fails the call
                            acc = None
                yield d
        except GeneratorExit:  # the caller stopped reading: not an error of the call
            raise
        except BaseException as exc:
            failed = True
            self._fail(span, exc, metric_attrs)
            raise
        finally:
            duration = time.perf_counter() - start
            self._end_chat(span, duration, first, usage, finish, answered_by, acc, metric_attrs, failed)

    def _end_chat(self, span: Any, duration: float, first: float | None, usage: Usage | None, finish: str | None,
                  answered_by: str | None, acc: Any, metric_attrs: dict[str, Any], failed: bool) -> None:
        end: dict[str, Any] = {}
        if answered_by is not None:
            end["gen_ai.response.model"] = answered_by
            metric_attrs["gen_ai.response.model"] = answered_by
        if finish is not None:
            end["gen_ai.response.finish_reasons"] = (finish,)
        if first is not None:
            end["gen_ai.response.time_to_first_chunk"] = first
        if usage is not None:
            _usage_attrs(end, usage)
        if acc is not None and not failed and finish is not None:
            from seamkit_otel.content import output_messages

            try:
                end["gen_ai.output.messages"] = output_messages(acc.result().message, finish, self._masker)
            except Exception:  # an answer the accumulator refuses: no output content
                pass
        if end:
            span.set_attributes(end)
        span.end()
        if not self._metrics:
            return
        self._duration.record(duration, metric_attrs)
        if usage is not None:
            self._tokens.record(usage.input_tokens, {**metric_attrs, "gen_ai.token.type": "input"})
            self._tokens.record(usage.output_tokens, {**metric_attrs, "gen_ai.token.type": "output"})
            if usage.cost is not None and usage.cost > 0:
                self._cost.add(float(usage.cost), {**metric_attrs, "seamkit.cost.source": usage.cost_source})


def build(config: OtelConfig) -> Otel:
    """The ``otel`` middleware for a validated :class:`~seamkit_otel.config.OtelConfig`: with an
    exporter, providers of its own for it (:func:`seamkit_otel.exporters.build_providers`); without,
    the application's global providers."""
    if config.exporter is None:
        return Otel(capture_content=config.capture_content, metrics=config.metrics,
                    content_max_chars=config.content_max_chars)
    from seamkit_otel.exporters import build_providers

    owned = build_providers(config)
    secrets: list[str] = []
    headers = getattr(config.exporter, "headers", None) or {}
    for v in headers.values():
        value = v.get_secret_value()
        secrets.append(value)
        parts = value.split()
        if len(parts) == 2:  # "Bearer TOKEN", "Basic B64": the credential alone is as secret
            secrets.append(parts[1])
    return Otel(owned.tracer_provider, owned.meter_provider, capture_content=config.capture_content,
                secrets=secrets, metrics=config.metrics and owned.meter_provider is not None, owned=owned,
                span_processor=owned.span_processor, content_max_chars=config.content_max_chars)
