"""A lean tracer for the tracer providers this plugin builds itself.

The SDK's ``Tracer.start_span`` costs about 16 µs a span on a 2-core box before any processor
runs (attribute validation under a lock per attribute, the sampler, the span's own lock): four
spans are three W1 runs. This tracer keeps the SDK's data types, id generator, sampler, resource,
span processors and exporters, and skips only the mutable ``Span`` machinery: a span is a plain
record while it is open and becomes the SDK's :class:`~opentelemetry.sdk.trace.ReadableSpan` when
it ends, handed to the span processor (a ``BatchSpanProcessor`` exports it off the call's path).
About 3 µs a span.

Used only where this plugin owns the provider and its processor (an exporter in the YAML, or a
caller passing ``span_processor``); an application's own provider always gets real SDK spans
through its own tracer. What differs from SDK spans, by design:

- attribute values are not type-checked (the middleware sets only str, int, float, bool and
  tuples of str) and span limits are not applied (a span has under 40 attributes, one event);
- sampling: the provider's sampler decides for a span whose parent is not one of this tracer's
  spans (a run's span, or one under an application's span); a span under one of this tracer's
  spans follows its parent's decision, as the default ``ParentBased`` sampler would;
- ``on_start`` of the processors is not called (the batch and simple processors do nothing there).
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any

from opentelemetry import trace
from opentelemetry.sdk.trace import Event, ReadableSpan
from opentelemetry.sdk.trace.sampling import Decision
from opentelemetry.sdk.util.instrumentation import InstrumentationScope
from opentelemetry.trace import NonRecordingSpan, SpanContext, SpanKind, TraceFlags
from opentelemetry.trace.status import Status, StatusCode

__all__ = ["LeanSpan", "LeanTracer"]

_SAMPLED = TraceFlags(TraceFlags.SAMPLED)
_NOT_SAMPLED = TraceFlags(TraceFlags.DEFAULT)
_UNSET = Status(StatusCode.UNSET)


class LeanTracer:
    """Starts :class:`LeanSpan` s for ``provider`` (an SDK ``TracerProvider``: its sampler, id
    generator and resource), ending them into ``processor`` (a span processor added to that
    provider, so that its shutdown flushes them), under the instrumentation scope ``name``
    ``version``."""

    __slots__ = ("_ids", "_processor", "_resource", "_sampler", "_scope")

    def __init__(self, provider: Any, processor: Any, name: str, version: str) -> None:
        self._sampler = provider.sampler
        self._ids = provider.id_generator
        self._resource = provider.resource
        self._processor = processor
        self._scope = InstrumentationScope(name, version)

    def start_span(self, name: str, context: Any = None, kind: SpanKind = SpanKind.INTERNAL,
                   attributes: Mapping[str, Any] | None = None) -> trace.Span:
        """A span named ``name`` under the current span of ``context`` (default: the current
        context), with ``attributes`` (copied); a non-recording span when the sampler drops it."""
        parent_span = trace.get_current_span(context)
        parent = parent_span.get_span_context()
        ids = self._ids
        if parent.is_valid:
            trace_id = parent.trace_id
        else:
            trace_id = ids.generate_trace_id()
            parent = None
        if isinstance(parent_span, LeanSpan):
            sampled = True  # a recording parent of ours: ParentBased keeps the child
        else:
            result = self._sampler.should_sample(context, trace_id, name, kind, attributes)
            sampled = result.decision is Decision.RECORD_AND_SAMPLE
            if sampled and result.attributes:
                attributes = {**(attributes or {}), **result.attributes}
        if not sampled:
            return NonRecordingSpan(SpanContext(trace_id, ids.generate_span_id(), False, _NOT_SAMPLED,
                                                parent.trace_state if parent is not None else None))
        trace_state = parent.trace_state if parent is not None else None
        ctx = SpanContext(trace_id, ids.generate_span_id(), False, _SAMPLED, trace_state)
        return LeanSpan(self, name, ctx, parent, kind, dict(attributes) if attributes else {})

    def _end(self, span: LeanSpan, end_time: int) -> None:
        self._processor.on_end(ReadableSpan(
            name=span._name, context=span._context, parent=span._parent, resource=self._resource,
            attributes=span._attributes, events=tuple(span._events), links=(), kind=span._kind,
            status=span._status, start_time=span._start, end_time=end_time, instrumentation_scope=self._scope))


class LeanSpan(trace.Span):
    """An open span of a :class:`LeanTracer`: the OpenTelemetry API's ``Span`` (usable as the
    current span, and as the parent of an application's spans), recorded when :meth:`end` is
    called (once; later calls do nothing)."""

    __slots__ = ("_attributes", "_context", "_end_time", "_events", "_kind", "_name", "_parent", "_start",
                 "_status", "_tracer")

    def __init__(self, tracer: LeanTracer, name: str, context: SpanContext, parent: SpanContext | None,
                 kind: SpanKind, attributes: dict[str, Any]) -> None:
        self._tracer = tracer
        self._name = name
        self._context = context
        self._parent = parent
        self._kind = kind
        self._attributes = attributes
        self._events: list[Event] = []
        self._status = _UNSET
        self._start = time.time_ns()
        self._end_time: int | None = None

    @property
    def name(self) -> str:
        return self._name

    def get_span_context(self) -> SpanContext:
        return self._context

    def is_recording(self) -> bool:
        return self._end_time is None

    def set_attribute(self, key: str, value: Any) -> None:
        if self._end_time is None:
            self._attributes[key] = value

    def set_attributes(self, attributes: Mapping[str, Any]) -> None:
        if self._end_time is None:
            self._attributes.update(attributes)

    def add_event(self, name: str, attributes: Mapping[str, Any] | None = None,
                  timestamp: int | None = None) -> None:
        if self._end_time is None:
            self._events.append(Event(name, dict(attributes) if attributes else None,
                                      timestamp if timestamp is not None else time.time_ns()))

    def add_link(self, context: SpanContext, attributes: Mapping[str, Any] | None = None) -> None:
        pass  # the middleware links nothing

    def update_name(self, name: str) -> None:
        if self._end_time is None:
            self._name = name

    def set_status(self, status: Status | StatusCode, description: str | None = None) -> None:
        if self._end_time is not None:
            return
        if isinstance(status, StatusCode):
            status = Status(status, description)
        if self._status.status_code is StatusCode.OK:
            return  # final, as in the SDK
        self._status = status

    def record_exception(self, exception: BaseException, attributes: Mapping[str, Any] | None = None,
                         timestamp: int | None = None, escaped: bool = False) -> None:
        cls = type(exception)
        self.add_event("exception", {"exception.type": f"{cls.__module__}.{cls.__qualname__}",
                                     "exception.escaped": escaped, **(attributes or {})}, timestamp)

    def end(self, end_time: int | None = None) -> None:
        if self._end_time is not None:
            return
        self._end_time = end_time if end_time is not None else time.time_ns()
        self._tracer._end(self, self._end_time)

